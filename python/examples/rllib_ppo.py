"""PPO from RLlib on mtf_env, through RLlib's PettingZoo wrapper (documented, not run in CI:
Ray is a large install).

    pip install "ray[rllib]" torch ./python
    python python/examples/rllib_ppo.py [--config configs/quickstart.toml] [--iterations 20]

One RLModule per weight class (parameter sharing within a class, as `learner.ppo.share =
"class"` does in `mtf train`); RLlib's new API stack.
"""

from __future__ import annotations

import argparse
import os

import mtf_env


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/quickstart.toml")
    p.add_argument("--iterations", type=int, default=20)
    args = p.parse_args()

    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv
    from ray.tune.registry import register_env

    config = os.path.abspath(args.config)  # env runners start in other directories
    env = mtf_env.parallel_env(config)
    classes = {a: f"w{w:g}" for a, w in env.weights.items()}
    register_env("mtf", lambda _: ParallelPettingZooEnv(mtf_env.parallel_env(config)))
    algo = (
        PPOConfig()
        .environment("mtf")
        .multi_agent(
            policies=set(classes.values()),
            policy_mapping_fn=lambda agent_id, *a, **k: classes[agent_id],
        )
        .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={c: RLModuleSpec() for c in set(classes.values())}))
        .env_runners(num_env_runners=2)
        .build_algo()
    )
    for i in range(args.iterations):
        result = algo.train()
        returns = result["env_runners"]["agent_episode_returns_mean"]
        print(f"iteration {i + 1}: mean episode return per agent {sum(returns.values()) / len(returns):.2f}")


if __name__ == "__main__":
    main()

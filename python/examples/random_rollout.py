"""One episode of the quickstart scenario with random levels, through the PettingZoo API.

    python python/examples/random_rollout.py [--config FILE] [--seed N] [--set key=value ...]
"""

from __future__ import annotations

import argparse

import numpy as np

import mtf_env


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/quickstart.toml")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    args = p.parse_args()

    env = mtf_env.parallel_env(args.config, overrides=args.overrides)
    observations, infos = env.reset(seed=args.seed)
    for space in env.action_spaces.values():
        space.seed(args.seed)
    total = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {a: env.action_space(a).sample() for a in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for a, r in rewards.items():
            total[a] += r
    m = env.metrics()
    print(f"{len(env.possible_agents)} agents, {m['rounds']} rounds, random {env.action_kind} levels")
    # Every figure per round, as the episode's metrics are (the drops are an episode total).
    dropped = float(np.sum(m["dropped"])) / m["rounds"]
    print(f"per round: welfare {m['welfare']:.2f} jobs  dropped {dropped:.2f} jobs  (Jain {m['jain']:.3f})")
    for a in env.possible_agents:
        print(f"  {a}: reward {total[a]:.2f}")


if __name__ == "__main__":
    main()

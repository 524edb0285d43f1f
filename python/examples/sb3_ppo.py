"""Stable-Baselines3 PPO on mtf_env, exported to ONNX, and scored by `mtf compare`.

One PPO policy shared by every agent (supersuit turns the PettingZoo env into a vector of
agents, the SB3 multi-agent tutorial's path), trained for a small budget, its actor exported
with `torch.onnx.export`, and `mtf compare --policies onnx:FILE,fixed:all` run on held-out
seeds: mtf's welfare for the ONNX policy is the one the SB3 policy scores here, seed by seed.

    pip install stable-baselines3 supersuit onnx onnxscript   # torch comes with SB3
    python python/examples/sb3_ppo.py [--config FILE] [--timesteps 20000] [--out sb3.onnx]

The tests run it with a small budget (python/tests/test_examples.py); the versions they pin
are in python/requirements-dev.txt.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import mtf_env
from onnx_policy import greedy_welfare, mtf_compare, summary


class Actor:
    """SB3's actor as a plain module: observation -> logits (what `mtf` evaluates)."""

    def __new__(cls, policy):
        import torch

        class _Actor(torch.nn.Module):
            def __init__(self, policy):
                super().__init__()
                self.policy = policy

            def forward(self, obs):
                features = self.policy.extract_features(obs, self.policy.pi_features_extractor)
                return self.policy.action_net(self.policy.mlp_extractor.forward_actor(features))

        return _Actor(policy)


def train(config, overrides, timesteps, seed, num_envs=4):
    import supersuit as ss
    from stable_baselines3 import PPO
    from stable_baselines3.common.utils import set_random_seed

    env = mtf_env.parallel_env(config, overrides=overrides)
    vec = ss.pettingzoo_env_to_vec_env_v1(env)
    vec = ss.concat_vec_envs_v1(vec, num_envs, num_cpus=0, base_class="stable_baselines3")
    # supersuit 3.11's vector env has no seed() for SB3 2.x to call (PPO(seed=...) and
    # reset(seed=...) both fail): seed torch and NumPy here; the episodes follow the
    # environment's own seed sequence (mtf_env's default seed, then its successors).
    set_random_seed(seed)
    model = PPO("MlpPolicy", vec, n_steps=256, batch_size=256, verbose=0)
    model.learn(total_timesteps=timesteps)
    return model


def export(model, path: str) -> None:
    import torch

    dim = model.observation_space.shape[0]
    actor = Actor(model.policy).eval()
    batch = torch.export.Dim("batch", min=1)
    torch.onnx.export(
        actor, (torch.zeros(2, dim),), path, input_names=["obs"], output_names=["logits"],
        dynamic_shapes={"obs": {0: batch}}, external_data=False,
    )


def main() -> None:
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/quickstart.toml")
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    p.add_argument("--timesteps", type=int, default=20_000, help="agent-steps of training")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=8, help="held-out episodes mtf compare scores")
    p.add_argument("--out", default="sb3.onnx")
    p.add_argument("--mtf", default=os.environ.get("MTF_BIN", "target/release/mtf"))
    args = p.parse_args()

    model = train(args.config, args.overrides, args.timesteps, args.seed)
    export(model, args.out)
    with tempfile.TemporaryDirectory() as tmp:
        report, in_mtf = mtf_compare(args.mtf, args.config, args.overrides, args.out, args.seeds, tmp)
    in_python = greedy_welfare(args.config, args.overrides, lambda x: model.predict(x, deterministic=True)[0], report["seeds"])
    print(f"wrote {args.out}")
    print(summary(report, in_mtf, in_python, "SB3 in Python"))


if __name__ == "__main__":
    main()

"""The examples run, and the NumPy learner learns the known answer of a second-price auction."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from conftest import CONFIGS, ROOT

import mtf_env

sys.path.insert(0, str(ROOT / "python/examples"))
import reinforce_vec  # noqa: E402


def run(*args: str) -> str:
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_random_rollout_runs():
    out = run("python/examples/random_rollout.py", "--set", "env.rounds=20")
    assert out.startswith("8 agents, 20 rounds, random threshold levels")
    assert out.count("reward") == 8
    assert "per round: welfare" in out and "dropped" in out


def test_reinforce_example_runs():
    out = run("python/examples/reinforce_vec.py", "--episodes", "2", "--num-envs", "2", "--set", "env.rounds=20")
    assert "episode   2:" in out and "held-out reward per agent-round: learned (greedy)" in out


def test_independent_reinforce_learns_truthful_bids_in_a_second_price_auction():
    # Bidding one's value (factor 1) is dominant in a second-price auction: independent
    # learners should end near it whatever the others do (a sign error drives them to 0).
    cfg, ov = CONFIGS["second-price"], ["env.rounds=300"]
    w, history = reinforce_vec.train(cfg, ov, num_envs=8, episodes=10, lr=0.05, seed=0, log=lambda _: None)
    vec = mtf_env.VecEnv(cfg, 8, overrides=ov)
    x = reinforce_vec.features(vec.reset(5))
    factors = np.asarray(vec.levels)[np.einsum("end,ndk->enk", x, w).argmax(axis=-1)]
    assert np.all((factors >= 0.85) & (factors <= 1.05)), factors

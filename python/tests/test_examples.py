"""The examples run, and the NumPy learner learns the known answer of a second-price auction."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from conftest import CONFIGS, QUICKSTART, ROOT

import mtf_env

sys.path.insert(0, str(ROOT / "python/examples"))
import onnx_policy  # noqa: E402
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


def test_a_policy_trained_in_python_scores_in_mtf_compare_what_it_scores_in_python(mtf_bin, tmp_path):
    # Trained on mtf_env, saved as ONNX, played by `mtf compare --policies onnx:FILE`: the same
    # welfare, seed for seed, as the same greedy policy played in Python. A short training run
    # learns one level for everyone; random weights (the second policy) read the observation,
    # so the match is not only a constant policy's.
    ov = ["env.rounds=80"]
    trained = onnx_policy.train(QUICKSTART, ov, num_envs=4, episodes=3, log=lambda _: None)
    rng = np.random.default_rng(7)
    noisy = tuple((rng.normal(size=x.shape) * 3).astype(np.float32) for x in trained)
    for name, (w, b), levels in [("trained", trained, 1), ("random", noisy, 3)]:
        path = str(tmp_path / f"{name}.onnx")
        onnx_policy.save_onnx(w, b, path)
        report, in_mtf = onnx_policy.mtf_compare(mtf_bin, QUICKSTART, ov, path, 4, str(tmp_path / name))
        played: set = set()
        in_python = onnx_policy.greedy_welfare(QUICKSTART, ov, onnx_policy.greedy(w, b, played), report["seeds"])
        assert in_python == [in_mtf[s] for s in report["seeds"]], name
        assert len(played) >= levels, (name, played)
        rows = {r["policy"] for r in report["rows"]}
        assert f"onnx:{path}" in rows and "fixed:0.3" in rows


def test_onnx_example_runs(mtf_bin, tmp_path):
    out = run("python/examples/onnx_policy.py", "--episodes", "1", "--num-envs", "2", "--set", "env.rounds=20",
              "--seeds", "2", "--out", str(tmp_path / "p.onnx"), "--mtf", mtf_bin)
    assert "largest per-seed difference 0" in out and "against fixed:" in out


def test_sb3_example_scores_in_mtf_compare_what_it_scores_in_python(mtf_bin, tmp_path):
    # Stable-Baselines3 PPO trained on mtf_env through supersuit, its actor exported with
    # torch.onnx.export, and `mtf compare --policies onnx:FILE` scoring it as SB3's own
    # predict() does in Python, seed for seed (one PPO update: the budget is one rollout).
    out = run("python/examples/sb3_ppo.py", "--timesteps", "1000", "--set", "env.rounds=60",
              "--seeds", "3", "--out", str(tmp_path / "sb3.onnx"), "--mtf", mtf_bin)
    assert "largest per-seed difference 0\n" in out, out
    assert "against fixed:" in out and (tmp_path / "sb3.onnx").stat().st_size > 0

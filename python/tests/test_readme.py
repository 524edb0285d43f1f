"""The README's Python section runs as written: its sh block (a fresh virtualenv, `pip install
./python`, the examples, the benchmark) in a scratch directory laid out like the repository,
then its Python block."""

from __future__ import annotations

import os
import re
import subprocess

from conftest import ROOT, run_json


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def test_readme_from_python_runs_as_written(tmp_path, mtf_bin):
    body = section((ROOT / "README.md").read_text(), "From Python")
    sh = re.search(r"```sh\n(.*?)```", body, re.S).group(1)
    py = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    assert "pip install ./python" in sh and "VecEnv" in py
    for name in ["python", "configs", "scripts", "target"]:
        (tmp_path / name).symlink_to(ROOT / name)
    env = dict(
        os.environ,
        # The build cache of the test command's own install, and a one-repetition benchmark:
        # the lines themselves run unchanged.
        CARGO_TARGET_DIR=str(ROOT / "target/python"),
        MTF_BENCH_QUICK="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    out = subprocess.run(["bash", "-euo", "pipefail", "-c", sh], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "held-out reward per agent-round" in out.stdout and "VecEnv, 8 copies" in out.stdout
    # The ONNX policy trained in Python is scored by mtf as Python scored it, and compared.
    assert "largest per-seed difference 0" in out.stdout, out.stdout[-2000:]
    assert "onnx:policy.onnx" in out.stdout
    # ... and the same file exported as an agent executable plays in simulate.
    assert "exported 1 agent(s) [0] (onnx, 10 levels) to policy-agent" in out.stdout, out.stdout[-2000:]
    run = subprocess.run(
        [str(tmp_path / ".venv/bin/python"), "-c", py], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    welfare, owners, market_welfare = run.stdout.strip().splitlines()
    assert float(welfare) > 0 and owners == "[1, 0, 1, 1]"
    assert float(market_welfare) > 0
    # The market at everyone's break-even bids, reset with the seed `mtf simulate` plays first
    # (its `episode_seeds`, from the file's root seed), is simulate's episode.
    sim = run_json([mtf_bin, "simulate", "--config", "configs/market/three-types.toml", "--json"])
    check = (
        "import mtf_env\n"
        "m = mtf_env.parallel_env('configs/market/three-types.toml')\n"
        f"m.reset(seed={sim['episode_seeds'][0]})\n"
        "one = m.levels.index(1.0)\n"
        "while m.agents:\n"
        "    m.step({a: one for a in m.agents})\n"
        "print(m.metrics()['welfare'])\n"
    )
    run = subprocess.run([str(tmp_path / ".venv/bin/python"), "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    want = sim["metrics"]["welfare"]
    assert abs(float(run.stdout) - want) < 1e-6 * max(1.0, want), (run.stdout, want)

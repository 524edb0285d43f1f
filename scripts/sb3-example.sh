#!/usr/bin/env bash
# Stable-Baselines3 PPO trained on mtf_env, exported to ONNX with torch.onnx.export, scored by
# `mtf compare --policies onnx:FILE`: python/examples/sb3_ppo.py in a virtualenv of its own
# (target/sb3-venv, pinned versions), checked to give the welfare Python computed, seed by seed.
# Not part of the test command: torch from PyPI is a 514 MB wheel plus about 3 GB of CUDA
# libraries (2.5 minutes to install here). The test command runs the same path from a NumPy
# policy (python/examples/onnx_policy.py). MTF_BIN names the mtf binary (default
# target/release/mtf).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${SB3_VENV:-target/sb3-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  torch==2.15.0 stable-baselines3==2.9.2 SuperSuit==3.11.0 onnx==1.23.2 onnxscript==0.7.2 \
  pettingzoo==1.27.0 gymnasium==1.4.0 numpy==2.4.6
CARGO_TARGET_DIR="$PWD/target/python" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check ./python
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" python/examples/sb3_ppo.py --timesteps "${SB3_TIMESTEPS:-4000}" --set env.rounds=100 --seeds 4 \
  --out "$out/sb3.onnx" --mtf "${MTF_BIN:-target/release/mtf}" 2>/dev/null | tee "$out/log"
grep -q "largest per-seed difference 0$" "$out/log" || { echo "sb3-example: mtf's welfare differs from Python's" >&2; exit 1; }

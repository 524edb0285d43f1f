#!/usr/bin/env bash
# Rounds per second of mtf_env's batched (VecEnv) and dict (parallel_env) APIs next to the Rust
# environment's own, at 20 agents x 40 accelerators. Uses the virtualenv the tests create.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MTF_PYTHON_VENV:-target/python-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import mtf_env" 2>/dev/null; then
  bash scripts/python-tests.sh -q -x > /dev/null
fi
"$venv/bin/python" python/benches/api_speed.py

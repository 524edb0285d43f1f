#!/usr/bin/env bash
# The Python tests (run by `cargo test` through agents/tests/python.rs, so by the README's test
# command and CI): a local virtualenv under target/ (created on the first run, packages from
# PyPI at the versions python/requirements-dev.txt pins), `pip install ./python` into it (maturin
# builds the extension; its Rust build is cached in target/python), then pytest.
# Arguments go to pytest. MTF_BIN names the `mtf` binary the tests compare against.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${MTF_PYTHON_VENV:-target/python-venv}
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
export PATH="$PWD/$venv/bin:$PATH"
python -m pip install --quiet --disable-pip-version-check -r python/requirements-dev.txt
CARGO_TARGET_DIR="$PWD/target/python" python -m pip install --quiet --disable-pip-version-check \
  --no-build-isolation --force-reinstall --no-deps ./python
python -m pytest -q python/tests "$@"

"""Shared helpers: the repository root (configs live there) and the `mtf` binary."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = str(ROOT / "configs/quickstart.toml")
# One of each world and action kind: a thesis scenario, the thesis code's preset, an auction.
CONFIGS = {
    "quickstart": QUICKSTART,
    "thesis-w124-mmpp": str(ROOT / "configs/thesis/w124-mmpp.toml"),
    "thesis-code": str(ROOT / "configs/thesis-code.toml"),
    "second-price": str(ROOT / "configs/auctions/second-price.toml"),
}


@pytest.fixture(scope="session")
def mtf_bin() -> str:
    """The `mtf` binary: $MTF_BIN (cargo test sets it), else target/release/mtf."""
    path = os.environ.get("MTF_BIN") or str(ROOT / "target/release/mtf")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no mtf binary at {path}: build it (cargo build --release) or set MTF_BIN")
    return path


def run_json(cmd: list[str], stdin: str | None = None) -> dict:
    out = subprocess.run(cmd, input=stdin, capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)

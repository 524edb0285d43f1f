#!/usr/bin/env bash
# Regenerate the thesis's chapter 5 evaluation with this harness (SPEC 6):
# runs/reproduce-thesis-<timestamp>/index.md shows every figure and table next to the thesis's
# claim.  Usage: scripts/reproduce-thesis.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p agents --bin mtf
exec target/release/mtf reproduce thesis "$@"

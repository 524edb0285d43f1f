#!/usr/bin/env bash
# Regenerate every number and figure the READMEs show (about 7 minutes on 2 cores):
#
#   scripts/docs-figures.sh [--clean-build | --build-only]
#
# The main job's quickstart run, its comparison with the fixed thresholds (16 seeds), `mtf
# analyze` on the quickstart and on w128-mmpp at load 0.8, and `mtf reproduce thesis --quick`,
# into runs/docs/; then docs/figures/*.png from them, docs/figures/numbers.json (every quoted
# number, with the machine and its load) and the <!--n:KEY-->...<!--/n--> spans of README.md
# and agents/README.md (scripts/docs_numbers.py). agents/tests/docs.rs checks that the spans
# equal numbers.json and that every figure the docs link exists, so a change that moves a
# number fails until this script is rerun. Timings depend on the machine and its load: run it
# on an otherwise idle machine. --clean-build also times a clean clone's two README commands'
# builds (about 12 more minutes) from an empty cargo home, so the crates' downloads count as on
# a fresh machine; without it those figures are carried from the last run. --build-only times
# only that build and refreshes the numbers from the runs already in runs/docs/.
# docs/market.md comes from scripts/market-report.sh, run at the end.
# The learners' table comes from scripts/learners-report.sh (1 h 40 min), not rerun here.
set -euo pipefail
case "${1:-}" in
  "" | --clean-build | --build-only) ;;
  *) echo "docs-figures: unknown option ${1}: expected --clean-build or --build-only" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
M=target/release/mtf
R=runs/docs
now() { date +%s.%N; }
clean_build() {
  tmp=$(mktemp -d)
  git clone -q . "$tmp/main"
  ln -s "$(cd .. && pwd)/shared" "$tmp/shared"
  # An empty cargo home: the crates are downloaded as on a fresh machine (the toolchain is
  # rustup's, outside it).
  export CARGO_HOME="$tmp/cargo-home"
  b0=$(now)
  (cd "$tmp/main" && cargo build --release -q -p agents --bin mtf)
  b1=$(now)
  (cd "$tmp/main" && cargo test --release --workspace --locked --no-run -q 2>/dev/null)
  unset CARGO_HOME
  b2=$(now)
  mb=$(du -sm "$tmp/main/target" | cut -f1)
  # The Python tests' virtualenv as their first run makes it (scripts/python-tests.sh), without
  # pip's cache so every package is downloaded.
  python3 -m venv "$tmp/venv"
  "$tmp/venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
    -r python/requirements-dev.txt
  b3=$(now)
  venv_gb=$(du -sm "$tmp/venv" | awk '{printf "%.1f", $1 / 1024}')
  python3 -c "import json,sys; json.dump({'main_seconds': '%.0f s' % ($b1-$b0), 'tests_seconds': '%.0f s' % ($b2-$b1), 'target_mb': '$mb MB', 'python_venv_seconds': '%.0f s' % ($b3-$b2), 'python_venv_gb': '$venv_gb GB'}, open('$R/build.json','w'))"
  rm -rf "$tmp"
}

if [ "${1:-}" = "--build-only" ]; then
  [ -f "$R/timings.json" ] || { echo "docs-figures: --build-only needs the runs of a full run in $R" >&2; exit 2; }
  clean_build
  python3 scripts/docs_numbers.py "$R"
  exit 0
fi
cargo build --release -q -p agents --bin mtf --bin mtf-agent
rm -rf "$R"
mkdir -p "$R" docs/figures
t0=$(now)
$M train --config configs/quickstart.toml --out "$R/quickstart" --quiet >/dev/null
t1=$(now)
$M compare --config configs/quickstart.toml --policies fixed:all,run:$R/quickstart --seeds 16 \
  --out "$R/compare" --quiet >/dev/null
t2=$(now)
$M analyze --config configs/quickstart.toml --run "$R/quickstart" --out "$R/analyze-quickstart" --quiet >/dev/null
t3=$(now)
$M analyze --config configs/thesis/w128-mmpp.toml --set 'env.agents.*.load=0.8' \
  --out "$R/analyze-w128" --quiet >/dev/null
t4=$(now)
$M reproduce thesis --quick --out "$R/thesis" --quiet >/dev/null
t5=$(now)
# README's learning line (agents/tests/cli_train.rs runs it verbatim and checks the quote).
$M train --config configs/quickstart.toml --set env.reward=welfare --set train.episodes=200 --replicates 3 \
  --out "$R/learns" --quiet >/dev/null
t6=$(now)
cp "$R/compare/welfare_paired.png" docs/figures/compare-quickstart-paired.png
cp "$R/analyze-quickstart/headroom.png" docs/figures/analyze-quickstart-headroom.png
cp "$R/analyze-quickstart/learning.png" docs/figures/analyze-quickstart-learning.png
if [ "${1:-}" = "--clean-build" ]; then
  clean_build
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
load=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$R" "$t0" "$t1" "$t2" "$t3" "$t4" "$t5" "$t6" "$cpu" "$(nproc)" "$load" <<'PY'
import json, sys
r, t0, t1, t2, t3, t4, t5, t6, cpu, cores, load = sys.argv[1:]
t = [float(x) for x in (t0, t1, t2, t3, t4, t5, t6)]
json.dump({
    "train": t[1] - t[0], "compare": t[2] - t[1], "analyze_quickstart": t[3] - t[2],
    "analyze_w128": t[4] - t[3], "thesis_quick": t[5] - t[4], "learns": t[6] - t[5],
    "machine": f"{cpu}, {cores} cores, load average {load} after the runs",
}, open(f"{r}/timings.json", "w"), indent=1)
PY
python3 scripts/docs_numbers.py "$R"
# The market world's page (docs/market.md, its figures): a few seconds.
scripts/market-report.sh

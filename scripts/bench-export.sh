#!/usr/bin/env bash
# Exported agent speed and size: trains a small quickstart run (actor-critic, SPEC defaults:
# 256 hidden units), exports agent 0, feeds it N observations on one core and reports
# observations per second and the file size.  Usage: scripts/bench-export.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200000}
cargo build --release -q -p agents
dir=$(mktemp -d)
target/release/mtf train --config configs/quickstart.toml --quiet --out "$dir/run" --set train.episodes=2 --set train.eval_seeds=1 > /dev/null
target/release/mtf export --run "$dir/run" --out "$dir/agent" --agent 0 > /dev/null
python3 - "$n" > "$dir/obs.jsonl" <<'PY'
import json, random, sys
random.seed(1)
for _ in range(int(sys.argv[1])):
    print(json.dumps({"budget": round(random.random() * 0.3, 6), "utilities": [round(random.random(), 6) for _ in range(16)]}))
PY
start=$(date +%s.%N)
taskset -c 0 "$dir/agent" < "$dir/obs.jsonl" > "$dir/out.jsonl"
end=$(date +%s.%N)
lines=$(wc -l < "$dir/out.jsonl")
python3 -c "import sys; s=$end-$start; print(f'{$lines} observations in {s:.2f} s on one core: {$lines/s:,.0f} per second')"
echo "exported agent file: $(stat -c %s "$dir/agent") bytes (runtime $(stat -c %s target/release/mtf-agent) bytes)"
rm -rf "$dir"

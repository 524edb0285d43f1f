#!/usr/bin/env bash
# Does the model discriminate? Welfare (jobs/round, mean +- 95% CI over seeds) for MTF with every
# fixed threshold and for round robin, stride and max-throughput, on the equal-weight and the
# 1/2/4-weight thesis scenarios, Poisson and mmpp arrivals, at one queue load.
# Usage: scripts/discrimination.sh [LOAD] [SEEDS]   (defaults 0.9 and 8)
set -euo pipefail
cd "$(dirname "$0")/.."
load=${1:-0.9}
seeds=${2:-8}
cargo build --release -q -p agents --bin mtf
out=$(mktemp -d)
configs="equal equal-mmpp w124 w124-mmpp"
rows="fixed:0.0 fixed:0.1 fixed:0.2 fixed:0.3 fixed:0.4 fixed:0.5 fixed:0.6 fixed:0.7 fixed:0.8 fixed:0.9 round_robin stride max_throughput"
for c in $configs; do
  for r in $rows; do
    if [[ $r == fixed:* ]]; then args=(--policy "$r"); else args=(--mechanism "$r"); fi
    target/release/mtf simulate --config "configs/thesis/$c.toml" --set "env.agents.*.load=$load" \
      --seeds "$seeds" --json --out "$out/$c-${r/:/_}" "${args[@]}" > "$out/$c-${r/:/_}.json"
  done
done
python3 - "$out" "$load" "$seeds" <<'PY'
import json, sys, os
out, load, seeds = sys.argv[1], sys.argv[2], sys.argv[3]
configs = ["equal", "equal-mmpp", "w124", "w124-mmpp"]
rows = ["fixed:0.%d" % k for k in range(10)] + ["round_robin", "stride", "max_throughput"]
print(f"Welfare (jobs/round), load {load}, {seeds} seeds, 300 rounds, mean +- 95% CI; dropped+rejected jobs/round in brackets")
print()
print("| policy / mechanism | " + " | ".join(configs) + " |")
print("|---|" + "---:|" * len(configs))
for r in rows:
    cells = []
    for c in configs:
        s = json.load(open(os.path.join(out, f"{c}-{r.replace(':', '_')}.json")))
        lost = s["dropped"]["mean"] + s["rejected"]["mean"]
        cells.append("%.2f +- %.2f [%.1f]" % (s["welfare"]["mean"], s["welfare"]["ci95"], lost))
    name = ("mtf " + r) if r.startswith("fixed") else r
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
rm -rf "$out"

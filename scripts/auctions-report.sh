#!/usr/bin/env bash
# Auctions with learned bids next to MTF with learned and fixed thresholds (SPEC 8, issue 13):
# for the quickstart and one thesis scenario, train the actor-critic under mtf, second_price and
# first_price, then compare every trained policy under its own mechanism with the fixed levels
# and stride on the same seeds. Prints the welfare rows; the run directories stay in OUT.
# Usage: scripts/auctions-report.sh [OUT] [EPISODES]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/auctions-report}
episodes=${2:-}
cargo build --release -q -p agents --bin mtf
mtf=target/release/mtf
mkdir -p "$out"
for config in configs/quickstart.toml configs/thesis/w124-mmpp.toml; do
  name=$(basename "$config" .toml)
  extra=()
  [ -n "$episodes" ] && extra=(--set "train.episodes=$episodes")
  [ "$name" = w124-mmpp ] && extra+=(--set 'env.agents.*.load=0.8' --set learner.kind=\"actor_critic\" --set train.episodes="${episodes:-60}" --set train.eval_seeds=8)
  for mech in mtf second_price first_price; do
    [ -d "$out/$name-$mech" ] || "$mtf" train --config "$config" --quiet --out "$out/$name-$mech" \
      --set "mechanism.name=\"$mech\"" "${extra[@]}" > /dev/null
  done
  rm -rf "$out/$name-compare"
  load=()
  [ "$name" = w124-mmpp ] && load=(--set 'env.agents.*.load=0.8')
  for mech in mtf second_price first_price; do
    "$mtf" compare --config "$config" --mechanisms "$mech" --seeds 16 --quiet --json "${load[@]}" \
      --policies "fixed:0.0,fixed:0.5,fixed:0.9,run:$out/$name-$mech" --out "$out/$name-compare-$mech" > "$out/$name-compare-$mech.json"
  done
  "$mtf" compare --config "$config" --mechanisms stride --seeds 16 --quiet --json "${load[@]}" \
    --policies fixed:0.0 --out "$out/$name-compare-stride" > "$out/$name-compare-stride.json"
  python3 - "$out" "$name" <<'PY'
import json, sys
out, name = sys.argv[1], sys.argv[2]
print(f"## {name} (16 seeds, welfare in jobs/round, mean +- 95% CI)")
for mech in ["mtf", "second_price", "first_price", "stride"]:
    v = json.load(open(f"{out}/{name}-compare-{mech}.json"))
    for r in v["rows"]:
        pol = "learned (actor-critic)" if r["policy"].startswith("run:") else r["policy"]
        w = r["summary"]["welfare"]
        print(f"| {mech} | {pol} | {w['mean']:.2f} +- {w['ci95']:.2f} |")
PY
done

#!/usr/bin/env bash
# The numbers a behaviour-preserving change must leave bit-identical, from one mtf binary:
# mtf simulate --json (MTF, Hedge online, the valuation world), a 2-episode training run of every
# learner (ES included) (and PPO with difference rewards, and in the valuation world), mtf analyze on the
# trained PPO run and mtf compare of trained runs; every learner 2 episodes on Gavel's small
# cluster and the market's duel; timings and paths stripped.
#
#   scripts/fingerprint.sh OLD_BUILD/mtf /tmp/before     # e.g. a copy of target/release/mtf
#   scripts/fingerprint.sh target/release/mtf /tmp/after
#   scripts/fingerprint.sh --compare /tmp/before /tmp/after   # "identical", or exit 1 naming files
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--compare" ]; then
    status=0
    for f in "$2"/*.json "$2"/*.metrics; do
        cmp -s "$f" "$3/$(basename "$f")" || { echo "differs: $(basename "$f")"; status=1; }
    done
    [ $status = 0 ] && echo "identical"
    exit $status
fi
MTF=$(realpath "$1"); OUT=$(realpath -m "$2"); rm -rf "$OUT"; mkdir -p "$OUT"
Q=configs/quickstart.toml
strip='import json,sys
d=json.load(sys.stdin)
drop={"sched_us","dir","run_dir","train_seconds","agent_updates_per_second","agent_steps_per_second","wall_time","plots","figures"}
def s(x):
  if isinstance(x,dict): return {k:s(v) for k,v in x.items() if k not in drop}
  if isinstance(x,list): return [s(v) for v in x]
  return x
print(json.dumps(s(d),sort_keys=True))'
lines='import json,sys
for l in sys.stdin:
  if l.strip():
    d=json.loads(l); d.pop("wall_time",None); print(json.dumps(d,sort_keys=True))'
"$MTF" simulate --config $Q --seeds 4 --json --out "$OUT/sim" | python3 -c "$strip" > "$OUT/simulate.json"
"$MTF" simulate --config $Q --policy hedge --seeds 2 --json --out "$OUT/simh" | python3 -c "$strip" > "$OUT/simulate-hedge.json"
"$MTF" simulate --config configs/auctions/first-price.toml --policy fixed:0.75 --seeds 2 --json --out "$OUT/sima" | python3 -c "$strip" > "$OUT/simulate-auction.json"
for k in fixed hedge actor_critic ppo es; do
    "$MTF" train --config $Q --set learner.kind=$k --set train.episodes=2 --set train.eval_seeds=2 --quiet --json \
        --out "$OUT/train-$k" | python3 -c "$strip" > "$OUT/train-$k.json"
    python3 -c "$lines" < "$OUT/train-$k/metrics.jsonl" > "$OUT/train-$k.metrics"
done
"$MTF" train --config $Q --set learner.kind=ppo --set train.envs=2 --set learner.reward=difference --set train.episodes=2 \
    --set train.eval_seeds=2 --quiet --json --out "$OUT/train-ppo-diff" | python3 -c "$strip" > "$OUT/train-ppo-diff.json"
"$MTF" train --config configs/auctions/first-price.toml --set train.episodes=2 --set train.eval_seeds=2 --quiet --json \
    --out "$OUT/train-auction" | python3 -c "$strip" > "$OUT/train-auction.json"
"$MTF" analyze --config $Q --run "$OUT/train-ppo" --seeds 2 --select-seeds 1 --tokens 100 --json --quiet --out "$OUT/an" \
    | python3 -c "$strip" > "$OUT/analyze.json"
"$MTF" compare --config $Q --policies "fixed:0.2,run:$OUT/train-actor_critic,sampled:run:$OUT/train-ppo" --mechanisms mtf,stride \
    --seeds 2 --json --out "$OUT/cmp" | python3 -c "$strip" > "$OUT/compare.json"
# The worlds behind the seam (Gavel's small cluster) and the market's learners: every learner
# trained 2 episodes (ES: generations), its run compared with a fixed level.
for k in es ppo actor_critic hedge fixed uniform; do
    "$MTF" train --config configs/gavel/small.toml --set learner.kind=$k --set train.episodes=2 --set train.eval_seeds=2 \
        --quiet --json --out "$OUT/gavel-$k" | python3 -c "$strip" > "$OUT/gavel-$k.json"
    # Fixed and uniform train nothing: no metrics.
    if [ -f "$OUT/gavel-$k/metrics.jsonl" ]; then
        python3 -c "$lines" < "$OUT/gavel-$k/metrics.jsonl" > "$OUT/gavel-$k.metrics"
    fi
done
"$MTF" compare --config configs/gavel/small.toml --policies "fixed:all,run:$OUT/gavel-ppo,run:$OUT/gavel-actor_critic" \
    --seeds 2 --json --out "$OUT/gcmp" | python3 -c "$strip" > "$OUT/gavel-compare.json"
for k in hedge ppo es; do
    "$MTF" train --config configs/market/duel.toml --set learner.kind=\"$k\" --set train.episodes=3 --set train.replicates=1 \
        --quiet --json --out "$OUT/market-$k" | python3 -c "$strip" > "$OUT/market-$k.json"
done
sed -i "s@$OUT/@OUT/@g" "$OUT"/*.json "$OUT"/*.metrics
echo "fingerprint in $OUT"

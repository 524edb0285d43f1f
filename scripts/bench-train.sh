#!/usr/bin/env bash
# Training speed at 20 agents x 40 accelerators x 300 rounds (the 1/2/4-weight mmpp thesis
# scenario at load 0.8): seconds per episode and agent-updates per second, for the
# actor-critic (SPEC 4 defaults), PPO (defaults, one environment) and Hedge; then Hedge in the valuation world of SPEC 8.
# Usage: scripts/bench-train.sh [EPISODES]
set -euo pipefail
cd "$(dirname "$0")/.."
episodes=${1:-5}
cargo build --release -q -p agents --bin mtf
for learner in actor_critic ppo hedge; do
  out=$(mktemp -d)
  target/release/mtf train --config configs/thesis/w124-mmpp.toml --quiet --out "$out/run" \
    --set "learner.kind=$learner" --set "train.episodes=$episodes" --set train.eval_seeds=1 \
    --set 'env.agents.*.load=0.8' > /dev/null
  python3 - "$out/run" "$learner" <<'PY'
import json, sys, statistics
run, learner = sys.argv[1], sys.argv[2]
eps = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
times = [e["wall_time"] for e in eps]
s = json.load(open(f"{run}/summary.json"))
steps = 20 * 300 * len(times) / sum(times)
print(f"{learner}: median {statistics.median(times):.3f} s per episode (min {min(times):.3f}, max {max(times):.3f}) over {len(times)} episodes; {steps:.0f} agent-steps/s of training (acting, stepping, learning); {s['agent_updates_per_second']:.0f} agent-updates/s")
PY
  rm -rf "$out"
done
# The valuation world (SPEC 8): Hedge learners, 4 bidders x 8 items x 3000 rounds per episode.
for config in configs/auctions/second-price.toml configs/auctions/first-price.toml; do
  out=$(mktemp -d)
  target/release/mtf train --config "$config" --quiet --out "$out/run" --set "train.episodes=$episodes" --set train.eval_seeds=1 > /dev/null
  python3 - "$out/run" "$config" <<'PY'
import json, sys, statistics
run, config = sys.argv[1], sys.argv[2]
times = [json.loads(l)["wall_time"] for l in open(f"{run}/metrics.jsonl")]
print(f"hedge, {config}: median {statistics.median(times):.3f} s per 3000-round episode (min {min(times):.3f}, max {max(times):.3f})")
PY
  rm -rf "$out"
done

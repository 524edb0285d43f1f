#!/usr/bin/env bash
# A by_type policy moved between cluster sizes: PPO with shared class actors reading the
# by_type block, trained (3 replicates each) on the quickstart's mix at 20 x 40 and at
# 1,000 x 4,000 (12.5 tokens per agent, 100-round episodes), then compared at 1,000 x 4,000
# with every fixed level on the same seeds (`mtf compare`; a run group is every replicate).
# Prints the welfare of the best fixed level, and of each trained group (mean over its
# replicates, 95% CI over replicates), greedy and sampled; writes runs under $OUT (default
# runs/transfer).
# Usage: scripts/transfer-report.sh   (SMALL_EPISODES, LARGE_EPISODES, SEEDS override the sizes)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-runs/transfer}
small_episodes=${SMALL_EPISODES:-200}
large_episodes=${LARGE_EPISODES:-6}
seeds=${SEEDS:-2}
cargo build --release -q -p agents --bin mtf
mkdir -p "$out"
size() {
  echo --set "env.agents.0.count=$(($1 / 2))" --set "env.agents.1.count=$(($1 / 4))" --set "env.agents.2.count=$(($1 / 4))" \
    --set "env.cluster.0.count=$(($2 / 2))" --set "env.cluster.1.count=$(($2 / 2))" \
    --set "mechanism.total_tokens=$(python3 -c "print(12.5 * $1)")" --set env.rounds=100
}
learner=(--set learner.kind=ppo --set 'learner.ppo.features="by_type"' --set 'learner.ppo.share="class"' --set train.eval_seeds=1)
rm -rf "$out/small" "$out/large" "$out/compare"
# shellcheck disable=SC2046
target/release/mtf train --config configs/quickstart.toml --quiet --out "$out/small" $(size 20 40) "${learner[@]}" \
  --set "train.episodes=$small_episodes" --set train.envs=8 --replicates 3 --threads 2 > /dev/null
# shellcheck disable=SC2046
target/release/mtf train --config configs/quickstart.toml --quiet --out "$out/large" $(size 1000 4000) "${learner[@]}" \
  --set "train.episodes=$large_episodes" --set train.envs=2 --replicates 3 --threads 2 > /dev/null
# shellcheck disable=SC2046
target/release/mtf compare --config configs/quickstart.toml --quiet --json --out "$out/compare" $(size 1000 4000) \
  --policies "fixed:all,run:$out/small,run:$out/large" --seeds "$seeds" --threads 2 > "$out/compare.json"
python3 - "$out" "$small_episodes" "$large_episodes" "$seeds" <<'PY'
import json, math, os, statistics, sys
out, small_eps, large_eps, seeds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = json.load(open(f"{out}/compare.json"))
rows = {r["policy"]: r["summary"]["welfare"]["mean"] for r in d["rows"]}
fixed = {p: w for p, w in rows.items() if p.startswith("fixed:")}
best = max(fixed, key=fixed.get)
def group(prefix):
    ws = [w for p, w in rows.items() if p.startswith(prefix)]
    m = statistics.mean(ws)
    ci = 1.96 * statistics.stdev(ws) / math.sqrt(len(ws)) if len(ws) > 1 else float("nan")
    return m, ci, len(ws)
print(f"At 1,000 x 4,000 (quickstart mix, 100 rounds, {seeds} seeds; welfare in jobs/round):\n")
print("| policy | welfare | vs best fixed |")
print("|---|---:|---:|")
print(f"| best fixed level ({best}) | {fixed[best]:.2f} | - |")
worst = min(fixed, key=fixed.get)
print(f"| worst fixed level ({worst}) | {fixed[worst]:.2f} | {fixed[worst] - fixed[best]:+.2f} |")
for name, eps, size in [("small", small_eps, "20 x 40"), ("large", large_eps, "1,000 x 4,000")]:
    for kind, prefix in [("greedy", f"run:{out}/{name}/"), ("sampled", f"sampled:run:{out}/{name}/")]:
        m, ci, k = group(prefix)
        print(f"| PPO by_type trained at {size} ({eps} episodes), {kind}, {k} replicates | {m:.2f} +- {ci:.2f} | {m - fixed[best]:+.2f} |")
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"\nMachine: {cpu}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} after the runs.")
PY

#!/usr/bin/env bash
# Neocloud scale: the quickstart's mix (half the agents weight 1, a quarter each weights 2 and 4;
# half the accelerators of each Gemmini type; 12.5 tokens per agent) at 20 x 40, 200 x 800,
# 1,000 x 4,000 and 5,000 x 20,000.
#
# simulate (env/benches/scale.rs, one thread, one 300-round episode at threshold 0.5, one
#   process per size): per round the mechanism, the rest of the environment's round and the
#   episode's metrics (fairness included; envy pairs sampled above 1,000 agents), the episode's
#   wall time and peak memory.
# train (mtf train, PPO with shared class actors reading the by_type block, train.envs = 2,
#   --threads 2, 100-round episodes; not at 5,000 x 20,000): agent-steps per second of training
#   (acting, stepping, learning; the median episode) and peak memory.
#
# Prints both tables (markdown), then how each cost grows per unit of work between sizes, and
# writes the raw figures to $OUT (default runs/bench-scale) as JSON lines.
# Usage: scripts/bench-scale.sh [--quick]   (--quick: the three smaller sizes, 60 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-runs/bench-scale}
rounds=300
sizes=("20 40" "200 800" "1000 4000" "5000 20000")
train_sizes=("20 40" "200 800" "1000 4000")
if [ "${1:-}" = "--quick" ]; then
  rounds=60
  sizes=("20 40" "200 800" "1000 4000")
fi
episodes=${EPISODES:-3}
mkdir -p "$out"
: > "$out/simulate.jsonl"
: > "$out/train.jsonl"
cargo build --release -q -p agents --bin mtf
bench=$(cargo bench -q -p env --bench scale --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "scale" and m.get("executable"):
        print(m["executable"])')
for size in "${sizes[@]}"; do
  set -- $size
  "$bench" "$1" "$2" "$rounds" >> "$out/simulate.jsonl"
done
for size in "${train_sizes[@]}"; do
  set -- $size
  run="$out/train-$1x$2"
  rm -rf "$run"
  peak=$( { /usr/bin/time -f "%M" target/release/mtf train --config configs/quickstart.toml --quiet --out "$run" \
      --set "env.agents.0.count=$(($1 / 2))" --set "env.agents.1.count=$(($1 / 4))" --set "env.agents.2.count=$(($1 / 4))" \
      --set "env.cluster.0.count=$(($2 / 2))" --set "env.cluster.1.count=$(($2 / 2))" \
      --set "mechanism.total_tokens=$(python3 -c "print(12.5 * $1)")" --set env.rounds=100 \
      --set learner.kind=ppo --set 'learner.ppo.features="by_type"' --set 'learner.ppo.share="class"' \
      --set train.envs=2 --set "train.episodes=$episodes" --set train.eval_seeds=1 --threads 2 > /dev/null; } 2>&1 | tail -1)
  python3 - "$run" "$1" "$2" "$peak" >> "$out/train.jsonl" <<'PY'
import json, statistics, sys
run, n, m, peak = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
times = [json.loads(l)["wall_time"] for l in open(f"{run}/metrics.jsonl")]
med = statistics.median(times)
print(json.dumps({"n": n, "m": m, "rounds": 100, "copies": 2, "episode_s": med,
                  "agent_steps_per_s": n * 100 * 2 / med, "peak_mib": peak / 1024}))
PY
done
python3 - "$out" <<'PY'
import json, os, platform, sys
out = sys.argv[1]
sim = [json.loads(l) for l in open(f"{out}/simulate.jsonl")]
train = {(t["n"], t["m"]): t for t in map(json.loads, open(f"{out}/train.jsonl"))}
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.processor())
print(f"Machine: {cpu}, {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} after the runs.\n")
print("| n x m | mechanism ms/round | environment ms/round | metrics ms/round | simulate episode s | simulate peak MiB | train agent-steps/s | train peak MiB |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for s in sim:
    t = train.get((s["n"], s["m"]))
    tr = (f"{t['agent_steps_per_s']:,.0f} | {t['peak_mib']:,.0f}") if t else "- | -"
    print(f"| {s['n']:,} x {s['m']:,} | {s['mechanism_ms_per_round']:.3f} | {s['environment_ms_per_round']:.3f} | "
          f"{s['metrics_ms_per_round']:.3f} | {s['episode_s']:.1f} | {s['peak_mib']:,.0f} | {tr} |")
print("\nGrowth from each size to the next, per unit of work (1.00 = linear): mechanism and metrics per cell "
      "(n x m x rounds), environment per cell, training per agent-step, memory per cell.")
print("| from -> to | cells | mechanism | environment | metrics | training (s per agent-step) | simulate memory |")
print("|---|---:|---:|---:|---:|---:|---:|")
for a, b in zip(sim, sim[1:]):
    cells = (b["n"] * b["m"]) / (a["n"] * a["m"])
    per = lambda k: (b[k] / a[k]) / cells
    ta, tb = train.get((a["n"], a["m"])), train.get((b["n"], b["m"]))
    tr = f"{(ta['agent_steps_per_s'] / tb['agent_steps_per_s']):.2f}" if ta and tb else "-"
    print(f"| {a['n']}x{a['m']} -> {b['n']}x{b['m']} | {cells:.0f}x | {per('mechanism_ms_per_round'):.2f} | "
          f"{per('environment_ms_per_round'):.2f} | {per('metrics_ms_per_round'):.2f} | {tr} | {per('peak_mib'):.2f} |")
PY

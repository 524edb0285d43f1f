#!/usr/bin/env bash
# Uniform random play as a floor (issue 41: "no learner below uniform random play, sampled, on
# any shipped scenario"): every queue-world scenario shipped in configs/ (the quickstart, the
# thesis code's preset and the 14 of configs/thesis/), each learner trained with the shared
# welfare reward at the scenario's own training budget (its train.episodes; 50 when it sets
# none) over REPLICATES training replicates, scored as trained (sampled) against uniform random
# play and against the best fixed level on 16 held-out seeds (`mtf train`'s own summary).
# Under own rewards uniform play is no floor: the selfish equilibrium can sit below it by the
# game's design (agents/README.md), so this report uses the welfare reward.
#
# Writes OUT/table.md and OUT/results.json; the run groups stay in OUT and are reused when
# they exist (delete OUT to start over).
# Usage: scripts/floor-report.sh [OUT] [REPLICATES]
# LEARNERS (space-separated; default "actor_critic ppo es") and CONFIGS (paths) restrict it;
# MTF=PATH runs that binary instead of building target/release/mtf.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/floor-report}
replicates=${2:-3}
if ! [ "$replicates" -ge 2 ] 2>/dev/null; then
  # One replicate is a single run, whose summary has no comparison over replicates.
  echo "floor-report.sh: REPLICATES must be a whole number >= 2, got '$replicates'" >&2
  exit 2
fi
source scripts/lib.sh
mtf=$(mtf_binary)
mkdir -p "$out"
machine > "$out/machine.txt"
read -r -a learners <<< "${LEARNERS:-actor_critic ppo es}"
read -r -a configs <<< "${CONFIGS:-configs/quickstart.toml configs/thesis-code.toml $(ls configs/thesis/*.toml | tr '\n' ' ')}"

for config in "${configs[@]}"; do
  world=$(basename "$config" .toml)
  for learner in "${learners[@]}"; do
    dir="$out/$world-$learner"
    [ -f "$dir/summary.json" ] && continue
    rm -rf "$dir"
    echo "training $world / $learner ($replicates replicates)" >&2
    start=$(date +%s.%N)
    started=$(machine)
    "$mtf" train --config "$config" --set "learner.kind=$learner" --set env.reward=welfare \
      --set train.eval_seeds=16 --replicates "$replicates" --threads 2 --quiet --out "$dir" > /dev/null
    python3 -c "print($(date +%s.%N) - $start)" > "$dir/wall_seconds.txt"
    # The load when this group started (the report's own machine.txt is rewritten each call).
    echo "$started" > "$dir/machine.txt"
  done
done

python3 - "$out" "${configs[@]}" <<'PY'
import json, os, sys, tomllib
out, configs = sys.argv[1], sys.argv[2:]
# Three decimals: in most thesis scenarios every policy ties to a thousandth of a job.
fmt = lambda r: f"{r['iqm']:+.3f} [{r['iqm_ci'][0]:+.3f}, {r['iqm_ci'][1]:+.3f}]; {r['prob_improvement']:.2f}"
lines = ["| scenario | learner | as trained − uniform play: IQM [95% CI]; P(>) | as trained − best fixed | episodes | training (s) |",
         "|---|---|---|---|---|---|"]
results, below = [], []
for config in configs:
    world = os.path.basename(config)[:-5]
    for name in sorted(os.listdir(out)):
        d = os.path.join(out, name)
        if not name.startswith(world + "-") or not os.path.exists(f"{d}/summary.json"):
            continue
        learner = name[len(world) + 1:]
        if "-" in learner:
            continue
        s = json.load(open(f"{d}/summary.json"))
        episodes = tomllib.load(open(f"{d}/config.toml", "rb"))["train"]["episodes"]
        seconds = float(open(f"{d}/wall_seconds.txt").read())
        vu, vb = s["vs_uniform"], s["vs_baseline"]["sampled"]
        results.append({"scenario": world, "config": config, "learner": learner, "vs_uniform": vu, "vs_best_fixed": vb,
                        "baseline": s["baseline"]["policy"], "seconds": seconds,
                        "machine": open(f"{d}/machine.txt").read().strip() if os.path.exists(f"{d}/machine.txt") else None})
        if vu["iqm_ci"][1] < 0:
            uw = s["uniform_welfare"]["mean"]
            below.append(f"{world}/{learner} ({vu['iqm']:+.4f}, {100 * vu['iqm'] / uw:+.4f}% of uniform play's welfare)")
        lines.append(f"| {world} | {learner} | {fmt(vu)} | {fmt(vb)} | {episodes} | {seconds:.0f} |")
machine = open(f"{out}/machine.txt").read().strip()
lines += ["", f"{len(results)} rows; below uniform play (the whole CI under 0): {', '.join(below) if below else 'none'}.",
          f"Welfare in jobs per round, welfare reward, 16 held-out seeds; machine when this table was written: {machine} (each group's own in results.json, for groups trained since it is recorded)."]
open(f"{out}/table.md", "w").write("\n".join(lines) + "\n")
json.dump({"machine": machine, "rows": results, "below": below}, open(f"{out}/results.json", "w"), indent=1)
print("\n".join(lines))
PY

#!/usr/bin/env bash
# A gradient learner's MTF thresholds on Gavel's contended workload (configs/gavel/learn.toml),
# next to ES's, every fixed threshold, uniform play and Gavel's LAS (heterogeneity-aware and
# agnostic), on the 16 held-out seeds docs/gavel.md section 3 uses, paired against aware LAS.
# (Until 2026-11-27 this was scripts/gavel-ppo-report.sh, PPO only.)
#
# LEARNER (default ppo; or actor_critic, the thesis's) is pooled here (one actor and one critic
# shared by every job, trained on the samples of the jobs present each round; Ppo::pooled,
# ActorCritic::pooled), 3 training replicates of 50 episodes (EPISODES), each 8 copies of one
# seed (group-relative advantages): 400 copy-episodes against ES's 3,200 (100 generations of 32).
#
# Usage: [LEARNER=actor_critic] [EPISODES=N] [SETS='env.reward="welfare"'] scripts/gavel-learner-report.sh [OUT] [ES_GROUP]
#   SETS: more --set overrides for the training (space-separated), e.g. the welfare reward;
#   OUT (default runs/gavel-LEARNER): the learner's run group, trained when it has no summary.json;
#   ES_GROUP (default runs/gavel-report/learn, what scripts/gavel-report.sh trains): ES's
#   replicates, compared when present.
# Writes OUT/report.md and OUT/compare.json; MTF=PATH runs that binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
M=$(mtf_binary)
L=${LEARNER:-ppo}
OUT=${1:-runs/gavel-$L}
ES=${2:-runs/gavel-report/learn}
C=configs/gavel/learn.toml
machine > "$OUT.machine.txt" 2>/dev/null || true
T0=$(date +%s)
if [ -d "$OUT" ] && [ ! -f "$OUT/summary.json" ]; then
  "$M" train --resume "$OUT" --quiet > /dev/null
elif [ ! -d "$OUT" ]; then
  EXTRA=()
  for s in ${SETS:-}; do EXTRA+=(--set "$s"); done
  "$M" train --config "$C" "${EXTRA[@]}" --set learner.kind=$L --set "train.episodes=${EPISODES:-50}" --replicates 3 --threads 2 \
    --quiet --out "$OUT" > /dev/null
fi
POLICIES="fixed:all,uniform,run:$OUT"
[ -f "$ES/summary.json" ] && POLICIES="$POLICIES,run:$ES"
rm -rf "$OUT-compare"
"$M" compare --config "$C" --policies "$POLICIES" --mechanisms mtf,max_min_fairness_perf,max_min_fairness \
  --seeds 16 --baseline any/max_min_fairness_perf --json --out "$OUT-compare" > "$OUT/compare.json"

python3 - "$OUT" "$ES" "$(( $(date +%s) - T0 ))" "$(machine)" "$L" "${SETS:-}" "${EPISODES:-}" <<'PY'
import json, os, sys
out, es, seconds, machine, learner, sets, episodes = sys.argv[1:8]
how = f"LEARNER={learner}" + (f" EPISODES={episodes}" if episodes else "") + (f" SETS='{sets}'" if sets else "")
name = {"ppo": "PPO", "actor_critic": "the actor-critic", "hedge": "Hedge"}.get(learner, learner)
d = json.load(open(f"{out}/compare.json"))
rows = d["rows"]
def jct(r): return r["eval"]["avg_jct_h"]
lines = [f"# {name[0].upper() + name[1:]}'s learned MTF thresholds on Gavel's contended workload", "",
         f"`{how} scripts/gavel-learner-report.sh` on {machine}, {seconds} s (training included when it ran).",
         "`configs/gavel/learn.toml` (Gavel's generator at 0.6 jobs/h on 4 V100 + 4 P100 + 4 K80, 200 jobs,"
         " jobs 20-179 measured), 16 held-out seeds, paired against Gavel's heterogeneity-aware LAS"
         " (positive: lower average JCT than it).", "",
         "| policy | mechanism | avg JCT (h) | p95 JCT (h) | vs aware LAS (h, + better) |", "|---|---|---:|---:|---:|"]
for j, r in enumerate(rows):
    imp = r["improvement"]
    vs = "baseline" if j == d["baseline"] else f"{imp['mean']:+.2f} ± {imp['ci95']:.2f}"
    lines.append(f"| {r['policy']} | {r['mechanism']} | {jct(r)['mean']:.2f} ± {jct(r)['ci95']:.2f} | "
                 f"{r['eval']['p95_jct_h']['mean']:.1f} | {vs} |")
s = json.load(open(f"{out}/summary.json"))
lines += ["", f"{name[0].upper() + name[1:]} over its {len(s['replicates'])} replicates against the best fixed threshold (chosen on other seeds,"
          f" scored on the held-out ones; positive is better): IQM {s['vs_best_fixed_iqm']:+.3f} h,"
          f" 95% bootstrap CI [{s['vs_best_fixed_ci95'][0]:+.3f}, {s['vs_best_fixed_ci95'][1]:+.3f}],"
          f" {round(s['share_improving'] * len(s['replicates']))} of {len(s['replicates'])} above it."]
if os.path.exists(f"{es}/summary.json"):
    e = json.load(open(f"{es}/summary.json"))
    lines.append(f"ES (`{es}`): IQM {e['vs_best_fixed_iqm']:+.3f} h, CI [{e['vs_best_fixed_ci95'][0]:+.3f},"
                 f" {e['vs_best_fixed_ci95'][1]:+.3f}].")
mean = lambda pre: [jct(r)["mean"] for r in rows if r["policy"].startswith(pre)]
mine = mean(f"run:{os.path.basename(out)}#")
lines.append(f"{name[0].upper() + name[1:]}'s replicates' average JCT: {', '.join(f'{x:.2f}' for x in mine)} h.")
open(f"{out}/report.md", "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY

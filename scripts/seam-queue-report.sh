#!/usr/bin/env bash
# The seam's learners on the queue world (issue 38): a queue-world config trained through the
# seam's commands (`--set env.stack=seam`: PPO and the actor-critic as on the queue world's own
# stack since 2026-12-03, an actor per agent unless shared per class, a critic per agent,
# central under the welfare reward; ES one actor per weight class; Hedge per budget state,
# the queue world's own, since 2026-12-03), each
# learner over REPLICATES training replicates, scored as trained on 16 held-out
# seeds against the best fixed level, uniform play and (own rewards) the selfish equilibrium,
# by `mtf train`'s own group summary. Set beside the queue world's own rows of the learners
# table (agents/README.md), it says what the queue world would lose or gain on the seam today.
#
# Writes OUT/table.md and OUT/results.json; the run groups stay in OUT and are reused when they
# exist (delete OUT to start over).
# Usage: scripts/seam-queue-report.sh [OUT] [REPLICATES]
# CONFIG (default configs/quickstart.toml), REWARD (welfare or utility; default welfare),
# LEARNERS (default "ppo actor_critic es hedge"), THREADS (default 2) and SETS (more --set
# overrides, space-separated) restrict it; MTF=PATH runs that binary instead of building
# target/release/mtf.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/seam-queue-report}
replicates=${2:-5}
if ! [ "$replicates" -ge 2 ] 2>/dev/null; then
  echo "seam-queue-report.sh: REPLICATES must be a whole number >= 2, got '$replicates'" >&2
  exit 2
fi
config=${CONFIG:-configs/quickstart.toml}
reward=${REWARD:-welfare}
case "$reward" in welfare|utility) ;; *) echo "seam-queue-report.sh: REWARD must be welfare or utility, got '$reward'" >&2; exit 2 ;; esac
source scripts/lib.sh
mtf=$(mtf_binary)
mkdir -p "$out"
machine > "$out/machine.txt"
read -r -a learners <<< "${LEARNERS:-ppo actor_critic es hedge}"
read -r -a more <<< "${SETS:-}"
sets=()
for s in "${more[@]}"; do sets+=(--set "$s"); done

world=$(basename "$config" .toml)
for learner in "${learners[@]}"; do
  dir="$out/$world-$reward-$learner"
  [ -f "$dir/summary.json" ] && continue
  rm -rf "$dir"
  echo "training $world / $reward / $learner on the seam ($replicates replicates)" >&2
  start=$(date +%s.%N)
  started=$(machine)
  "$mtf" train --config "$config" --set env.stack=seam --set "env.reward=\"$reward\"" \
    --set "learner.kind=\"$learner\"" --set train.eval_seeds=16 "${sets[@]}" \
    --replicates "$replicates" --threads "${THREADS:-2}" --quiet --out "$dir" > /dev/null
  end=$(date +%s.%N)
  python3 - "$dir" "$start" "$end" "$started" <<'EOF'
import json, sys
d, start, end, started = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
json.dump({"seconds": end - start, "machine": started}, open(f"{d}/timing.json", "w"))
EOF
done

python3 - "$out" "$world" "$reward" "$config" "${SETS:-}" "${learners[@]}" <<'EOF'
import json, os, sys
out, world, reward, config, sets, learners = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]
rows, results = [], {}
def cell(s, key):
    if f"{key}_iqm" not in s:
        return "-"
    lo, hi = s[f"{key}_ci95"]
    return f"{s[f'{key}_iqm']:+.2f} [{lo:+.2f}, {hi:+.2f}]"
for learner in learners:
    d = f"{out}/{world}-{reward}-{learner}"
    s = json.load(open(f"{d}/summary.json"))
    t = json.load(open(f"{d}/timing.json"))
    first = json.load(open(os.path.join(s["replicates"][0], "summary.json")))
    results[learner] = {"group": s, "timing": t, "best_fixed": first["references"]["best_fixed"]}
    above = sum(1 for x in s["vs_best_fixed_per_replicate"] if x > 0)
    rows.append(f"| {world} | {reward} | {learner} | {cell(s, 'vs_best_fixed')}; {above} of {len(s['replicates'])} above | "
                f"{cell(s, 'vs_uniform')} | {cell(s, 'vs_selfish')} | {first['agent_steps']:.2e} | {t['seconds']:.0f} |")
machine = open(f"{out}/machine.txt").read().strip()
table = [
    f"# The seam's learners on the queue world: {config}, {reward} reward",
    "",
    f"`{'SETS=' + repr(sets) + ' ' if sets else ''}scripts/seam-queue-report.sh {out}` (`--set env.stack=seam`; {len(results[learners[0]]['group']['replicates'])} replicates, 16 held-out seeds, scored as trained).",
    "",
    "| world | reward | learner (the seam's) | as trained − best fixed: IQM [95% CI] | − uniform play | − selfish equilibrium | agent-steps per replicate | training (s) |",
    "|---|---|---|---|---|---|---|---|",
    *rows,
    "",
    f"Welfare in jobs per round; the best fixed level {results[learners[0]]['best_fixed']['level']}. Machine: {machine}.",
]
open(f"{out}/table.md", "w").write("\n".join(table) + "\n")
json.dump(results, open(f"{out}/results.json", "w"), indent=1)
print("\n".join(table))
EOF

#!/usr/bin/env bash
# Do a run group's replicates train side by side? A group of 2 replicates of the quickstart
# (EPISODES episodes, held-out evaluation at 2 seeds) timed by wall clock at --threads 1 and
# --threads 2, and the same two replicates as two `mtf train` processes started together
# (one thread each): for each learner, the median over RUNS of wall seconds and of the paired
# ratios against --threads 1 (1.0: no gain from the second thread; 2.0: a perfect one).
#
# STACK=seam times the same groups behind the seam (env.stack = "seam").
#
# Usage: [STACK=seam] scripts/bench-replicates.sh [EPISODES] [RUNS] [LEARNERS]
set -euo pipefail
# A failed run inside $(...) fails the script, not a timing.
shopt -s inherit_errexit
cd "$(dirname "$0")/.."
episodes=${1:-30}
runs=${2:-3}
learners=${3:-"actor_critic ppo es"}
source scripts/lib.sh
mtf=$(mtf_binary)
machine
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
wall() { # wall seconds of a command
  local start end
  start=$(date +%s.%N)
  "$@" > /dev/null
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
common=(train --config configs/quickstart.toml --set "train.episodes=$episodes" --set train.eval_seeds=2 --quiet)
if [ "${STACK:-}" = seam ]; then
  common+=(--set 'env.stack="seam"')
fi
echo "stack: ${STACK:-queue}"
group() { rm -rf "$tmp/g"; "$mtf" "${common[@]}" --set "learner.kind=\"$1\"" --set train.replicates=2 --threads "$2" --out "$tmp/g"; }
apart() {
  rm -rf "$tmp/p0" "$tmp/p1"
  "$mtf" "${common[@]}" --set "learner.kind=\"$1\"" --set train.replicate=0 --threads 1 --out "$tmp/p0" &
  local p0=$!
  "$mtf" "${common[@]}" --set "learner.kind=\"$1\"" --set train.replicate=1 --threads 1 --out "$tmp/p1" &
  local p1=$!
  wait "$p0"
  wait "$p1"
}
for learner in $learners; do
  one=() two=() procs=()
  for _ in $(seq "$runs"); do
    t=$(wall group "$learner" 1)
    one+=("$t")
    t=$(wall group "$learner" 2)
    two+=("$t")
    t=$(wall apart "$learner")
    procs+=("$t")
  done
  python3 - "$learner" "${one[*]}" "${two[*]}" "${procs[*]}" <<'PY'
import statistics, sys
learner = sys.argv[1]
one, two, procs = ([float(x) for x in a.split()] for a in sys.argv[2:5])
med = statistics.median
print(f"{learner}: 2 replicates, --threads 1 {med(one):.1f} s, --threads 2 {med(two):.1f} s "
      f"(speedup {med(o / t for o, t in zip(one, two)):.2f}), two processes {med(procs):.1f} s "
      f"(speedup {med(o / p for o, p in zip(one, procs)):.2f}); median of {len(one)} paired runs")
PY
done

#!/usr/bin/env bash
# Issue 41's speed target: training agent-steps per CPU-second of PPO and the actor-critic with
# today's seed groups (one seed played by a group of 8 copies, learner.*.group = 8) against an
# older mtf at the same copies (OLD: train.envs = 8 seeds, one copy each; e.g. a build of
# 2412f0b, the last commit before the groups). Both train the quickstart (8 agents, 200 rounds)
# for EPISODES episodes on one thread, held-out evaluation at 2 seeds (today's references off);
# each run is timed by the operating system (user + system seconds of the finished process),
# old and new in turn, and the ratio taken pair by pair (the machine's speed drifts).
#
# Usage: scripts/bench-groups.sh OLD_MTF [EPISODES] [RUNS]
# Prints one line per learner: median CPU seconds of each, the agent-steps per CPU-second, and
# the median of the paired ratios new/old (below 1.5 meets the target; below 1 is faster).
set -euo pipefail
cd "$(dirname "$0")/.."
old=$(realpath "$1")
episodes=${2:-20}
runs=${3:-3}
source scripts/lib.sh
new=$(mtf_binary)
machine
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cpu() { # CPU seconds of one training run: cpu OUT BINARY ARGS...
  local out=$1
  shift
  rm -rf "$out"
  /usr/bin/time -f "%U %S" -o "$tmp/time" "$@" --out "$out" --quiet > /dev/null
  awk '{print $1 + $2}' "$tmp/time"
}
common=(train --config configs/quickstart.toml --set "train.episodes=$episodes" --set train.eval_seeds=2 --threads 1)
for learner in actor_critic ppo; do
  new_s=() old_s=()
  for _ in $(seq "$runs"); do
    new_s+=("$(cpu "$tmp/new" "$new" "${common[@]}" --set "learner.kind=\"$learner\"" --set train.references=false)")
    old_s+=("$(cpu "$tmp/old" "$old" "${common[@]}" --set "learner.kind=\"$learner\"" --set train.envs=8)")
  done
  copies=$(python3 -c "import tomllib;c=tomllib.load(open('$tmp/new/config.toml','rb'));print(c['train']['envs']*c['learner']['$learner'].get('group',1))")
  old_copies=$(python3 -c "import tomllib;c=tomllib.load(open('$tmp/old/config.toml','rb'));print(c['train']['envs']*c['learner'].get('$learner',{}).get('group',1))")
  python3 - "$learner" "$episodes" "$copies" "$old_copies" "${new_s[*]}" "${old_s[*]}" <<'PY'
import statistics, sys
learner, episodes, copies, old_copies = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
new = [float(x) for x in sys.argv[5].split()]
old = [float(x) for x in sys.argv[6].split()]
assert copies == old_copies, f"copies differ: {copies} against {old_copies}"
steps = episodes * copies * 200 * 8
ratio = statistics.median(n / o for n, o in zip(new, old))
print(f"{learner}: {copies} copies x {episodes} episodes ({steps} agent-steps); today {statistics.median(new):.2f} s CPU "
      f"({steps / statistics.median(new):.0f} agent-steps per CPU-second), old {statistics.median(old):.2f} s "
      f"({steps / statistics.median(old):.0f}); today/old CPU time, median of {len(new)} paired runs: {ratio:.2f}")
PY
done

#!/usr/bin/env bash
# The memory estimate (agents/src/train/memory.rs) against the measured peak resident set size
# (/usr/bin/time), for configs whose memory is dominated by different things: PPO's critics,
# the actor-critic's actors, PPO's rollout, Hedge's table, the envy matrix of a large
# simulation. The estimate is what `--max-memory 1` reports when it refuses.
# Usage: scripts/bench-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p agents --bin mtf
mtf=$PWD/target/release/mtf
q=configs/quickstart.toml
w=configs/thesis/w124-mmpp.toml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() { # name, command and flags (train or simulate ...)
  local name=$1; shift
  local est peak
  est=$("$mtf" --max-memory 1 "$@" --out "$tmp/e" 2>&1 >/dev/null | sed -n 's/.*needs about \([0-9.]* [MG]iB\).*/\1/p' || true)
  rm -rf "$tmp/r"
  peak=$( { /usr/bin/time -f "%M" "$mtf" "$@" --quiet --out "$tmp/r" > /dev/null; } 2>&1 | tail -1)
  python3 - "$name" "$est" "$peak" <<'PY'
import sys
name, est, peak = sys.argv[1], sys.argv[2], int(sys.argv[3]) / 1024
v, unit = est.split()
e = float(v) * (1024 if unit == "GiB" else 1)
print(f"| {name} | {e:,.0f} MiB | {peak:,.0f} MiB | {100 * (e - peak) / peak:+.0f}% |")
PY
}
echo "| config | estimate | measured peak | estimate error |"
echo "|---|---:|---:|---:|"
one "PPO, w124-mmpp (20 agents), critics 1536-1536, 1 episode of 20 rounds" train --config $w --set learner.kind=ppo \
  --set 'learner.ppo.critic_hidden=[1536,1536]' --set train.episodes=1 --set env.rounds=20 --set train.eval_seeds=1
one "actor-critic, quickstart, actors of 8192, 1 episode of 50 rounds" train --config $q --set learner.actor_critic.actor_hidden=8192 \
  --set train.episodes=1 --set env.rounds=50 --set train.eval_seeds=1
one "PPO, w124-mmpp, 32 copies of 300 rounds (the rollout), 1 episode" train --config $w --set learner.kind=ppo \
  --set train.envs=32 --set train.episodes=1 --set train.eval_seeds=1
one "Hedge, quickstart, 500,000 tokens (budget states), 1 episode of 20 rounds" train --config $q --set learner.kind=hedge \
  --set mechanism.total_tokens=500000 --set train.episodes=1 --set env.rounds=20 --set train.eval_seeds=1
one "simulate, quickstart with 2,400 agents, 10 rounds, 1 thread" simulate --config $q --set 'env.agents.*.count=800' \
  --set env.rounds=10 --seeds 1 --threads 1

#!/usr/bin/env bash
# Training speed at 20 agents x 40 accelerators x 300 rounds (the 1/2/4-weight mmpp thesis
# scenario at load 0.8): seconds per episode and agent-updates per second, for the
# actor-critic (defaults: one seed played by a group of 8 copies), PPO (defaults: likewise; IPPO and MAPPO)
# and Hedge, on one thread; then Hedge in the valuation world of SPEC 8.
# Then PPO from 8 environment copies on 1 and 2 threads, and peak memory.
# Usage: scripts/bench-train.sh [EPISODES]
set -euo pipefail
cd "$(dirname "$0")/.."
episodes=${1:-5}
cargo build --release -q -p agents --bin mtf
# mappo: PPO with the central critic (each agent's critic reads all 20 agents' rows), the
# welfare reward's default.
for learner in actor_critic ppo mappo hedge; do
  out=$(mktemp -d)
  sets=(--set "learner.kind=$learner")
  [ "$learner" = mappo ] && sets=(--set learner.kind=ppo --set learner.ppo.critic=central)
  target/release/mtf train --config configs/thesis/w124-mmpp.toml --quiet --out "$out/run" \
    "${sets[@]}" --set "train.episodes=$episodes" --set train.eval_seeds=1 \
    --set 'env.agents.*.load=0.8' --threads 1 > /dev/null
  python3 - "$out/run" "$learner" <<'PY'
import json, sys, statistics, tomllib
run, learner = sys.argv[1], sys.argv[2]
eps = [json.loads(l) for l in open(f"{run}/metrics.jsonl")]
times = [e["wall_time"] for e in eps]
s = json.load(open(f"{run}/summary.json"))
# Environment copies per episode: train.envs seeds, each played by the learner's group of
# copies (PPO's and the actor-critic's default group is 8 since issue 41).
c = tomllib.load(open(f"{run}/config.toml", "rb"))
section = {"mappo": "ppo"}.get(learner, learner)
copies = c["train"]["envs"] * c["learner"].get(section, {}).get("group", 1)
steps = 20 * 300 * copies * len(times) / sum(times)
print(f"{learner}: median {statistics.median(times):.3f} s per episode of {copies} copies (min {min(times):.3f}, max {max(times):.3f}) over {len(times)} episodes; {steps:.0f} agent-steps/s of training (acting, stepping, learning); {s['agent_updates_per_second']:.0f} agent-updates/s")
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
# PPO from 8 environment copies on 8 seeds (train.envs = 8, learner.ppo.group = 1: the
# copies of the table in agents/README.md) on 1 and 2 threads: agent-steps per second of
# training, everything included (acting, stepping, learning).
for threads in 1 2; do
  out=$(mktemp -d)
  target/release/mtf train --config configs/thesis/w124-mmpp.toml --quiet --out "$out/run" \
    --set learner.kind=ppo --set train.envs=8 --set learner.ppo.group=1 --set "train.episodes=$episodes" --set train.eval_seeds=1 \
    --set 'env.agents.*.load=0.8' --threads "$threads" > /dev/null
  python3 - "$out/run" "$threads" <<'PY'
import json, sys, statistics
run, threads = sys.argv[1], sys.argv[2]
times = [json.loads(l)["wall_time"] for l in open(f"{run}/metrics.jsonl")]
med = statistics.median(times)
print(f"ppo, 8 copies, {threads} thread(s): median {med:.3f} s per episode ({8 * 300} environment rounds), {20 * 300 * 8 / med:.0f} agent-steps/s")
PY
  rm -rf "$out"
done
# Peak memory of one actor-critic episode (maximum resident set size, KiB).
if [ -x /usr/bin/time ]; then
  out=$(mktemp -d)
  /usr/bin/time -f "actor_critic peak memory: %M KiB" target/release/mtf train --config configs/thesis/w124-mmpp.toml --quiet \
    --out "$out/run" --set train.episodes=1 --set train.eval_seeds=1 --set 'env.agents.*.load=0.8' > /dev/null
  rm -rf "$out"
else
  echo "peak memory: skipped (no /usr/bin/time; apt install time)"
fi

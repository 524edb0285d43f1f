#!/usr/bin/env bash
# The learners' table of agents/README.md ("Learners against the best fixed level"): every
# learner trained over 5 training replicates on the quickstart and on w124-mmpp at load 0.8,
# with each agent's own reward and with the shared welfare reward; each replicate scored by its
# mean paired held-out welfare difference to the best fixed level (16 held-out seeds, the best
# level picked on 16 other seeds), reported as the interquartile mean with a 95% bootstrap
# interval over replicates: as trained (sampled for a learner that draws its actions), greedy
# (marked when near-uniform), and against uniform random play; with the agent-steps each
# replicate trained on and the training time of the 5 replicates on --threads 2. Beside them,
# `mtf analyze`'s best adaptive class (a search, no training seed) and its selfish equilibrium
# (what selfish learners should reach), on the same seeds; the actor-critic's welfare
# defaults before 2026-12-05 (an actor per agent, the annealed entropy bonus: the
# actor_critic_agent row; its defaults under the welfare reward since are w124-mmpp's recipe,
# an actor per weight class and no bonus, trained there to the 400 episodes it needs); MAPPO's
# welfare defaults before 2026-12-01 (an actor per agent, entropy 0.01: the mappo_agent row);
# IPPO's before 2026-12-02 (an actor per agent: the ippo_agent row); and each learner's row from PREVIOUS
# (default docs/reports/learners-2026-11-24.json: before issue 41's seed groups).
#
# Writes OUT/table.md (the table as the README shows it) and OUT/results.json; the run groups
# stay in OUT. Runs that already exist are reused (delete OUT to start over). 1 hour 40 minutes
# on a shared 2-core Intel Xeon before issue 41 (2026-11-24); see agents/README.md for the
# latest run's time.
# Usage: scripts/learners-report.sh [OUT] [REPLICATES]
# MTF=PATH runs that binary instead of building target/release/mtf (a copy keeps a long report
# apart from later builds). KEEP=DIR keeps a report that outlasts its machine (w124-mmpp's takes
# longer than a session): each finished group's small files (its summary, its replicates'
# summaries, its config and training time) and the analysis are copied to KEEP/<group>/ as they
# finish, and a later run with the same KEEP starts from them.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/learners-report}
replicates=${2:-5}
source scripts/lib.sh
mtf=$(mtf_binary)
mkdir -p "$out"
keep=${KEEP:-}
if [ -n "$keep" ] && [ -d "$keep" ]; then
  for g in "$keep"/*/; do
    [ -d "$out/$(basename "$g")" ] || cp -r "$g" "$out/$(basename "$g")"
  done
  [ -f "$keep/machine.txt" ] && cp "$keep/machine.txt" "$out/machine.txt"
fi
# One line per piece of the report that trains (a kept report runs on several machines).
noted=
note_machine() {
  [ -n "$noted" ] || machine >> "$out/machine.txt"
  noted=1
}
# A finished group's small files to KEEP (nothing when KEEP is unset).
keep_group() {
  [ -n "$keep" ] || return 0
  local d=$1 k
  mkdir -p "$keep"
  k="$(cd "$keep" && pwd)/$(basename "$1")"
  rm -rf "$k.tmp" && mkdir -p "$k.tmp"
  (cd "$d" && find . \( -name summary.json -o -name config.toml -o -name wall_seconds.txt \) \
    -exec cp --parents {} "$k.tmp" \;)
  rm -rf "$k" && mv "$k.tmp" "$k"
  cp "$out/machine.txt" "$keep/machine.txt"
}

# world name -> config and its training budget (w124-mmpp's default 50 episodes is too few).
# WORLDS and LEARNERS (space-separated) restrict a run to some rows; the table shows the
# rows whose runs exist.
read -r -a worlds <<< "${WORLDS:-quickstart w124-mmpp}"
declare -A config=([quickstart]=configs/quickstart.toml [w124-mmpp]=configs/thesis/w124-mmpp.toml)
declare -A world_sets=([quickstart]="" [w124-mmpp]="env.agents.*.load=0.8 train.episodes=200")
# A row trained past its world's budget: the actor-critic under the welfare reward on
# w124-mmpp needs 400 episodes to reach the best fixed level (at 200, -0.037 [-0.153, +0.002]
# over 10 replicates: agents/README).
declare -A row_sets=([w124-mmpp-welfare-actor_critic]="train.episodes=400")
# learner row -> its --set overrides (PPO's critic stated, whatever the default).
read -r -a rewards <<< "${REWARDS:-utility welfare}"
read -r -a learners <<< "${LEARNERS:-uniform hedge actor_critic ippo mappo es actor_critic_agent mappo_agent ippo_agent}"
declare -A learner_sets=(
  [uniform]="learner.kind=uniform"
  [hedge]="learner.kind=hedge"
  [actor_critic]="learner.kind=actor_critic"
  [ippo]="learner.kind=ppo learner.ppo.critic=local"
  [mappo]="learner.kind=ppo learner.ppo.critic=central"
  [es]="learner.kind=es"
  # w124-mmpp's recipe (issue 41): one actor per weight class, no entropy bonus. MAPPO's and
  # the actor-critic's defaults are this recipe under the welfare reward (share and entropy
  # "auto", since 2026-12-01 and 2026-12-05), so their rows are mappo and actor_critic; the
  # actor-critic's welfare defaults before: an actor per agent, the bonus annealed from 0.01.
  [actor_critic_agent]="learner.kind=actor_critic learner.actor_critic.share=\"none\" learner.actor_critic.entropy=0.01"
  # MAPPO's welfare defaults before 2026-12-01: an actor per agent, entropy bonus 0.01.
  [mappo_agent]="learner.kind=ppo learner.ppo.critic=central learner.ppo.share=\"none\" learner.ppo.entropy=0.01"
  # IPPO's welfare defaults before 2026-12-02 (an actor per class since): an actor per agent.
  [ippo_agent]="learner.kind=ppo learner.ppo.critic=local learner.ppo.share=\"none\" learner.ppo.entropy=0.01"
)

for world in "${worlds[@]}"; do
  # The analysis on the held-out seeds the groups use (16) and 16 selection seeds; first, so
  # that a report stopped part way has a table of the rows it has.
  if [ ! -f "$out/$world-analyze/summary.json" ]; then
    note_machine
    rm -rf "$out/$world-analyze"
    sets=()
    for s in ${world_sets[$world]}; do sets+=(--set "$s"); done
    "$mtf" analyze --config "${config[$world]}" "${sets[@]}" --seeds 16 --select-seeds 16 --tokens 100 \
      --baselines stride --threads 2 --quiet --out "$out/$world-analyze" > /dev/null
  fi
  keep_group "$out/$world-analyze"
  for reward in "${rewards[@]}"; do
    for learner in "${learners[@]}"; do
      # Hedge scores its levels by re-running the mechanism (SPEC 4), not by the env's reward.
      # Uniform play learns nothing: one row, the floor a learner must beat.
      { [ "$learner" = hedge ] || [ "$learner" = uniform ]; } && [ "$reward" = welfare ] && continue
      # The old defaults differ from the new ones under the welfare reward only.
      case "$learner" in *_agent) [ "$reward" != welfare ] && continue ;; esac
      dir="$out/$world-$reward-$learner"
      [ -f "$dir/summary.json" ] && continue
      # A group killed part way (a report takes hours) goes on from its checkpoints, as resume is
      # exact. Its training time is the sum of its pieces (OUT/<group>.pieces: start and end of
      # each), a killed piece's end read as the last file the group wrote.
      pieces="$out/$(basename "$dir").pieces"
      note_machine
      if [ -f "$dir/config.toml" ] && [ -f "$pieces" ] && [ "$(tail -c 1 "$pieces" | wc -l)" = 0 ]; then
        echo " $(find "$dir" -type f -printf '%T@\n' | sort -n | tail -1)" >> "$pieces"
      fi
      if [ -f "$dir/config.toml" ] && [ -f "$pieces" ]; then
        echo "resuming $world / $reward / $learner" >&2
        printf '%s' "$(date +%s.%N)" >> "$pieces"
        "$mtf" train --resume "$dir" --threads 2 --quiet > /dev/null
      else
        rm -rf "$dir"
        sets=()
        for s in ${world_sets[$world]} ${learner_sets[$learner]} "env.reward=$reward" train.eval_seeds=16 \
          ${row_sets[$world-$reward-$learner]:-}; do
          sets+=(--set "$s")
        done
        echo "training $world / $reward / $learner ($replicates replicates)" >&2
        printf '%s' "$(date +%s.%N)" > "$pieces"
        "$mtf" train --config "${config[$world]}" "${sets[@]}" --replicates "$replicates" --threads 2 \
          --quiet --out "$dir" > /dev/null
      fi
      echo " $(date +%s.%N)" >> "$pieces"
      awk '{ s += $2 - $1 } END { print s }' "$pieces" > "$dir/wall_seconds.txt"
      keep_group "$dir"
    done
  done
done

python3 - "$out" "$replicates" "${PREVIOUS:-docs/reports/learners-2026-11-24.json}" <<'PY'
import json, os, sys, glob, tomllib
out, replicates, previous = sys.argv[1], int(sys.argv[2]), sys.argv[3]
names = {"uniform": "uniform random (no learning)", "hedge": "Hedge", "actor_critic": "actor-critic", "ippo": "PPO (IPPO)", "mappo": "PPO (MAPPO)", "es": "ES",
         "actor_critic_agent": "actor-critic, an actor per agent, entropy 0.01 annealed (the default before 2026-12-05)",
         "mappo_agent": "PPO (MAPPO), an actor per agent, entropy 0.01 (the default before 2026-12-01)",
         "ippo_agent": "PPO (IPPO), an actor per agent (the default before 2026-12-02)"}
rewards = {"utility": "own", "welfare": "welfare"}
draws = {"uniform", "hedge", "actor_critic", "ippo", "mappo", "actor_critic_agent", "mappo_agent", "ippo_agent"}
# Each world's training budget (episodes); a row trained otherwise says so.
budget = {"quickstart": 400, "w124-mmpp": 200}
results, lines = [], []
lines.append("| world | reward | learner | as trained − best fixed: IQM [95% CI]; P(>) | greedy − best fixed | as trained − uniform play | near-uniform | mean levels w1/w2/w4 (last training episode) | agent-steps per replicate | training (s) |")
lines.append("|---|---|---|---|---|---|---|---|---|---|")

def thresholds(d):
    # Each weight class's mean level in the last training episode, averaged over replicates.
    acc = {}
    for r in sorted(glob.glob(f"{d}/replicate-*/summary.json")):
        for w, t in (json.load(open(r)).get("last_episode") or {}).get("threshold_by_weight") or []:
            acc.setdefault(w, []).append(t)
    return "/".join(f"{sum(v) / len(v):.2f}" for _, v in sorted(acc.items()))

def agent_steps(d, learner):
    # Episodes x rounds x environment copies x agents, from the group's resolved config.
    c = tomllib.load(open(f"{d}/config.toml", "rb"))
    n = sum(a["count"] for a in c["env"]["agents"])
    l, t = c["learner"], c["train"]
    ac, ppo = t["envs"] * l["actor_critic"].get("group", 1), t["envs"] * l["ppo"].get("group", 1)
    copies = {"es": 2 * l["es"]["pairs"], "actor_critic": ac, "actor_critic_agent": ac,
              "ippo": ppo, "mappo": ppo, "mappo_agent": ppo, "ippo_agent": ppo}.get(learner, 1)
    return t["episodes"] * c["env"]["rounds"] * copies * n

fmt = lambda r: f"{r['iqm']:+.2f} [{r['iqm_ci'][0]:+.2f}, {r['iqm_ci'][1]:+.2f}]; {r['prob_improvement']:.2f}"
before = {}
if os.path.exists(previous):
    for r in json.load(open(previous)):
        if "learner" in r:
            before[(r["world"], r["reward"], r["learner"])] = r
for world in ["quickstart", "w124-mmpp"]:
    if not os.path.exists(f"{out}/{world}-analyze/summary.json"):
        continue
    a = json.load(open(f"{out}/{world}-analyze/summary.json"))
    best = max(a["headroom"], key=lambda h: h["held_out_gain"]["mean"])
    eq = a["equilibrium"]
    base = None
    for reward in ["utility", "welfare"]:
        for learner in ["uniform", "hedge", "actor_critic", "ippo", "mappo", "es", "actor_critic_agent", "mappo_agent", "ippo_agent"]:
            d = f"{out}/{world}-{reward}-{learner}"
            if not os.path.exists(f"{d}/summary.json"):
                continue
            s = json.load(open(f"{d}/summary.json"))
            base = s["baseline"]
            wall = float(open(f"{d}/wall_seconds.txt").read())
            trained = s["vs_baseline"]["sampled" if learner in draws else "greedy"]
            episodes = tomllib.load(open(f"{d}/config.toml", "rb"))["train"]["episodes"]
            label = names[learner] + ("" if episodes == budget[world] else f", {episodes} episodes")
            row = {"world": world, "reward": rewards[reward], "learner": label,
                   "as_trained": trained, "greedy": s["vs_baseline"]["greedy"], "sampled": s["vs_baseline"]["sampled"],
                   "vs_uniform": s.get("vs_uniform"), "near_uniform": s["near_uniform"], "replicates": s["replicates"],
                   "train_seconds": wall, "baseline": s["baseline"]["policy"], "thresholds": thresholds(d),
                   "agent_steps": agent_steps(d, learner)}
            results.append(row)
            greedy = fmt(row["greedy"]) + (" (argmax of near-uniform)" if learner in draws and row["near_uniform"] else "")
            unif = fmt(row["vs_uniform"]) if row["vs_uniform"] else "-"
            lines.append(f"| {world} | {row['reward']} | {row['learner']} | {fmt(trained)} | {greedy} | {unif} | {row['near_uniform']} of {row['replicates']} | {row['thresholds']} | {row['agent_steps']:.2e} | {wall:.0f} |")
            old = before.get((world, rewards[reward], names[learner]))
            if old and learner not in ("uniform", "es"):
                # The same row before issue 41 (one copy, one-step TD errors, plain GAE, Hedge
                # min-max scaled with a constant rate): its sampled score is how it was trained.
                o_tr = old["sampled"] if learner in draws else old["greedy"]
                lines.append(f"| {world} | {row['reward']} | {names[learner]}, before issue 41 | {fmt(o_tr)} | {fmt(old['greedy'])} | - | {old['near_uniform']} of {old['replicates']} | {old['thresholds']} | - | {old['train_seconds']:.0f} |")
    g = best["held_out_gain"]
    fixed = base["policy"] if base else f"fixed:{a['best_fixed']}"
    cls = "per class" + ("" if best["bit"] == "none" else " x " + best["bit"].replace("_", " "))
    lv = "/".join(f"{a:g}-{b:g}" if a != b else f"{a:g}" for _, a, b in best["levels"])
    lines.append(f"| {world} | - | best adaptive class ({cls}; a search) | {g['mean']:+.2f} ± {g['ci95']:.2f} (over seeds) | - | - | - | {lv} | - | - |")
    e = eq["vs_best_fixed"]
    conv = "" if eq["converged"] else f"; not converged after {eq['passes']} passes"
    lines.append(f"| {world} | own | the selfish equilibrium{conv} | {e['mean']:+.2f} ± {e['ci95']:.2f} (over seeds) | - | - | - | {'/'.join(f'{l:g}' for _, l in eq['levels'])} | - | - |")
    results.append({"world": world, "best_fixed": fixed, "best_adaptive": best, "equilibrium": eq})
machine = "; ".join(dict.fromkeys(l.strip() for l in open(f"{out}/machine.txt") if l.strip()))
lines.append("")
lines.append(f"Welfare in jobs per round; best fixed level: quickstart and w124-mmpp as picked per group (`baseline` in results.json). {replicates} training replicates per row; machine: {machine}.")
open(f"{out}/table.md", "w").write("\n".join(lines) + "\n")
json.dump(results, open(f"{out}/results.json", "w"), indent=1)
print("\n".join(lines))
PY

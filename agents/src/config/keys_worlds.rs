//! The keys of the files that are not queue- or valuation-world experiments: the worlds behind
//! the seam (`env.world = "gavel"`, `"bandit"`), market files (`env.world = "market"`) and
//! sweep files. Each world's file format is its own struct with `deny_unknown_fields`; this is
//! its reference, printed by `mtf config --describe` after the experiment keys. A test loads
//! every shipped config and checks each key it sets is described here (or, for an experiment,
//! in [`super::keys::KEYS`]).

use super::keys::{k, Key};

/// One kind of file: its title, a paragraph, its keys (ranges carry the defaults: these
/// structs have no single default file to read them from).
pub struct Section {
    /// Heading.
    pub title: &'static str,
    /// What the file is.
    pub intro: &'static str,
    /// Its keys.
    pub keys: &'static [Key],
}

const GAVEL: &str = "gavel world";
const MARKET: &str = "market world";
const SWEEP: &str = "mtf sweep";

/// Every other kind of file.
pub static SECTIONS: &[Section] = &[
    Section {
        title: "Gavel world files (`env.world = \"gavel\"`)",
        intro: "Gavel's GPU cluster (`env::worlds::gavel`, docs/gavel.md): jobs from a trace in Gavel's format or its generator are the agents. `[learner]` and `[train]` are the experiment keys above (learner.kind = es, ppo, actor_critic, hedge, fixed or uniform; hedge holds a level per group for the episode, agents/src/learners/episode_hedge.rs). Paths are relative to the file's folder (on the command line, to the current directory).",
        keys: &[
            k("seed", "0 to 2^63 - 1 (a TOML integer) (default 1)", "Root seed: generated jobs and every policy's draws.", GAVEL),
            k("env.world", "\"gavel\"", "This world.", GAVEL),
            k("env.throughputs", "a CSV file", "Gavel's throughput table: job_type, scale_factor, a column per GPU type.", GAVEL),
            k("env.trace", "a file in Gavel's trace format", "The jobs (one per line, Gavel's columns); give it or env.generate.", GAVEL),
            k("env.generate.rate", ">= 0 jobs per hour", "Gavel's generator: Poisson arrivals at this rate (0: every job at time 0).", GAVEL),
            k("env.generate.jobs", "whole >= 1", "Jobs generated at most.", GAVEL),
            k("env.generate.multi_gpu", "true, false (default false)", "Multi-GPU jobs: scale factors 1/2/4/8 with probability 0.7/0.1/0.15/0.05.", GAVEL),
            k("env.cluster[].type", "a column of the throughput table", "GPU type, in the order a round visits them (Gavel's: v100, p100, k80).", GAVEL),
            k("env.cluster[].count", "whole >= 1", "GPUs of this type.", GAVEL),
            k("env.round_seconds", "> 0 (default 360)", "Seconds per round (Gavel's 360).", GAVEL),
            k("env.window", "[first, end) job ids (default: every job)", "The jobs measured (Gavel's window); the episode ends when they have all finished.", GAVEL),
            k("env.max_rounds", "whole >= 1", "Rounds after which an episode is cut short.", GAVEL),
            k("env.reward", "own, welfare (default own)", "What a job is paid each round: minus the hours it spent in the system (own: its return is minus its completion time), or minus the hours every job present spent there over the GPUs, paid to all of them (welfare: the cluster's average completion time).", GAVEL),
            k("env.rho", "true, false (default true)", "Compute rho: each job's completion time over its time under isolated (one more simulation per episode, cached per seed).", GAVEL),
            k("env.threshold_levels", "ascending numbers in [0, 1]", "MTF's threshold levels.", GAVEL),
            k("env.bid_levels", "ascending numbers >= 0", "The auctions' bid factors.", GAVEL),
            k("mechanism.name", "Gavel's policies (max_min_fairness, max_min_fairness_perf, fifo, fifo_perf, finish_time_fairness, finish_time_fairness_perf, max_sum_throughput_perf, isolated) or mtf, the auctions and the queue world's baselines (default max_min_fairness_perf)", "The policy.", GAVEL),
            k("mechanism.gavel_seed", "0 to 2^63 - 1 (a TOML integer) (default 0)", "The seed of Gavel's own draws (its agnostic policies replay Python's random.Random(seed)).", GAVEL),
            k("mechanism.tokens_per_job", "> 0 (default 100)", "Tokens a job brings times its weight (MTF, auctions).", GAVEL),
            k("mechanism.leftovers", "\"round_robin\", \"none\"", "The free phase of MTF and the auctions.", GAVEL),
        ],
    },
    Section {
        title: "Bandit world files (`env.world = \"bandit\"`)",
        intro: "A toy world behind the seam (`env::worlds::bandit`): agents join in turn and are paid for playing their group's target level. `[learner]` and `[train]` as for the Gavel world.",
        keys: &[
            k("seed", "0 to 2^63 - 1 (a TOML integer) (default 1)", "Root seed.", "bandit world"),
            k("env.world", "\"bandit\"", "This world.", "bandit world"),
            k("env.agents", "whole >= 1 (default 4)", "Agents.", "bandit world"),
            k("env.rounds", "whole >= 1 (default 20)", "Rounds per episode.", "bandit world"),
            k("env.targets", "levels (default [0.3, 0.7])", "Each group's target level (group = agent index mod their number).", "bandit world"),
            k("env.noise", "0 to 1e6 (default 0.1)", "Standard deviation of the reward noise.", "bandit world"),
            k("env.stagger", "whole >= 1 (default 2)", "Agent i joins in round i mod stagger.", "bandit world"),
            k("env.levels", "ascending numbers (default 0 to 1 by 0.1)", "The levels.", "bandit world"),
        ],
    },
    Section {
        title: "Market files (`env.world = \"market\"`)",
        intro: "The LaissezCloud market (`env::market`, docs/market.md): tenants with one job each bid for accelerator types. `[learner]` and `[train]` are the learner registry's, with the market's defaults (below; `env::market::world::RUN_DEFAULTS`). Tenant groups expand to `name#1`, `name#2`, ...",
        keys: &[
            k("seed", "0 to 2^63 - 1 (a TOML integer) (default 1)", "Root seed: drawn job sizes and trace starts.", MARKET),
            k("env.world", "\"market\"", "This world.", MARKET),
            k("env.rounds", "whole >= 1", "Rounds in the episode.", MARKET),
            k("mechanism.kind", "\"second_price\" (default), \"first_price\", \"mtf\"", "How the exchange prices the auctioned types.", MARKET),
            k("mechanism.total_tokens", "> 0 (default 100)", "MTF's token total, split by the tenants' weights.", MARKET),
            k("mechanism.clearing", "\"per_type\" (default), \"joint\"", "The auctions: one type after the other in config order, or one assignment over all types.", MARKET),
            k("market.round_hours", "> 0 (default 1)", "Hours per round.", MARKET),
            k("market.types[].name", "a name", "The type's name.", MARKET),
            k("market.types[].base_price", ">= 0", "Base (reserve) price, money per hour.", MARKET),
            k("market.types[].count", "whole >= 1 (default 1)", "Accelerators of this type (ignored on demand).", MARKET),
            k("market.types[].on_demand", "true, false (default false)", "Sold at its base price to anyone, without limit.", MARKET),
            k("market.tenants[].name", "a name, unique after groups expand", "The tenant's name.", MARKET),
            k("market.tenants[].arrival", "whole >= 0 (default 0)", "Round its job arrives.", MARKET),
            k("market.tenants[].work", "> 0", "The job's size in work units (with work_max the smallest; with work_trace not given).", MARKET),
            k("market.tenants[].work_max", "> work", "Sizes drawn uniformly in [work, work_max] from the seed.", MARKET),
            k("market.tenants[].work_trace", "a file (one size per line) or a list of sizes", "Job sizes from a trace; copy j of the entry takes entry start + j (wrapping). A file is relative to the market file (on the command line, to the current directory).", MARKET),
            k("market.tenants[].trace_start", "whole >= 0 (default: drawn from the seed)", "Where copy 0 starts in work_trace.", MARKET),
            k("market.tenants[].deadline", "whole rounds >= 1 (default none)", "Rounds after arrival within which the job earns value per unit; later late_value.", MARKET),
            k("market.tenants[].late_value", ">= 0 (default 0)", "Money per unit of work finished after the deadline.", MARKET),
            k("market.tenants[].speeds", "one number > 0 per type", "Work units per hour on each type (config order); or from application.", MARKET),
            k("market.tenants[].application", "a Gemmini catalog application", "Speeds from the catalog (every type must then be a catalog type), times speed_scale.", MARKET),
            k("market.tenants[].speed_scale", "> 0 (default 1)", "Work units per hour per unit of catalog throughput.", MARKET),
            k("market.tenants[].checkpoint", "> 0", "Work units between checkpoints.", MARKET),
            k("market.tenants[].restart_rounds", "whole >= 0 (default 0)", "Rounds a moved job restarts before it progresses again.", MARKET),
            k("market.tenants[].value", ">= 0", "Money per work unit, earned when the job finishes.", MARKET),
            k("market.tenants[].budget", "> 0 (default unlimited)", "Money it can spend.", MARKET),
            k("market.tenants[].bid_factor", "> 0 (default 1)", "Its bids over its break-even prices (the economic agent: 1).", MARKET),
            k("market.tenants[].weight", "> 0 (default 1)", "Its share of MTF's tokens.", MARKET),
            k("market.tenants[].threshold", "[0, 1] (default 0)", "Its MTF threshold.", MARKET),
            k("market.tenants[].count", "whole >= 0 (default 1)", "Tenants like this one.", MARKET),
            k("market.tenants[].arrival_spacing", "whole >= 0 (default 0)", "Rounds between its copies' arrivals.", MARKET),
            k("market.tenants[].learn", "true, false (default false)", "mtf train learns its bid factor (under MTF its threshold); a file that marks some tenants plays them as the agents and the others at their own factors, one that marks none makes every tenant an agent.", MARKET),
            k("learner.kind", "\"hedge\" (default), \"ppo\", \"es\", \"actor_critic\"", "What learns the learn = true tenants' factors (the learner registry's kinds that learn; fixed and uniform are the run's references).", MARKET),
            k("learner.levels", "ascending numbers (default 0.5 to 1.5 by 0.1; under MTF 0 to 1)", "The factors (thresholds) a learner chooses among; under MTF the levels above 1 are dropped (no threshold), so one list serves every mechanism of mtf compare --mechanisms.", MARKET),
            k("learner.hedge.eta", "(0, 100] (default 5)", "Hedge's constant learning rate, on a group's mean utility over its tenants' job worth.", MARKET),
            k("learner.ppo.*", "as the experiment keys", "PPO, but gamma, gae_lambda and head_scale default to 1 and lr to 0.005; one actor per group (share and class_id do not apply; class_id refused), the whole observation (features = \"all\"); critic central is MAPPO over the learning tenants.", MARKET),
            k("learner.actor_critic.*", "as the experiment keys", "The actor-critic, one actor and critic per group (pooled), the whole observation (features = \"all\", the default here).", MARKET),
            k("learner.es.*", "as the experiment keys", "ES, but sigma defaults to 0.2; one actor per group (per_class = true), the whole observation (features = \"all\").", MARKET),
            k("train.episodes", "whole >= 1 (default 100)", "Training episodes per replicate.", MARKET),
            k("train.replicates", "1 to 64 (default 3)", "Training replicates.", MARKET),
            k("train.eval_seeds", "1 to 1000 (default 5)", "Evaluation seeds.", MARKET),
            k("train.envs", "1 to 256 (default 1)", "Market seeds a PPO episode learns from, each played by learner.ppo.group copies.", MARKET),
        ],
    },
    Section {
        title: "Sweep files (`mtf sweep --config`)",
        intro: "A search over an experiment's (or a market file's) keys (`agents::sweep`): the base config, the space, the objective, each trial's budget, the sampler and the pruner.",
        keys: &[
            k("base", "a config file", "The base experiment, relative to the sweep file.", SWEEP),
            k("study", "a name (default: the file's stem)", "Study name in the database.", SWEEP),
            k("sampler", "\"tpe\", \"random\", \"grid\"", "How trials are proposed.", SWEEP),
            k("tpe.startup", "whole >= 0", "Random trials before TPE starts.", SWEEP),
            k("tpe.candidates", "whole >= 1", "Candidates drawn per proposal.", SWEEP),
            k("tpe.gamma", "(0, 1)", "Share of finished trials that count as good.", SWEEP),
            k("grid_points", "whole >= 2", "Grid: points per float parameter.", SWEEP),
            k("seed", "0 to 2^63 - 1 (a TOML integer) (default 0)", "Sampler seed.", SWEEP),
            k("trials", "whole >= 1", "Trials the study runs (complete, pruned and failed).", SWEEP),
            k("workers", "whole >= 1", "Trials run side by side by one process.", SWEEP),
            k("include_defaults", "true, false (default true)", "Trial 0 runs the base config's own values.", SWEEP),
            k("objective.metric", "a dotted path into summary.json (default eval_welfare.mean)", "What the study optimises.", SWEEP),
            k("objective.direction", "\"maximize\", \"minimize\"", "Its direction.", SWEEP),
            k("objective.intermediate", "a metrics.jsonl field (default welfare)", "What the pruner follows per episode.", SWEEP),
            k("budget.episodes", "whole >= 1 (default: the base's)", "Training episodes per trial.", SWEEP),
            k("budget.eval_seeds", "whole >= 1 (default: the base's)", "Evaluation seeds per trial.", SWEEP),
            k("budget.replicates", "whole >= 1 (default: the base's)", "Training replicates per trial (a run group; the objective a path into its summary).", SWEEP),
            k("budget.threads", "whole >= 1 (default 1)", "Threads per trial.", SWEEP),
            k("budget.set", "key=value strings", "Further overrides for every trial.", SWEEP),
            k("pruner.kind", "\"none\", \"median\", \"successive_halving\"", "Which pruner.", SWEEP),
            k("pruner.window", "whole >= 1", "Episodes averaged into an intermediate value.", SWEEP),
            k("pruner.startup_trials", "whole >= 0", "Median: completed trials before any pruning.", SWEEP),
            k("pruner.warmup_episodes", "whole >= 0", "Median: episodes before a trial can be pruned.", SWEEP),
            k("pruner.min_resource", "whole >= 1", "Successive halving: the first rung's episodes.", SWEEP),
            k("pruner.reduction_factor", "whole >= 2", "Successive halving: the factor between rungs.", SWEEP),
            k("pruner.min_early_stopping_rate", "whole >= 0", "Successive halving: rungs skipped.", SWEEP),
            k("heartbeat_interval", "> 0 seconds", "Seconds between a running trial's heartbeats.", SWEEP),
            k("grace_period", "> 0 seconds (default twice the interval)", "Seconds without a heartbeat before a trial is re-queued.", SWEEP),
            k("reconnect_timeout", "> 0 seconds (default 120)", "Seconds a worker keeps reconnecting to a database that went away.", SWEEP),
            k("params.KEY.type", "\"float\", \"int\", \"categorical\"", "The distribution of config key KEY (a dotted path of the base config).", SWEEP),
            k("params.KEY.low", "a number", "Float and int: lower bound.", SWEEP),
            k("params.KEY.high", "a number", "Float and int: upper bound.", SWEEP),
            k("params.KEY.log", "true, false", "Float: log-uniform.", SWEEP),
            k("params.KEY.step", "whole >= 1 (default 1)", "Int: grid step.", SWEEP),
            k("params.KEY.choices", "TOML scalars", "Categorical: the values.", SWEEP),
        ],
    },
];

/// Whether `key` (a flattened path, arrays as `[]`) is described in `keys`: exactly, under a
/// `prefix.*` entry, or as a sweep parameter (`params.<any key>.<field>`).
pub fn described(keys: &[Key], key: &str) -> bool {
    keys.iter().any(|k| {
        k.key == key
            || k.key.strip_suffix('*').is_some_and(|p| key.starts_with(p))
            || k.key.strip_prefix("params.KEY.").is_some_and(|field| {
                key.strip_prefix("params.")
                    .is_some_and(|rest| rest.rsplit_once('.').is_some_and(|(_, f)| f == field))
            })
    })
}

/// The reference of the other files, as `mtf config --describe` appends it.
pub fn describe() -> String {
    let mut out = String::new();
    for s in SECTIONS {
        out.push_str(&format!(
            "\n## {}\n\n{}\n\n| key | values (default) | meaning | read by |\n|---|---|---|---|\n",
            s.title, s.intro
        ));
        for key in s.keys {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                key.key,
                key.range.replace('|', "\\|"),
                key.meaning.replace('|', "\\|"),
                key.reader
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flatten(prefix: &str, v: &toml::Value, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) => {
                for (k, x) in t {
                    let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    // A by_weight table's entries are its own (w1 = ...), not keys.
                    let p = if prefix == "learner.fixed.by_weight" {
                        prefix.to_string()
                    } else {
                        p
                    };
                    flatten(&p, x, out);
                }
            }
            toml::Value::Array(items) if !items.is_empty() && items.iter().all(toml::Value::is_table) => {
                for x in items {
                    flatten(&format!("{prefix}[]"), x, out);
                }
            }
            _ => out.push(prefix.to_string()),
        }
    }

    /// Every key every shipped config sets is described, in the section of its kind of file.
    #[test]
    fn every_key_of_every_shipped_config_is_described() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs");
        let mut files = Vec::new();
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "toml") {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 20, "found {} configs", files.len());
        let mut missing = Vec::new();
        for f in &files {
            let v: toml::Value = toml::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            let world = v
                .get("env")
                .and_then(|e| e.get("world"))
                .and_then(|w| w.as_str())
                .unwrap_or("queues");
            let section = if v.get("params").is_some() {
                Some(3)
            } else {
                match world {
                    "gavel" => Some(0),
                    "bandit" => Some(1),
                    "market" => Some(2),
                    _ => None,
                }
            };
            let mut keys = Vec::new();
            flatten("", &v, &mut keys);
            for key in keys {
                let ok = match section {
                    // Seam worlds' [learner] and [train] are the experiment's.
                    Some(s) if s <= 1 && (key.starts_with("learner.") || key.starts_with("train.")) => {
                        described(super::super::keys::KEYS, &key)
                    }
                    Some(s) => described(SECTIONS[s].keys, &key),
                    None => described(super::super::keys::KEYS, &key),
                };
                if !ok {
                    missing.push(format!("{}: {key}", f.display()));
                }
            }
        }
        assert!(
            missing.is_empty(),
            "keys set by shipped configs that mtf config --describe does not describe:\n{}",
            missing.join("\n")
        );
    }

    #[test]
    fn sweep_parameters_and_wildcards_match_what_they_should() {
        let sweep = SECTIONS[3].keys;
        assert!(described(sweep, "params.learner.ppo.lr.low"));
        assert!(!described(sweep, "params.learner.ppo.lr.lowest"));
        let market = SECTIONS[2].keys;
        assert!(described(market, "learner.ppo.entropy"));
        assert!(described(market, "learner.actor_critic.entropy"));
        assert!(!described(market, "learner.sarsa.lr"));
    }
}

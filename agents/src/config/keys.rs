//! Every config key, described once: `mtf config --describe` prints this reference and
//! `docs/CONFIG.md` is it (a test checks the file is what the command prints). Types and
//! defaults come from the code (the default experiment, resolved); ranges, meanings and readers
//! are written here, and a test checks the list names every key the config has, no more: a new
//! key without a line here fails the build's tests.

use crate::config::ExperimentFile;

/// One key: its path (`[]` marks the elements of an array of tables), the values it accepts,
/// what it means and who reads it.
pub struct Key {
    /// Dotted path, e.g. `learner.ppo.lr`, `env.agents[].weight`.
    pub key: &'static str,
    /// Accepted values.
    pub range: &'static str,
    /// What it sets.
    pub meaning: &'static str,
    /// Who reads it: a world, a mechanism, a learner, training.
    pub reader: &'static str,
}

pub(crate) const fn k(key: &'static str, range: &'static str, meaning: &'static str, reader: &'static str) -> Key {
    Key {
        key,
        range,
        meaning,
        reader,
    }
}

/// A range that is a documented limit: written from the limit's constant ([`limit`]).
const LIMIT: &str = "(limit)";

/// The range of a key whose bound is a constant of `config::limits` or `env::config::limits`.
fn limit(key: &str) -> Option<String> {
    use crate::config::limits as a;
    use env::config::limits as e;
    Some(match key {
        "env.rounds" => format!("1 to {}", e::MAX_ROUNDS),
        "env.agents[].count" => format!("1 to {} agents in all", e::MAX_AGENTS),
        "env.cluster[].count" => format!("1 to {} accelerators in all", e::MAX_ACCELERATORS),
        "train.threads" => format!("1 to {}", a::MAX_THREADS),
        "train.envs" => format!("1 to {}", a::MAX_ENVS),
        "train.replicates" => format!("1 to {}", a::MAX_REPLICATES),
        "train.eval_seeds" => format!("1 to {}", a::MAX_SEEDS),
        _ => return None,
    })
}

const ALL: &str = "every world";
const QUEUES: &str = "queue world";
const TRAIN: &str = "mtf train";
const PPO: &str = "learner ppo";
const AC: &str = "learner actor_critic";
const ES: &str = "learner es";

/// Every key, in the order a config file has them.
pub static KEYS: &[Key] = &[
    k("seed", "0 to 2^63 - 1 (a TOML integer)", "Root seed: every episode, sampling stream and initial parameter derives from it (--seed overrides).", "everything"),
    k("env.rounds", LIMIT, "Rounds per episode.", ALL),
    k("env.world", "\"queues\", \"valuations\" (and \"gavel\", \"bandit\", \"market\": their own files, below)", "What the agents share: accelerators serving job queues (SPEC 2), or private values per item each round (SPEC 8, auctions against theory). Gavel's GPU cluster, the toy bandit and the market read files of their own, described after these keys.", ALL),
    k("env.queues", "\"central\", \"per_accelerator\"", "One backlog per agent, dispatched after allocation; or one queue per (agent, accelerator) with placement at arrival (the thesis code).", QUEUES),
    k("env.dispatch", "\"p2c\", \"fluid\"", "Central queues: power of two choices job by job, or filling the fastest accelerators first.", QUEUES),
    k("env.placement", "\"p2c\", \"uniform\"", "Per-accelerator queues: where an arriving job is placed.", QUEUES),
    k("env.p2c_draw", "\"uniform\", \"rate_proportional\"", "How power of two choices draws its two accelerators.", QUEUES),
    k("env.arrivals", "\"poisson\", \"mmpp\", \"trace\"", "Arrival process: Poisson per round, Markov-modulated Poisson (bursty), or counts from env.trace.", QUEUES),
    k("env.trace", "a CSV file", "Arrivals for arrivals = \"trace\". Counts (env.trace_format = \"counts\"): one row per round, one column per agent (whole numbers), an optional header naming each column by a name ending in its agent's index (agent0, a0, gpu0; any order; a name without one, or an index past the agents, is an error; a first row of numbers is data). A job log (\"jobs\"): a header naming submit and agent (and optionally count), one row per job. Rounds past the end wrap around. A relative path in a file is relative to that file's folder; on the command line (--set env.trace=...), to the current directory. Stored resolved (absolute) in a run's config.toml.", QUEUES),
    k("env.trace_format", "\"counts\" (default), \"jobs\"", "What env.trace holds: arrivals per round and agent, or a job log (submit time, agent index, optional count) whose jobs arrive in round floor(submit x env.trace_time_scale).", QUEUES),
    k("env.trace_time_scale", "(0, 1e6] (default 1)", "Rounds per unit of a job log's submit time: 1 for submit times in rounds, 1/360 for seconds at 360-second rounds; smaller compresses the log (a higher load). Job logs only.", QUEUES),
    k("env.trace_start", "\"first\" (default), \"seeded\"", "Where an episode starts in its trace: its first round on every seed (the seeds then share their arrivals, and simulate and compare say so), or a round drawn from the episode's seed (each seed its own window; rounds wrap around).", QUEUES),
    k("env.service", "\"poisson\", \"deterministic\"", "Jobs an allocated accelerator serves per round: Poisson(mu) or round(mu).", QUEUES),
    k("env.deadline", "whole rounds >= 1, or \"none\"", "Rounds a job may wait before it is dropped.", QUEUES),
    k("env.queue_cap", "whole jobs >= 1 (default 1000 central, 200 per accelerator)", "Queue capacity; arrivals beyond it are rejected.", QUEUES),
    k("env.reward", "\"utility\", \"throughput\", \"backlog\", \"net\", \"welfare\"", "What an agent is paid each round: utilities won (thesis eq. 4.3), jobs served over its best rate, minus queued jobs over capacity, utility minus the tokens spent priced at its mean utility, or the shared weighted welfare.", "learners (queue world)"),
    k("env.heterogeneity", "\"catalog\", \"speedup_draw\"", "Service rates from the catalog's throughput table, or a 1.0/1.5 speed-up drawn per (agent, accelerator) at reset.", QUEUES),
    k("env.base_rate", "> 0", "Jobs per round of the reference accelerator type (the catalog's first).", QUEUES),
    k("env.threshold_levels", "ascending numbers in [0, 1]", "The threshold levels an agent chooses from (MTF and the baselines).", "mechanisms with thresholds"),
    k("env.bid_levels", "ascending numbers in [0, 1000]", "The bid factors an agent chooses from under an auction (SPEC 8): bid = factor x value_scale x utility.", "auction mechanisms"),
    k("env.value_scale", "(0, 10^12]", "Tokens bid per unit of utility at bid factor 1.", "auction mechanisms"),
    k("env.observe_burst", "true, false", "Observations include the agent's burst state (mmpp). Observation only: no dynamics change.", "learners reading the whole observation"),
    k("env.observe_budgets", "true, false", "Observations include every agent's budget share.", "learners reading the whole observation"),
    k("env.observe_weight", "true, false", "Observations include the agent's weight over the largest weight.", "learners reading the whole observation"),
    k("env.observe_by_type", "true, false", "Observations end with the by_type block: B n / T, per catalog type its share of the cluster, the agent's rate over its largest and the mean utility there, then the backlog (and burst, weight when observed). Its length does not depend on n or m.", "learners with features = \"by_type\" (which turn it on)"),
    k("env.mmpp.high_mult", "> 0", "Arrival-rate multiplier in the high (burst) state.", "arrivals = \"mmpp\""),
    k("env.mmpp.low_mult", ">= 0", "Arrival-rate multiplier in the low state.", "arrivals = \"mmpp\""),
    k("env.mmpp.p_high_to_low", "(0, 1]", "Per-round probability of leaving the high state.", "arrivals = \"mmpp\""),
    k("env.mmpp.p_low_to_high", "(0, 1]", "Per-round probability of entering the high state.", "arrivals = \"mmpp\""),
    k("env.agents[].count", LIMIT, "Agents in this group (groups expand in order: agent indices follow the file).", ALL),
    k("env.agents[].weight", "> 0", "The group's weight w_i: its token share under MTF and its weight in welfare.", ALL),
    k("env.agents[].application", "a catalog application (default: agents cycle through the catalog by index)", "The application the group's jobs run.", QUEUES),
    k("env.agents[].load", "(0, 1]", "Queue load rho: the arrival rate over the group's fair share of service.", QUEUES),
    k("env.cluster[].type", "a catalog type", "Accelerator type of this group.", ALL),
    k("env.cluster[].count", LIMIT, "Accelerators of this type (groups expand in order).", ALL),
    k("env.catalog.applications", "names", "Application names (default: thesis Table 5.1).", QUEUES),
    k("env.catalog.types", "names", "Accelerator type names; the first is the reference type.", ALL),
    k("env.catalog.throughput", "one row per application, one positive number per type", "Throughput of each application on each type (jobs per time unit; rates scale to env.base_rate).", QUEUES),
    k("mechanism.name", "mtf, round_robin, static_partition, stride, stride_per_accelerator, gandiva_fair, themis, max_throughput, second_price, first_price", "The allocation mechanism (--mechanism overrides). Only mtf and the auctions read the agents' actions.", ALL),
    k("mechanism.total_tokens", "(0, 10^12]", "Token total T shared by weight (MTF, auctions).", "mtf, auctions"),
    k("mechanism.leftovers", "\"round_robin\", \"none\"", "What happens to accelerators nobody bought: round robin, or idle (the valuation world needs none).", "mtf, auctions"),
    k("mechanism.fairness", "[0, 1]", "Themis's fairness knob f.", "themis"),
    k("learner.kind", "fixed, hedge, actor_critic, ppo, es, uniform", "Which learner mtf train runs.", TRAIN),
    k("learner.reward", "\"own\", \"difference\"", "What learners learn from: the environment's reward, or difference rewards against learner.difference_default.", TRAIN),
    k("learner.difference_default", "one of the levels", "The level a difference reward compares each agent's action against.", "learner.reward = \"difference\""),
    k("learner.fixed.threshold", "one of the levels", "The level every agent plays (a threshold, or a bid factor under an auction).", "learner fixed"),
    k("learner.fixed.by_weight", "a table w<weight> = level, every weight class", "A level per weight class, e.g. { w1 = 0.2, w2 = 0.4, w4 = 0.7 } (as fixed:w1=0.2,... plays); overrides threshold. Queue world (elsewhere a fixed run plays one level: threshold).", "learner fixed"),
    k("learner.fixed.per_agent", "one level per agent", "A level per agent, in agent order; overrides threshold. Queue world (elsewhere a fixed run plays one level: threshold).", "learner fixed"),
    k("learner.hedge.eta", "> 0 (default: the schedule sqrt(8 ln K / t))", "A constant learning rate for Hedge; absent, the anytime schedule sqrt(8 ln K / t), t the updates of that weight vector so far.", "learner hedge"),
    k("learner.hedge.scale", "\"fixed\", \"round\"", "How a round's counterfactual rewards are scaled: over a fixed bound on their range (accelerators x (what an item can be worth + what it can cost)), or min-max to [0, 1] every round (before issue 41; docs/hedge.md compares them).", "learner hedge"),
    k("learner.hedge.reward", "\"net\", \"utility\"", "The reward of a counterfactual level: utility won minus tokens spent at the mean utility (SPEC 4), or utility alone.", "learner hedge"),
    k("learner.actor_critic.actor_hidden", "whole >= 1", "Actor hidden width (one tanh layer).", AC),
    k("learner.actor_critic.critic_hidden", "two whole numbers >= 1", "Critic hidden widths (two ReLU layers).", AC),
    k("learner.actor_critic.actor_lr", "> 0", "Actor learning rate (AdamW).", AC),
    k("learner.actor_critic.critic_lr", "> 0", "Critic learning rate (AdamW).", AC),
    k("learner.actor_critic.gamma", "[0, 1]", "Discount.", AC),
    k("learner.actor_critic.entropy", ">= 0, \"auto\"", "Entropy bonus coefficient (at the start of the run, with entropy_anneal); auto: 0 under env.reward = \"welfare\" where the agents stay (the w124-mmpp recipe), 0.01 otherwise.", AC),
    k("learner.actor_critic.entropy_anneal", "[0, 1]", "The fraction of the run's planned rounds (train.episodes x env.rounds) over which the entropy bonus falls linearly to 0, then stays 0; 0: constant (the thesis code's).", AC),
    k("learner.actor_critic.share", "\"auto\", \"none\", \"class\"", "Actor and critic per agent (the thesis's), or one of each per weight class shared by its agents (in the queue world; elsewhere a group's agents always share); auto: class under env.reward = \"welfare\" where the agents stay, none otherwise.", AC),
    k("learner.actor_critic.weight_decay", ">= 0", "AdamW weight decay.", AC),
    k("learner.actor_critic.reward_scale", "> 0", "Reward multiplier before the TD error.", AC),
    k("learner.actor_critic.features", "\"spec\", \"all\", \"by_type\"", "State: SPEC 4's (budget share and utilities), the whole observation, or the by_type block (turns env.observe_by_type on; runs on clusters of any size with the same types).", AC),
    k("learner.actor_critic.normalize", "true, false", "Learn from rewards centred and scaled per agent by running statistics (off: the thesis code's algorithm).", AC),
    k("learner.actor_critic.group", "whole >= 1", "Environment copies per seed: the actor learns from each copy's TD error minus the mean of the other copies' with the same arrivals (leave-one-out); 1: plain TD errors. A training episode steps train.envs such groups.", AC),
    k("learner.actor_critic.steps", "whole >= 1", "Rounds per TD error (N-step returns, bootstrapped at the truncation); 1: the thesis's one-step TD error.", AC),
    k("learner.ppo.actor_hidden", "whole >= 1", "Actor hidden width (one tanh layer; exports like the actor-critic's).", PPO),
    k("learner.ppo.critic_hidden", "two whole numbers >= 1", "Critic hidden widths (two ReLU layers).", PPO),
    k("learner.ppo.lr", "> 0", "Learning rate (AdamW, both networks).", PPO),
    k("learner.ppo.anneal_lr", "true, false", "Anneal the learning rate linearly to 0 over the run.", PPO),
    k("learner.ppo.gamma", "[0, 1]", "Discount.", PPO),
    k("learner.ppo.gae_lambda", "[0, 1]", "GAE lambda.", PPO),
    k("learner.ppo.rollout", "whole >= 0", "Rounds per rollout (0: one whole episode).", PPO),
    k("learner.ppo.minibatches", "whole >= 1", "Minibatches per epoch.", PPO),
    k("learner.ppo.epochs", "whole >= 1", "Passes over each rollout.", PPO),
    k("learner.ppo.clip", "> 0", "Surrogate clipping coefficient.", PPO),
    k("learner.ppo.entropy", ">= 0, \"auto\"", "Entropy bonus coefficient (at the start of the run, with entropy_anneal); auto: 0 for a central critic (MAPPO) under env.reward = \"welfare\" where the same agents act every round (the queue world), else 0.01 (it reads env.reward, as critic's auto does: with learner.reward = \"difference\" set it).", PPO),
    k("learner.ppo.entropy_anneal", "[0, 1]; 0 when unset", "The fraction of the run's planned updates over which the entropy bonus falls linearly to 0, then stays 0; 0 (the default): constant.", PPO),
    k("learner.ppo.vf_coef", ">= 0", "Value loss coefficient.", PPO),
    k("learner.ppo.max_grad_norm", "> 0", "Per-agent gradient norm limit.", PPO),
    k("learner.ppo.norm_adv", "true, false", "Normalise advantages per agent within each minibatch.", PPO),
    k("learner.ppo.value_norm", "true, false", "Critics predict returns normalised by running statistics (MAPPO's value normalisation).", PPO),
    k("learner.ppo.weight_decay", ">= 0", "AdamW weight decay.", PPO),
    k("learner.ppo.reward_scale", "> 0", "Reward multiplier.", PPO),
    k("learner.ppo.critic", "\"auto\", \"local\", \"central\"", "Local critics (IPPO) or one central critic input (MAPPO); auto: central under env.reward = \"welfare\", else local.", PPO),
    k("learner.ppo.share", "\"auto\", \"none\", \"class\", \"class_id\"", "Actor parameters per agent, or one per weight class shared by its agents (with the agent's id as an input for class_id); auto: class under env.reward = \"welfare\" where the same agents act every round (the queue world), for either critic, else none.", PPO),
    k("learner.ppo.head_scale", "(0, 10]", "The actor's output layer's initial weights and biases times this: 0.03 starts uniform to about 1%, as CleanRL's policy head does; at 1 (the default before issue 41) an untrained policy is tilted at random away from uniform play (initial logits spread about 0.3).", PPO),
    k("learner.ppo.group", "whole >= 1", "Environment copies per seed: each advantage minus the mean of the other copies' with the same arrivals (leave-one-out, as RLOO); 1: plain GAE. A training episode steps train.envs such groups.", PPO),
    k("learner.ppo.features", "\"spec\", \"all\", \"by_type\"", "State: SPEC 4's, the whole observation (budget share, utilities, backlog over arrival rate, the configured extras), or the by_type block (turns env.observe_by_type on; runs on clusters of any size with the same types).", PPO),
    k("learner.es.hidden", "whole >= 1", "Actor hidden width (one tanh layer, exported like PPO's actor).", ES),
    k("learner.es.pairs", "whole >= 1", "Antithetic pairs per generation: the population is twice this many environment copies (they replace train.envs).", ES),
    k("learner.es.sigma", "> 0", "Standard deviation of the parameter noise.", ES),
    k("learner.es.lr", "> 0", "Adam's learning rate.", ES),
    k("learner.es.weight_decay", ">= 0", "Decoupled weight decay per step.", ES),
    k("learner.es.per_class", "true, false", "One actor per weight class shared by its agents (else one per agent, in the queue world; elsewhere ES keeps one actor per group: true).", ES),
    k("learner.es.features", "\"spec\", \"all\", \"by_type\"", "State features, as PPO's.", ES),
    k("learner.es.shaping", "\"ranks\" | \"pair_signs\"", "Fitness shaping: centred ranks over the population (OpenAI-ES), or each antithetic pair weighted by the sign of its halves' difference times the rank of its size (for worlds whose seeds differ more than policies do).", ES),
    k("train.episodes", "whole >= 1", "Training episodes.", TRAIN),
    k("train.checkpoint_every", "whole >= 1", "Checkpoint every this many episodes (and at the end).", TRAIN),
    k("train.eval_seeds", LIMIT, "Held-out evaluation episodes at the end (greedy and sampled).", TRAIN),
    k("train.threads", LIMIT, "Worker threads (results do not depend on it; --threads overrides).", TRAIN),
    k("train.envs", LIMIT, "Environment seeds per training episode, stepped in parallel every round (rollout workers): that many copies, or with learner.ppo.group / learner.actor_critic.group that many groups of copies sharing a seed.", TRAIN),
    k("train.replicates", LIMIT, "Training replicates: independent training seeds trained as one run group (--replicates overrides).", TRAIN),
    k("train.replicate", "whole >= 0", "This run's index among its group's replicates (its training seed stream); set by the group.", TRAIN),
    k("train.references", "bool", "End the run with the best fixed level (picked on selection seeds) and uniform random play on its held-out seeds, as paired differences (summary.json `references`, the console, TensorBoard); written to a config only when false.", TRAIN),
];

/// The key of a flattened config path: array elements as `[]`, the entries of a
/// `learner.fixed.by_weight` table as the table.
fn pattern(path: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    for seg in path {
        if seg.parse::<usize>().is_ok() {
            if let Some(last) = out.last_mut() {
                last.push_str("[]");
            }
            continue;
        }
        if out.join(".") == "learner.fixed.by_weight" {
            continue;
        }
        out.push(seg.clone());
    }
    out.join(".")
}

/// Every key path of `v`, with its value, as [`pattern`]s.
fn flatten(path: &mut Vec<String>, v: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                path.push(k.clone());
                flatten(path, x, out);
                path.pop();
            }
        }
        toml::Value::Array(items) if items.iter().all(toml::Value::is_table) && !items.is_empty() => {
            for (i, x) in items.iter().enumerate() {
                path.push(i.to_string());
                flatten(path, x, out);
                path.pop();
            }
        }
        _ => {
            let key = pattern(path);
            if !out.iter().any(|(k, _)| *k == key) {
                out.push((key, v.clone()));
            }
        }
    }
}

/// The keys of a resolved experiment with `sets` applied, and their values.
pub fn keys_of(text: &str) -> Vec<(String, toml::Value)> {
    let v: toml::Value = toml::from_str(text).expect("a resolved config is TOML");
    let mut out = Vec::new();
    flatten(&mut Vec::new(), &v, &mut out);
    out
}

/// The default experiment as written out (defaults filled in).
fn defaults() -> Vec<(String, toml::Value)> {
    keys_of(&toml::to_string(&ExperimentFile::default()).expect("the default experiment serialises"))
}

fn type_of(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "string",
        toml::Value::Integer(_) => "integer",
        toml::Value::Float(_) => "number",
        toml::Value::Boolean(_) => "bool",
        toml::Value::Array(_) => "array",
        toml::Value::Table(_) => "table",
        toml::Value::Datetime(_) => "datetime",
    }
}

fn short(v: &toml::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}...", s.chars().take(57).collect::<String>())
    } else {
        s
    }
}

/// The experiment file's reference: one section per top-level table, a table of keys in each
/// (the other worlds' files follow it in [`crate::config::describe`]).
pub fn describe() -> String {
    let defaults = defaults();
    let mut out = String::from(
        "# Config keys\n\nEvery key an experiment file (or `--set KEY=VALUE`) can set, as `mtf config --describe` prints it (this file is its output: `mtf config --describe > docs/CONFIG.md`; a test checks they agree). Types and defaults come from the code; `env.agents[]` and `env.cluster[]` are arrays of tables (`[[env.agents]]`), set on the command line by index or `*` (`--set env.agents.*.load=0.8`). A key a learner does not run is checked but ignored.\n",
    );
    let mut section = "";
    for key in KEYS {
        let top = key.key.split('.').next().unwrap_or("");
        let top = if key.key.contains('.') { top } else { "(top level)" };
        if top != section {
            section = top;
            out.push_str(&format!(
                "\n## {}\n\n| key | type | default | values | meaning | read by |\n|---|---|---|---|---|---|\n",
                if top == "(top level)" {
                    top.to_string()
                } else {
                    format!("[{top}]")
                }
            ));
        }
        let found = defaults.iter().find(|(k, _)| k == key.key);
        let (kind, default) = match found {
            // A number whose default is "auto" (PPO's entropy bonus) is a number to set.
            Some((_, v)) if v.as_str() == Some("auto") && key.range.starts_with(">=") => ("number or \"auto\"", format!("`{}`", short(v))),
            Some((_, v)) => (type_of(v), format!("`{}`", short(v))),
            None => ("optional", "(unset)".into()),
        };
        out.push_str(&format!(
            "| `{}` | {kind} | {} | {} | {} | {} |\n",
            key.key,
            default.replace('|', "\\|"),
            limit(key.key).unwrap_or_else(|| key.range.to_string()).replace('|', "\\|"),
            key.meaning.replace('|', "\\|"),
            key.reader
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key the config has is described, and every description is of a key the config
    /// accepts: the default's keys, plus the optional ones a maximal config sets.
    #[test]
    fn the_reference_names_every_key_and_no_other() {
        let described: Vec<&str> = KEYS.iter().map(|k| k.key).collect();
        let mut dup = described.clone();
        dup.sort_unstable();
        dup.dedup();
        assert_eq!(dup.len(), described.len(), "a key described twice");
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
        // Every optional key set, so the resolved config has them all.
        let sets: Vec<String> = [
            "learner.hedge.eta=0.1",
            "env.queue_cap=100",
            "env.agents.*.application=\"resnet_conv\"",
            "learner.fixed.by_weight={w1=0.2,w2=0.4,w4=0.7}",
        ]
        .map(String::from)
        .to_vec();
        let exp = crate::config::Experiment::load(&path, &sets).unwrap();
        let mut config: Vec<String> = keys_of(&exp.to_toml()).into_iter().map(|(k, _)| k).collect();
        // Keys a valid config cannot set together with the above.
        // train.references is written only when false,
        // learner.ppo.entropy_anneal only when not 0.
        config.extend(
            [
                "env.trace",
                "env.trace_format",
                "env.trace_time_scale",
                "env.trace_start",
                "learner.fixed.per_agent",
                "train.references",
                "learner.ppo.entropy_anneal",
            ]
            .map(String::from),
        );
        for k in &config {
            assert!(described.contains(&k.as_str()), "`{k}` has no line in agents/src/config/keys.rs");
        }
        for k in &described {
            assert!(config.iter().any(|c| c == k), "`{k}` is described but the config has no such key");
        }
        // Each optional key is one the config accepts.
        for set in [
            "env.trace=\"x.csv\"",
            "env.trace_format=\"jobs\"",
            "env.trace_time_scale=0.5",
            "env.trace_start=\"seeded\"",
            "learner.fixed.per_agent=[0.1]",
            "learner.ppo.entropy_anneal=0.5",
            "learner.actor_critic.share=\"class\"",
        ] {
            if let Err(e) = crate::config::Experiment::load(&path, &[set.to_string()]) {
                assert!(!e.to_string().contains("unknown field"), "{set}: {e}");
            }
        }
    }

    #[test]
    fn every_limit_placeholder_has_its_constant() {
        for key in KEYS.iter().filter(|k| k.range == LIMIT) {
            assert!(limit(key.key).is_some(), "{} has no limit", key.key);
        }
        assert!(describe().contains(&format!("1 to {}", env::config::limits::MAX_ROUNDS)));
    }

    #[test]
    fn docs_config_md_is_the_reference() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/CONFIG.md");
        let doc = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            doc == crate::config::describe(),
            "docs/CONFIG.md is not `mtf config --describe`'s output: regenerate it with `target/release/mtf config --describe > docs/CONFIG.md`"
        );
    }
}

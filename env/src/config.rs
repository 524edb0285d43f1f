//! Scenario configs: TOML with `--set key.path=value` overrides, read into raw structs that deny
//! unknown fields, then validated into a resolved [`Scenario`] with every default filled in.
//! Every error names the file, the key and the problem on one line.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Documented limits of a scenario, checked before anything of that size is allocated (a typo
/// of 1e9 agents is an error naming the key, not an allocation failure).
pub mod limits {
    /// Agents in a scenario.
    pub const MAX_AGENTS: usize = 10_000;
    /// Accelerators in a scenario.
    pub const MAX_ACCELERATORS: usize = 100_000;
    /// Agents x accelerators (the per-round matrices hold this many f64s).
    pub const MAX_CELLS: usize = 10_000_000;
    /// Rounds per episode.
    pub const MAX_ROUNDS: u32 = 10_000_000;
    /// Largest service rate (jobs per round) of any (agent, accelerator).
    pub const MAX_RATE: f64 = 1e9;
    /// Smallest service rate.
    pub const MIN_RATE: f64 = 1e-6;
    /// Largest mean arrival rate (jobs per round) in any burst state.
    pub const MAX_ARRIVAL_RATE: f64 = 1e9;
    /// Largest ratio between two agents' weights (the scheduler's weight bounds, SPEC 3).
    pub const MAX_WEIGHT_RATIO: f64 = 1e9;
    /// Largest token total T (SPEC 8's valuation world uses 1e9).
    pub const MAX_TOKENS: f64 = 1e12;
    /// Largest arrival count in one trace cell.
    pub const MAX_TRACE_ARRIVALS: u64 = 1_000_000_000;
    /// Threshold levels.
    pub const MAX_LEVELS: usize = 1_000;
    /// Largest bid factor (bids stay below the scheduler's 1e15 with `value_scale` <= 1e12).
    pub const MAX_BID_FACTOR: f64 = 1e3;
    /// Queue cap per queue.
    pub const MAX_QUEUE_CAP: u64 = 1_000_000_000_000;
}

/// Weights divided by the power of two at or below the largest one. Every quantity the
/// harness derives from weights is a ratio of weights, so results do not depend on their scale
/// (SPEC 5); dividing by a power of two changes no result bit (it is exact in binary floating
/// point), and weights of 1e308 or 1e-308 no longer overflow or underflow sums.
pub fn normalised_weights(weights: &[f64]) -> Vec<f64> {
    let max = weights.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
    let scale = 2f64.powi(max.log2().floor() as i32);
    weights.iter().map(|w| w / scale).collect()
}

/// A config error: file, key path and problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {key}: {problem}")]
pub struct ConfigError {
    /// The config file (or `<string>`).
    pub file: String,
    /// The key path, e.g. `env.agents[1].weight`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

/// Queue structure (SPEC 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Queues {
    /// One backlog per agent, demand-form mechanisms, dispatch after allocation.
    Central,
    /// One queue per (agent, accelerator), placement at arrival (the thesis code).
    PerAccelerator,
}

/// Central-queue dispatch over the accelerators an agent won.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dispatch {
    /// Power of two choices, job by job.
    P2c,
    /// Fill accelerators fastest first (no balancing loss; the reference).
    Fluid,
}

/// Per-accelerator placement of arriving jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Power of two choices.
    P2c,
    /// One accelerator drawn uniformly.
    Uniform,
}

/// How power of two choices draws its two accelerators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum P2cDraw {
    /// Uniformly.
    Uniform,
    /// With probability proportional to the service rate (the thesis code).
    RateProportional,
}

/// Arrival process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// Poisson(lambda_i) per round.
    Poisson,
    /// Markov-modulated Poisson (bursty).
    Mmpp,
    /// Counts per (round, agent) from a CSV file.
    Trace,
}

/// Service capacity of an allocated accelerator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// Poisson(mu) jobs.
    Poisson,
    /// round(mu) jobs.
    Deterministic,
}

/// Reward kind (SPEC 2.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reward {
    /// Sum of the utilities of the accelerators won (thesis eq. 4.3).
    Utility,
    /// Jobs served over the agent's best rate.
    Throughput,
    /// Minus queued jobs over queue capacity.
    Backlog,
    /// Shared (cooperative): every agent gets the round's weighted welfare, sum w_j served_j /
    /// sum w_j, over the mean of the agents' best rates. Not in SPEC 2.8: selfish rewards make
    /// high thresholds individually profitable (env/examples/deviation.rs), so learning under
    /// them finds worse welfare; this reward asks what aligned learners would find.
    Welfare,
}

/// Service-rate model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Heterogeneity {
    /// Rates from the catalog's throughput table.
    Catalog,
    /// A speed-up from {1.0, 1.5} (weights 3:2) per (agent, accelerator), drawn at reset.
    SpeedupDraw,
}

/// What the agents share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum World {
    /// Accelerators serving job queues (SPEC 2).
    Queues,
    /// No queues: each round every agent draws a private value U[0, 1) per accelerator and
    /// earns its value minus its price for what it wins (SPEC 8, for checking learners against
    /// auction theory).
    Valuations,
}

/// What an agent's action sets: its threshold (MTF and the baselines) or its bid factor (the
/// auctions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A threshold level (`env.threshold_levels`).
    Threshold,
    /// A bid factor (`env.bid_levels`): bids are factor x `value_scale` x utility.
    Bid,
}

impl ActionKind {
    /// The name in exported agents' manifests and messages: `threshold` or `bid`.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Threshold => "threshold",
            ActionKind::Bid => "bid",
        }
    }
}

/// What happens to the accelerators nobody bought (MTF's free phase; the auctions' unsold).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Leftovers {
    /// SPEC 3.1's free phase, exactly.
    RoundRobin,
    /// One by one to an agent drawn with probability proportional to weight (the thesis code).
    WeightedRandom,
    /// They stay idle (SPEC 8's valuation world).
    None,
}

/// Application and accelerator-type catalog: throughput of each application on each type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Catalog {
    /// Application names.
    pub applications: Vec<String>,
    /// Accelerator type names; the first is the reference type.
    pub types: Vec<String>,
    /// `throughput[app][type]`.
    pub throughput: Vec<Vec<f64>>,
}

impl Default for Catalog {
    /// Thesis Table 5.1 (SPEC 1).
    fn default() -> Self {
        Self {
            applications: ["resnet_conv", "resnet_matmul", "mobilenet_conv", "mobilenet_ws"]
                .map(String::from)
                .to_vec(),
            types: ["gemmini_2ghz", "gemmini_3ghz"].map(String::from).to_vec(),
            throughput: vec![vec![70.262, 86.332], vec![3.001, 4.139], vec![81.644, 111.995], vec![1.480, 2.101]],
        }
    }
}

/// MMPP parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Mmpp {
    /// Rate multiplier in the high state.
    pub high_mult: f64,
    /// Rate multiplier in the low state.
    pub low_mult: f64,
    /// Per-round probability high -> low.
    pub p_high_to_low: f64,
    /// Per-round probability low -> high.
    pub p_low_to_high: f64,
}

impl Default for Mmpp {
    fn default() -> Self {
        Self {
            high_mult: 2.5,
            low_mult: 0.5,
            p_high_to_low: 0.2,
            p_low_to_high: 1.0 / 15.0,
        }
    }
}

impl Mmpp {
    /// Stationary probability of the high state.
    pub fn p_high(&self) -> f64 {
        self.p_low_to_high / (self.p_low_to_high + self.p_high_to_low)
    }

    /// Long-run mean multiplier (1 for the defaults, so `rho` keeps its meaning).
    pub fn mean_mult(&self) -> f64 {
        let p = self.p_high();
        p * self.high_mult + (1.0 - p) * self.low_mult
    }
}

/// A group of identical agents in the config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentGroup {
    /// How many agents.
    #[serde(default = "one")]
    pub count: usize,
    /// Weight w_i > 0.
    #[serde(default = "one_f")]
    pub weight: f64,
    /// Application name; absent: agents cycle through the catalog by index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    /// Queue load rho in (0, 1].
    pub load: f64,
}

/// A group of accelerators of one type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterGroup {
    /// Accelerator type name.
    #[serde(rename = "type")]
    pub kind: String,
    /// How many.
    pub count: usize,
}

fn one() -> usize {
    1
}
fn one_f() -> f64 {
    1.0
}

/// The `[env]` section as written (defaults declared once, in [`EnvSection::default`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvSection {
    /// Rounds per episode.
    pub rounds: u32,
    /// What the agents share: job queues (SPEC 2) or private values (SPEC 8).
    pub world: World,
    /// Queue structure.
    pub queues: Queues,
    /// Central-queue dispatch.
    pub dispatch: Dispatch,
    /// Per-accelerator placement.
    pub placement: Placement,
    /// How p2c draws its candidates.
    pub p2c_draw: P2cDraw,
    /// Arrival process.
    pub arrivals: Arrivals,
    /// CSV of arrivals per round (rows) and agent (columns), for `arrivals = "trace"`; relative
    /// paths are relative to the config file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<PathBuf>,
    /// Service capacity model.
    pub service: Service,
    /// Rounds a job may wait (`"none"` disables).
    pub deadline: Deadline,
    /// Queue cap: default 1000 per central backlog, 200 per per-accelerator queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_cap: Option<u64>,
    /// Reward kind.
    pub reward: Reward,
    /// Service-rate model.
    pub heterogeneity: Heterogeneity,
    /// Jobs per round of the reference accelerator.
    pub base_rate: f64,
    /// Threshold levels agents choose from.
    pub threshold_levels: Vec<f64>,
    /// Bid factors agents choose from under an auction mechanism (SPEC 8).
    pub bid_levels: Vec<f64>,
    /// Tokens bid per unit of utility at bid factor 1 (SPEC 8).
    pub value_scale: f64,
    /// Whether observations include the burst state (mmpp).
    pub observe_burst: bool,
    /// Whether observations include every agent's budget share.
    pub observe_budgets: bool,
    /// Whether observations include the agent's weight over the largest weight (its weight
    /// class, in (0, 1]).
    pub observe_weight: bool,
    /// MMPP parameters.
    pub mmpp: Mmpp,
    /// Agent groups, in order.
    pub agents: Vec<AgentGroup>,
    /// Accelerator groups, in order.
    pub cluster: Vec<ClusterGroup>,
    /// Applications and accelerator types.
    pub catalog: Catalog,
}

/// A deadline in rounds, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deadline {
    /// Jobs are dropped once `now - arrival >= rounds`.
    Rounds(u32),
    /// Jobs never expire.
    None,
}

impl Serialize for Deadline {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Deadline::Rounds(r) => s.serialize_u32(*r),
            Deadline::None => s.serialize_str("none"),
        }
    }
}

impl<'de> Deserialize<'de> for Deadline {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            N(i64),
            S(String),
        }
        match Raw::deserialize(d)? {
            Raw::N(n) if n >= 1 && n <= i64::from(u32::MAX) => Ok(Deadline::Rounds(n as u32)),
            Raw::S(s) if s == "none" => Ok(Deadline::None),
            Raw::N(n) => Err(serde::de::Error::custom(format!(
                "deadline must be a whole number of rounds >= 1 or \"none\", got {n}"
            ))),
            Raw::S(s) => Err(serde::de::Error::custom(format!(
                "deadline must be a whole number of rounds >= 1 or \"none\", got \"{s}\""
            ))),
        }
    }
}

impl Default for EnvSection {
    fn default() -> Self {
        Self {
            rounds: 300,
            queues: Queues::Central,
            dispatch: Dispatch::P2c,
            placement: Placement::P2c,
            p2c_draw: P2cDraw::Uniform,
            arrivals: Arrivals::Poisson,
            trace: None,
            service: Service::Poisson,
            deadline: Deadline::Rounds(10),
            queue_cap: None,
            reward: Reward::Utility,
            heterogeneity: Heterogeneity::Catalog,
            base_rate: 40.0,
            world: World::Queues,
            threshold_levels: (0..10).map(|k| k as f64 / 10.0).collect(),
            bid_levels: (0..=30).map(|k| k as f64 / 20.0).collect(),
            value_scale: 1.0,
            observe_burst: false,
            observe_budgets: false,
            observe_weight: false,
            mmpp: Mmpp::default(),
            agents: vec![AgentGroup {
                count: 20,
                weight: 1.0,
                application: None,
                load: 0.6,
            }],
            cluster: vec![
                ClusterGroup {
                    kind: "gemmini_2ghz".into(),
                    count: 20,
                },
                ClusterGroup {
                    kind: "gemmini_3ghz".into(),
                    count: 20,
                },
            ],
            catalog: Catalog::default(),
        }
    }
}

/// The `[mechanism]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MechanismSection {
    /// Registry name (see `scheduler::registry::NAMES`).
    pub name: String,
    /// Token total T (MTF).
    pub total_tokens: f64,
    /// MTF leftovers rule.
    pub leftovers: Leftovers,
    /// Themis fairness knob f.
    pub fairness: f64,
}

impl MechanismSection {
    /// The mechanism parameters this section sets (for [`scheduler::registry::build`]).
    pub fn params(&self) -> scheduler::registry::Params {
        scheduler::registry::Params {
            fairness: self.fairness,
            leftovers: match self.leftovers {
                Leftovers::RoundRobin => scheduler::registry::Leftovers::RoundRobin,
                Leftovers::WeightedRandom => scheduler::registry::Leftovers::WeightedRandom,
                Leftovers::None => scheduler::registry::Leftovers::Idle,
            },
        }
    }
}

impl Default for MechanismSection {
    fn default() -> Self {
        Self {
            name: "mtf".into(),
            total_tokens: 100.0,
            leftovers: Leftovers::RoundRobin,
            fairness: scheduler::themis::DEFAULT_FAIRNESS,
        }
    }
}

/// A scenario file: seed, world and mechanism. Other crates nest these sections in their own
/// top-level config (see `agents`), so this type is also the schema of the `[env]` and
/// `[mechanism]` tables everywhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioFile {
    /// Root seed of every random stream.
    pub seed: u64,
    /// The world.
    pub env: EnvSection,
    /// The mechanism.
    pub mechanism: MechanismSection,
}

impl Default for ScenarioFile {
    fn default() -> Self {
        Self {
            seed: 1,
            env: EnvSection::default(),
            mechanism: MechanismSection::default(),
        }
    }
}

/// One agent, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// Weight.
    pub weight: f64,
    /// Application index in the catalog.
    pub app: usize,
    /// Queue load rho.
    pub load: f64,
}

/// A validated scenario with derived values: agents and accelerators expanded, caps resolved,
/// the trace loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// As written (with defaults and overrides), for the run directory.
    pub file: ScenarioFile,
    /// Agents, expanded.
    pub agents: Vec<AgentSpec>,
    /// Accelerator type index per accelerator.
    pub accelerators: Vec<usize>,
    /// Queue cap per queue.
    pub queue_cap: u64,
    /// Deadline in rounds (`u32::MAX` for none).
    pub deadline: u32,
    /// Trace arrivals `[round][agent]` (trace mode).
    pub trace: Vec<Vec<u64>>,
}

/// Apply `--set key.path=value`: the value is read as TOML (number, bool, array, inline table,
/// string) and otherwise taken as a bare string. A numeric segment indexes an array of tables
/// (`env.agents.1.load=0.8`) and `*` means every element (`env.agents.*.load=0.8`).
pub fn apply_override(table: &mut toml::Table, spec: &str) -> Result<(), String> {
    let (path, raw) = spec
        .split_once('=')
        .ok_or_else(|| format!("--set {spec}: expected key.path=value"))?;
    if let Some(bad) = spec.chars().find(|c| c.is_control()) {
        return Err(format!(
            "--set {}: the value contains the control character {bad:?}; give one value per --set",
            spec.escape_debug()
        ));
    }
    let value: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) if t.len() == 1 => t.remove("v").expect("parsed v"),
        Ok(_) => return Err(format!("--set {spec}: the value must be one TOML value")),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let keys: Vec<&str> = path.trim().split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(format!("empty key in `{path}`"));
    }
    set_path(table, &keys, &value, path)
}

fn set_path(table: &mut toml::Table, keys: &[&str], value: &toml::Value, path: &str) -> Result<(), String> {
    let (first, rest) = (keys[0], &keys[1..]);
    if rest.is_empty() {
        table.insert(first.to_string(), value.clone());
        return Ok(());
    }
    let entry = table
        .entry(first.to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    match entry {
        toml::Value::Table(t) => set_path(t, rest, value, path),
        toml::Value::Array(items) => {
            let (index, after) = (rest[0], &rest[1..]);
            if after.is_empty() {
                return Err(format!("`{path}`: set a field of an element, e.g. `{first}.{index}.load`"));
            }
            let targets: Vec<usize> = if index == "*" {
                (0..items.len()).collect()
            } else {
                let k: usize = index
                    .parse()
                    .map_err(|_| format!("`{path}`: `{first}` is an array; index it with a number or `*`, not `{index}`"))?;
                if k >= items.len() {
                    return Err(format!("`{path}`: `{first}` has {} elements, no index {k}", items.len()));
                }
                vec![k]
            };
            for k in targets {
                match &mut items[k] {
                    toml::Value::Table(t) => set_path(t, after, value, path)?,
                    _ => return Err(format!("`{path}`: `{first}.{k}` is not a table")),
                }
            }
            Ok(())
        }
        _ => Err(format!("`{path}`: `{first}` is not a table")),
    }
}

/// Read a TOML file and apply overrides, naming the file in errors.
pub fn read_table(path: &Path, overrides: &[String]) -> Result<toml::Table, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: file.clone(),
        key: "(file)".into(),
        problem: e.to_string(),
    })?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError {
        file: file.clone(),
        key: "(syntax)".into(),
        problem: e.message().to_string() + &line_of(&text, e.span()),
    })?;
    for o in overrides {
        apply_override(&mut table, o).map_err(|p| ConfigError {
            file: file.clone(),
            key: o.split('=').next().unwrap_or("").to_string(),
            problem: p,
        })?;
    }
    Ok(table)
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    span.map(|s| format!(" (line {})", text[..s.start.min(text.len())].lines().count().max(1)))
        .unwrap_or_default()
}

/// Deserialize a table into `T`, naming the key path of the first problem.
pub fn from_table<T: serde::de::DeserializeOwned>(file: &str, table: toml::Table) -> Result<T, ConfigError> {
    serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
        let key = e.path().to_string();
        let problem = e.into_inner().message().to_string();
        ConfigError {
            file: file.to_string(),
            key: if key == "." { "(top level)".into() } else { key },
            problem,
        }
    })
}

/// Top-level sections of an experiment file that other crates own and validate (`agents`:
/// learners and training); a scenario read by itself skips them, and only them.
pub const FOREIGN_SECTIONS: &[&str] = &["learner", "train"];

impl ScenarioFile {
    /// Load a scenario file with overrides and validate it (sections in [`FOREIGN_SECTIONS`]
    /// are skipped; every other unknown key is an error).
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ConfigError> {
        let mut table = read_table(path, overrides)?;
        for k in FOREIGN_SECTIONS {
            table.remove(*k);
        }
        let file: ScenarioFile = from_table(&path.display().to_string(), table)?;
        file.resolve(path)
    }

    /// Validate into a [`Scenario`]; `path` names the file in errors and anchors the trace path.
    pub fn resolve(self, path: &Path) -> Result<Scenario, ConfigError> {
        let fname = path.display().to_string();
        let err = error_in(&fname);
        let e = &self.env;
        // In this order: what later checks rely on is checked first, and sizes are checked
        // before anything of that size is allocated.
        check_catalog(&fname, e)?;
        check_world(&fname, e)?;
        let (agents, m_total) = expand_agents(&fname, e)?;
        let accelerators = expand_cluster(&fname, e, m_total)?;
        check_mechanism(&fname, &self.mechanism)?;
        check_valuations(&fname, e, &self.mechanism)?;
        check_arrival_rates(&fname, e, &agents, m_total)?;
        let trace = match (e.arrivals, &e.trace) {
            (Arrivals::Trace, None) => return Err(err("env.trace", "arrivals = \"trace\" needs a trace file".into())),
            (Arrivals::Trace, Some(p)) => {
                let full = if p.is_absolute() {
                    p.clone()
                } else {
                    path.parent().unwrap_or(Path::new(".")).join(p)
                };
                read_trace(&full, agents.len()).map_err(|problem| err("env.trace", problem))?
            }
            _ => Vec::new(),
        };
        let queue_cap = e.queue_cap.unwrap_or(match e.queues {
            Queues::Central => 1000,
            Queues::PerAccelerator => 200,
        });
        let deadline = match e.deadline {
            Deadline::Rounds(r) => r,
            Deadline::None => u32::MAX,
        };
        Ok(Scenario {
            file: self,
            agents,
            accelerators,
            queue_cap,
            deadline,
            trace,
        })
    }
}

/// A constructor of errors in `file`: `err(key, problem)`.
fn error_in(file: &str) -> impl Fn(&str, String) -> ConfigError + '_ {
    move |key, problem| ConfigError {
        file: file.to_string(),
        key: key.to_string(),
        problem,
    }
}

/// The catalog: applications, types, and a positive throughput table of the right shape.
fn check_catalog(file: &str, e: &EnvSection) -> Result<(), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    if cat.applications.is_empty() {
        return Err(err("env.catalog.applications", "needs at least one application".into()));
    }
    if cat.types.is_empty() {
        return Err(err("env.catalog.types", "needs at least one accelerator type".into()));
    }
    if cat.throughput.len() != cat.applications.len() {
        return Err(err(
            "env.catalog.throughput",
            format!(
                "has {} rows, expected one per application ({})",
                cat.throughput.len(),
                cat.applications.len()
            ),
        ));
    }
    for (a, row) in cat.throughput.iter().enumerate() {
        if row.len() != cat.types.len() {
            return Err(err(
                &format!("env.catalog.throughput[{a}]"),
                format!("has {} entries, expected one per type ({})", row.len(), cat.types.len()),
            ));
        }
        if let Some(t) = row.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
            return Err(err(
                &format!("env.catalog.throughput[{a}][{t}]"),
                format!("must be a finite number > 0, got {}", row[t]),
            ));
        }
    }
    Ok(())
}

/// The world's numbers: rounds, rates, levels, the mmpp chain, the queue cap.
fn check_world(file: &str, e: &EnvSection) -> Result<(), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    if e.rounds == 0 || e.rounds > limits::MAX_ROUNDS {
        return Err(err(
            "env.rounds",
            format!("must be in [1, {}], got {}", limits::MAX_ROUNDS, e.rounds),
        ));
    }
    if !(e.base_rate > 0.0 && e.base_rate <= limits::MAX_RATE) {
        return Err(err("env.base_rate", format!("must be in (0, 1e9], got {}", e.base_rate)));
    }
    for (a, row) in cat.throughput.iter().enumerate() {
        for (t, v) in row.iter().enumerate() {
            let rate = e.base_rate * v / row[0];
            if !(limits::MIN_RATE..=limits::MAX_RATE).contains(&rate) {
                return Err(err(
                    &format!("env.catalog.throughput[{a}][{t}]"),
                    format!(
                        "gives a service rate of {rate:e} jobs per round (base_rate x {v} / {}), outside [1e-6, 1e9]",
                        row[0]
                    ),
                ));
            }
        }
    }
    if e.threshold_levels.is_empty() || e.threshold_levels.len() > limits::MAX_LEVELS {
        return Err(err(
            "env.threshold_levels",
            format!("needs 1 to {} levels, got {}", limits::MAX_LEVELS, e.threshold_levels.len()),
        ));
    }
    if let Some(k) = e.threshold_levels.iter().position(|t| !(0.0..=1.0).contains(t)) {
        return Err(err(
            &format!("env.threshold_levels[{k}]"),
            format!("must be in [0, 1], got {}", e.threshold_levels[k]),
        ));
    }
    if e.bid_levels.is_empty() || e.bid_levels.len() > limits::MAX_LEVELS {
        return Err(err(
            "env.bid_levels",
            format!("needs 1 to {} levels, got {}", limits::MAX_LEVELS, e.bid_levels.len()),
        ));
    }
    if let Some(k) = e.bid_levels.iter().position(|a| !(0.0..=limits::MAX_BID_FACTOR).contains(a)) {
        return Err(err(
            &format!("env.bid_levels[{k}]"),
            format!("must be in [0, {}], got {}", limits::MAX_BID_FACTOR, e.bid_levels[k]),
        ));
    }
    if !(e.value_scale > 0.0 && e.value_scale <= limits::MAX_TOKENS) {
        return Err(err("env.value_scale", format!("must be in (0, 1e12], got {}", e.value_scale)));
    }
    let m = &e.mmpp;
    for (key, p) in [
        ("env.mmpp.p_high_to_low", m.p_high_to_low),
        ("env.mmpp.p_low_to_high", m.p_low_to_high),
    ] {
        if !(p > 0.0 && p <= 1.0) {
            return Err(err(key, format!("must be a probability in (0, 1], got {p}")));
        }
    }
    for (key, x) in [("env.mmpp.high_mult", m.high_mult), ("env.mmpp.low_mult", m.low_mult)] {
        if !(0.0..=1e6).contains(&x) {
            return Err(err(key, format!("must be a number in [0, 1e6], got {x}")));
        }
    }
    if let Some(cap) = e.queue_cap {
        if cap == 0 || cap > limits::MAX_QUEUE_CAP {
            return Err(err("env.queue_cap", format!("must be in [1, 1e12], got {cap}")));
        }
    }
    if e.agents.is_empty() {
        return Err(err("env.agents", "needs at least one agent group".into()));
    }
    Ok(())
}

/// The agents, expanded from their groups after their total (and the accelerators' total, returned) are checked against the limits.
fn expand_agents(file: &str, e: &EnvSection) -> Result<(Vec<AgentSpec>, usize), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    // Sizes first, before anything of that size is allocated.
    let count = |groups: Vec<usize>, key: &str, max: usize| -> Result<usize, ConfigError> {
        let total = groups.iter().try_fold(0usize, |acc, &k| acc.checked_add(k)).unwrap_or(usize::MAX);
        if total > max {
            return Err(err(key, format!("{total} in all, more than the limit of {max}")));
        }
        Ok(total)
    };
    let n = count(e.agents.iter().map(|g| g.count).collect(), "env.agents[].count", limits::MAX_AGENTS)?;
    let m_total = count(
        e.cluster.iter().map(|g| g.count).collect(),
        "env.cluster[].count",
        limits::MAX_ACCELERATORS,
    )?;
    if n.saturating_mul(m_total) > limits::MAX_CELLS {
        return Err(err(
            "env.agents[].count",
            format!(
                "{n} agents x {m_total} accelerators is more than the limit of {} cells",
                limits::MAX_CELLS
            ),
        ));
    }
    let max_w = e.agents.iter().map(|g| g.weight).fold(0.0, f64::max);
    let mut agents = Vec::with_capacity(n);
    for (g, group) in e.agents.iter().enumerate() {
        let key = |f: &str| format!("env.agents[{g}].{f}");
        if group.count == 0 {
            return Err(err(&key("count"), "must be at least 1".into()));
        }
        if !(group.weight.is_finite() && group.weight > 0.0) {
            return Err(err(&key("weight"), format!("must be a finite number > 0, got {}", group.weight)));
        }
        if max_w / group.weight > limits::MAX_WEIGHT_RATIO {
            return Err(err(
                &key("weight"),
                format!(
                    "{:e} is more than 1e9 times smaller than the largest weight ({max_w:e})",
                    group.weight
                ),
            ));
        }
        if !(group.load > 0.0 && group.load <= 1.0) {
            return Err(err(&key("load"), format!("must be in (0, 1], got {}", group.load)));
        }
        let app = match &group.application {
            Some(name) => Some(cat.applications.iter().position(|a| a == name).ok_or_else(|| {
                err(
                    &key("application"),
                    format!("`{name}` is not in the catalog (known: {})", cat.applications.join(", ")),
                )
            })?),
            None => None,
        };
        for _ in 0..group.count {
            let idx = agents.len();
            agents.push(AgentSpec {
                weight: group.weight,
                app: app.unwrap_or(idx % cat.applications.len()),
                load: group.load,
            });
        }
    }
    Ok((agents, m_total))
}

/// The accelerators' types, expanded from the cluster groups.
fn expand_cluster(file: &str, e: &EnvSection, m_total: usize) -> Result<Vec<usize>, ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    if e.cluster.is_empty() {
        return Err(err("env.cluster", "needs at least one accelerator group".into()));
    }
    let mut accelerators = Vec::with_capacity(m_total);
    for (g, group) in e.cluster.iter().enumerate() {
        let t = cat.types.iter().position(|t| *t == group.kind).ok_or_else(|| {
            err(
                &format!("env.cluster[{g}].type"),
                format!("`{}` is not in the catalog (known: {})", group.kind, cat.types.join(", ")),
            )
        })?;
        if group.count == 0 {
            return Err(err(&format!("env.cluster[{g}].count"), "must be at least 1".into()));
        }
        accelerators.extend(std::iter::repeat_n(t, group.count));
    }
    Ok(accelerators)
}

/// The mechanism section: a registered name, a token total and fairness in range.
fn check_mechanism(file: &str, mechanism: &MechanismSection) -> Result<(), ConfigError> {
    let err = error_in(file);
    let mech = mechanism;
    if !scheduler::registry::NAMES.contains(&mech.name.as_str()) {
        return Err(err(
            "mechanism.name",
            format!(
                "unknown mechanism `{}` (known: {})",
                mech.name,
                scheduler::registry::NAMES.join(", ")
            ),
        ));
    }
    if !(mech.total_tokens > 0.0 && mech.total_tokens <= limits::MAX_TOKENS) {
        return Err(err(
            "mechanism.total_tokens",
            format!("must be in (0, 1e12], got {}", mech.total_tokens),
        ));
    }
    if !(0.0..=1.0).contains(&mech.fairness) {
        return Err(err("mechanism.fairness", format!("must be in [0, 1], got {}", mech.fairness)));
    }
    Ok(())
}

/// The valuation world gives nothing away: unsold items must stay idle (SPEC 8).
fn check_valuations(file: &str, e: &EnvSection, mech: &MechanismSection) -> Result<(), ConfigError> {
    if e.world == World::Valuations && mech.leftovers != Leftovers::None {
        return Err(error_in(file)(
            "mechanism.leftovers",
            "env.world = \"valuations\" needs leftovers = \"none\" (a free phase would give items to agents that bid nothing)".into(),
        ));
    }
    Ok(())
}

/// Every agent's largest mean arrival rate, in any burst state, within the limit.
fn check_arrival_rates(file: &str, e: &EnvSection, agents: &[AgentSpec], m_total: usize) -> Result<(), ConfigError> {
    let err = error_in(file);
    let cat = &e.catalog;
    let m = &e.mmpp;
    // The largest mean arrival rate any agent can have in any burst state (SPEC 2.1).
    let weights = normalised_weights(&agents.iter().map(|a| a.weight).collect::<Vec<_>>());
    let total_w: f64 = weights.iter().sum();
    let mult = if e.arrivals == Arrivals::Mmpp {
        m.high_mult.max(m.low_mult)
    } else {
        1.0
    };
    for (i, a) in agents.iter().enumerate() {
        let best = cat.throughput[a.app].iter().copied().fold(0.0, f64::max) / cat.throughput[a.app][0];
        let lambda = a.load * weights[i] / total_w * e.base_rate * best * m_total as f64 * mult;
        if lambda > limits::MAX_ARRIVAL_RATE {
            let key = if mult > 1.0 { "env.mmpp.high_mult" } else { "env.base_rate" };
            return Err(err(
                key,
                format!("agent {i} would see {lambda:e} arrivals per round, more than the limit of 1e9"),
            ));
        }
    }
    Ok(())
}

/// Read a trace CSV: one row per round, one column per agent, whole numbers in
/// `[0, limits::MAX_TRACE_ARRIVALS]`. A first line is a header only when none of its cells is a
/// number (so a first row of `-1` or `nan` is an error, not a header); a UTF-8 byte-order mark
/// is skipped. Rounds past the end of the trace wrap around.
pub fn read_trace(path: &Path, n: usize) -> Result<Vec<Vec<u64>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut rows = Vec::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let parsed: Result<Vec<u64>, _> = cells.iter().map(|c| c.parse::<u64>()).collect();
        let header = k == 0 && cells.iter().all(|c| c.parse::<f64>().is_err());
        match parsed {
            Ok(row) if row.len() == n => {
                if let Some(c) = row.iter().position(|&v| v > limits::MAX_TRACE_ARRIVALS) {
                    return Err(format!(
                        "{} line {} column {}: {} arrivals, more than the limit of {}",
                        path.display(),
                        k + 1,
                        c + 1,
                        row[c],
                        limits::MAX_TRACE_ARRIVALS
                    ));
                }
                rows.push(row)
            }
            Ok(row) => {
                return Err(format!(
                    "{} line {}: {} columns, expected one per agent ({n})",
                    path.display(),
                    k + 1,
                    row.len()
                ))
            }
            Err(_) if header => continue,
            Err(_) => return Err(format!("{} line {}: expected non-negative whole numbers", path.display(), k + 1)),
        }
    }
    if rows.is_empty() {
        return Err(format!("{}: no rows", path.display()));
    }
    Ok(rows)
}

impl EnvSection {
    /// Take `from`'s observation-only switches (burst state, weight class, budgets): what a
    /// trained policy reads, over this section's dynamics.
    pub fn observe_as(&mut self, from: &EnvSection) {
        self.observe_burst = from.observe_burst;
        self.observe_weight = from.observe_weight;
        self.observe_budgets = from.observe_budgets;
    }
}

impl Scenario {
    /// The distinct agent weights, ascending: the weight classes every per-class figure and
    /// per-class policy is indexed by.
    pub fn weight_classes(&self) -> Vec<f64> {
        let mut w: Vec<f64> = self.agents.iter().map(|a| a.weight).collect();
        w.sort_by(f64::total_cmp);
        w.dedup();
        w
    }

    /// The resolved config as TOML (defaults filled in, overrides applied): enough to rerun.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.file).expect("a scenario serialises")
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.agents.len()
    }

    /// Number of accelerators.
    pub fn m(&self) -> usize {
        self.accelerators.len()
    }

    /// What an agent's action sets under this scenario's mechanism.
    pub fn action_kind(&self) -> ActionKind {
        if scheduler::registry::takes_bids(&self.file.mechanism.name) {
            ActionKind::Bid
        } else {
            ActionKind::Threshold
        }
    }

    /// The levels an action indexes: threshold levels, or bid factors under an auction.
    pub fn action_levels(&self) -> &[f64] {
        match self.action_kind() {
            ActionKind::Threshold => &self.file.env.threshold_levels,
            ActionKind::Bid => &self.file.env.bid_levels,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(text: &str, overrides: &[&str]) -> Result<Scenario, ConfigError> {
        let mut table: toml::Table = toml::from_str(text).unwrap();
        for o in overrides {
            apply_override(&mut table, o).unwrap();
        }
        let file: ScenarioFile = from_table("test.toml", table)?;
        file.resolve(Path::new("test.toml"))
    }

    #[test]
    fn defaults_are_the_spec_scenario() {
        let s = load_str("", &[]).unwrap();
        assert_eq!((s.n(), s.m(), s.queue_cap, s.deadline), (20, 40, 1000, 10));
        assert_eq!(s.agents[5].app, 1);
        assert_eq!(s.file.env.threshold_levels.len(), 10);
    }

    #[test]
    fn errors_name_file_key_and_problem() {
        let e = |t: &str| load_str(t, &[]).unwrap_err().to_string();
        assert_eq!(e("[env]\nroundz = 3"), "test.toml: env.roundz: unknown field `roundz`, expected one of `rounds`, `world`, `queues`, `dispatch`, `placement`, `p2c_draw`, `arrivals`, `trace`, `service`, `deadline`, `queue_cap`, `reward`, `heterogeneity`, `base_rate`, `threshold_levels`, `bid_levels`, `value_scale`, `observe_burst`, `observe_budgets`, `observe_weight`, `mmpp`, `agents`, `cluster`, `catalog`");
        assert!(e("[env]\nrounds = \"many\"").starts_with("test.toml: env.rounds: invalid type: string \"many\""));
        assert_eq!(
            e("[[env.agents]]\nload = 0.5\nweight = 0"),
            "test.toml: env.agents[0].weight: must be a finite number > 0, got 0"
        );
        assert_eq!(
            e("[[env.agents]]\nload = 1.5"),
            "test.toml: env.agents[0].load: must be in (0, 1], got 1.5"
        );
        assert_eq!(
            e("[[env.agents]]\nload = 0.5\ncount = 0"),
            "test.toml: env.agents[0].count: must be at least 1"
        );
        assert!(e("[[env.agents]]\nload = 0.5\napplication = \"bert\"")
            .starts_with("test.toml: env.agents[0].application: `bert` is not in the catalog"));
        assert_eq!(e("[env]\nagents = []"), "test.toml: env.agents: needs at least one agent group");
        assert_eq!(
            e("[env]\ncluster = []"),
            "test.toml: env.cluster: needs at least one accelerator group"
        );
        assert!(e("[env]\ndeadline = \"soon\"").contains("env.deadline: deadline must be a whole number"));
        assert!(e("[mechanism]\nname = \"fifo\"").starts_with("test.toml: mechanism.name: unknown mechanism `fifo`"));
        assert!(e("[env]\nqueues = \"stack\"").starts_with("test.toml: env.queues: unknown variant `stack`"));
    }

    #[test]
    fn huge_values_panicked_or_aborted_on_allocation() {
        let e = |t: &str, o: &[&str]| load_str(t, o).unwrap_err().to_string();
        assert!(e("", &["env.base_rate=1e300"]).starts_with("test.toml: env.base_rate: must be in (0, 1e9]"));
        assert!(e("", &["env.arrivals=\"mmpp\"", "env.mmpp.high_mult=1e308"])
            .starts_with("test.toml: env.mmpp.high_mult: must be a number in [0, 1e6]"));
        assert!(e("", &["env.arrivals=\"mmpp\"", "env.mmpp.high_mult=1e6", "env.base_rate=1e6"])
            .starts_with("test.toml: env.mmpp.high_mult: agent 0 would see"));
        let catalog = "[env.catalog]\napplications = [\"a\"]\ntypes = [\"gemmini_2ghz\", \"gemmini_3ghz\"]\nthroughput = [[1, 1e300]]";
        let got = e(catalog, &[]);
        assert!(
            got.starts_with("test.toml: env.catalog.throughput[0][1]: gives a service rate of 4e301"),
            "{got}"
        );
        let sized = |agents: u64, accelerators: u64| {
            format!("[[env.agents]]\ncount = {agents}\nload = 0.5\n[[env.cluster]]\ntype = \"gemmini_2ghz\"\ncount = {accelerators}")
        };
        assert_eq!(
            e(&sized(1_000_000_000, 1), &[]),
            "test.toml: env.agents[].count: 1000000000 in all, more than the limit of 10000"
        );
        assert!(e(&sized(1, 1_000_000_000), &[]).starts_with("test.toml: env.cluster[].count: 1000000000 in all"));
        assert!(e(&sized(10_000, 10_000), &[]).contains("cells"));
        assert!(e(&sized(u64::MAX / 2, 1), &[]).contains("more than the limit"));
        load_str(&sized(1, 100_000), &[]).unwrap();
        assert!(e("", &["env.rounds=4294967295"]).starts_with("test.toml: env.rounds: must be in [1, 10000000]"));
        assert!(e("", &["mechanism.total_tokens=1e300"]).starts_with("test.toml: mechanism.total_tokens"));
        assert!(e(
            "[[env.agents]]\nload = 0.5\nweight = 1e308\n[[env.agents]]\nload = 0.5\nweight = 1e-308",
            &[]
        )
        .starts_with("test.toml: env.agents[1].weight: 1e-308 is more than 1e9 times smaller than the largest weight (1e308)"));
    }

    #[test]
    fn weights_of_1e308_gave_welfare_0() {
        // Scale-invariant: multiplying every weight by 2^k changes no bit of any result.
        let w = [1.0, 2.0, 4.0];
        let big: Vec<f64> = w.iter().map(|x| x * 2f64.powi(1000)).collect();
        let tiny: Vec<f64> = w.iter().map(|x| x * 2f64.powi(-1000)).collect();
        assert_eq!(normalised_weights(&big), normalised_weights(&w));
        assert_eq!(normalised_weights(&tiny), normalised_weights(&w));
        assert_eq!(
            normalised_weights(&[3.0, 1e308]),
            vec![3.0 / 2f64.powi(1023), 1e308 / 2f64.powi(1023)]
        );
        assert!(normalised_weights(&[1e308, 1e308]).iter().sum::<f64>().is_finite());
    }

    #[test]
    fn set_with_a_newline_smuggled_a_second_key() {
        let e = |o: &str| apply_override(&mut toml::Table::new(), o).unwrap_err();
        assert!(
            e("env.rounds=5\nfoo=1").contains("control character '\\n'"),
            "{}",
            e("env.rounds=5\nfoo=1")
        );
        assert!(e("env.rounds=5 \t").contains("control character"));
        let mut t = toml::Table::new();
        apply_override(&mut t, "env.rounds=5").unwrap();
        assert_eq!(t["env"]["rounds"].as_integer(), Some(5));
    }

    #[test]
    fn trace_first_row_of_minus_one_nan_or_bom_was_dropped_as_a_header() {
        let dir = std::env::temp_dir().join(format!("mtf-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let read = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            read_trace(&p, 2)
        };
        assert!(read("neg.csv", "-1,2\n3,4\n")
            .unwrap_err()
            .contains("line 1: expected non-negative whole numbers"));
        assert!(read("nan.csv", "nan,2\n3,4\n").unwrap_err().contains("line 1"));
        assert_eq!(read("bom.csv", "\u{feff}1,2\n3,4\n").unwrap(), vec![vec![1, 2], vec![3, 4]]);
        assert_eq!(read("header.csv", "a0,a1\n3,4\n").unwrap(), vec![vec![3, 4]]);
        assert!(read("huge.csv", "18446744073709551615,0\n")
            .unwrap_err()
            .contains("more than the limit"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn overrides_reach_any_key() {
        let s = load_str(
            "",
            &[
                "env.rounds=50",
                "env.deadline=none",
                "mechanism.name=stride",
                "env.arrivals=mmpp",
                "seed=9",
            ],
        )
        .unwrap();
        assert_eq!(
            (
                s.file.env.rounds,
                s.deadline,
                s.file.mechanism.name.as_str(),
                s.file.env.arrivals,
                s.file.seed
            ),
            (50, u32::MAX, "stride", Arrivals::Mmpp, 9)
        );
        let e = load_str("", &["env.rounds=-3"]).unwrap_err().to_string();
        assert!(e.starts_with("test.toml: env.rounds: invalid value"), "{e}");
    }

    #[test]
    fn overrides_index_and_sweep_arrays() {
        let text = "[[env.agents]]\nload = 0.5\n[[env.agents]]\nload = 0.5\nweight = 2.0";
        let s = load_str(text, &["env.agents.*.load=0.8", "env.agents.1.weight=4"]).unwrap();
        assert_eq!(
            s.agents.iter().map(|a| (a.load, a.weight)).collect::<Vec<_>>(),
            vec![(0.8, 1.0), (0.8, 4.0)]
        );
        let mut t: toml::Table = toml::from_str(text).unwrap();
        assert!(apply_override(&mut t, "env.agents.5.load=0.1")
            .unwrap_err()
            .contains("has 2 elements"));
        assert!(apply_override(&mut t, "env.agents.x.load=0.1")
            .unwrap_err()
            .contains("index it with a number"));
        assert!(apply_override(&mut t, "nokey").unwrap_err().contains("expected key.path=value"));
    }

    #[test]
    fn resolved_config_round_trips_through_toml() {
        let s = load_str(
            "[env]\nrounds = 7\n[[env.agents]]\ncount = 2\nweight = 2.0\nload = 0.8\napplication = \"resnet_conv\"",
            &[],
        )
        .unwrap();
        let again: ScenarioFile = toml::from_str(&s.to_toml()).unwrap();
        assert_eq!(again, s.file);
    }

    #[test]
    fn mmpp_defaults_keep_the_mean_rate() {
        assert!((Mmpp::default().mean_mult() - 1.0).abs() < 1e-12);
    }
}

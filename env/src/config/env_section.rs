//! The `[env]` section: the world an episode runs in (queues, arrivals, service, rewards, the
//! agents and the cluster, the catalog), as written, with its defaults declared once.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

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

/// What an arrival trace file holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// Arrivals per round (rows) and agent (columns).
    #[default]
    Counts,
    /// One row per job: `submit` time and `agent`, columns named in a header.
    Jobs,
}

/// Where an episode starts in its trace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceStart {
    /// Its first round, whatever the seed.
    #[default]
    First,
    /// A round drawn from the episode's seed.
    Seeded,
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
    /// Utility won minus the agent's mean utility (over the accelerators, at the round's start)
    /// times the tokens it spent: SPEC 4's Hedge reward, as the environment's. Not in SPEC 2.8:
    /// under `utility` a token spent costs nothing in the round it is spent, so one round's
    /// reward favours low thresholds while the long run favours high ones (`mtf analyze`'s
    /// signal section); pricing the tokens brings the two together for learners that credit
    /// each round's action with that round's reward.
    Net,
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

/// Which of `mtf`'s command stacks drives a world (`env.stack` in a queue or valuation world's
/// file; every other world's is its registry entry's). Read by [`crate::registry::stack_of`]
/// alone, never by the world itself: the episodes are the same under either.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stack {
    /// The queue world's commands (`queues`, `valuations`): its own trainer (an actor per
    /// agent, SPEC 4's features, Hedge per budget state, difference rewards), analysis and
    /// policy file.
    Queue,
    /// The commands written over [`crate::worlds::World`], as every other world's (issue 38).
    Seam,
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
    /// The commands that drive this file ([`Stack`]; absent: the queue world's own). `"seam"`
    /// runs it through the commands every other world runs through: the episodes are the
    /// same, the learners the seam's (one policy per weight class, no SPEC 4 round record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<Stack>,
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
    /// What `trace` holds: `"counts"` (default: arrivals per round and agent) or `"jobs"` (a
    /// job log: one row per job, its `submit` time and `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_format: Option<TraceFormat>,
    /// Rounds per unit of a job log's `submit` time (default 1: submit times in rounds; 1/360
    /// for seconds at 360 s rounds). Smaller compresses the log in time: a higher load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_time_scale: Option<f64>,
    /// Where an episode starts in the trace: `"first"` (default: every seed replays it from
    /// its first round) or `"seeded"` (each episode from a round drawn from its seed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_start: Option<TraceStart>,
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
    /// Whether observations end with the per-accelerator-type summary (`by_type`: see
    /// `world::observation_extras`), the state that does not grow with the cluster.
    pub observe_by_type: bool,
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
            trace_format: None,
            trace_time_scale: None,
            trace_start: None,
            service: Service::Poisson,
            deadline: Deadline::Rounds(10),
            queue_cap: None,
            reward: Reward::Utility,
            heterogeneity: Heterogeneity::Catalog,
            base_rate: 40.0,
            world: World::Queues,
            stack: None,
            threshold_levels: (0..10).map(|k| k as f64 / 10.0).collect(),
            bid_levels: (0..=30).map(|k| k as f64 / 20.0).collect(),
            value_scale: 1.0,
            observe_burst: false,
            observe_budgets: false,
            observe_weight: false,
            observe_by_type: false,
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
impl EnvSection {
    /// Take `from`'s observation-only switches (burst state, weight class, budgets, by type): what a
    /// trained policy reads, over this section's dynamics.
    pub fn observe_as(&mut self, from: &EnvSection) {
        self.observe_burst = from.observe_burst;
        self.observe_weight = from.observe_weight;
        self.observe_budgets = from.observe_budgets;
        self.observe_by_type = from.observe_by_type;
    }
}

//! The multi-agent environment (SPEC 2) in PettingZoo's parallel shape.
//!
//! A round: arrivals (and placement), expiry, observation — then the agents act — allocation
//! by the configured mechanism, service, rewards. [`ClusterEnv::reset`] runs the first round up to
//! the observation; each [`ClusterEnv::step`] finishes the round with the agents' actions and runs
//! the next one up to its observation. Nothing is allocated per round: observations, rewards
//! and infos are slices into buffers the environment owns.
//!
//! Files: this one holds the environment's state, its accessors, `reset` and `step`;
//! [`observation`] the observation layout and how a round's observation is filled; `round`
//! the round's phases (arrivals and placement, expiry, allocation, service, rewards).

use crate::config::{
    ActionKind, Arrivals, Dispatch, EnvSection, Heterogeneity, Leftovers, P2cDraw, Placement, Reward, Scenario, Service, World,
};
use crate::queue::{Backlogs, Queue};
use crate::rng::{names, poisson_inv, stream, unit};
use crate::spaces::{BoxSpace, Discrete};
use rand::rngs::SmallRng;
use rand::{Rng, RngExt};
use rand_distr::{Distribution, Poisson};
use scheduler::valuation::demand_utility;
use scheduler::{registry, Allocation, Form, Mechanism, RoundInput};
use std::time::Instant;

mod observation;
mod round;

pub use observation::{by_type_features, observation_dim, observation_extras, observation_names, spec_features, OBSERVATION_EXTRAS};

/// A step that cannot be played: the world seam's one error type (an action outside its
/// space, a wrong count, a finished episode).
pub use crate::worlds::StepError as ActionError;

/// What the environment reports about each agent for one round (PettingZoo's `infos`, typed).
///
/// The infos [`ClusterEnv::step`] returns describe the round the actions were played in, from its
/// arrivals to its service, as PettingZoo users expect. The infos [`ClusterEnv::reset`] returns
/// describe the first round as far as it has gone when the agents observe it: `arrived`,
/// `rejected`, `dropped` and `budget` (the budget at the start of the round) are set, the
/// fields of allocation and service are 0.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Info {
    /// Jobs that arrived at the start of the round (SPEC 2.1).
    pub arrived: u64,
    /// Of those, jobs rejected at a full queue (SPEC 2.2).
    pub rejected: u64,
    /// Jobs dropped at their deadline before the round's allocation (SPEC 2.3).
    pub dropped: u64,
    /// Jobs served by the accelerators the agent was given (SPEC 2.7).
    pub served: u64,
    /// Jobs still queued after service.
    pub backlog: u64,
    /// Accelerators the agent was given.
    pub won: u32,
    /// Tokens the agent spent in the round.
    pub spent: f64,
    /// The agent's budget after the round (after redistribution).
    pub budget: f64,
    /// The threshold level the agent reported (its action's value).
    pub threshold: f64,
}

/// The outcome of one step: per-agent slices indexed by agent.
#[derive(Debug)]
pub struct Step<'a> {
    /// Observation of the next round, `dim` floats per agent.
    pub observations: Observations<'a>,
    /// Reward of the round just finished.
    pub rewards: &'a [f64],
    /// Always false: nothing terminates early (SPEC 2.9).
    pub terminations: &'a [bool],
    /// True for every agent once `rounds` rounds have run.
    pub truncations: &'a [bool],
    /// What happened to each agent in the round just played (see [`Info`]).
    pub infos: &'a [Info],
}

/// Per-agent observation vectors (row-major, `dim` per agent).
#[derive(Debug, Clone, Copy)]
pub struct Observations<'a> {
    /// All agents' features.
    pub data: &'a [f32],
    /// Features per agent.
    pub dim: usize,
}

impl<'a> Observations<'a> {
    /// Agent i's observation.
    pub fn get(&self, i: usize) -> &'a [f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// Per-episode accumulators per agent (the raw material of [`crate::metrics`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    /// Accelerator-rounds bought (MTF's paid phase, auction sales).
    pub sold: u64,
    /// Jobs arrived.
    pub arrived: Vec<u64>,
    /// Jobs rejected at full queues.
    pub rejected: Vec<u64>,
    /// Jobs dropped at deadlines.
    pub dropped: Vec<u64>,
    /// Jobs served.
    pub served: Vec<u64>,
    /// Sum of the waits of served jobs (rounds).
    pub wait: Vec<u64>,
    /// Sum over rounds of the end-of-round backlog.
    pub backlog: Vec<u64>,
    /// Sum of rewards.
    pub reward: Vec<f64>,
    /// Tokens spent.
    pub spent: Vec<f64>,
    /// Sum of reported thresholds.
    pub threshold: Vec<f64>,
    /// Accelerator-rounds allocated.
    pub won: Vec<u64>,
    /// Rounds run.
    pub rounds: u32,
    /// Nanoseconds spent in the mechanism.
    pub sched_ns: u128,
}

/// The environment: a cluster of accelerators shared by n agents under any mechanism of the
/// registry (MTF is one of them, hence no mechanism in the name).
pub struct ClusterEnv {
    sc: Scenario,
    n: usize,
    m: usize,
    names: Vec<String>,
    /// Service rate mu[i][c], row-major.
    mu: Vec<f64>,
    max_mu: Vec<f64>,
    /// Cumulative rates per agent (rate-proportional p2c draws).
    cum_mu: Vec<f64>,
    lambda: Vec<f64>,
    weights: Vec<f64>,
    /// The largest weight (the `observe_weight` feature's scale).
    max_weight: f64,
    total_w: f64,
    levels: Vec<f64>,
    /// What an action sets: a threshold or a bid factor.
    kind: ActionKind,
    /// The valuation world (SPEC 8): private values, no queues.
    valuations: bool,
    /// Tokens per unit of utility at bid factor 1.
    value_scale: f64,
    /// Per agent and accelerator, `value_scale x utility` of the round played (auctions): the
    /// bids at factor 1. Swapped with `pending_bid_values` like `input` and `pending`.
    bid_values: Vec<f64>,
    pending_bid_values: Vec<f64>,
    mechanism: Box<dyn Mechanism>,
    /// The round input of the round last played: what the mechanism saw.
    input: RoundInput,
    /// The round observed and not yet played: `observe` fills its demands or utilities, and
    /// `finish_round` swaps it with `input` before completing it, so the played record is
    /// never overwritten by the next round's observation.
    pending: RoundInput,
    alloc: Allocation,
    // Episode state.
    seed: u64,
    round: u32,
    done: bool,
    backlogs: Backlogs,
    budgets: Vec<f64>,
    turn: usize,
    high: Vec<bool>,
    rng_arrivals: Vec<SmallRng>,
    rng_place: Vec<SmallRng>,
    rng_dispatch: Vec<SmallRng>,
    rng_service: Vec<SmallRng>,
    rng_leftovers: SmallRng,
    rng_values: Vec<SmallRng>,
    /// The trace round this episode's round 0 plays (`env.trace_start`).
    trace_offset: usize,
    poisson: Vec<[Option<Poisson<f64>>; 2]>,
    // Per-round buffers.
    obs: Vec<f32>,
    dim: usize,
    rewards: Vec<f64>,
    terminations: Vec<bool>,
    truncations: Vec<bool>,
    /// The record of the round last played (returned by `step`).
    infos: Vec<Info>,
    /// The round observed and not yet played: arrivals, rejections and drops so far.
    pending_infos: Vec<Info>,
    capacity: Vec<u64>,
    assigned: Vec<u64>,
    mine: Vec<usize>,
    // Episode records (preallocated at reset) for the fairness replays.
    arrivals_log: Vec<u32>,
    owners_log: Vec<u32>,
    utility_log: Vec<f64>,
    /// Per round: demands (central, n values) or utilities (per-accelerator, n x m).
    value_log: Vec<f64>,
    /// Whether the logs above are kept (the fairness replays need them).
    recording: bool,
    /// Whether the observations carry the per-accelerator utilities (see
    /// [`ClusterEnv::set_utilities_observed`]).
    utilities_observed: bool,
    totals: Totals,
    /// `by_type` observations: per catalog type, its share of the accelerators; per (agent,
    /// type), the mean rate over the agent's largest (set with the rates); a per-type sum.
    type_share: Vec<f64>,
    type_rate: Vec<f64>,
    type_sum: Vec<f64>,
    /// Per (agent, type): the rate every accelerator of the type serves the agent at, or NaN
    /// when they differ (speed-up draws): the `by_type` utility is then one division.
    type_mu: Vec<f64>,
    /// Stamped afresh whenever the rates are set (see `scheduler::RatesStamp`).
    rates_stamp: scheduler::RatesStamp,
}
/// Marker for an idle accelerator in the owners log.
pub const IDLE: u32 = u32::MAX;

impl ClusterEnv {
    /// Build the environment for a validated scenario.
    pub fn new(sc: Scenario) -> Self {
        let (n, m) = (sc.n(), sc.m());
        let mech = &sc.file.mechanism;
        let mechanism = registry::build(&mech.name, &mech.params()).expect("validated mechanism name");
        let weights = crate::config::normalised_weights(&sc.agents.iter().map(|a| a.weight).collect::<Vec<_>>());
        let total_w = weights.iter().sum();
        let levels = sc.action_levels().to_vec();
        let kind = sc.action_kind();
        let bid_cells = if kind == ActionKind::Bid { n * m } else { 0 };
        let e = &sc.file.env;
        let dim = observation_dim(&sc);
        let mut env = Self {
            n,
            m,
            names: (0..n).map(|i| format!("agent_{i}")).collect(),
            mu: vec![0.0; n * m],
            max_mu: vec![0.0; n],
            cum_mu: vec![0.0; n * m],
            lambda: vec![0.0; n],
            max_weight: weights.iter().copied().fold(f64::MIN_POSITIVE, f64::max),
            weights,
            total_w,
            levels,
            kind,
            valuations: e.world == World::Valuations,
            value_scale: e.value_scale,
            bid_values: vec![0.0; bid_cells],
            pending_bid_values: vec![0.0; bid_cells],
            mechanism,
            input: RoundInput::from_utilities(&[vec![0.0]]),
            pending: RoundInput::from_utilities(&[vec![0.0]]),
            alloc: Allocation::default(),
            seed: 0,
            round: 0,
            done: true,
            backlogs: Backlogs::new(e.queues, n, m),
            budgets: vec![0.0; n],
            turn: 0,
            high: vec![false; n],
            rng_arrivals: Vec::new(),
            rng_place: Vec::new(),
            rng_dispatch: Vec::new(),
            rng_service: Vec::new(),
            rng_leftovers: stream(0, names::LEFTOVERS, 0),
            rng_values: Vec::new(),
            trace_offset: 0,
            poisson: Vec::new(),
            obs: vec![0.0; n * dim],
            dim,
            rewards: vec![0.0; n],
            terminations: vec![false; n],
            truncations: vec![false; n],
            infos: vec![Info::default(); n],
            pending_infos: vec![Info::default(); n],
            capacity: vec![0; m],
            assigned: vec![0; m],
            mine: Vec::with_capacity(m),
            arrivals_log: Vec::new(),
            owners_log: Vec::new(),
            utility_log: Vec::new(),
            value_log: Vec::new(),
            recording: true,
            utilities_observed: true,
            totals: Totals::default(),
            type_share: Vec::new(),
            type_rate: Vec::new(),
            type_sum: Vec::new(),
            type_mu: Vec::new(),
            rates_stamp: scheduler::RatesStamp::default(),
            sc,
        };
        let types = env.sc.file.env.catalog.types.len();
        env.type_share = vec![0.0; types];
        for &t in &env.sc.accelerators {
            env.type_share[t] += 1.0 / m as f64;
        }
        env.type_rate = vec![0.0; n * types];
        env.type_mu = vec![f64::NAN; n * types];
        env.type_sum = vec![0.0; types];
        env.set_rates(0);
        env
    }

    /// Service rates: from the catalog, or (speedup_draw) drawn per episode seed.
    fn set_rates(&mut self, seed: u64) {
        let (n, m) = (self.n, self.m);
        self.rates_stamp = scheduler::RatesStamp::fresh();
        let e = &self.sc.file.env;
        let cat = &e.catalog;
        for i in 0..n {
            let app = self.sc.agents[i].app;
            let mut rng = stream(seed, names::SPEEDUP, i as u64);
            for c in 0..m {
                self.mu[i * m + c] = match e.heterogeneity {
                    Heterogeneity::Catalog => e.base_rate * cat.throughput[app][self.sc.accelerators[c]] / cat.throughput[app][0],
                    // {1.0, 1.5} with weights {3, 2}.
                    Heterogeneity::SpeedupDraw => e.base_rate * if rng.random_range(0..5u32) < 3 { 1.0 } else { 1.5 },
                };
            }
            let row = &self.mu[i * m..(i + 1) * m];
            self.max_mu[i] = row.iter().copied().fold(0.0, f64::max);
            let mut acc = 0.0;
            for c in 0..m {
                acc += self.mu[i * m + c];
                self.cum_mu[i * m + c] = acc;
            }
            let total: f64 = row.iter().sum();
            self.lambda[i] = self.sc.agents[i].load * (self.weights[i] / self.total_w) * total;
            let types = self.type_sum.len();
            let rates = &mut self.type_rate[i * types..(i + 1) * types];
            let common = &mut self.type_mu[i * types..(i + 1) * types];
            rates.fill(0.0);
            common.fill(f64::INFINITY);
            for (c, &t) in self.sc.accelerators.iter().enumerate() {
                let mu = self.mu[i * m + c];
                rates[t] += mu / self.max_mu[i];
                common[t] = match common[t] {
                    x if x == f64::INFINITY || x == mu => mu,
                    _ => f64::NAN,
                };
            }
            for (r, &share) in rates.iter_mut().zip(&self.type_share) {
                if share > 0.0 {
                    *r /= share * m as f64;
                }
            }
        }
    }

    /// The scenario.
    pub fn scenario(&self) -> &Scenario {
        &self.sc
    }

    /// Agents ever in the environment (PettingZoo's `possible_agents`): `agent_0`, ...
    pub fn possible_agents(&self) -> &[String] {
        &self.names
    }

    /// Agents live now: all of them until truncation, none after (a slice: no allocation).
    pub fn agents(&self) -> &[String] {
        if self.done {
            &[]
        } else {
            &self.names
        }
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of accelerators.
    pub fn m(&self) -> usize {
        self.m
    }

    /// Agent i's action space: an index into the action levels (thresholds, or bid factors
    /// under an auction).
    pub fn action_space(&self, _agent: usize) -> Discrete {
        Discrete { n: self.levels.len() }
    }

    /// Agent i's observation space: budget share, m utilities in [0, 1], backlog over arrival
    /// rate (>= 0), then the optional burst state, weight class (weight over the largest),
    /// everyone's budget shares and the `by_type` block.
    pub fn observation_space(&self, _agent: usize) -> BoxSpace {
        let mut low = vec![0.0f32; self.dim];
        let mut high = vec![1.0f32; self.dim];
        high[1 + self.m] = f32::INFINITY;
        low.iter_mut().for_each(|l| *l = 0.0);
        // Budget shares can exceed 1 only by float rounding of the token total.
        high[0] = 1.0 + 1e-6;
        for h in high.iter_mut().skip(2 + self.m) {
            *h = 1.0 + 1e-6;
        }
        if self.sc.file.env.observe_by_type {
            // The budget over an equal share reaches n; the backlog after the types is unbounded.
            let at = self.dim - crate::world::by_type_features(&self.sc);
            high[at] = self.n as f32 * (1.0 + 1e-6);
            high[at + 1 + 3 * self.type_sum.len()] = f32::INFINITY;
        }
        BoxSpace { low, high }
    }

    /// The current observations (those `reset` or the last `step` returned).
    pub fn observations(&self) -> Observations<'_> {
        Observations {
            data: &self.obs,
            dim: self.dim,
        }
    }

    /// The action levels (action k means `levels()[k]`): thresholds, or bid factors under an
    /// auction.
    pub fn levels(&self) -> &[f64] {
        &self.levels
    }

    /// What an action sets under this environment's mechanism.
    pub fn action_kind(&self) -> ActionKind {
        self.kind
    }

    /// The bids at factor 1 of the round last played (`value_scale x utility`, n x m; empty
    /// unless the mechanism is an auction): with [`play`], what a counterfactual re-run needs.
    pub fn last_bid_values(&self) -> &[f64] {
        &self.bid_values
    }

    /// Service rates mu[i][c] (row-major).
    pub fn rates(&self) -> &[f64] {
        &self.mu
    }

    /// Mean arrival rate lambda_i.
    pub fn arrival_rates(&self) -> &[f64] {
        &self.lambda
    }

    /// Current budgets.
    pub fn budgets(&self) -> &[f64] {
        &self.budgets
    }

    /// The round input the mechanism saw in the round last played (after `step`): re-running
    /// the mechanism on it (from its state before that round, [`ClusterEnv::mechanism_state`])
    /// reproduces [`ClusterEnv::last_allocation`]. For counterfactual re-runs and transitions.
    pub fn last_input(&self) -> &RoundInput {
        &self.input
    }

    /// The mechanism's state kept across rounds, as `mtf schedule` prints it (`None` for a
    /// mechanism without state). Taken before a `step`, it is the state that step starts from.
    pub fn mechanism_state(&self) -> Option<serde_json::Value> {
        self.mechanism.state()
    }

    /// The infos of the round the last `step` played (what it returned).
    pub fn last_infos(&self) -> &[Info] {
        &self.infos
    }

    /// The round observed and not yet played: its arrivals, rejections, drops and the budgets
    /// it starts with (what the next `step`'s infos will repeat, completed).
    pub fn pending_infos(&self) -> &[Info] {
        &self.pending_infos
    }

    /// Rewards of the last round.
    pub fn last_rewards(&self) -> &[f64] {
        &self.rewards
    }

    /// The last allocation.
    pub fn last_allocation(&self) -> &Allocation {
        &self.alloc
    }

    /// Episode accumulators so far.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// Arrivals per (round, agent) so far, row-major by round.
    pub fn arrivals_log(&self) -> &[u32] {
        &self.arrivals_log
    }

    /// Owner per (round, accelerator) so far ([`IDLE`] for none), row-major by round.
    pub fn owners_log(&self) -> &[u32] {
        &self.owners_log
    }

    /// Per round, what allocations are worth: the demands (central queues, n per round) or the
    /// utilities (per-accelerator queues, n x m per round) the mechanism saw.
    pub fn value_log(&self) -> &[f64] {
        &self.value_log
    }

    /// Max service rate per agent.
    pub fn max_rates(&self) -> &[f64] {
        &self.max_mu
    }

    /// Keep (default) or skip the per-round logs of arrivals, owners and values. Without them
    /// the fairness metrics (phi, envy, Pareto) cannot be computed; memory then stays constant
    /// however long the episode. Takes effect at the next reset.
    pub fn set_recording(&mut self, on: bool) {
        self.recording = on;
    }

    /// Whether per-round logs are kept.
    pub fn recording(&self) -> bool {
        self.recording
    }

    /// Write (default) or skip the m per-accelerator utilities of SPEC 4's state in the
    /// observations, for a trainer whose policies read only the `by_type` block: at 1,000 x
    /// 4,000 they are 4 million numbers a round that no one reads. Skipped only where nothing
    /// in the environment needs them (central queues, whose `by_type` block comes from the
    /// backlog and the type rates); where skipped they hold no meaning. The mechanism's input,
    /// the rewards and every other feature are unchanged. Takes effect at the next observation.
    pub fn set_utilities_observed(&mut self, on: bool) {
        self.utilities_observed = on;
    }

    /// The episode's root seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Start an episode: reseed every stream, empty the queues, reset budgets and the
    /// mechanism's state, and run the first round up to the observation.
    pub fn reset(&mut self, seed: u64) -> (Observations<'_>, &[Info]) {
        self.seed = seed;
        if self.sc.file.env.heterogeneity == Heterogeneity::SpeedupDraw {
            self.set_rates(seed);
        }
        self.round = 0;
        self.done = false;
        // A queue holds at most one run per arrival round still within the deadline: reserve
        // that (bounded, for `deadline = "none"`) so rounds do not reallocate.
        self.backlogs
            .clear((self.sc.deadline.min(self.sc.file.env.rounds) as usize + 1).min(256));
        let t = self.sc.file.mechanism.total_tokens;
        for i in 0..self.n {
            self.budgets[i] = self.weights[i] * t / self.total_w;
        }
        self.turn = 0;
        self.mechanism.reset();
        self.reseed(seed);
        self.reset_input();
        self.reset_records();
        self.infos.iter_mut().for_each(|x| *x = Info::default());
        self.truncations.iter_mut().for_each(|t| *t = false);
        self.begin_round();
        (
            Observations {
                data: &self.obs,
                dim: self.dim,
            },
            &self.pending_infos,
        )
    }

    /// Every random stream of the episode from its seed, and the burst chains' first states.
    fn reseed(&mut self, seed: u64) {
        let (n, m) = (self.n, self.m);
        self.rng_arrivals = (0..n).map(|i| stream(seed, names::ARRIVALS, i as u64)).collect();
        self.rng_place = (0..n).map(|i| stream(seed, names::PLACEMENT, i as u64)).collect();
        self.rng_dispatch = (0..n).map(|i| stream(seed, names::DISPATCH, i as u64)).collect();
        self.rng_service = (0..m).map(|c| stream(seed, names::SERVICE, c as u64)).collect();
        self.rng_leftovers = stream(seed, names::LEFTOVERS, 0);
        // Its own stream: the other draws are those of a trace played from its first round.
        self.trace_offset = match self.sc.file.env.trace_start {
            Some(crate::config::TraceStart::Seeded) if !self.sc.trace.is_empty() => {
                (stream(seed, names::TRACE_START, 0).next_u64() % self.sc.trace.len() as u64) as usize
            }
            _ => 0,
        };
        self.rng_values = if self.valuations {
            (0..n).map(|i| stream(seed, names::VALUES, i as u64)).collect()
        } else {
            Vec::new()
        };
        let mmpp = self.sc.file.env.mmpp.clone();
        let bursty = self.sc.file.env.arrivals == Arrivals::Mmpp;
        self.poisson = (0..n)
            .map(|i| {
                let mk = |mult: f64| {
                    let l = self.lambda[i] * mult;
                    (l > 0.0).then(|| Poisson::new(l).expect("finite positive rate"))
                };
                if bursty {
                    [mk(mmpp.low_mult), mk(mmpp.high_mult)]
                } else {
                    [mk(1.0), None]
                }
            })
            .collect();
        // Burst chains start in their stationary distribution.
        for i in 0..n {
            self.high[i] = bursty && unit(self.rng_arrivals[i].next_u64()) < mmpp.p_high();
        }
    }

    /// The mechanism's round input: its form and the constant rates are set once an episode.
    fn reset_input(&mut self) {
        let (n, m) = (self.n, self.m);
        let form = self.form();
        let auction = self.kind == ActionKind::Bid;
        self.pending = RoundInput {
            n,
            m,
            form,
            utilities: if form == Form::Utilities { vec![0.0; n * m] } else { Vec::new() },
            demands: if form == Form::Demand { vec![0.0; n] } else { Vec::new() },
            rates: self.mu.clone(),
            thresholds: vec![0.0; n],
            budgets: vec![0.0; n],
            weights: self.weights.clone(),
            turn: 0,
            types: self.sc.accelerators.clone(),
            // Random ties for the auctions (SPEC 8), random leftovers for SPEC 7.
            draws: if auction || self.sc.file.mechanism.leftovers == Leftovers::WeightedRandom {
                vec![0.0; m]
            } else {
                Vec::new()
            },
            bids: if auction { vec![0.0; n * m] } else { Vec::new() },
            reserve: 0.0,
            redistribute: true,
            rates_stamp: self.rates_stamp,
            fastest: Vec::new(),
            jobs: Default::default(),
        };
        self.input = self.pending.clone();
    }

    /// Empty the episode's logs and totals.
    fn reset_records(&mut self) {
        let (n, m) = (self.n, self.m);
        // Reserve for the episode, up to a bound: a config may ask for far more rounds than
        // it will ever run before a reset.
        let rounds = if self.recording {
            (self.sc.file.env.rounds as usize).min(1 << 16)
        } else {
            0
        };
        // At most 2^24 entries each up front (they grow past it if the episode needs more): a
        // per-accelerator world at 10^8 cells would otherwise ask for its whole episode at once.
        const UP_FRONT: usize = 1 << 24;
        self.arrivals_log.clear();
        self.arrivals_log.reserve((rounds * n).min(UP_FRONT));
        self.owners_log.clear();
        self.owners_log.reserve((rounds * m).min(UP_FRONT));
        self.utility_log.clear();
        self.utility_log.reserve((rounds * m).min(UP_FRONT));
        self.value_log.clear();
        let values = if self.form() == Form::Demand { n } else { n * m };
        self.value_log.reserve(rounds.saturating_mul(values).min(UP_FRONT));
        self.totals = Totals {
            sold: 0,
            arrived: vec![0; n],
            rejected: vec![0; n],
            dropped: vec![0; n],
            served: vec![0; n],
            wait: vec![0; n],
            backlog: vec![0; n],
            reward: vec![0.0; n],
            spent: vec![0.0; n],
            threshold: vec![0.0; n],
            won: vec![0; n],
            rounds: 0,
            sched_ns: 0,
        };
    }

    /// Finish the round with the agents' actions (indices into the threshold levels) and run
    /// the next round up to its observation.
    pub fn step(&mut self, actions: &[usize]) -> Result<Step<'_>, ActionError> {
        if self.done {
            return Err(ActionError::Done);
        }
        if actions.len() != self.n {
            return Err(ActionError::Count {
                expected: self.n,
                got: actions.len(),
            });
        }
        let k = self.levels.len();
        if let Some(i) = actions.iter().position(|&a| a >= k) {
            return Err(ActionError::OutOfSpace {
                agent: i,
                action: actions[i],
                levels: k,
            });
        }
        self.finish_round(actions);
        self.round += 1;
        self.totals.rounds = self.round;
        if self.round >= self.sc.file.env.rounds {
            self.done = true;
            self.truncations.iter_mut().for_each(|t| *t = true);
        } else {
            self.begin_round();
        }
        Ok(Step {
            observations: Observations {
                data: &self.obs,
                dim: self.dim,
            },
            rewards: &self.rewards,
            terminations: &self.terminations,
            truncations: &self.truncations,
            infos: &self.infos,
        })
    }
}

/// Put agent `i`'s action level into a round input: its threshold, or under an auction its
/// bids, the factor times its bids at factor 1 (`bid_values`, n x m). The environment plays
/// actions through this, and learners' counterfactual re-runs (Hedge) too.
pub fn play(input: &mut RoundInput, kind: ActionKind, i: usize, level: f64, bid_values: &[f64]) {
    match kind {
        ActionKind::Threshold => input.thresholds[i] = level,
        ActionKind::Bid => {
            let m = input.m;
            for (b, v) in input.bids[i * m..(i + 1) * m].iter_mut().zip(&bid_values[i * m..(i + 1) * m]) {
                *b = level * v;
            }
        }
    }
}

//! The figures of SPEC 5 for one episode, per agent and aggregated.
//!
//! Replays (sharing incentive, envy) re-run an agent's recorded arrival sequence through a
//! backlog with the scenario's queue cap and deadline, served fluidly (no balancing loss), with
//! capacities drawn by inversion from common random numbers: one uniform per (round,
//! accelerator) for the envy replays, so `U[i][i]` and `U[i][j]` differ only by the allocation
//! sequence they replay on.

use crate::world::ClusterEnv;
use serde::Serialize;

mod replay;
pub mod spec;

pub use spec::{Absent, Family, Metric, METRICS};

/// One episode's metrics.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EpisodeMetrics {
    /// Rounds run.
    pub rounds: u32,
    /// Per agent: jobs served per round.
    pub throughput: Vec<f64>,
    /// Per agent: jobs rejected at full queues.
    pub rejected: Vec<u64>,
    /// Per agent: jobs dropped at their deadline.
    pub dropped: Vec<u64>,
    /// Per agent: mean wait of served jobs (rounds).
    pub mean_wait: Vec<f64>,
    /// Per agent: mean end-of-round backlog (jobs).
    pub backlog: Vec<f64>,
    /// Per agent: mean reward per round.
    pub reward: Vec<f64>,
    /// Per agent: mean threshold reported.
    pub threshold: Vec<f64>,
    /// Per agent: tokens spent per round.
    pub spent: Vec<f64>,
    /// Weighted social welfare: sum w_i throughput_i / sum w_i (thesis 5.3).
    pub welfare: f64,
    /// Jain's index of throughput over weight.
    pub jain: f64,
    /// Mechanism time per round, microseconds.
    pub sched_us: f64,
    /// Share of the accelerator-rounds given out that were bought (MTF's paid phase, an
    /// auction's sales); the rest went out free (MTF's unweighted free phase, or a mechanism
    /// without tokens). When the token total is too small for the heavy agents, this falls:
    /// what `mtf analyze`'s token scale shows.
    pub paid_share: f64,
    /// The policy's mean entropy over the episode's rounds as a share of the largest, `ln K`
    /// (evaluation episodes of policies that choose from a distribution; see
    /// `policy::Policy::entropy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entropy_share: Option<f64>,
    /// Fairness figures, when computed (never in the valuation world, which has no jobs).
    pub fairness: Option<Fairness>,
    /// The valuation world's figures (SPEC 8).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auction: Option<AuctionMetrics>,
}

/// What an auction of private values yields (the valuation world), in value units (tokens
/// divided by `value_scale`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AuctionMetrics {
    /// Payments per accelerator-round.
    pub revenue_per_item: f64,
    /// Surplus (value won minus price) per agent per accelerator-round.
    pub surplus_per_bidder_item: f64,
    /// Share of accelerator-rounds sold.
    pub sold_share: f64,
    /// Per agent: mean bid factor (under an auction; the mean threshold otherwise).
    pub bid_factor: Vec<f64>,
}

/// Up to this many agents every pair's envy is replayed (O(n^2 rounds) replays and an n x n
/// matrix in every episode record); above it each agent is replayed against
/// [`ENVY_SAMPLE_PER_AGENT`] others drawn at random, and the EF violations are estimated with a
/// stated standard error.
pub const ENVY_EXACT_AGENTS: usize = 1000;

/// Others each agent's envy is replayed against when the pairs are sampled.
pub const ENVY_SAMPLE_PER_AGENT: usize = 32;

/// The sampled pairs behind the envy figures of a large scenario.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EnvySample {
    /// Ordered pairs (i, j), i != j, replayed.
    pub pairs: usize,
    /// Of them, EF violations.
    pub violating: usize,
    /// The share violating, which `ef_violations` scales to all n (n - 1) pairs.
    pub share: f64,
    /// Standard error of `ef_violations` (binomial, in pairs).
    pub ef_violations_se: f64,
}

/// Sharing incentive, envy and Pareto figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fairness {
    /// Per agent: phi_i = u_sh / u_ex (thesis eq. 3.3); SI holds for i when phi_i >= 1.
    pub phi: Vec<f64>,
    /// `envy[i][j]`: agent i's throughput replayed on agent j's allocation sequence; empty
    /// when the pairs were sampled (`envy_sample`).
    pub envy: Vec<Vec<f64>>,
    /// Pairs (i, j) with `w_j U[i][i] < w_i U[i][j]` (EF violations, eq. 3.5); above
    /// [`ENVY_EXACT_AGENTS`] agents, estimated from sampled pairs (`envy_sample`).
    pub ef_violations: usize,
    /// Above [`ENVY_EXACT_AGENTS`] agents: the sampled pairs the envy figures come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envy_sample: Option<EnvySample>,
    /// Share of rounds with a Pareto-improving transfer or swap of one accelerator.
    pub pareto: f64,
}

impl EpisodeMetrics {
    /// Metrics of the episode `env` has run (after truncation, or so far). With `fairness` (and
    /// recording on), also the replays (phi, envy) and the Pareto scan.
    pub fn compute(env: &ClusterEnv, fairness: bool) -> Self {
        let t = env.totals();
        let n = env.n();
        let rounds = t.rounds.max(1) as f64;
        let w = crate::config::normalised_weights(&env.scenario().agents.iter().map(|a| a.weight).collect::<Vec<_>>());
        let total_w: f64 = w.iter().sum();
        let throughput: Vec<f64> = t.served.iter().map(|&s| s as f64 / rounds).collect();
        let welfare = (0..n).map(|i| w[i] * throughput[i]).sum::<f64>() / total_w;
        let x: Vec<f64> = (0..n).map(|i| throughput[i] / w[i]).collect();
        let (s1, s2) = (x.iter().sum::<f64>(), x.iter().map(|v| v * v).sum::<f64>());
        let jain = if s2 > 0.0 { s1 * s1 / (n as f64 * s2) } else { 1.0 };
        let valuations = env.scenario().file.env.world == crate::config::World::Valuations;
        Self {
            rounds: t.rounds,
            mean_wait: (0..n)
                .map(|i| {
                    if t.served[i] > 0 {
                        t.wait[i] as f64 / t.served[i] as f64
                    } else {
                        0.0
                    }
                })
                .collect(),
            backlog: t.backlog.iter().map(|&b| b as f64 / rounds).collect(),
            reward: t.reward.iter().map(|r| r / rounds).collect(),
            threshold: t.threshold.iter().map(|r| r / rounds).collect(),
            spent: t.spent.iter().map(|r| r / rounds).collect(),
            rejected: t.rejected.clone(),
            dropped: t.dropped.clone(),
            welfare,
            jain,
            sched_us: t.sched_ns as f64 / 1e3 / rounds,
            paid_share: {
                let given: u64 = t.won.iter().sum();
                if given > 0 {
                    t.sold as f64 / given as f64
                } else {
                    0.0
                }
            },
            entropy_share: None,
            fairness: (fairness && env.recording() && !valuations).then(|| Fairness::compute(env, &throughput)),
            auction: valuations.then(|| {
                let items = rounds * env.m() as f64;
                let scale = env.scenario().file.env.value_scale;
                AuctionMetrics {
                    revenue_per_item: t.spent.iter().sum::<f64>() / scale / items,
                    surplus_per_bidder_item: t.reward.iter().sum::<f64>() / (n as f64 * items),
                    sold_share: t.sold as f64 / items,
                    bid_factor: t.threshold.iter().map(|x| x / rounds).collect(),
                }
            }),
            throughput,
        }
    }
}

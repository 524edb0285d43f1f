//! The figures of SPEC 5 for one episode, per agent and aggregated.
//!
//! Replays (sharing incentive, envy) re-run an agent's recorded arrival sequence through a
//! backlog with the scenario's queue cap and deadline, served fluidly (no balancing loss), with
//! capacities drawn by inversion from common random numbers: one uniform per (round,
//! accelerator) for the envy replays, so `U[i][i]` and `U[i][j]` differ only by the allocation
//! sequence they replay on.

use crate::config::{Queues, Service};
use crate::queue::Queue;
use crate::rng::{names, poisson_inv, stream, unit};
use crate::world::{ClusterEnv, IDLE};
use rand::Rng;
use serde::Serialize;

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

/// Sharing incentive, envy and Pareto figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Fairness {
    /// Per agent: phi_i = u_sh / u_ex (thesis eq. 3.3); SI holds for i when phi_i >= 1.
    pub phi: Vec<f64>,
    /// `envy[i][j]`: agent i's throughput replayed on agent j's allocation sequence.
    pub envy: Vec<Vec<f64>>,
    /// Pairs (i, j) with `w_j U[i][i] < w_i U[i][j]` (EF violations, eq. 3.5).
    pub ef_violations: usize,
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

/// Inverse-CDF tables of Poisson(lambda) for the few distinct rates of a scenario.
#[derive(Default)]
struct PoissonTables {
    tables: Vec<(u64, Vec<f64>)>,
    deterministic: bool,
}

impl PoissonTables {
    /// A capacity of mean `lambda`: Poisson by inversion of `u`, or `round(lambda)` when the
    /// scenario's service is deterministic (the replays serve like the episode did).
    fn draw(&mut self, lambda: f64, u: f64) -> u64 {
        if self.deterministic {
            return lambda.round() as u64;
        }
        if lambda > 500.0 {
            return poisson_inv(lambda, u);
        }
        let key = lambda.to_bits();
        let k = match self.tables.iter().position(|(b, _)| *b == key) {
            Some(k) => k,
            None => {
                let mut cdf = Vec::new();
                let (mut p, mut acc) = ((-lambda).exp(), 0.0);
                let mut j = 0.0;
                while acc < 1.0 - 1e-15 && cdf.len() < 10_000 {
                    acc += p;
                    cdf.push(acc);
                    j += 1.0;
                    p *= lambda / j;
                }
                self.tables.push((key, cdf));
                self.tables.len() - 1
            }
        };
        let cdf = &self.tables[k].1;
        cdf.partition_point(|&c| c <= u) as u64
    }
}

/// Replay an arrival sequence through a backlog with the given per-round capacities.
fn replay(arrivals: impl Iterator<Item = u64>, capacity: impl Iterator<Item = u64>, cap: u64, deadline: u32, q: &mut Queue) -> u64 {
    q.clear();
    let mut served = 0;
    for (r, (a, s)) in arrivals.zip(capacity).enumerate() {
        let r = r as u32;
        q.push(r, a, cap);
        if deadline != u32::MAX {
            q.expire(r, deadline);
        }
        served += q.serve(r, s).0;
    }
    served
}

impl Fairness {
    fn compute(env: &ClusterEnv, throughput: &[f64]) -> Self {
        let (n, m) = (env.n(), env.m());
        let sc = env.scenario();
        let rounds = env.totals().rounds as usize;
        let mu = env.rates();
        let w = crate::config::normalised_weights(&sc.agents.iter().map(|a| a.weight).collect::<Vec<_>>());
        let total_w: f64 = w.iter().sum();
        let arrivals = env.arrivals_log();
        let owners = env.owners_log();
        // Per-queue cap of the replays: the central backlog's, or the agent's total over its
        // per-accelerator queues.
        let cap = match sc.file.env.queues {
            Queues::Central => sc.queue_cap,
            Queues::PerAccelerator => sc.queue_cap.saturating_mul(m as u64),
        };
        let mut tables = PoissonTables {
            tables: Vec::new(),
            deterministic: sc.file.env.service == Service::Deterministic,
        };
        let mut q = Queue::default();

        // Sharing incentive: alone on one pooled server of its weighted share of the cluster.
        let phi = (0..n)
            .map(|i| {
                let share = w[i] / total_w * mu[i * m..(i + 1) * m].iter().sum::<f64>();
                let mut rng = stream(env.seed(), names::EXCLUSIVE, i as u64);
                let caps: Vec<u64> = (0..rounds).map(|_| tables.draw(share, unit(rng.next_u64()))).collect();
                let ex = replay(
                    (0..rounds).map(|r| u64::from(arrivals[r * n + i])),
                    caps.into_iter(),
                    cap,
                    sc.deadline,
                    &mut q,
                ) as f64
                    / rounds.max(1) as f64;
                if ex > 0.0 {
                    throughput[i] / ex
                } else {
                    1.0
                }
            })
            .collect();

        // Envy: i's arrivals on j's allocations, common random numbers per (round, c).
        let mut rngs: Vec<_> = (0..m).map(|c| stream(env.seed(), names::REPLAY, c as u64)).collect();
        let uniforms: Vec<f64> = (0..rounds * m).map(|k| unit(rngs[k % m].next_u64())).collect();
        let mut envy = vec![vec![0.0; n]; n];
        let mut caps = vec![0u64; rounds];
        for i in 0..n {
            for j in 0..n {
                for r in 0..rounds {
                    caps[r] = (0..m)
                        .filter(|&c| owners[r * m + c] == j as u32)
                        .map(|c| tables.draw(mu[i * m + c], uniforms[r * m + c]))
                        .sum();
                }
                let served = replay(
                    (0..rounds).map(|r| u64::from(arrivals[r * n + i])),
                    caps.iter().copied(),
                    cap,
                    sc.deadline,
                    &mut q,
                );
                envy[i][j] = served as f64 / rounds.max(1) as f64;
            }
        }
        let mut ef_violations = 0;
        for i in 0..n {
            for j in 0..n {
                if i != j && w[j] * envy[i][i] < w[i] * envy[i][j] - 1e-9 {
                    ef_violations += 1;
                }
            }
        }
        let pareto = pareto_share(env);
        Self {
            phi,
            envy,
            ef_violations,
            pareto,
        }
    }
}

/// Share of rounds where moving one accelerator (from its owner or from idle) to another
/// agent, or swapping two agents' accelerators, makes one strictly better off and nobody worse
/// (values as the mechanism saw them that round): a lower bound on Pareto violations.
fn pareto_share(env: &ClusterEnv) -> f64 {
    let (n, m) = (env.n(), env.m());
    let rounds = env.totals().rounds as usize;
    if rounds == 0 {
        return 0.0;
    }
    let central = env.scenario().file.env.queues == Queues::Central;
    let (mu, max_mu, owners, values) = (env.rates(), env.max_rates(), env.owners_log(), env.value_log());
    const EPS: f64 = 1e-9;
    let mut sums = vec![0.0; n];
    let mut bad = 0;
    for r in 0..rounds {
        let own = &owners[r * m..(r + 1) * m];
        // Central: v_i(S) = min(Q_i, sum of rates) / max rate; per-accelerator: sum of utilities.
        let gain = |i: usize, c: usize| if central { mu[i * m + c] } else { values[r * n * m + i * m + c] };
        let value = |i: usize, s: f64| if central { values[r * n + i].min(s) / max_mu[i] } else { s };
        sums.fill(0.0);
        for (c, &o) in own.iter().enumerate() {
            if o != IDLE {
                sums[o as usize] += gain(o as usize, c);
            }
        }
        let improves = || {
            for c in 0..m {
                let from = own[c];
                for i in 0..n {
                    if from == i as u32 {
                        continue;
                    }
                    let up = value(i, sums[i] + gain(i, c)) - value(i, sums[i]);
                    if up <= EPS {
                        continue;
                    }
                    // A transfer: the giver (if any) must lose nothing.
                    if from == IDLE {
                        return true;
                    }
                    let j = from as usize;
                    if value(j, sums[j]) - value(j, sums[j] - gain(j, c)) <= EPS {
                        return true;
                    }
                    // A swap: j takes one of i's accelerators in return.
                    for d in 0..m {
                        if own[d] != i as u32 {
                            continue;
                        }
                        let vi = value(i, sums[i] - gain(i, d) + gain(i, c)) - value(i, sums[i]);
                        let vj = value(j, sums[j] - gain(j, c) + gain(j, d)) - value(j, sums[j]);
                        if vi >= -EPS && vj >= -EPS && (vi > EPS || vj > EPS) {
                            return true;
                        }
                    }
                }
            }
            false
        };
        if improves() {
            bad += 1;
        }
    }
    bad as f64 / rounds as f64
}

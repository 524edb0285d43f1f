//! Evaluation episodes: one per seed, run in parallel, reduced to mean and 95% confidence
//! interval. Each episode owns its environment and streams, and results are collected in seed
//! order, so they do not depend on the number of threads.

use crate::config::Scenario;
use crate::metrics::EpisodeMetrics;
use crate::policy::Policy;
use crate::world::ClusterEnv;
use rayon::prelude::*;
use serde::Serialize;

/// Run one episode of `scenario` with `seed`.
pub fn run_episode(scenario: &Scenario, seed: u64, policy: &mut dyn Policy, fairness: bool) -> EpisodeMetrics {
    let mut env = ClusterEnv::new(scenario.clone());
    let mut actions = vec![0; env.n()];
    let mut budgets = vec![0.0; env.n()];
    policy.begin_episode(crate::rng::stream_seed(seed, crate::rng::names::POLICY_EPISODE, 0));
    env.reset(seed);
    while !env.agents().is_empty() {
        budgets.copy_from_slice(env.budgets());
        policy.act(env.observations(), &budgets, true, &mut actions);
        env.step(&actions).expect("policies pick levels inside the action space");
        policy.after_step(&env, &budgets, &actions);
    }
    EpisodeMetrics::compute(&env, fairness)
}

/// Run one episode per seed on `threads` worker threads, each with its own fork of `policy`
/// acting greedily; results in seed order.
pub fn evaluate(scenario: &Scenario, seeds: &[u64], policy: &dyn Policy, fairness: bool, threads: usize) -> Vec<EpisodeMetrics> {
    // Forked under a lock: a policy is `Send`, not `Sync`.
    let proto = std::sync::Mutex::new(policy.fork());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .expect("a thread pool");
    pool.install(|| {
        seeds
            .par_iter()
            .map(|&seed| {
                let mut p = proto.lock().expect("no panic while forking").fork();
                run_episode(scenario, seed, p.as_mut(), fairness)
            })
            .collect()
    })
}

/// Seeds of the evaluation episodes (`mtf simulate`, a training run's held-out evaluation,
/// `mtf compare`), derived from the root seed by hashing: never `seed + k`, whose streams would
/// overlap another run's, and never a training episode's seed.
pub fn episode_seeds(root: u64, count: usize) -> Vec<u64> {
    (0..count as u64)
        .map(|k| crate::rng::stream_seed(root, crate::rng::names::EVAL_EPISODE, k))
        .collect()
}

/// Mean and 95% confidence interval half-width (Student's t) of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Half-width of the 95% confidence interval (0 for one sample).
    pub ci95: f64,
}

impl Stat {
    /// Mean and CI of `xs`.
    pub fn of(xs: &[f64]) -> Self {
        let n = xs.len();
        if n == 0 {
            return Self {
                mean: f64::NAN,
                ci95: f64::NAN,
            };
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        if n == 1 {
            return Self { mean, ci95: 0.0 };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Self {
            mean,
            ci95: t975(n - 1) * (var / n as f64).sqrt(),
        }
    }
}

/// Student's t 0.975 quantile for `df` degrees of freedom.
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
        2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    if df <= 30 {
        T[df - 1]
    } else if df <= 60 {
        2.000
    } else if df <= 120 {
        1.980
    } else {
        1.960
    }
}

/// Figures over seeds: each as mean and 95% CI.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Episodes.
    pub seeds: usize,
    /// Weighted social welfare (jobs per round).
    pub welfare: Stat,
    /// Total throughput (jobs per round).
    pub throughput: Stat,
    /// Throughput per weight class (weight, stat), ascending weight.
    pub throughput_by_weight: Vec<(f64, Stat)>,
    /// Jobs dropped at deadlines per round.
    pub dropped: Stat,
    /// Jobs rejected at full queues per round.
    pub rejected: Stat,
    /// Mean wait of served jobs (rounds).
    pub mean_wait: Stat,
    /// Mean backlog per agent (jobs).
    pub backlog: Stat,
    /// Mean reward per agent per round.
    pub reward: Stat,
    /// Tokens spent per round.
    pub tokens_spent: Stat,
    /// Jain's index.
    pub jain: Stat,
    /// Smallest phi.
    pub phi_min: Option<Stat>,
    /// Median phi.
    pub phi_median: Option<Stat>,
    /// Agents with phi < 1 (SI violations).
    pub si_violations: Option<Stat>,
    /// EF violations (pairs).
    pub ef_violations: Option<Stat>,
    /// Pareto lower bound (share of rounds).
    pub pareto: Option<Stat>,
    /// Mechanism time per round (microseconds).
    pub sched_us: Stat,
    /// Share of the accelerator-rounds given out that were bought (see
    /// [`EpisodeMetrics::paid_share`](crate::metrics::EpisodeMetrics::paid_share)).
    pub paid_share: Stat,
    /// Valuation world: payments per item (value units).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revenue_per_item: Option<Stat>,
    /// Valuation world: surplus per bidder per item.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surplus_per_bidder_item: Option<Stat>,
    /// Valuation world: share of items sold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sold_share: Option<Stat>,
    /// Valuation world: mean bid factor per agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bid_factor: Option<Vec<Stat>>,
}

impl Summary {
    /// Reduce episodes of one scenario.
    pub fn of(scenario: &Scenario, eps: &[EpisodeMetrics]) -> Self {
        let stat = |f: &dyn Fn(&EpisodeMetrics) -> f64| Stat::of(&eps.iter().map(f).collect::<Vec<_>>());
        let fair = |f: &dyn Fn(&crate::metrics::Fairness) -> f64| -> Option<Stat> {
            let xs: Option<Vec<f64>> = eps.iter().map(|e| e.fairness.as_ref().map(f)).collect();
            xs.map(|x| Stat::of(&x))
        };
        let rounds = |e: &EpisodeMetrics| f64::from(e.rounds.max(1));
        let auction = |f: &dyn Fn(&crate::metrics::AuctionMetrics) -> f64| -> Option<Stat> {
            let xs: Option<Vec<f64>> = eps.iter().map(|e| e.auction.as_ref().map(f)).collect();
            xs.filter(|x| !x.is_empty()).map(|x| Stat::of(&x))
        };
        let n = scenario.n() as f64;
        let classes = scenario.weight_classes();
        let throughput_by_weight = classes
            .iter()
            .map(|&w| {
                let idx: Vec<usize> = (0..scenario.n()).filter(|&i| scenario.agents[i].weight == w).collect();
                (w, stat(&|e| idx.iter().map(|&i| e.throughput[i]).sum::<f64>() / idx.len() as f64))
            })
            .collect();
        let median = |v: &[f64]| {
            let mut s = v.to_vec();
            s.sort_by(f64::total_cmp);
            let k = s.len();
            if k % 2 == 1 {
                s[k / 2]
            } else {
                (s[k / 2 - 1] + s[k / 2]) / 2.0
            }
        };
        Self {
            seeds: eps.len(),
            welfare: stat(&|e| e.welfare),
            throughput: stat(&|e| e.throughput.iter().sum()),
            throughput_by_weight,
            dropped: stat(&|e| e.dropped.iter().sum::<u64>() as f64 / rounds(e)),
            rejected: stat(&|e| e.rejected.iter().sum::<u64>() as f64 / rounds(e)),
            mean_wait: stat(&|e| e.mean_wait.iter().sum::<f64>() / n),
            backlog: stat(&|e| e.backlog.iter().sum::<f64>() / n),
            reward: stat(&|e| e.reward.iter().sum::<f64>() / n),
            tokens_spent: stat(&|e| e.spent.iter().sum()),
            jain: stat(&|e| e.jain),
            phi_min: fair(&|f| f.phi.iter().copied().fold(f64::INFINITY, f64::min)),
            phi_median: fair(&|f| median(&f.phi)),
            si_violations: fair(&|f| f.phi.iter().filter(|&&p| p < 1.0).count() as f64),
            ef_violations: fair(&|f| f.ef_violations as f64),
            pareto: fair(&|f| f.pareto),
            sched_us: stat(&|e| e.sched_us),
            paid_share: stat(&|e| e.paid_share),
            revenue_per_item: auction(&|a| a.revenue_per_item),
            surplus_per_bidder_item: auction(&|a| a.surplus_per_bidder_item),
            sold_share: auction(&|a| a.sold_share),
            bid_factor: (0..scenario.n())
                .map(|i| auction(&|a| a.bid_factor[i]))
                .collect::<Option<Vec<Stat>>>()
                .filter(|v| !v.is_empty()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_interval_of_a_known_sample() {
        // 2, 4, 6: mean 4, sd 2, CI = 4.303 * 2 / sqrt(3).
        let s = Stat::of(&[2.0, 4.0, 6.0]);
        assert_eq!(s.mean, 4.0);
        assert!((s.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(Stat::of(&[5.0]).ci95, 0.0);
    }
}

//! Evaluation episodes: one per seed, run in parallel, reduced to mean and 95% confidence
//! interval. Each episode owns its environment and streams, and results are collected in seed
//! order, so they do not depend on the number of threads.

use crate::config::Scenario;
use crate::metrics::spec::WELFARE;
use crate::metrics::{Absent, EpisodeMetrics, Family, Metric, METRICS};
use crate::par::par_map;
use crate::policy::Policy;
use crate::queue_world::QueueWorld;
use crate::world::Observations;
use crate::worlds::Acting;
use serde::Serialize;

/// Run one episode of `scenario` with `seed`, the policy acting greedily (through the one
/// episode driver, [`crate::worlds::play`]).
pub fn run_episode(scenario: &Scenario, seed: u64, policy: &mut dyn Policy, fairness: bool) -> EpisodeMetrics {
    let mut world = QueueWorld::new(scenario.clone());
    let mut acting = Greedy {
        budgets: vec![0.0; world.env().n()],
        policy,
        entropy: Some(0.0),
        rounds: 0.0,
    };
    crate::worlds::play(&mut world, &mut acting, seed);
    let mut m = EpisodeMetrics::compute(world.env(), fairness);
    let max = (scenario.action_levels().len() as f64).ln();
    m.entropy_share = acting
        .entropy
        .filter(|_| acting.rounds > 0.0 && max > 0.0)
        .map(|sum| sum / acting.rounds / max);
    m
}

/// A queue-world [`Policy`] acting greedily in [`crate::worlds::play`]: it reads the budgets
/// the round starts with, and sums its entropy over the rounds.
struct Greedy<'a> {
    policy: &'a mut dyn Policy,
    budgets: Vec<f64>,
    entropy: Option<f64>,
    rounds: f64,
}

impl Acting<QueueWorld> for Greedy<'_> {
    fn begin_episode(&mut self, seed: u64) {
        self.policy.begin_episode(seed);
    }

    fn act(&mut self, world: &QueueWorld, obs: &[f32], _groups: &[usize], actions: &mut [usize]) {
        self.budgets.copy_from_slice(world.env().budgets());
        let dim = world.env().observations().dim;
        self.policy.act(Observations { data: obs, dim }, &self.budgets, true, actions);
        self.entropy = self.entropy.zip(self.policy.entropy()).map(|(sum, h)| sum + h);
        self.rounds += 1.0;
    }

    fn after_step(&mut self, world: &QueueWorld, actions: &[usize]) {
        self.policy.after_step(world.env(), &self.budgets, actions);
    }
}

/// Run one episode per seed on `threads` worker threads, each with its own fork of `policy`
/// acting greedily; results in seed order.
pub fn evaluate(scenario: &Scenario, seeds: &[u64], policy: &dyn Policy, fairness: bool, threads: usize) -> Vec<EpisodeMetrics> {
    // Forked under a lock: a policy is `Send`, not `Sync`.
    let proto = std::sync::Mutex::new(policy.fork());
    par_map(
        threads,
        seeds,
        || (),
        |_, &seed| {
            let mut p = proto.lock().expect("no panic while forking").fork();
            run_episode(scenario, seed, p.as_mut(), fairness)
        },
    )
}

/// Seeds of the evaluation episodes (`mtf simulate`, a training run's held-out evaluation,
/// `mtf compare`), derived from the root seed by hashing: never `seed + k`, whose streams would
/// overlap another run's, and never a training episode's seed.
pub fn episode_seeds(root: u64, count: usize) -> Vec<u64> {
    (0..count as u64)
        .map(|k| crate::rng::stream_seed(root, crate::rng::names::EVAL_EPISODE, k))
        .collect()
}

/// Seeds of selection episodes: where `mtf analyze` and a run group pick the best fixed level
/// before scoring it on the [`episode_seeds`] (other arrivals, so the pick is not scored on the
/// seeds it was picked on).
pub fn selection_seeds(root: u64, count: usize) -> Vec<u64> {
    (0..count as u64)
        .map(|k| crate::rng::stream_seed(root, crate::rng::names::SELECT_EPISODE, k))
        .collect()
}

/// Mean and 95% confidence interval half-width (Student's t) of a sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Half-width of the 95% confidence interval; NaN (JSON `null`) for fewer than two
    /// samples: one seed says nothing about the spread, and a zero width would claim it does.
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
            return Self { mean, ci95: f64::NAN };
        }
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        Self {
            mean,
            ci95: t975(n - 1) * (var / n as f64).sqrt(),
        }
    }

    /// Whether it has a confidence interval (two samples or more).
    pub fn has_ci(&self) -> bool {
        self.ci95.is_finite()
    }

    /// The error bar's half-width for a figure: 0 (no bar) without a CI.
    pub fn bar(&self) -> f64 {
        if self.has_ci() {
            self.ci95
        } else {
            0.0
        }
    }

    /// `mean +- ci95` with `decimals` places, or the mean alone when there is no CI.
    pub fn pm(&self, decimals: usize) -> String {
        if self.has_ci() {
            format!("{:.d$} +- {:.d$}", self.mean, self.ci95, d = decimals)
        } else {
            format!("{:.d$}", self.mean, d = decimals)
        }
    }

    /// [`Stat::pm`] with the mean's sign always shown (a difference).
    pub fn signed_pm(&self, decimals: usize) -> String {
        if self.has_ci() {
            format!("{:+.d$} +- {:.d$}", self.mean, self.ci95, d = decimals)
        } else {
            format!("{:+.d$}", self.mean, d = decimals)
        }
    }
}

/// What a table's figures mean under a trace: the agents' loads unused, and, played from its
/// first round, the same arrivals on every seed (their CIs shrank to +-0.004 and earned stars,
/// unexplained: issue 40.4). `None` where the seeds draw their own arrivals.
pub fn trace_note(sc: &crate::config::Scenario, seeds: usize) -> Option<String> {
    let e = &sc.file.env;
    if e.arrivals != crate::config::Arrivals::Trace {
        return None;
    }
    // The agents' loads size Poisson and MMPP arrivals only: under a trace they were ignored
    // without a word (issue 40.4).
    let mut note =
        "Arrivals come from the trace: env.agents' load is not used (a job log's load scales with env.trace_time_scale).".to_string();
    if e.trace_start.unwrap_or_default() == crate::config::TraceStart::First && seeds > 1 {
        note += " Every seed replays the trace from its first round (env.trace_start = \"first\"): the seeds share their arrivals and differ only in service and placement draws, so the CIs say nothing about other arrivals; env.trace_start = \"seeded\" starts each episode at a round drawn from its seed.";
    }
    Some(note)
}

/// The note a table carries when its figures come from fewer than two seeds.
pub const ONE_SEED_NOTE: &str = "One seed: no confidence intervals and no significance marks (they need two seeds or more).";

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

/// Figures over seeds, each as mean and 95% CI: one per entry of [`METRICS`] (`None` where
/// the episodes did not compute it), and the per-class and per-agent families.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    /// Episodes.
    pub seeds: usize,
    /// One statistic per entry of [`METRICS`], in its order.
    pub stats: Vec<Option<Stat>>,
    /// Throughput per weight class (weight, stat), ascending weight.
    pub throughput_by_weight: Vec<(f64, Stat)>,
    /// Valuation world: mean bid factor per agent.
    pub bid_factor: Option<Vec<Stat>>,
    /// The world its episodes came from: `summary.json` shows that world's figures only.
    pub world: Option<crate::config::World>,
}

impl Summary {
    /// Reduce episodes of one scenario.
    pub fn of(scenario: &Scenario, eps: &[EpisodeMetrics]) -> Self {
        let stats = METRICS
            .iter()
            .map(|m| {
                let xs: Option<Vec<f64>> = eps.iter().map(m.of).collect();
                xs.filter(|x| !(x.is_empty() && m.absent == Absent::Omit)).map(|x| Stat::of(&x))
            })
            .collect();
        let stat = |f: &dyn Fn(&EpisodeMetrics) -> f64| Stat::of(&eps.iter().map(f).collect::<Vec<_>>());
        let throughput_by_weight = scenario
            .weight_classes()
            .iter()
            .map(|&w| {
                let idx: Vec<usize> = (0..scenario.n()).filter(|&i| scenario.agents[i].weight == w).collect();
                (w, stat(&|e| idx.iter().map(|&i| e.throughput[i]).sum::<f64>() / idx.len() as f64))
            })
            .collect();
        let bid_factor = (0..scenario.n())
            .map(|i| {
                let xs: Option<Vec<f64>> = eps.iter().map(|e| e.auction.as_ref().map(|a| a.bid_factor[i])).collect();
                xs.filter(|x| !x.is_empty()).map(|x| Stat::of(&x))
            })
            .collect::<Option<Vec<Stat>>>()
            .filter(|v| !v.is_empty());
        Self {
            seeds: eps.len(),
            stats,
            throughput_by_weight,
            bid_factor,
            world: Some(scenario.file.env.world),
        }
    }

    /// A summary of `world` with every figure present, all 0: the shape of a summary a sweep's
    /// objective path is checked against before any trial runs.
    pub fn shape(world: crate::config::World) -> Self {
        Self {
            stats: METRICS
                .iter()
                .map(|m| m.world.is_none_or(|w| w == world).then_some(Stat::default()))
                .collect(),
            world: Some(world),
            ..Self::default()
        }
    }

    /// The statistic of `metric`, if the episodes computed it.
    pub fn get(&self, metric: &Metric) -> Option<Stat> {
        let k = METRICS.iter().position(|m| m.key == metric.key)?;
        self.stats.get(k).copied().flatten()
    }

    /// The statistic of the figure named `key`, if the episodes computed it. `key` must be one
    /// of [`METRICS`]' (a name the code spells; names a user gives are checked where they are
    /// read): a misspelt one is a bug, and panics rather than reading as absent.
    pub fn stat(&self, key: &str) -> Option<Stat> {
        self.get(Metric::named(key).unwrap_or_else(|| panic!("`{key}` is not a figure of env::metrics::METRICS")))
    }

    /// The statistic of a figure every episode computes (NaN if it was not).
    pub fn figure(&self, key: &str) -> Stat {
        self.stat(key).unwrap_or(Stat {
            mean: f64::NAN,
            ci95: f64::NAN,
        })
    }

    /// The world's headline figure and its key: weighted welfare (jobs per round) in the queue
    /// world, surplus per bidder per item in the valuation world.
    pub fn headline(&self) -> (&'static str, Stat) {
        let key = match self.world {
            Some(crate::config::World::Valuations) => "surplus_per_bidder_item",
            _ => WELFARE.key,
        };
        (key, self.figure(key))
    }

    /// Weighted social welfare (jobs per round), which every summary has.
    pub fn welfare(&self) -> Stat {
        self.figure(WELFARE.key)
    }

    /// Every present figure with its statistic, in [`METRICS`]'s order.
    pub fn present(&self) -> impl Iterator<Item = (&'static Metric, Stat)> + '_ {
        METRICS.iter().zip(&self.stats).filter_map(|(m, s)| s.map(|s| (m, s)))
    }
}

/// `summary.json`'s `eval` object: `seeds`, then every figure under its key in [`METRICS`]'s
/// order (`null` or left out when absent, as the figure says), each family after its figure.
impl Serialize for Summary {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("seeds", &self.seeds)?;
        for (m, stat) in METRICS.iter().zip(&self.stats) {
            // Another world's figure (a queue world's welfare in the valuation world) is not
            // this world's: left out.
            if m.world.is_some() && self.world.is_some() && m.world != self.world {
                continue;
            }
            if m.then == Some(Family::ThroughputByWeight) && self.world == Some(crate::config::World::Valuations) {
                continue;
            }
            match (stat, m.absent) {
                (Some(st), _) => map.serialize_entry(m.key, st)?,
                (None, Absent::Null) => map.serialize_entry(m.key, &None::<Stat>)?,
                (None, Absent::Omit) => {}
            }
            match m.then {
                Some(Family::ThroughputByWeight) => map.serialize_entry("throughput_by_weight", &self.throughput_by_weight)?,
                Some(Family::BidFactors) => {
                    if let Some(b) = &self.bid_factor {
                        map.serialize_entry("bid_factor", b)?;
                    }
                }
                None => {}
            }
        }
        map.end()
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
        assert!(Stat::of(&[5.0]).ci95.is_nan() && Stat::of(&[5.0]).pm(2) == "5.00");
    }
}

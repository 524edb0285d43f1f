//! Search spaces, and the samplers that draw from them: random, grid and TPE.
//!
//! TPE (Bergstra et al. 2011), the way Optuna's default sampler does it, one parameter at a
//! time: after `startup` random trials, the finished trials are split at the gamma quantile of
//! their objective into "good" and "bad"; each side's values define a Parzen estimator (a
//! Gaussian per observation in the parameter's internal space — log space for log
//! distributions — plus a wide prior component); `candidates` points are drawn from the good
//! estimator and the one with the largest l(x) / g(x) is proposed. Categorical parameters use
//! smoothed counts instead of Gaussians.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One parameter's distribution, as written in a sweep file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Dist {
    /// A float in [low, high], uniform or log-uniform.
    Float {
        /// Lower bound.
        low: f64,
        /// Upper bound.
        high: f64,
        /// Log-uniform.
        #[serde(default)]
        log: bool,
    },
    /// An integer in [low, high] on a grid of `step`.
    Int {
        /// Lower bound.
        low: i64,
        /// Upper bound.
        high: i64,
        /// Step (default 1).
        #[serde(default = "one")]
        step: i64,
    },
    /// One of the listed values (any TOML scalars).
    Categorical {
        /// The choices.
        choices: Vec<toml::Value>,
    },
}

fn one() -> i64 {
    1
}

/// A parameter value.
pub type Value = toml::Value;

impl Dist {
    /// Check the distribution; the error names the problem.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Dist::Float { low, high, log } => {
                if !(low.is_finite() && high.is_finite() && low < high) {
                    return Err(format!("float range needs finite low < high, got [{low}, {high}]"));
                }
                if *log && *low <= 0.0 {
                    return Err(format!("a log distribution needs low > 0, got {low}"));
                }
            }
            Dist::Int { low, high, step } => {
                if low > high || *step <= 0 {
                    return Err(format!(
                        "int range needs low <= high and step >= 1, got [{low}, {high}] step {step}"
                    ));
                }
                // Grid and sampler arithmetic run in i64 and f64: keep bounds where both are
                // exact (|x| <= 2^53) so `high - low` cannot overflow.
                const EXACT: i64 = 1 << 53;
                if low.abs() > EXACT || high.abs() > EXACT || *step > EXACT {
                    return Err(format!(
                        "int bounds and step must lie within +-2^53 (9007199254740992), got [{low}, {high}] step {step}"
                    ));
                }
            }
            Dist::Categorical { choices } => {
                if choices.is_empty() {
                    return Err("categorical needs at least one choice".into());
                }
            }
        }
        Ok(())
    }

    /// Internal continuous coordinate of a value (log for log floats; the grid index for ints;
    /// the choice index for categoricals).
    fn to_internal(&self, v: &Value) -> Option<f64> {
        match self {
            Dist::Float { log, .. } => v
                .as_float()
                .or_else(|| v.as_integer().map(|i| i as f64))
                .map(|x| if *log { x.ln() } else { x }),
            Dist::Int { low, step, .. } => v.as_integer().map(|i| ((i - low) / step) as f64),
            Dist::Categorical { choices } => choices.iter().position(|c| c == v).map(|k| k as f64),
        }
    }

    /// Internal bounds.
    fn bounds(&self) -> (f64, f64) {
        match self {
            Dist::Float { low, high, log } => {
                if *log {
                    (low.ln(), high.ln())
                } else {
                    (*low, *high)
                }
            }
            Dist::Int { low, high, step } => (0.0, ((high - low) / step) as f64),
            Dist::Categorical { choices } => (0.0, (choices.len() - 1) as f64),
        }
    }

    /// The value at an internal coordinate.
    fn from_internal(&self, x: f64) -> Value {
        match self {
            Dist::Float { log, low, high } => {
                let (lo, hi) = self.bounds();
                // The ends exactly: exp(ln(0.01)) is 0.010000000000000004.
                Value::Float(if x <= lo {
                    *low
                } else if x >= hi {
                    *high
                } else if *log {
                    x.exp().clamp(*low, *high)
                } else {
                    x
                })
            }
            Dist::Int { low, high, step } => {
                let k = x.round().max(0.0) as i64;
                Value::Integer((low + k * step).min(*high))
            }
            Dist::Categorical { choices } => choices[(x.round().max(0.0) as usize).min(choices.len() - 1)].clone(),
        }
    }

    /// A uniform draw (log-uniform for log floats).
    pub fn sample(&self, u: f64) -> Value {
        let (lo, hi) = self.bounds();
        match self {
            Dist::Float { .. } => self.from_internal(lo + u * (hi - lo)),
            _ => self.from_internal((lo + u * (hi - lo + 1.0) - 0.5).clamp(lo, hi)),
        }
    }

    /// Grid points: every int and categorical value; `points` evenly spaced floats.
    pub fn grid(&self, points: usize) -> Vec<Value> {
        let (lo, hi) = self.bounds();
        match self {
            Dist::Float { .. } => (0..points.max(2))
                .map(|k| self.from_internal(lo + (hi - lo) * k as f64 / (points.max(2) - 1) as f64))
                .collect(),
            _ => (0..=(hi as usize)).map(|k| self.from_internal(k as f64)).collect(),
        }
    }
}

/// A finished trial as samplers and pruners see it.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// Parameter values.
    pub params: BTreeMap<String, Value>,
    /// Objective, oriented so that smaller is better.
    pub loss: f64,
}

/// Reproducible uniforms (splitmix64) from (study seed, trial number): the agent runtime's.
pub use crate::export::runtime::Draws;

/// A standard normal from two uniforms (Box-Muller).
fn normal(draws: &mut Draws) -> f64 {
    let (u, v) = (draws.next_unit().max(1e-300), draws.next_unit());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

/// Which sampler proposes parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplerKind {
    /// Independent uniform draws.
    Random,
    /// The Cartesian product, in order.
    Grid,
    /// Tree-structured Parzen estimator.
    Tpe,
}

/// TPE settings (Optuna's defaults, with fewer start-up trials for small budgets).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TpeConfig {
    /// Random trials before TPE starts.
    pub startup: usize,
    /// Candidates drawn from l(x) per proposal.
    pub candidates: usize,
    /// Fraction of finished trials that count as good (at least 1, at most 25 trials).
    pub gamma: f64,
}

impl Default for TpeConfig {
    fn default() -> Self {
        Self {
            startup: 5,
            candidates: 24,
            gamma: 0.1,
        }
    }
}

/// Propose parameters for trial `number`.
pub fn propose(
    kind: SamplerKind,
    space: &BTreeMap<String, Dist>,
    history: &[Observed],
    number: usize,
    tpe: &TpeConfig,
    grid_points: usize,
    draws: &mut Draws,
) -> BTreeMap<String, Value> {
    match kind {
        SamplerKind::Random => space.iter().map(|(k, d)| (k.clone(), d.sample(draws.next_unit()))).collect(),
        SamplerKind::Grid => {
            // Mixed-radix decode of the trial number over the parameters in name order.
            let mut rest = number;
            space
                .iter()
                .map(|(k, d)| {
                    let g = d.grid(grid_points);
                    let v = g[rest % g.len()].clone();
                    rest /= g.len();
                    (k.clone(), v)
                })
                .collect()
        }
        SamplerKind::Tpe => {
            if history.len() < tpe.startup.max(1) {
                return propose(SamplerKind::Random, space, history, number, tpe, grid_points, draws);
            }
            let mut sorted: Vec<&Observed> = history.iter().collect();
            sorted.sort_by(|a, b| a.loss.total_cmp(&b.loss));
            let n_good = ((tpe.gamma * sorted.len() as f64).ceil() as usize).clamp(1, 25).min(sorted.len());
            let (good, bad) = sorted.split_at(n_good);
            space
                .iter()
                .map(|(k, d)| (k.clone(), tpe_one(d, k, good, bad, tpe.candidates, draws)))
                .collect()
        }
    }
}

/// A Parzen estimator in internal coordinates: Gaussians at the points plus a prior.
struct Parzen {
    mus: Vec<f64>,
    sigmas: Vec<f64>,
    lo: f64,
    hi: f64,
}

impl Parzen {
    fn new(points: &[f64], lo: f64, hi: f64) -> Self {
        // Prior at the centre with the range as width; each point's width is the larger gap to
        // its sorted neighbours (Bergstra's heuristic), clipped to [range / 100, range].
        let range = (hi - lo).max(1e-12);
        let mut mus: Vec<f64> = points.to_vec();
        mus.push((lo + hi) / 2.0);
        let mut order: Vec<usize> = (0..mus.len()).collect();
        order.sort_by(|&a, &b| mus[a].total_cmp(&mus[b]));
        let mut sigmas = vec![range; mus.len()];
        for (r, &i) in order.iter().enumerate() {
            let left = if r > 0 { mus[i] - mus[order[r - 1]] } else { mus[i] - lo };
            let right = if r + 1 < order.len() {
                mus[order[r + 1]] - mus[i]
            } else {
                hi - mus[i]
            };
            sigmas[i] = left.max(right).clamp(range / 100.0, range);
        }
        let last = mus.len() - 1;
        sigmas[last] = range;
        Self { mus, sigmas, lo, hi }
    }

    fn sample(&self, draws: &mut Draws) -> f64 {
        let k = ((draws.next_unit() * self.mus.len() as f64) as usize).min(self.mus.len() - 1);
        for _ in 0..100 {
            let x = self.mus[k] + self.sigmas[k] * normal(draws);
            if (self.lo..=self.hi).contains(&x) {
                return x;
            }
        }
        self.mus[k].clamp(self.lo, self.hi)
    }

    fn log_density(&self, x: f64) -> f64 {
        let w = 1.0 / self.mus.len() as f64;
        let p: f64 = self
            .mus
            .iter()
            .zip(&self.sigmas)
            .map(|(m, s)| w * (-0.5 * ((x - m) / s).powi(2)).exp() / (s * (2.0 * std::f64::consts::PI).sqrt()))
            .sum();
        p.max(1e-300).ln()
    }
}

fn tpe_one(d: &Dist, key: &str, good: &[&Observed], bad: &[&Observed], candidates: usize, draws: &mut Draws) -> Value {
    let xs = |obs: &[&Observed]| -> Vec<f64> {
        obs.iter()
            .filter_map(|o| o.params.get(key).and_then(|v| d.to_internal(v)))
            .collect()
    };
    let (gx, bx) = (xs(good), xs(bad));
    if let Dist::Categorical { choices } = d {
        // Smoothed counts: each choice gets one pseudo-observation.
        let k = choices.len();
        let weights = |pts: &[f64]| -> Vec<f64> {
            let mut c = vec![1.0; k];
            for &p in pts {
                c[p as usize] += 1.0;
            }
            let s: f64 = c.iter().sum();
            c.into_iter().map(|x| x / s).collect()
        };
        let (l, g) = (weights(&gx), weights(&bx));
        let mut best = (0, f64::NEG_INFINITY);
        for _ in 0..candidates.max(1) {
            let u = draws.next_unit();
            let mut acc = 0.0;
            let pick = l.iter().position(|&p| {
                acc += p;
                u < acc
            });
            let c = pick.unwrap_or(k - 1);
            let score = l[c].ln() - g[c].ln();
            if score > best.1 {
                best = (c, score);
            }
        }
        return choices[best.0].clone();
    }
    let (lo, hi) = d.bounds();
    // Integers live on a grid: widen by half a step so the ends are reachable.
    let (lo, hi) = if matches!(d, Dist::Int { .. }) {
        (lo - 0.5, hi + 0.5)
    } else {
        (lo, hi)
    };
    let (l, g) = (Parzen::new(&gx, lo, hi), Parzen::new(&bx, lo, hi));
    let mut best = (lo, f64::NEG_INFINITY);
    for _ in 0..candidates.max(1) {
        let x = l.sample(draws);
        let score = l.log_density(x) - g.log_density(x);
        if score > best.1 {
            best = (x, score);
        }
    }
    d.from_internal(best.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space() -> BTreeMap<String, Dist> {
        let mut s = BTreeMap::new();
        s.insert(
            "lr".into(),
            Dist::Float {
                low: 1e-5,
                high: 1e-1,
                log: true,
            },
        );
        s.insert(
            "width".into(),
            Dist::Int {
                low: 16,
                high: 256,
                step: 16,
            },
        );
        s.insert(
            "x".into(),
            Dist::Float {
                low: -5.0,
                high: 5.0,
                log: false,
            },
        );
        s.insert(
            "act".into(),
            Dist::Categorical {
                choices: vec!["tanh".into(), "relu".into(), "gelu".into()],
            },
        );
        s
    }

    /// A cheap synthetic objective with its optimum at lr = 1e-3, width = 128, x = 1.5, gelu.
    fn objective(p: &BTreeMap<String, Value>) -> f64 {
        let lr = p["lr"].as_float().unwrap();
        let w = p["width"].as_integer().unwrap() as f64;
        let x = p["x"].as_float().unwrap();
        let act = if p["act"].as_str() == Some("gelu") { 0.0 } else { 1.0 };
        (lr.log10() + 3.0).powi(2) + ((w - 128.0) / 64.0).powi(2) + (x - 1.5).powi(2) + act
    }

    fn best_after(kind: SamplerKind, trials: usize, seed: u64) -> f64 {
        let s = space();
        let mut hist = Vec::new();
        for t in 0..trials {
            let mut draws = Draws::new(seed * 1000 + t as u64);
            let p = propose(kind, &s, &hist, t, &TpeConfig::default(), 5, &mut draws);
            let loss = objective(&p);
            hist.push(Observed { params: p, loss });
        }
        hist.iter().map(|o| o.loss).fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn tpe_beats_random_search_on_a_synthetic_objective() {
        // 30 trials each, 20 repetitions: TPE's best loss is lower on average and in most runs.
        let (mut tpe_sum, mut rnd_sum, mut wins) = (0.0, 0.0, 0);
        for seed in 0..20 {
            let (t, r) = (best_after(SamplerKind::Tpe, 30, seed), best_after(SamplerKind::Random, 30, seed));
            tpe_sum += t;
            rnd_sum += r;
            wins += usize::from(t < r);
        }
        eprintln!(
            "mean best loss over 20 studies of 30 trials: TPE {:.3}, random {:.3}; TPE better in {wins}/20",
            tpe_sum / 20.0,
            rnd_sum / 20.0
        );
        assert!(tpe_sum < 0.7 * rnd_sum, "TPE {tpe_sum} vs random {rnd_sum}");
        assert!(wins >= 14, "TPE won {wins} of 20");
    }

    #[test]
    fn samples_stay_in_their_domains_and_grids_enumerate() {
        let s = space();
        let mut d = Draws::new(3);
        for _ in 0..500 {
            let p = propose(SamplerKind::Random, &s, &[], 0, &TpeConfig::default(), 5, &mut d);
            let lr = p["lr"].as_float().unwrap();
            assert!((1e-5..=1e-1).contains(&lr));
            let w = p["width"].as_integer().unwrap();
            assert!((16..=256).contains(&w) && w % 16 == 0);
        }
        let grid: Vec<_> = (0..6)
            .map(|t| propose(SamplerKind::Grid, &s, &[], t, &TpeConfig::default(), 2, &mut d))
            .collect();
        // Name order: act (3 choices) varies fastest.
        assert_eq!(grid[0]["act"].as_str(), Some("tanh"));
        assert_eq!(grid[1]["act"].as_str(), Some("relu"));
        assert_eq!(grid[3]["lr"].as_float(), Some(1e-1));
        assert!(Dist::Float {
            low: 0.0,
            high: 1.0,
            log: true
        }
        .validate()
        .is_err());
        assert!(Dist::Int { low: 3, high: 1, step: 1 }.validate().is_err());
    }
}

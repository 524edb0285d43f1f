//! The references a market run is judged against, on the evaluation seeds: every learning
//! group at one common level, uniform random play, every tenant its own factor, and the best
//! unilateral deviation from each common level.

use super::{evaluate, Learners, MarketScore};
use crate::error::Result;
use crate::train::market_policy::{market_world, GroupPolicies};
use env::market::world::MarketWorld;
use env::market::{Market, MarketFile};
use env::rng::{stream, stream_seed, unit};
use rand::Rng;
use serde::Serialize;

/// An episode at factors that need not be levels (own factors, a unilateral deviation).
pub(crate) fn play(file: &MarketFile, actions: &[f64]) -> Market {
    Market::play(file.clone(), actions, false, |_, _| {}).0
}

/// The best a single learning tenant does by leaving a common level alone (the others of every
/// learning group stay at it), mean utility over the evaluation seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Deviation {
    /// The common level.
    pub level: f64,
    /// The largest gain in mean utility of one tenant deviating (0: no tenant gains: a
    /// symmetric equilibrium among the levels).
    pub gain: f64,
    /// Who gains it.
    pub tenant: String,
    /// By deviating to this level.
    pub to: f64,
}

/// [`Deviation`] for every level: each learning tenant at every other level, the rest at it.
pub(crate) fn deviations(files: &[MarketFile], ls: &Learners, levels: &[f64]) -> Vec<Deviation> {
    let utility = |x: f64, who: Option<(usize, f64)>| -> Vec<f64> {
        // Mean utility over `files` of every learning tenant, all at x but `who`.
        let mut u = vec![0.0; ls.who.len()];
        for f in files {
            let mut a = f.actions();
            for &i in &ls.who {
                a[i] = x;
            }
            if let Some((i, y)) = who {
                a[i] = y;
            }
            let m = play(f, &a);
            for (j, &i) in ls.who.iter().enumerate() {
                u[j] += m.utility(i) / files.len() as f64;
            }
        }
        u
    };
    let names = files
        .first()
        .map(|f| f.market.tenants.iter().map(|t| t.name.clone()).collect::<Vec<_>>())
        .unwrap_or_default();
    levels
        .iter()
        .map(|&x| {
            let base = utility(x, None);
            let mut best = Deviation {
                level: x,
                gain: 0.0,
                tenant: String::new(),
                to: x,
            };
            for (j, &i) in ls.who.iter().enumerate() {
                for &y in levels.iter().filter(|&&y| y != x) {
                    let g = utility(x, Some((i, y)))[j] - base[j];
                    if g > best.gain + 1e-9 {
                        best = Deviation {
                            level: x,
                            gain: g,
                            tenant: names[i].clone(),
                            to: y,
                        };
                    }
                }
            }
            best
        })
        .collect()
}

/// Per file, the score of the learners at their own factors (the economic agent), the others
/// at theirs.
pub(crate) fn own_scores(files: &[MarketFile], ls: &Learners) -> Vec<MarketScore> {
    files.iter().map(|f| MarketScore::of(&play(f, &f.actions()), &ls.who)).collect()
}

/// Per evaluation seed, the score of every learning group at level `k`, the others at their
/// own factors (through the one episode driver).
pub(crate) fn level_scores(raw: &MarketFile, ls: &Learners, levels: &[f64], k: usize, seeds: &[u64]) -> Result<Vec<MarketScore>> {
    let fixed = GroupPolicies::Constant {
        levels: vec![k; ls.classes()],
    };
    Ok(evaluate(raw, ls, levels, &fixed, seeds, false)?.0)
}

/// The learning tenants drawing a level uniformly at random every round, in tenant order,
/// from the stream `market-uniform` of the run's seed, one per evaluation seed (its index).
struct UniformActing {
    rng: rand::rngs::SmallRng,
    k: usize,
}

impl env::worlds::Acting<MarketWorld> for UniformActing {
    fn act(&mut self, _world: &MarketWorld, _obs: &[f32], _groups: &[usize], actions: &mut [usize]) {
        for a in actions.iter_mut() {
            *a = (unit(self.rng.next_u64()) * self.k as f64) as usize % self.k;
        }
    }
}

/// Per evaluation seed, the score of the learners playing [`UniformActing`], the others at
/// their own factors.
pub(crate) fn uniform_scores(raw: &MarketFile, ls: &Learners, levels: &[f64], seed: u64, seeds: &[u64]) -> Result<Vec<MarketScore>> {
    let mut world = market_world(raw, levels)?;
    Ok(seeds
        .iter()
        .enumerate()
        .map(|(j, &s)| {
            let mut uniform = UniformActing {
                rng: stream(seed, "market-uniform", j as u64),
                k: levels.len(),
            };
            env::worlds::play(&mut world, &mut uniform, s);
            MarketScore::of(world.game().market(), &ls.who)
        })
        .collect())
}

/// The evaluation seeds of a market run of `raw` (the same for every replicate and for `mtf
/// analyze`).
pub(crate) fn eval_seeds(raw: &MarketFile, n: usize) -> Vec<u64> {
    (0..n as u64).map(|j| stream_seed(raw.seed, "market-eval", j)).collect()
}

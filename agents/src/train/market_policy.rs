//! A market run's trained policies (kept in its last checkpoint, `checkpoints/latest.ckpt`, and
//! read back by [`crate::train::market::TrainedMarket`]): what `mtf compare --policies run:DIR`
//! plays for the learning tenants and `mtf export` ships.
//!
//! Per replicate, per learning group: Hedge's greedy level (a factor kept for the whole job), or
//! the actor of PPO, ES or the actor-critic (one tanh hidden layer, the layout of
//! [`crate::learners::nets::actor_logits`]) on [`Market::observe`]'s features, played greedily
//! or drawing from its softmax ([`MarketActing`]).

use crate::error::{user, Result};
use crate::learners::base::{argmax, sample_index};
use crate::learners::nets::actor_logits;
use env::market::world::MarketWorld;
use env::market::MarketFile;
use env::rng::{names, stream, unit};
use env::worlds::World;
use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// One replicate's policy per learning group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case", deny_unknown_fields)]
pub enum GroupPolicies {
    /// A level index per group, whatever it observes (Hedge).
    Constant {
        /// Per group.
        levels: Vec<usize>,
    },
    /// An actor per group (PPO, ES, the actor-critic).
    Actor {
        /// Hidden width.
        hidden: usize,
        /// Per group: the actor's numbers.
        weights: Vec<Vec<f32>>,
    },
}

/// A finished run's policies, every replicate's, and what they act on (from its config).
#[derive(Clone, Debug, PartialEq)]
pub struct MarketPolicies {
    /// The levels (bid factors, or MTF thresholds) the policies choose among.
    pub levels: Vec<f64>,
    /// Features per observation ([`Market::obs_dim`]).
    pub dim: usize,
    /// Learning groups, by name (the file's tenant entries with `learn = true`).
    pub groups: Vec<String>,
    /// Per replicate.
    pub replicates: Vec<GroupPolicies>,
}

impl MarketPolicies {
    /// Check the shapes a player relies on; `what` names the file in errors.
    pub fn check(&self, what: &str) -> Result<()> {
        let bad = |p: String| Err(user(format!("{what}: {p}")));
        let k = self.levels.len();
        if k == 0 || self.levels.iter().any(|l| !l.is_finite()) {
            return bad("levels must be finite numbers, at least one".into());
        }
        if self.dim == 0 || self.dim > env::market::Market::obs_dim(64) || self.groups.is_empty() || self.replicates.is_empty() {
            return bad("needs a dimension, groups and replicates".into());
        }
        let g = self.groups.len();
        for (r, p) in self.replicates.iter().enumerate() {
            match p {
                GroupPolicies::Constant { levels } => {
                    if levels.len() != g || levels.iter().any(|&l| l >= k) {
                        return bad(format!("replicates[{r}]: needs a level index below {k} per group ({g})"));
                    }
                }
                GroupPolicies::Actor { hidden, weights } => {
                    let max = crate::learners::limits::MAX_HIDDEN;
                    if !(1..=max).contains(hidden) {
                        return bad(format!("replicates[{r}]: hidden {hidden} is outside [1, {max}]"));
                    }
                    let len = self.dim * hidden + hidden + hidden * k + k;
                    if weights.len() != g || weights.iter().any(|w| w.len() != len || w.iter().any(|x| !x.is_finite())) {
                        return bad(format!(
                            "replicates[{r}]: needs {g} actors of {len} finite numbers (hidden {hidden})"
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The market `mtf train` learns in for `raw` (unexpanded) with `levels`: the learning tenants
/// are its agents, the others play their own factors.
pub fn market_world(raw: &MarketFile, levels: &[f64]) -> Result<MarketWorld> {
    let resolved = env::market::world::resolved(raw).map_err(crate::error::failed)?;
    Ok(MarketWorld::learners(raw.clone(), levels.to_vec(), resolved))
}

/// One replicate's policies acting for the learning tenants of a [`MarketWorld::learners`]
/// world (through the one episode driver, [`env::worlds::play`]): Hedge's level per group, or
/// each group's actor, greedy (its argmax) or drawing from its softmax as it trained. It also
/// sums each group's level at its tenants' decision rounds (feature 3: the tenant's level is
/// used this round).
pub struct MarketActing<'a> {
    policy: &'a GroupPolicies,
    class: &'a [usize],
    levels: &'a [f64],
    rng: Option<SmallRng>,
    hidden: Vec<f32>,
    logits: Vec<f32>,
    weights: Vec<f64>,
    /// Per group: the summed level and the count of its tenants' decision rounds.
    pub chosen: Vec<(f64, u32)>,
    /// The actors' entropy over `ln K` at the decision rounds: summed, and the count.
    entropy: (f64, u64),
}

impl<'a> MarketActing<'a> {
    /// `class`: each agent's (learning tenant's) group; `sampled`: draw from the actors'
    /// softmax (the episode's policy stream) instead of taking their argmax.
    pub fn new(policy: &'a GroupPolicies, class: &'a [usize], levels: &'a [f64], sampled: bool) -> Self {
        let groups = class.iter().max().map_or(0, |&c| c + 1);
        Self {
            policy,
            class,
            levels,
            rng: sampled.then(|| stream(0, names::POLICY, 0)),
            hidden: Vec::new(),
            logits: vec![0.0; levels.len()],
            weights: vec![0.0; levels.len()],
            chosen: vec![(0.0, 0); groups],
            entropy: (0.0, 0),
        }
    }

    /// The actors' mean entropy share at their tenants' decision rounds (their entropy over
    /// the largest, `ln K`; `None` for Hedge's levels or where nobody decided). Above
    /// [`env::metrics::spec::NEAR_UNIFORM`] an actor's argmax is an argmax of noise.
    pub fn entropy_share(&self) -> Option<f64> {
        (self.entropy.1 > 0).then(|| self.entropy.0 / self.entropy.1 as f64)
    }

    /// Each group's mean level at its tenants' decision rounds (NaN: none decided).
    pub fn mean_levels(&self) -> Vec<f64> {
        self.chosen
            .iter()
            .map(|&(s, k)| if k == 0 { f64::NAN } else { s / f64::from(k) })
            .collect()
    }
}

impl env::worlds::Acting<MarketWorld> for MarketActing<'_> {
    /// The episode's draws come from its own stream, one per learning tenant per round in
    /// tenant order.
    fn begin_episode(&mut self, seed: u64) {
        if let Some(rng) = &mut self.rng {
            *rng = stream(seed, names::POLICY, 0);
        }
    }

    fn act(&mut self, world: &MarketWorld, obs: &[f32], _groups: &[usize], actions: &mut [usize]) {
        let (d, k) = (world.layout().dim(), self.levels.len());
        for ((row, &id), a) in obs.chunks_exact(d).zip(world.live()).zip(actions.iter_mut()) {
            let c = self.class[id];
            let decides = row[3] > 0.5;
            *a = match self.policy {
                GroupPolicies::Constant { levels } => levels[c],
                GroupPolicies::Actor { hidden, weights } => {
                    actor_logits(&weights[c], (d, *hidden, k), row, &mut self.hidden, &mut self.logits);
                    if decides && k > 1 {
                        self.entropy.0 += entropy(&self.logits) / (k as f64).ln();
                        self.entropy.1 += 1;
                    }
                    match &mut self.rng {
                        None => argmax(self.logits.iter().map(|&l| f64::from(l))),
                        Some(rng) => {
                            let max = self.logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
                            for (w, &l) in self.weights.iter_mut().zip(&self.logits) {
                                *w = f64::from(l - max).exp();
                            }
                            sample_index(&self.weights, unit(rng.next_u64()))
                        }
                    }
                }
            };
            if decides {
                let x = &mut self.chosen[c];
                *x = (x.0 + self.levels[*a], x.1 + 1);
            }
        }
    }
}

/// The entropy of the softmax of `logits`, in nats.
fn entropy(logits: &[f32]) -> f64 {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    let z: f64 = logits.iter().map(|&l| f64::from(l - max).exp()).sum();
    -logits
        .iter()
        .map(|&l| {
            let p = f64::from(l - max).exp() / z;
            if p > 0.0 {
                p * p.ln()
            } else {
                0.0
            }
        })
        .sum::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use env::market::Market;
    use std::path::Path;

    /// The duel (configs/market/duel.toml): L's utility at first-price bid factor f is 20 - 10 f
    /// when it wins (f > 0.8), else 10 on demand; one decision per episode.
    fn duel() -> (MarketFile, Vec<f64>) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
        let raw = MarketFile::load_unexpanded(&path, &[]).unwrap();
        let levels = env::market::game::action_levels(&raw, "duel").unwrap();
        (raw, levels)
    }

    fn mean_utility(raw: &MarketFile, levels: &[f64], policy: &GroupPolicies, sampled: bool, seeds: u64) -> (f64, f64) {
        let mut world = market_world(raw, levels).unwrap();
        let who = world.tenant(0);
        let class = [0];
        let mut acting = MarketActing::new(policy, &class, levels, sampled);
        let mut total = 0.0;
        for s in 0..seeds {
            env::worlds::play(&mut world, &mut acting, s);
            total += world.game().market().utility(who);
        }
        (total / seeds as f64, acting.mean_levels()[0])
    }

    #[test]
    fn an_actor_with_equal_logits_plays_uniformly_when_sampled_and_its_first_level_when_greedy() {
        let (raw, levels) = duel();
        assert_eq!(levels.len(), 11, "levels 0.5, 0.6, ..., 1.5");
        let (d, h, k) = (world_dim(&raw), 3, levels.len());
        let zero = GroupPolicies::Actor {
            hidden: h,
            weights: vec![vec![0.0; d * h + h + h * k + k]],
        };
        // Greedy: the argmax of equal logits is the first level, 0.5: L loses, 10 on demand.
        let (u, level) = mean_utility(&raw, &levels, &zero, false, 20);
        assert!((u - 10.0).abs() < 1e-9 && (level - 0.5).abs() < 1e-9, "{u} {level}");
        // Sampled: each level with probability 1/11, so the expected utility is
        // (4 x 10 + 11 + 10 + 9 + 8 + 7 + 6 + 5) / 11 = 96/11 (sd 1.9 per episode: 0.093 over
        // 400 episodes) and the mean level decided 1.0.
        let (u, level) = mean_utility(&raw, &levels, &zero, true, 400);
        assert!((u - 96.0 / 11.0).abs() < 0.35, "{u}");
        assert!((level - 1.0).abs() < 0.1, "{level}");
        // Equal logits: the largest entropy, ln K, a share of 1 (near-uniform).
        let mut world = market_world(&raw, &levels).unwrap();
        let mut acting = MarketActing::new(&zero, &[0], &levels, false);
        env::worlds::play(&mut world, &mut acting, 0);
        assert!((acting.entropy_share().unwrap() - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_constant_policy_plays_its_level_and_scores_the_hand_computed_utility() {
        let (raw, levels) = duel();
        let at = |x: f64| levels.iter().position(|&l| (l - x).abs() < 1e-9).unwrap();
        for (x, want) in [(0.9, 11.0), (1.2, 8.0), (0.8, 10.0)] {
            let p = GroupPolicies::Constant { levels: vec![at(x)] };
            let (u, level) = mean_utility(&raw, &levels, &p, true, 3);
            assert!((u - want).abs() < 1e-9 && (level - x).abs() < 1e-9, "{x}: {u} {level}");
        }
    }

    #[test]
    fn entropy_is_ln_k_for_equal_logits_and_the_two_point_formula_otherwise() {
        assert!((entropy(&[0.5; 4]) - 4f64.ln()).abs() < 1e-12);
        // p = (e/(1+e), 1/(1+e)): -(p ln p + q ln q).
        let p = 1f64.exp() / (1.0 + 1f64.exp());
        let want = -(p * p.ln() + (1.0 - p) * (1.0 - p).ln());
        assert!((entropy(&[1.0, 0.0]) - want).abs() < 1e-7);
        assert!(entropy(&[0.0, -200.0]) < 1e-12);
    }

    fn world_dim(raw: &MarketFile) -> usize {
        Market::obs_dim(raw.market.types.len())
    }
}

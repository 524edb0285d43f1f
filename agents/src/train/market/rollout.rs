//! PPO and ES in the market: a learner choosing every round for the learning tenants of K
//! market copies at once, through the one training rollout over the world trait
//! (`train::rollout::train_world_episode`, copies of `MarketWorld::learners`).

use super::{Learners, MarketScore};
use crate::learners::Learner;
use env::market::world::MarketWorld;
use env::market::{Market, MarketFile};
use env::world::Observations;

/// A learner acting in K market copies at once: each round the learning tenants' features in,
/// their levels out, their utility's change over their job's value back.
pub(super) struct Rollout<'a> {
    pub(super) ls: &'a Learners,
    pub(super) levels: &'a [f64],
    pub(super) dim: usize,
}

impl Rollout<'_> {
    fn observe(&self, market: &Market, out: &mut [f32]) {
        for (j, &i) in self.ls.who.iter().enumerate() {
            market.observe(i, &mut out[j * self.dim..(j + 1) * self.dim]);
        }
    }

    /// One training episode over `worlds` (market copies whose agents are the learning
    /// tenants, copy k playing the market of `seeds[k]`): act sampled, step, learn; each
    /// copy's score.
    pub(super) fn train(&self, learner: &mut dyn Learner, worlds: &mut [MarketWorld], seeds: &[u64], seed: u64) -> Vec<MarketScore> {
        crate::train::rollout::train_world_episode(worlds, learner, seeds, seed, &[]);
        worlds.iter().map(|w| MarketScore::of(w.game().market(), &self.ls.who)).collect()
    }

    /// One greedy episode; also each group's mean level at its tenants' decision rounds.
    pub(super) fn greedy(&self, learner: &mut dyn Learner, file: &MarketFile) -> (MarketScore, Vec<(f64, u32)>) {
        let n = self.ls.who.len();
        let mut obs = vec![0f32; n * self.dim];
        let mut actions = vec![0usize; n];
        let zeros = vec![0.0; n];
        let mut chosen = vec![(0.0, 0u32); self.ls.classes()];
        let (market, _) = Market::play(file.clone(), &file.actions(), false, |market, a| {
            self.observe(market, &mut obs);
            learner.act(Observations { data: &obs, dim: self.dim }, &zeros, true, &mut actions);
            for (j, &i) in self.ls.who.iter().enumerate() {
                a[i] = self.levels[actions[j]];
                // Feature 3: the tenant decides this round (its level is used).
                if obs[j * self.dim + 3] > 0.5 {
                    let c = &mut chosen[self.ls.class[j]];
                    *c = (c.0 + a[i], c.1 + 1);
                }
            }
        });
        (MarketScore::of(&market, &self.ls.who), chosen)
    }
}

//! PPO and ES in the market: a learner choosing every round for the learning tenants of K
//! market copies at once.

use super::{Learners, MarketScore};
use crate::learners::{Learner, Transition};
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

    /// One training episode over `files` (one market copy each): act sampled, step, learn.
    pub(super) fn train(&self, learner: &mut dyn Learner, files: &[MarketFile], seed: u64) -> Vec<MarketScore> {
        let (n, k) = (self.ls.who.len(), files.len());
        learner.begin_episode(seed);
        let mut markets: Vec<Market> = files.iter().map(|f| Market::new(f.clone())).collect();
        let own: Vec<Vec<f64>> = files.iter().map(MarketFile::actions).collect();
        let scale: Vec<Vec<f64>> = files
            .iter()
            .map(|f| {
                self.ls
                    .who
                    .iter()
                    .map(|&i| (f.market.tenants[i].value * f.market.tenants[i].work).max(f64::MIN_POSITIVE))
                    .collect()
            })
            .collect();
        let mut obs = vec![vec![0f32; n * self.dim]; k];
        let mut next = vec![vec![0f32; n * self.dim]; k];
        for (m, o) in markets.iter().zip(obs.iter_mut()) {
            self.observe(m, o);
        }
        let zeros = vec![0.0; n];
        let mut actions = vec![vec![0usize; n]; k];
        let mut rewards = vec![vec![0f64; n]; k];
        while markets.iter().any(|m| !m.done()) {
            {
                let views: Vec<Observations<'_>> = obs.iter().map(|o| Observations { data: o, dim: self.dim }).collect();
                let budgets: Vec<&[f64]> = vec![&zeros; k];
                learner.act_many(&views, &budgets, &mut actions);
            }
            for c in 0..k {
                rewards[c].fill(0.0);
                if markets[c].done() {
                    // A finished copy waits for the others at its last state: reward 0, the
                    // same observation before and after (not the one before its last round).
                    self.observe(&markets[c], &mut next[c]);
                    continue;
                }
                let mut a = own[c].clone();
                for (j, &i) in self.ls.who.iter().enumerate() {
                    a[i] = self.levels[actions[c][j]];
                }
                let before: Vec<f64> = self.ls.who.iter().map(|&i| markets[c].utility(i)).collect();
                markets[c].step(&a);
                for (j, &i) in self.ls.who.iter().enumerate() {
                    rewards[c][j] = (markets[c].utility(i) - before[j]) / scale[c][j];
                }
                self.observe(&markets[c], &mut next[c]);
            }
            let done = markets.iter().all(Market::done);
            let ts: Vec<Transition<'_>> = (0..k)
                .map(|c| Transition {
                    obs: Observations {
                        data: &obs[c],
                        dim: self.dim,
                    },
                    actions: &actions[c],
                    rewards: &rewards[c],
                    next_obs: Observations {
                        data: &next[c],
                        dim: self.dim,
                    },
                    done,
                    round: None,
                })
                .collect();
            learner.learn_many(&ts);
            std::mem::swap(&mut obs, &mut next);
        }
        markets.iter().map(|m| MarketScore::of(m, &self.ls.who)).collect()
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

//! Full-information Hedge for the market's learning groups: a factor kept for the whole job,
//! every level replayed after each episode.

use super::{play, Learners, MarketScore};
use env::market::MarketFile;
use env::rng::unit;
use rand::rngs::SmallRng;
use rand::Rng;
use serde::Serialize;

/// Full-information Hedge per group over a factor kept for the whole job (module docs).
#[derive(Clone, Debug, Serialize)]
pub struct MarketHedgeState {
    /// Log-weights per group and level.
    pub log_weights: Vec<Vec<f64>>,
}

impl MarketHedgeState {
    pub(super) fn new(classes: usize, levels: usize) -> Self {
        Self {
            log_weights: vec![vec![0.0; levels]; classes],
        }
    }

    fn probs(&self, c: usize) -> Vec<f64> {
        let lw = &self.log_weights[c];
        let top = lw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = lw.iter().map(|x| (x - top).exp()).collect();
        let s: f64 = w.iter().sum();
        w.into_iter().map(|x| x / s).collect()
    }

    pub(super) fn greedy(&self, c: usize) -> usize {
        crate::learners::argmax(self.log_weights[c].iter().copied())
    }

    fn sample(&self, c: usize, rng: &mut SmallRng) -> usize {
        let u = unit(rng.next_u64());
        let p = self.probs(c);
        let mut acc = 0.0;
        for (l, q) in p.iter().enumerate() {
            acc += q;
            if u < acc {
                return l;
            }
        }
        p.len() - 1
    }

    /// One episode: sample, play, replay every group at every level, update. Returns the
    /// sampled episode's score.
    pub(super) fn episode(&mut self, file: &MarketFile, ls: &Learners, levels: &[f64], eta: f64, rng: &mut SmallRng) -> MarketScore {
        let mut actions = file.actions();
        let picks: Vec<usize> = ls.class.iter().map(|&c| self.sample(c, rng)).collect();
        for (j, &i) in ls.who.iter().enumerate() {
            actions[i] = levels[picks[j]];
        }
        let score = MarketScore::of(&play(file, &actions), &ls.who);
        for c in 0..ls.classes() {
            let mine: Vec<usize> = (0..ls.who.len()).filter(|&j| ls.class[j] == c).map(|j| ls.who[j]).collect();
            let u: Vec<f64> = levels
                .iter()
                .map(|&x| {
                    let mut a = actions.clone();
                    for &i in &mine {
                        a[i] = x;
                    }
                    let m = play(file, &a);
                    mine.iter().map(|&i| m.utility(i)).sum::<f64>() / mine.len() as f64
                })
                .collect();
            // Utility over the group's mean job worth (value x size): a fixed scale, so the
            // weights compare levels on their expected utility across episodes (scaling each
            // episode by its own spread would rank them instead).
            let worth = mine
                .iter()
                .map(|&i| file.market.tenants[i].value * file.market.tenants[i].work)
                .sum::<f64>()
                / mine.len() as f64;
            for (w, x) in self.log_weights[c].iter_mut().zip(&u) {
                *w += eta * x / worth;
            }
        }
        score
    }
}

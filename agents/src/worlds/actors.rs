//! A trained run's policy in a world behind the seam: one actor per group (or per agent, where
//! the learner kept one per agent: [`GroupActors::by_agent`]) as plain weights
//! (the agent's row or the block of it the learner read, one tanh layer, a logit per level: the layout PPO and ES export and the
//! exported agents' runtime reads), acting greedily or drawing from its softmax.

use super::{Draws, RowPolicy};
use crate::learners::base::{argmax, sample_index};
use crate::learners::nets::actor_logits;
use env::rng::unit;
use env::worlds::World;

/// One actor per group (`weights[g]`) or per agent id (`weights[id]`, [`GroupActors::by_agent`]),
/// `d` features in, `hidden` tanh units, `k` levels out.
#[derive(Clone)]
pub struct GroupActors {
    /// Each group's actor, or each agent's.
    pub weights: Vec<Vec<f32>>,
    /// Whether `weights` are by agent id (else by group).
    pub per_agent: bool,
    /// Hidden width.
    pub hidden: usize,
    /// The first feature read (0: from the row's start).
    pub at: usize,
    /// Features read (`row[at..at + d]`: the whole row, or a block the world names).
    pub d: usize,
    /// Levels.
    pub k: usize,
    /// Draw each level from the actor's probabilities (as PPO trained) instead of its argmax.
    pub sampled: bool,
    draws: Draws,
    h: Vec<f32>,
    logits: Vec<f32>,
    /// The softmax's unnormalised weights, reused round to round.
    probs: Vec<f64>,
    /// The summed entropy (nats) of the last act's rows, and their count.
    entropy: (f64, usize),
}

impl GroupActors {
    /// Actors from their weights.
    pub fn new(weights: Vec<Vec<f32>>, hidden: usize, d: usize, k: usize, sampled: bool) -> Self {
        Self {
            weights,
            per_agent: false,
            hidden,
            at: 0,
            d,
            k,
            sampled,
            draws: Draws::shared(),
            h: Vec::with_capacity(hidden),
            logits: vec![0.0; k],
            probs: Vec::with_capacity(k),
            entropy: (0.0, 0),
        }
    }
}

impl GroupActors {
    /// The same actors reading `d` features from `at` of each row.
    pub fn reading(self, at: usize) -> Self {
        Self { at, ..self }
    }

    /// The same actors acting on their argmax.
    pub fn greedy(self) -> Self {
        Self { sampled: false, ..self }
    }

    /// The same actors drawing as `w`'s policies do ([`Draws::of`]: per agent id in the worlds
    /// the queue stack also plays, so a sampled run's evaluation is the queue stack's).
    pub fn drawing_for(self, w: &dyn World) -> Self {
        Self {
            draws: Draws::of(w),
            ..self
        }
    }

    /// The same weights, agent `id` acting with `weights[id]`.
    pub fn by_agent(self) -> Self {
        Self { per_agent: true, ..self }
    }
}

impl RowPolicy for GroupActors {
    /// The episode's draws come from its own streams ([`Draws`]), one draw per live agent per
    /// round in row order: the same on any number of threads.
    fn begin_episode(&mut self, seed: u64) {
        self.draws.begin(seed);
    }

    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], groups: &[usize], actions: &mut [usize]) {
        let last = self.weights.len() - 1;
        let by = if self.per_agent { agents } else { groups };
        self.entropy = (0.0, 0);
        for (((row, &g), &id), a) in obs.chunks_exact(dim).zip(by).zip(agents).zip(actions.iter_mut()) {
            actor_logits(
                &self.weights[g.min(last)],
                (self.d, self.hidden, self.k),
                &row[self.at..self.at + self.d],
                &mut self.h,
                &mut self.logits,
            );
            let max = self.logits.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
            self.probs.clear();
            self.probs.extend(self.logits.iter().map(|&l| f64::from(l - max).exp()));
            // H = ln Z - sum_i e_i (l_i - max) / Z, with e_i = exp(l_i - max).
            let z: f64 = self.probs.iter().sum();
            let weighted: f64 = self.probs.iter().zip(&self.logits).map(|(e, &l)| e * f64::from(l - max)).sum();
            self.entropy.0 += z.ln() - weighted / z;
            self.entropy.1 += 1;
            *a = if self.sampled {
                sample_index(&self.probs, unit(self.draws.next(id)))
            } else {
                argmax(self.logits.iter().map(|&l| f64::from(l)))
            };
        }
    }

    fn entropy(&self) -> Option<f64> {
        (self.entropy.1 > 0).then(|| self.entropy.0 / self.entropy.1 as f64)
    }

    fn draws(&self) -> bool {
        self.sampled
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greedy_takes_the_largest_logit_and_sampling_follows_the_softmax() {
        // d = 1, h = 1, k = 2: logits = b2 + w2 tanh(w1 x + b1); with w1 = 0, b1 = 0 the
        // logits are b2 = [0, ln 3]: probabilities 1/4 and 3/4.
        let w = vec![0.0, 0.0, 0.0, 0.0, 0.0, 3f32.ln()];
        let mut greedy = GroupActors::new(vec![w.clone()], 1, 1, 2, false);
        let mut a = vec![9; 4];
        greedy.act(&[0.5; 4], 1, &[0; 4], &[0; 4], &mut a);
        assert_eq!(a, vec![1; 4]);
        // Probabilities 1/4 and 3/4: H = -(1/4 ln 1/4 + 3/4 ln 3/4) = 0.5623 nats, greedy or
        // not; none before acting.
        let h = -(0.25f64 * 0.25f64.ln() + 0.75 * 0.75f64.ln());
        assert!((greedy.entropy().unwrap() - h).abs() < 1e-6, "{:?}", greedy.entropy());
        assert_eq!(GroupActors::new(vec![vec![0.0; 6]], 1, 1, 2, true).entropy(), None);
        let mut sampled = GroupActors::new(vec![w], 1, 1, 2, true);
        sampled.begin_episode(7);
        let mut ones = 0;
        let mut a = vec![0; 1000];
        sampled.act(&[0.5; 1000], 1, &[0; 1000], &[0; 1000], &mut a);
        assert!((sampled.entropy().unwrap() - h).abs() < 1e-6);
        ones += a.iter().filter(|&&x| x == 1).count();
        // 750 expected, sd 13.7.
        assert!((700..800).contains(&ones), "{ones}");
        // The same episode seed draws the same levels.
        let mut again = sampled.clone();
        again.begin_episode(7);
        let mut b = vec![0; 1000];
        again.act(&[0.5; 1000], 1, &[0; 1000], &[0; 1000], &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn by_agent_each_agent_acts_with_its_own_weights_whatever_its_group() {
        // Agent 0 prefers level 1, agent 1 level 0; both in group 0.
        let w = |l0: f32, l1: f32| vec![0.0, 0.0, 0.0, 0.0, l0, l1];
        let actors = GroupActors::new(vec![w(0.0, 1.0), w(1.0, 0.0)], 1, 1, 2, false);
        let mut a = vec![9; 2];
        actors.clone().by_agent().act(&[0.5; 2], 1, &[0, 1], &[0, 0], &mut a);
        assert_eq!(a, vec![1, 0]);
        actors.clone().act(&[0.5; 2], 1, &[0, 1], &[0, 0], &mut a);
        assert_eq!(a, vec![1, 1]);
    }
}

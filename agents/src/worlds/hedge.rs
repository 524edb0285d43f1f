//! A trained Hedge's play in a world behind the seam ([`crate::learners::episode_hedge`]):
//! each group's level drawn from its weights at the start of every episode and held by all
//! its agents, as it trained.

use super::RowPolicy;
use crate::learners::base::sample_index;
use crate::learners::episode_hedge::EpisodeHedge;
use env::rng::{names, stream, unit};
use rand::Rng;

/// A trained Hedge's play: each group's level drawn from its weights at the start of every
/// episode (from the episode's policy stream) and held by all its agents.
#[derive(Clone, Debug)]
pub struct HedgePolicy {
    probabilities: Vec<Vec<f64>>,
    chosen: Vec<usize>,
}

impl HedgePolicy {
    /// The play of `h`'s weights (each group's heaviest level until an episode begins).
    pub fn of(h: &EpisodeHedge) -> Self {
        Self {
            probabilities: (0..h.log_weights.len()).map(|g| h.probabilities(g)).collect(),
            chosen: h.greedy(),
        }
    }
}

impl RowPolicy for HedgePolicy {
    fn begin_episode(&mut self, seed: u64) {
        let mut rng = stream(seed, names::POLICY, 0);
        self.chosen = self.probabilities.iter().map(|p| sample_index(p, unit(rng.next_u64()))).collect();
    }

    fn act(&mut self, _obs: &[f32], _dim: usize, _agents: &[usize], groups: &[usize], actions: &mut [usize]) {
        let last = self.chosen.len() - 1;
        for (a, &g) in actions.iter_mut().zip(groups) {
            *a = self.chosen[g.min(last)];
        }
    }

    /// A level drawn per episode.
    fn draws(&self) -> bool {
        true
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exported_hedge_actor_plays_the_heaviest_level_and_the_policy_holds_a_level_per_episode() {
        let mut h = EpisodeHedge::new(2, 4, None);
        h.log_weights = vec![vec![0.0, -1.0, 2.0, -3.0], vec![-50.0, -50.0, -50.0, 0.0]];
        let (actors, hidden) = h.actors(3);
        let mut ga = super::super::actors::GroupActors::new(actors, hidden, 3, 4, false);
        let mut a = vec![9; 2];
        ga.act(&[0.3, -2.0, 7.0, 1.0, 1.0, 1.0], 3, &[0, 1], &[0, 1], &mut a);
        assert_eq!(a, vec![2, 3]);
        // Sampled: group 1 always level 3 (weight 1 - 3e-22); group 0 one level for the
        // whole episode, the heaviest (p = 0.84) most often.
        let mut p = HedgePolicy::of(&h);
        let mut twos = 0;
        for s in 0..200 {
            p.begin_episode(s);
            let mut first = vec![0; 2];
            p.act(&[0.0; 6], 3, &[0, 1], &[0, 1], &mut first);
            let mut again = vec![0; 4];
            p.act(&[0.0; 12], 3, &[0, 0, 1, 1], &[0, 0, 1, 1], &mut again);
            assert_eq!(again, vec![first[0], first[0], 3, 3]);
            twos += usize::from(first[0] == 2);
        }
        // 168 expected, sd 5.2.
        assert!((150..186).contains(&twos), "{twos}");
    }
}

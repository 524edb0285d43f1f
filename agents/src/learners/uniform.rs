//! Every level with equal probability, every round, for every agent: the floor a learner must
//! beat (a policy gradient learner that has learned nothing plays this). It learns nothing.
//! Asked for its greedy action it plays the argmax of a flat distribution, the lowest level,
//! as any learner whose distribution is flat does.
//!
//! It is also the worked example of `agents/README.md`'s recipe for adding a learner: this file
//! and one line in [`super::registry`] (with its `pub mod`).

use super::base::{ErrorIn, Exported, Init, Learner, LearnerConfig, Losses, Policy, Transition};
use super::parts::Parts;
use crate::error::failed;
use env::config::ConfigError;
use env::rng::{names, stream, unit};
use env::world::Observations;
use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `[learner.uniform]`: nothing to set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UniformConfig {}

impl LearnerConfig for UniformConfig {
    fn validate(&self, _shape: &dyn super::WorldShape, _chosen: bool, _err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        Ok(())
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let sc = run.queue_scenario();
        Box::new(Uniform::new(sc.n(), sc.action_levels().len(), sc.m()))
    }

    /// An actor whose weights are all 0: every level's logit is 0, so its probabilities are
    /// uniform, in any runtime that runs actors.
    fn exported(&self, _shape: &dyn super::WorldShape) -> Exported {
        Exported::Actor { hidden: 1 }
    }
}

/// Uniform play for `n` agents over `k` levels.
#[derive(Clone)]
pub struct Uniform {
    n: usize,
    k: usize,
    /// Accelerators: the exported actor reads SPEC 4's state, `1 + m` features.
    m: usize,
    rngs: Vec<SmallRng>,
}

impl Uniform {
    /// `n` agents, `k` levels, `m` accelerators.
    pub fn new(n: usize, k: usize, m: usize) -> Self {
        Self {
            n,
            k,
            m,
            rngs: (0..n).map(|i| stream(0, names::POLICY, i as u64)).collect(),
        }
    }
}

impl Policy for Uniform {
    fn begin_episode(&mut self, seed: u64) {
        self.rngs = (0..self.n).map(|i| stream(seed, names::POLICY, i as u64)).collect();
    }

    fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        for (a, rng) in actions.iter_mut().zip(&mut self.rngs) {
            *a = if greedy {
                0
            } else {
                ((unit(rng.next_u64()) * self.k as f64) as usize).min(self.k - 1)
            };
        }
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    /// `ln K`: every level equally likely.
    fn entropy(&self) -> Option<f64> {
        Some((self.k as f64).ln())
    }
}

impl Learner for Uniform {
    fn learn(&mut self, _t: &Transition<'_>) -> Losses {
        Losses {
            entropy: (self.k as f64).ln(),
            ..Losses::default()
        }
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        Ok(Parts::default()
            .add_u64("uniform/dims", &[self.n as u64, self.k as u64])
            .into_bytes())
    }

    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        let parts = Parts::read(bytes, &["uniform/dims"]).map_err(failed)?;
        let dims = Parts::u64s(parts[0], "uniform/dims").map_err(failed)?;
        let ours = [self.n as u64, self.k as u64];
        if dims != ours {
            return Err(failed(format!(
                "uniform state is for (agents, levels) = {dims:?}; this run has {ours:?}"
            )));
        }
        Ok(())
    }

    /// The zero actor of [`UniformConfig::exported`]: `W1 [1 + m, 1], b1 [1], W2 [1, k], b2 [k]`.
    fn export_weights(&self, _agent: usize) -> crate::error::Result<Vec<f32>> {
        let d = env::world::spec_features(self.m);
        Ok(vec![0.0; d + 1 + 2 * self.k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plays_every_level_about_equally_often_and_level_0_when_greedy() {
        let (n, k) = (3, 5);
        let mut u = Uniform::new(n, k, 2);
        u.begin_episode(9);
        let obs = vec![0.0f32; n];
        let mut counts = vec![0usize; k];
        let mut a = vec![0; n];
        for _ in 0..2000 {
            u.act(Observations { data: &obs, dim: 1 }, &[0.0; 3], false, &mut a);
            for &x in &a {
                counts[x] += 1;
            }
        }
        // 6,000 draws: each level's count is 1,200 +- 3 sd (sd = 31).
        for c in &counts {
            assert!((1100..=1300).contains(c), "{counts:?}");
        }
        u.act(Observations { data: &obs, dim: 1 }, &[0.0; 3], true, &mut a);
        assert_eq!(a, vec![0; n]);
        // The same episode seed draws the same levels.
        let (mut x, mut y) = (Uniform::new(n, k, 2), Uniform::new(n, k, 2));
        x.begin_episode(4);
        y.begin_episode(4);
        let (mut ax, mut ay) = (vec![0; n], vec![0; n]);
        x.act(Observations { data: &obs, dim: 1 }, &[0.0; 3], false, &mut ax);
        y.act(Observations { data: &obs, dim: 1 }, &[0.0; 3], false, &mut ay);
        assert_eq!(ax, ay);
        assert!(Uniform::new(n + 1, k, 2).load(&u.save().unwrap()).is_err());
    }
}

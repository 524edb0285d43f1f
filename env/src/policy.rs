//! The one policy interface of the harness: whatever picks every agent's level each round — a
//! fixed threshold, a learner acting (greedy or sampled), a learner learning online while it is
//! evaluated, exported agent binaries. Evaluation ([`crate::eval`]) runs it; the `agents`
//! crate's learners implement it.

use crate::world::{ClusterEnv, Observations};

/// Picks one level index per agent every round.
pub trait Policy: Send {
    /// Start of an episode: `seed` seeds this episode's sampling streams (the evaluation loop
    /// passes the episode seed's [`crate::rng::names::POLICY_EPISODE`] stream).
    fn begin_episode(&mut self, seed: u64);

    /// Fill `actions` (one level index per agent) from the observations and the exact budgets
    /// (for learners whose state is the budget): the most likely level with `greedy`, else a
    /// draw. Evaluation asks for `greedy`; a policy that learns online (Hedge evaluated as it
    /// plays) samples anyway, since sampling is how it plays.
    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]);

    /// After each step of an evaluation episode: online learners update here from the
    /// environment's record of the round. Frozen policies do nothing.
    fn after_step(&mut self, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        let _ = (env, budgets_before, actions);
    }

    /// An independent copy for acting (one per evaluation episode or worker).
    fn fork(&self) -> Box<dyn Policy>;

    /// The mean entropy (nats) over the agents of the distributions the last [`Policy::act`]
    /// chose from (greedy or not), for policies that choose from one; `None` for a fixed level
    /// or a policy that does not say. Evaluation reports it as a share of `ln K`: a greedy
    /// policy whose distribution is nearly uniform plays an argmax of noise.
    fn entropy(&self) -> Option<f64> {
        None
    }
}

/// The mean entropy (nats) of `k`-level distributions stored row by row in `p` (one row per
/// agent).
pub fn mean_entropy(p: &[f32], k: usize) -> f64 {
    let rows = p.len() / k;
    let h: f64 = p.iter().filter(|&&x| x > 0.0).map(|&x| -f64::from(x) * f64::from(x).ln()).sum();
    h / rows as f64
}

/// Every agent reports the same fixed level.
#[derive(Clone, Debug)]
pub struct Fixed {
    /// Level index.
    pub level: usize,
}

impl Policy for Fixed {
    fn begin_episode(&mut self, _seed: u64) {}

    fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        actions.fill(self.level);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
}

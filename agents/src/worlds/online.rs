//! A learner that learns as it plays, behind the seam: `mtf compare --policies hedge` in a
//! world that keeps SPEC 4's round record ([`World::mechanism_round`]: the queue world's).
//! Every episode starts from a fresh learner; after each round it learns from the round as the
//! world gives it (the budgets the round started with, the mechanism's input and allocation,
//! the rewards), as the queue world's own `OnlineLearning` does from its environment.

use super::RowPolicy;
use crate::learners::{Learner, Round, Transition};
use env::world::Observations;
use env::worlds::World;
use std::sync::Arc;

/// What builds the learner each episode starts from.
pub type Initial = Arc<dyn Fn() -> Box<dyn Learner> + Send + Sync>;

/// A learner playing (sampling: that is how it plays) and learning round by round.
pub struct Online {
    initial: Initial,
    learner: Option<Box<dyn Learner>>,
    /// The rows the last round's actions were taken on.
    obs: Vec<f32>,
    dim: usize,
    /// The budgets the last round started with.
    budgets: super::Budgets,
}

impl Online {
    /// Learners built by `initial`.
    pub fn new(initial: Initial) -> Self {
        Self {
            initial,
            learner: None,
            obs: Vec::new(),
            dim: 0,
            budgets: super::Budgets::default(),
        }
    }

    /// The queue world's online Hedge (`hedge`, HedgeConfig's defaults, thesis Algorithm 2)
    /// for `world`; `None` where the world keeps no round to learn from.
    pub fn hedge(world: &dyn World) -> Option<Self> {
        let scenario = world.scenario()?.clone();
        let initial = move || {
            use crate::learners::LearnerConfig;
            crate::learners::hedge::HedgeConfig::default().init(&crate::learners::Init::new(&scenario, 1))
        };
        Some(Self::new(Arc::new(initial)))
    }
}

impl RowPolicy for Online {
    fn begin_episode(&mut self, seed: u64) {
        let mut l = (self.initial)();
        l.begin_episode(seed);
        self.learner = Some(l);
    }

    fn sees(&mut self, world: &dyn World) {
        self.budgets.see(world);
    }

    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], _groups: &[usize], actions: &mut [usize]) {
        let budgets = self.budgets.of(agents, "an online learner");
        self.obs.clear();
        self.obs.extend_from_slice(obs);
        self.dim = dim;
        let obs = Observations { data: obs, dim };
        self.learner
            .as_mut()
            .expect("begin_episode first")
            .act(obs, budgets, false, actions);
    }

    fn after(&mut self, world: &dyn World, actions: &[usize]) {
        let r = world
            .mechanism_round()
            .expect("an online learner is built only for a world with a round record");
        let obs = Observations {
            data: &self.obs,
            dim: self.dim,
        };
        let t = Transition {
            obs,
            actions,
            rewards: r.rewards,
            // The rows of the next round where the world holds them (the queue world does);
            // else the last ones (Hedge, the one learner here, reads the round alone).
            next_obs: world.observed().map_or(obs, |data| Observations { data, dim: self.dim }),
            done: world.done(),
            live: None,
            round: Some(Round {
                budgets: &self.budgets.0,
                next_budgets: r.next_budgets,
                input: r.input,
                bid_values: r.bid_values,
                allocation: r.allocation,
            }),
        };
        self.learner.as_mut().expect("begin_episode first").learn(&t);
    }

    fn entropy(&self) -> Option<f64> {
        self.learner.as_ref()?.entropy()
    }

    fn draws(&self) -> bool {
        true
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(Self::new(self.initial.clone()))
    }
}

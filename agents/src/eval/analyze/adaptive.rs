//! The simple adaptive policies the headroom search moves: a level per weight class, times
//! one state bit an agent can see.

use crate::learners::Policy;
use env::config::{Arrivals, Scenario, World};
use env::world::Observations;
use serde::Serialize;

/// The state bit of an adaptive class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bit {
    /// No state: one level per weight class.
    None,
    /// The agent's arrival process is in its high (burst) state.
    Burst,
    /// The agent's budget is above its weight's share of the tokens.
    Budget,
    /// The agent's backlog (over its arrival rate) is above its running mean this episode.
    Backlog,
}

impl Bit {
    /// Every bit, in search order.
    pub const ALL: [Bit; 4] = [Bit::None, Bit::Burst, Bit::Budget, Bit::Backlog];

    /// Its row name.
    pub fn name(self) -> &'static str {
        match self {
            Bit::None => "per-class",
            Bit::Burst => "per-class x burst",
            Bit::Budget => "per-class x budget above share",
            Bit::Backlog => "per-class x backlog above mean",
        }
    }

    /// Whether the bit carries information in `sc` (a burst state needs bursty arrivals, a
    /// budget needs a mechanism that spends tokens, a backlog needs queues).
    pub(super) fn applies(self, sc: &Scenario) -> bool {
        let queues = sc.file.env.world == World::Queues;
        match self {
            Bit::None => true,
            Bit::Burst => queues && sc.file.env.arrivals == Arrivals::Mmpp,
            Bit::Budget => sc.file.mechanism.name == "mtf",
            Bit::Backlog => queues,
        }
    }
}

/// A level per weight class and state bit; agents read their bit from their observation
/// (the burst state needs `env.observe_burst`, which `analyze` turns on: an observation-only
/// switch that changes no dynamics).
#[derive(Clone, Debug)]
pub struct Adaptive {
    bit: Bit,
    /// Weight class of each agent (index into the ascending distinct weights).
    class_of: Vec<usize>,
    /// Each agent's weight share of the tokens (its starting budget share).
    share: Vec<f64>,
    m: usize,
    /// Level index per `class * 2 + bit`.
    pub(super) levels: Vec<usize>,
    /// Running mean of each agent's backlog over arrival rate, and the rounds it spans.
    mean: Vec<f64>,
    rounds: u32,
}

impl Adaptive {
    /// Every agent of every class at `level` (a fixed policy, the search's start).
    pub fn uniform(sc: &Scenario, bit: Bit, level: usize) -> Self {
        let classes = sc.weight_classes();
        let weights: Vec<f64> = sc.agents.iter().map(|a| a.weight).collect();
        let total: f64 = weights.iter().sum();
        Self {
            bit,
            class_of: weights
                .iter()
                .map(|w| classes.iter().position(|c| c == w).expect("a class"))
                .collect(),
            share: weights.iter().map(|w| w / total).collect(),
            m: sc.m(),
            levels: vec![level; classes.len() * 2],
            mean: vec![0.0; sc.n()],
            rounds: 0,
        }
    }

    /// The parameters the search moves: both bit values per class, or one when there is no
    /// bit.
    pub(super) fn params(&self) -> Vec<usize> {
        let k = self.levels.len() / 2;
        match self.bit {
            Bit::None => (0..k).map(|c| c * 2).collect(),
            _ => (0..2 * k).collect(),
        }
    }

    pub(super) fn set(&mut self, param: usize, level: usize) {
        self.levels[param] = level;
        if self.bit == Bit::None {
            self.levels[param + 1] = level;
        }
    }

    fn state(&mut self, i: usize, o: &[f32]) -> usize {
        let on = match self.bit {
            Bit::None => false,
            Bit::Burst => o[2 + self.m] > 0.5,
            Bit::Budget => f64::from(o[0]) > self.share[i],
            Bit::Backlog => {
                // Above the mean of the rounds before this one (0 before the first).
                let x = f64::from(o[1 + self.m]);
                let above = x > self.mean[i];
                self.mean[i] += (x - self.mean[i]) / f64::from(self.rounds + 1);
                above
            }
        };
        usize::from(on)
    }
}

impl Policy for Adaptive {
    fn begin_episode(&mut self, _seed: u64) {
        self.mean.fill(0.0);
        self.rounds = 0;
    }

    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        for (i, a) in actions.iter_mut().enumerate() {
            let b = self.state(i, obs.get(i));
            *a = self.levels[self.class_of[i] * 2 + b];
        }
        self.rounds += 1;
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
}

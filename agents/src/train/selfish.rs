//! The selfish equilibrium of a queue-world scenario: iterated best responses per weight class
//! from the best fixed level (in turn, each class's first agent tries every level while
//! everyone else keeps the current profile; if one pays it more, its own return on the
//! selection seeds with common random numbers, the whole class moves there), stopping when
//! no class gains, when a profile repeats, or after [`MAX_PASSES`] passes: every world's
//! ([`env::worlds::selfish`]), played on the queue world. `mtf train` places an own-reward
//! run against it; `mtf analyze` reports it (`eval::analyze::equilibrium`).

use crate::learners::fixed::FixedEach;
use crate::learners::Policy;
use env::config::Scenario;

pub use env::worlds::selfish::MAX_PASSES;

/// A per-class profile of levels (level indices, one per class, in ascending weight): every
/// agent at its class's level.
fn profile(sc: &Scenario, levels: &[usize]) -> FixedEach {
    FixedEach {
        levels: sc.class_of_agents().into_iter().map(|c| levels[c]).collect(),
    }
}

/// Where iterated best responses per weight class stop (see the module documentation).
#[derive(Debug, Clone)]
pub struct Selfish {
    /// Each class's level index, in ascending weight.
    pub levels: Vec<usize>,
    /// Passes taken.
    pub passes: usize,
    /// Whether no class gained in the last pass (else: a cycle, or the pass limit).
    pub converged: bool,
    /// Episodes evaluated.
    pub evaluations: usize,
}

impl Selfish {
    /// Its policy: every agent at its class's level.
    pub fn policy(&self, sc: &Scenario) -> impl Policy {
        profile(sc, &self.levels)
    }

    /// `(weight, level)` per class.
    pub fn by_weight(&self, sc: &Scenario) -> Vec<(f64, f64)> {
        let levels = sc.action_levels();
        sc.weight_classes()
            .iter()
            .zip(&self.levels)
            .map(|(&w, &l)| (w, levels[l]))
            .collect()
    }
}

/// Iterated best responses per weight class from level `best` on the `select` seeds (each
/// class's first agent's own reward, `threads` workers): the selfish equilibrium `mtf
/// analyze` reports and `mtf train` places an own-reward run against. Every world's
/// ([`env::worlds::selfish`]) on the scenario's queue world, whose groups are its weight
/// classes in ascending weight.
pub fn selfish(sc: &Scenario, best: usize, select: &[u64], threads: usize) -> Selfish {
    let world = env::queue_world::QueueWorld::new(sc.clone());
    let found = env::worlds::selfish::selfish(&world, best, select, threads);
    Selfish {
        levels: found.levels,
        passes: found.passes,
        converged: found.converged,
        evaluations: found.evaluations,
    }
}

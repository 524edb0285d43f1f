//! The selfish equilibrium of a queue-world scenario: iterated best responses per weight class
//! from the best fixed level (in turn, each class's first agent tries every level while
//! everyone else keeps the current profile; if one pays it more, its own reward on the
//! selection seeds with common random numbers, the whole class moves there), stopping when
//! no class gains, when a profile repeats, or after [`MAX_PASSES`] passes. `mtf train` places
//! an own-reward run against it; `mtf analyze` reports it (`eval::analyze::equilibrium`).

use crate::learners::fixed::FixedEach;
use crate::learners::wrap::pinned;
use crate::learners::Policy;
use env::config::Scenario;

/// Passes of the iterated best responses at most.
pub const MAX_PASSES: usize = 8;

fn mean(eps: &[env::metrics::EpisodeMetrics], f: impl Fn(&env::metrics::EpisodeMetrics) -> f64) -> f64 {
    eps.iter().map(f).sum::<f64>() / eps.len().max(1) as f64
}

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
/// analyze` reports and `mtf train` places an own-reward run against.
pub fn selfish(sc: &Scenario, best: usize, select: &[u64], threads: usize) -> Selfish {
    let classes = sc.weight_classes();
    let k = sc.action_levels().len();
    let first: Vec<usize> = classes
        .iter()
        .map(|&w| sc.agents.iter().position(|a| a.weight == w).expect("a class has an agent"))
        .collect();
    let mut current = vec![best; classes.len()];
    let mut seen = vec![current.clone()];
    let (mut passes, mut converged, mut evaluations) = (0, false, 0);
    while passes < MAX_PASSES {
        passes += 1;
        let mut moved = false;
        for c in 0..classes.len() {
            let agent = first[c];
            let mut own = |l: usize| {
                evaluations += 1;
                let p = pinned(Box::new(profile(sc, &current)), vec![(agent, l)]);
                mean(&env::eval::evaluate(sc, select, &p, false, threads), |e| e.reward[agent])
            };
            let stay = own(current[c]);
            let (mut to, mut value) = (current[c], stay);
            for l in (0..k).filter(|&l| l != current[c]) {
                let v = own(l);
                if v > value + 1e-12 {
                    (to, value) = (l, v);
                }
            }
            if to != current[c] {
                current[c] = to;
                moved = true;
            }
        }
        if !moved {
            converged = true;
            break;
        }
        if seen.contains(&current) {
            break;
        }
        seen.push(current.clone());
    }
    Selfish {
        levels: current,
        passes,
        converged,
        evaluations,
    }
}

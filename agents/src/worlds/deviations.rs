//! Unilateral deviations from a common level, in any world behind the seam (`mtf analyze`):
//! every agent at level x but one, which plays another level y; what that one agent gains in
//! its own return (the world's reward summed over the episode, which is what a selfish
//! learner maximises), paired with everyone at x over the same seeds. A level no agent gains
//! by leaving alone is a symmetric equilibrium among the levels: where selfish learners may
//! settle (the market's `mtf analyze` reported these as "the levels no learner leaves alone").
//!
//! Who deviates: every agent that acts at x when the world has at most [`EVERY_AGENT`] of them
//! (the market's learning tenants), else each group's representative
//! ([`env::worlds::selfish::representatives`]; Gavel's jobs: one from the middle of the
//! episode, as the first arrival's return does not depend on its level; one deviator per group
//! keeps the episodes at groups x levels², not jobs x levels²).

use env::eval::Stat;
use env::worlds::selfish::Profile;
use env::worlds::World;
use serde::Serialize;

/// Up to this many agents, each deviates in turn; above it, one per group.
pub const EVERY_AGENT: usize = 32;

/// The best one agent does by leaving a common level alone.
#[derive(Clone, Debug, Serialize)]
pub struct Deviation {
    /// The common level.
    pub level: f64,
    /// The largest mean gain in one agent's own return (paired over the seeds, with its 95%
    /// CI) among the deviations that gain beyond their CI, else among all (then inside its CI,
    /// or at most 0).
    pub gain: Stat,
    /// The agent that gains it (empty when no deviation has a mean gain above 0).
    pub agent: String,
    /// The level it deviates to (the common level when no deviation has a mean gain above 0).
    pub to: f64,
}

impl Deviation {
    /// Whether the agent gains by leaving the level: a mean gain above 0 (beyond rounding)
    /// whose 95% CI excludes 0 (on one seed, the gain alone). Over noisy seeds a mean gain
    /// inside its CI is not evidence that anyone leaves.
    pub fn profitable(&self) -> bool {
        self.gain.mean > 1e-9 && (!self.gain.has_ci() || self.gain.mean - self.gain.ci95 > 1e-9)
    }
}

/// Every agent at `level` but `who`, which plays `to` (none does when `who` is `None`): a
/// profile of one level for every group ([`Profile`]), the common level kept to read it by.
#[derive(Clone)]
struct Deviating {
    level: usize,
    profile: Profile,
}

impl Deviating {
    fn new(world: &dyn World, level: usize, who: Option<usize>, to: usize) -> Self {
        let levels = vec![level; world.group_names().len()];
        Self {
            level,
            profile: Profile { levels, who, to },
        }
    }
}

/// Per task, each agent's return on each seed (tasks in order, seeds in order): every task on
/// every seed in parallel on `threads` workers, each with its own copy of the world.
fn returns(world: &dyn World, tasks: &[Deviating], seeds: &[u64], threads: usize) -> Vec<Vec<Vec<Option<f64>>>> {
    let proto = std::sync::Mutex::new(world.fork());
    let pairs: Vec<(usize, u64)> = (0..tasks.len()).flat_map(|t| seeds.iter().map(move |&s| (t, s))).collect();
    let flat = env::par::par_map(
        threads,
        &pairs,
        || proto.lock().expect("no panic while forking").fork(),
        |w, &(t, seed)| {
            let mut acting = tasks[t].profile.clone();
            env::worlds::play(w.as_mut(), &mut acting, seed).agent_returns
        },
    );
    flat.chunks(seeds.len().max(1)).map(<[Vec<Option<f64>>]>::to_vec).collect()
}

/// For every level of the world, the best unilateral deviation from it, on `seeds`.
pub fn deviations(world: &dyn World, seeds: &[u64], threads: usize) -> Vec<Deviation> {
    let levels = world.levels();
    let common: Vec<Deviating> = (0..levels.len()).map(|k| Deviating::new(world, k, None, k)).collect();
    let base = returns(world, &common, seeds, threads);
    let representatives = env::worlds::selfish::representatives(world.fork().as_mut(), seeds.first().copied().unwrap_or(0));
    // An agent absent from an episode (a generated world's job that never arrived) gains 0 there.
    let at = |r: &[Option<f64>], id: usize| r.get(id).copied().flatten().unwrap_or(0.0);
    // Per level, the deviators: the agents that acted at it on some seed.
    let deviators: Vec<Vec<usize>> = base
        .iter()
        .map(|per_seed| {
            let mut acted: Vec<usize> = (0..per_seed.iter().map(Vec::len).max().unwrap_or(0))
                .filter(|&id| per_seed.iter().any(|r| r.get(id).copied().flatten().is_some()))
                .collect();
            if acted.len() > EVERY_AGENT {
                acted.retain(|&id| representatives.contains(&Some(id)));
            }
            acted
        })
        .collect();
    let mut tasks = Vec::new();
    for (k, who) in deviators.iter().enumerate() {
        for &id in who {
            tasks.extend((0..levels.len()).filter(|&j| j != k).map(|j| Deviating::new(world, k, Some(id), j)));
        }
    }
    let deviated = returns(world, &tasks, seeds, threads);
    // Per level, the deviation that gains most among those that gain beyond their CI, else the
    // one with the largest mean gain (shown, with its CI, as no evidence of leaving).
    let mut best: Vec<Deviation> = levels
        .iter()
        .map(|&x| Deviation {
            level: x,
            gain: Stat { mean: 0.0, ci95: f64::NAN },
            agent: String::new(),
            to: x,
        })
        .collect();
    for (task, per_seed) in tasks.iter().zip(&deviated) {
        let id = task.profile.who.expect("a deviation has a deviator");
        let gains: Vec<f64> = per_seed.iter().zip(&base[task.level]).map(|(d, b)| at(d, id) - at(b, id)).collect();
        let d = Deviation {
            level: levels[task.level],
            gain: Stat::of(&gains),
            agent: world.agent_name(id),
            to: levels[task.profile.to],
        };
        let b = &mut best[task.level];
        if (d.profitable(), d.gain.mean) > (b.profitable(), b.gain.mean + 1e-9) {
            *b = d;
        }
    }
    best
}

//! The selfish equilibrium of any world: iterated best responses per group from a common
//! level. In turn, each group's representative ([`representatives`]: its first agent in a
//! population that stays, else one from the middle of the episode) tries every level while every other agent keeps
//! the current profile (a level per group); if one pays it more in its own return (the world's
//! reward summed over the episode, its mean over the seeds, with common random numbers), the
//! whole group moves there. It stops when no group gains in a pass (converged), when a profile
//! repeats (a cycle), or after [`MAX_PASSES`] passes. Where selfish learners should go: `mtf
//! analyze` reports it in every world and `mtf train` places an own-reward run against it.

use super::{play, Acting, World};

/// Passes of the iterated best responses at most.
pub const MAX_PASSES: usize = 8;

/// Every agent at its group's level, but `who` at `to` (none when `who` is `None`).
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    /// A level index per group.
    pub levels: Vec<usize>,
    /// The one agent that deviates.
    pub who: Option<usize>,
    /// The level it deviates to.
    pub to: usize,
}

impl<W: World + ?Sized> Acting<W> for Profile {
    fn act(&mut self, world: &W, _obs: &[f32], groups: &[usize], actions: &mut [usize]) {
        for ((a, &id), &g) in actions.iter_mut().zip(world.live()).zip(groups) {
            *a = if Some(id) == self.who { self.to } else { self.levels[g] };
        }
    }
}

/// Where the iterated best responses stopped (module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Selfish {
    /// Each group's level index.
    pub levels: Vec<usize>,
    /// Passes taken.
    pub passes: usize,
    /// Whether no group gained in the last pass (else: a cycle, or the pass limit).
    pub converged: bool,
    /// Episodes' worth of evaluations on the seeds: one per level tried.
    pub evaluations: usize,
}

/// Each group's deviator in the episode of `seed` (`None` for a group without agents): its
/// lowest id when every agent of the group is live at the start (a population that stays, as
/// the queue world's, whose classes' agents are alike), else its median id. In a world whose
/// agents arrive and leave (Gavel's jobs) the first arrival meets an empty cluster, where no
/// level changes its return; one from the middle of the episode meets the others.
pub fn representatives(world: &mut dyn World, seed: u64) -> Vec<Option<usize>> {
    world.reset(seed);
    let mut members = vec![Vec::new(); world.group_names().len()];
    for id in 0..world.possible() {
        members[world.group(id)].push(id);
    }
    let mut live = vec![false; world.possible()];
    for &id in world.live() {
        live[id] = true;
    }
    members
        .iter()
        .map(|m| match m.first() {
            None => None,
            Some(&first) if m.iter().all(|&id| live[id]) => Some(first),
            Some(_) => Some(m[m.len() / 2]),
        })
        .collect()
}

/// Iterated best responses per group from level `start` for everyone, on `seeds` (module
/// documentation), played on `threads` workers: the result does not depend on `threads`. A
/// group without agents keeps `start`; an agent absent from an episode earns 0 in it.
pub fn selfish(world: &dyn World, start: usize, seeds: &[u64], threads: usize) -> Selfish {
    let k = world.levels().len();
    let proto = std::sync::Mutex::new(world.fork());
    let fork = || proto.lock().expect("no panic while forking").fork();
    let first = representatives(fork().as_mut(), seeds.first().copied().unwrap_or(0));
    let mut current = vec![start; first.len()];
    let mut seen = vec![current.clone()];
    let (mut passes, mut converged, mut evaluations) = (0, false, 0);
    while passes < MAX_PASSES {
        passes += 1;
        let mut moved = false;
        for (g, who) in first.iter().enumerate() {
            let Some(agent) = *who else { continue };
            // Its own mean return at every level, the current one first (ties stay).
            let order: Vec<usize> = std::iter::once(current[g]).chain((0..k).filter(|&l| l != current[g])).collect();
            let pairs: Vec<(usize, u64)> = order.iter().flat_map(|&l| seeds.iter().map(move |&s| (l, s))).collect();
            let profile = &current;
            let own = crate::par::par_map(threads, &pairs, fork, |w, &(l, seed)| {
                let mut p = Profile {
                    levels: profile.clone(),
                    who: Some(agent),
                    to: l,
                };
                play(w.as_mut(), &mut p, seed)
                    .agent_returns
                    .get(agent)
                    .copied()
                    .flatten()
                    .unwrap_or(0.0)
            });
            evaluations += order.len();
            let mean = |j: usize| own[j * seeds.len()..(j + 1) * seeds.len()].iter().sum::<f64>() / seeds.len().max(1) as f64;
            let (mut to, mut value) = (current[g], mean(0));
            for (j, &l) in order.iter().enumerate().skip(1) {
                let v = mean(j);
                if v > value + 1e-12 {
                    (to, value) = (l, v);
                }
            }
            if to != current[g] {
                current[g] = to;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn bandit(targets: &str) -> Box<dyn World> {
        let text = format!("[env]\nworld = \"bandit\"\nagents = 6\nrounds = 8\nnoise = 0.3\ntargets = {targets}\n");
        let table: toml::Table = text.parse().unwrap();
        crate::registry::build(table, std::path::Path::new("bandit.toml")).unwrap()
    }

    /// Each bandit agent's reward depends on its own level only, so every group's best response
    /// is the level nearest its target whatever the others play: one pass moves every group
    /// there, the second finds nothing to gain. Known in closed form; the noise (common to
    /// every level on a seed) does not move it, nor does the number of threads.
    #[test]
    fn iterated_best_responses_reach_each_groups_target_in_the_bandit() {
        let w = bandit("[0.3, 0.7, 0.1]");
        let levels = w.levels().to_vec();
        let seeds: Vec<u64> = (0..3).collect();
        let start = levels.iter().position(|&x| (x - 0.5).abs() < 1e-9).unwrap();
        let found = selfish(w.as_ref(), start, &seeds, 1);
        let at: Vec<f64> = found.levels.iter().map(|&l| levels[l]).collect();
        assert_eq!(at, [0.3, 0.7, 0.1], "{found:?}");
        assert!(found.converged && found.passes == 2, "{found:?}");
        assert_eq!(found.evaluations, 2 * 3 * levels.len());
        assert_eq!(selfish(w.as_ref(), start, &seeds, 3), found);
    }

    /// A group there from the start is represented by its first agent (as the queue world's
    /// classes are); one whose agents join later by its median id: in the bandit agent i joins
    /// in round i % 2, so group 0 (agents 0, 2, 4) is there at once and group 1 (1, 3, 5) is not.
    #[test]
    fn a_group_that_arrives_later_is_represented_from_its_middle() {
        let mut w = bandit("[0.3, 0.7]");
        assert_eq!(representatives(w.as_mut(), 0), [Some(0), Some(3)]);
    }
}

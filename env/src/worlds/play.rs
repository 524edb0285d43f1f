//! The one driver of an evaluation episode, for every world: [`play`] resets a world from a
//! seed, asks an [`Acting`] policy for a level per live agent each round, steps, and sums each
//! agent's rewards. The queue world's evaluation (`crate::eval`), the seam's commands
//! (`agents::worlds`: simulate, compare, analyze, scan, ES's generations, export's checks)
//! and Python's checks all play through it; what they read afterwards (the queue world's
//! `EpisodeMetrics`, a world's figures) they read off the world it leaves at its end.
//! (Training has its own loop, `agents::train::rollout`, which steps many copies at once and
//! feeds a learner; the market's engine has `Market::play`, the market world's own loop under
//! the seam.)

use super::World;
use crate::rng::{names, stream_seed};

/// What picks a level index for each live agent of a `W`, round by round.
pub trait Acting<W: ?Sized> {
    /// Start of an episode (`seed` seeds this episode's draws).
    fn begin_episode(&mut self, _seed: u64) {}

    /// One level index per live agent (`actions`, in `world.live()` order) from their
    /// observation rows (`obs`, `world.layout().dim()` each) and groups.
    fn act(&mut self, world: &W, obs: &[f32], groups: &[usize], actions: &mut [usize]);

    /// After the round `actions` played (the world as it left it).
    fn after_step(&mut self, _world: &W, _actions: &[usize]) {}
}

/// What one episode paid.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Returns {
    /// Per group: the mean, over the agents of the group that acted, of their summed rewards.
    pub group_returns: Vec<f64>,
    /// Per agent id: its summed rewards (`None` for an id that never acted).
    pub agent_returns: Vec<Option<f64>>,
    /// Agent-steps played (one per live agent per round).
    pub agent_steps: u64,
}

/// Play one episode of `world` from `seed` under `policy` to its end. The policy's episode
/// seed is `(seed, POLICY_EPISODE, 0)`, drawn before the world's reset.
pub fn play<W: World + ?Sized>(world: &mut W, policy: &mut dyn Acting<W>, seed: u64) -> Returns {
    policy.begin_episode(stream_seed(seed, names::POLICY_EPISODE, 0));
    world.reset(seed);
    let dim = world.layout().dim();
    let groups = world.group_names().len();
    let (mut obs, mut rows, mut actions, mut live) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut returns: Vec<f64> = Vec::new();
    let mut seen: Vec<bool> = Vec::new();
    let mut steps = 0u64;
    while !world.done() {
        live.clear();
        live.extend_from_slice(world.live());
        if world.observed().is_none() {
            obs.resize(live.len() * dim, 0.0);
            world.observe(&mut obs);
        }
        rows.clear();
        rows.extend(live.iter().map(|&id| world.group(id)));
        actions.clear();
        actions.resize(live.len(), 0);
        let held = world.observed().unwrap_or(&obs);
        policy.act(world, held, &rows, &mut actions);
        let report = world
            .step(&actions)
            .expect("policies pick levels inside the space, one per live agent");
        steps += report.agents.len() as u64;
        for (&id, &r) in report.agents.iter().zip(report.rewards) {
            if id >= returns.len() {
                returns.resize(id + 1, 0.0);
                seen.resize(id + 1, false);
            }
            returns[id] += r;
            seen[id] = true;
        }
        policy.after_step(world, &actions);
    }
    let mut sum = vec![0.0; groups];
    let mut count = vec![0.0f64; groups];
    for id in (0..returns.len()).filter(|&i| seen[i]) {
        let g = world.group(id);
        sum[g] += returns[id];
        count[g] += 1.0;
    }
    Returns {
        group_returns: sum.iter().zip(&count).map(|(s, c)| if *c > 0.0 { s / c } else { 0.0 }).collect(),
        agent_returns: returns.iter().zip(&seen).map(|(&r, &s)| s.then_some(r)).collect(),
        agent_steps: steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ScenarioFile;
    use crate::metrics::EpisodeMetrics;
    use crate::policy::{Fixed, Policy};
    use crate::queue_world::QueueWorld;
    use crate::world::ClusterEnv;

    fn quickstart() -> crate::config::Scenario {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        ScenarioFile::load(&root.join("configs/quickstart.toml"), &["env.rounds=40".into()]).unwrap()
    }

    /// Levels cycling with the round and the agent: every round differs from the last.
    struct Cycling(usize);

    impl Acting<QueueWorld> for Cycling {
        fn act(&mut self, world: &QueueWorld, obs: &[f32], groups: &[usize], actions: &mut [usize]) {
            assert_eq!(obs, world.env().observations().data, "the rows the world holds");
            assert_eq!(groups.len(), actions.len());
            let k = world.levels().len();
            for (i, a) in actions.iter_mut().enumerate() {
                *a = (self.0 + i) % k;
            }
            self.0 += 1;
        }
    }

    #[test]
    fn the_driver_plays_the_queue_world_as_its_engine_loop_does() {
        let sc = quickstart();
        // The engine alone, round by round.
        let mut env = ClusterEnv::new(sc.clone());
        env.reset(11);
        let mut actions = vec![0; env.n()];
        let (mut round, mut total) = (0, 0.0);
        while !env.agents().is_empty() {
            for (i, a) in actions.iter_mut().enumerate() {
                *a = (round + i) % sc.action_levels().len();
            }
            round += 1;
            total += env.step(&actions).unwrap().rewards.iter().sum::<f64>();
        }
        let mut world = QueueWorld::new(sc.clone());
        let played = play(&mut world, &mut Cycling(0), 11);
        let untimed = |m: EpisodeMetrics| EpisodeMetrics { sched_us: 0.0, ..m };
        assert_eq!(
            untimed(EpisodeMetrics::compute(world.env(), true)),
            untimed(EpisodeMetrics::compute(&env, true))
        );
        assert_eq!(played.agent_steps, (round * env.n()) as u64);
        // The groups' mean returns times their sizes: every agent's rewards summed.
        let summed: f64 = (0..env.n()).map(|i| played.group_returns[world.group(i)]).sum();
        assert!((summed - total).abs() < 1e-9 * total.abs().max(1.0), "{summed} vs {total}");
    }

    #[test]
    fn the_queue_worlds_evaluation_is_the_driver_with_a_greedy_policy() {
        let sc = quickstart();
        let mut fixed = Fixed { level: 2 };
        let m = crate::eval::run_episode(&sc, 5, &mut fixed, false);
        let mut env = ClusterEnv::new(sc.clone());
        fixed.begin_episode(crate::rng::stream_seed(5, names::POLICY_EPISODE, 0));
        env.reset(5);
        let budgets = vec![0.0; env.n()];
        let mut actions = vec![0; env.n()];
        while !env.agents().is_empty() {
            fixed.act(env.observations(), &budgets, true, &mut actions);
            env.step(&actions).unwrap();
        }
        let untimed = |m: EpisodeMetrics| EpisodeMetrics {
            sched_us: 0.0,
            entropy_share: None,
            ..m
        };
        assert_eq!(untimed(m), untimed(EpisodeMetrics::compute(&env, false)));
    }
}

//! Rollouts: one training episode over K environment copies (`train.envs`), stepped in
//! parallel, with the learner acting for all copies at once and learning from their rounds in
//! copy order, so results do not depend on the number of threads. Every random number of
//! episode e comes from streams seeded by `(root seed, e)`.

use crate::learners::{Learner, Losses, Transition};
use env::metrics::EpisodeMetrics;
use env::rng::{names, stream_seed};
use env::world::{ClusterEnv, Observations};

/// Run one training episode: act (sampled), step, learn, every round.
pub fn train_episode(env: &mut ClusterEnv, learner: &mut dyn Learner, root: u64, episode: u64) -> (EpisodeMetrics, Losses) {
    train_episode_pinned(env, learner, root, episode, &[])
}

/// [`train_episode`] with some agents pinned: each `(agent, level)` plays that level index
/// instead of the learner's choice (the fixed opponents of a best-response check); the learner
/// still learns from every round as played.
pub fn train_episode_pinned(
    env: &mut ClusterEnv,
    learner: &mut dyn Learner,
    root: u64,
    episode: u64,
    pinned: &[(usize, usize)],
) -> (EpisodeMetrics, Losses) {
    let (mut metrics, losses) = train_episode_many(std::slice::from_mut(env), learner, root, episode, pinned);
    (metrics.pop().expect("one environment"), losses)
}

/// Environment copy `k`'s seed in training episode `episode`: copy 0 has the episode's seed
/// (so one copy trains exactly as before copies existed), copy k > 0 a stream of it.
pub fn env_seed(root: u64, episode: u64, k: usize) -> u64 {
    let seed = stream_seed(root, names::TRAIN_EPISODE, episode);
    if k == 0 {
        seed
    } else {
        stream_seed(seed, names::TRAIN_ENV, k as u64)
    }
}

/// One training episode over every environment copy in `envs` (`train.envs`), stepped in
/// parallel on the current rayon pool; the learner acts for all copies at once and learns from
/// their rounds in copy order, so results do not depend on the number of threads. Returns each
/// copy's metrics and the episode's mean losses.
pub fn train_episode_many(
    envs: &mut [ClusterEnv],
    learner: &mut dyn Learner,
    root: u64,
    episode: u64,
    pinned: &[(usize, usize)],
) -> (Vec<EpisodeMetrics>, Losses) {
    use rayon::prelude::*;
    let (n, copies) = (envs[0].n(), envs.len());
    learner.begin_episode(stream_seed(root, names::POLICY_EPISODE, episode));
    let group = learner.seed_group().max(1);
    // A learner that reads one range of each observation (by_type networks) gets only that
    // range copied, and the environment skips the utilities it does not read: at 1,000 x 4,000
    // the whole observation is 16 MB a copy and round, the by_type block 48 bytes an agent.
    let reads = learner.reads();
    let spec = env::world::spec_features(envs[0].m());
    for (k, env) in envs.iter_mut().enumerate() {
        env.set_utilities_observed(reads.as_ref().is_none_or(|r| r.start < spec));
        env.reset(env_seed(root, episode, k / group));
    }
    let mut actions = vec![vec![0; n]; copies];
    let dim = envs[0].observations().dim;
    let mut obs: Vec<Vec<f32>> = vec![vec![0.0; n * dim]; copies];
    let mut budgets = vec![vec![0.0; n]; copies];
    let mut losses = Vec::with_capacity(envs[0].scenario().file.env.rounds as usize);
    while !envs[0].agents().is_empty() {
        for (k, env) in envs.iter().enumerate() {
            let from = env.observations().data;
            match &reads {
                Some(r) if r.len() < dim => {
                    for (to, from) in obs[k].chunks_exact_mut(dim).zip(from.chunks_exact(dim)) {
                        to[r.clone()].copy_from_slice(&from[r.clone()]);
                    }
                }
                _ => obs[k].copy_from_slice(from),
            }
            budgets[k].copy_from_slice(env.budgets());
        }
        {
            let views: Vec<Observations<'_>> = obs.iter().map(|o| Observations { data: o, dim }).collect();
            let b: Vec<&[f64]> = budgets.iter().map(Vec::as_slice).collect();
            learner.act_many(&views, &b, &mut actions);
        }
        for a in actions.iter_mut() {
            for &(i, level) in pinned {
                a[i] = level;
            }
        }
        envs.par_iter_mut().zip(actions.par_iter()).for_each(|(env, a)| {
            env.step(a).expect("learners pick levels inside the action space");
        });
        let ts: Vec<Transition<'_>> = envs
            .iter()
            .enumerate()
            .map(|(k, env)| Transition::played(env, Observations { data: &obs[k], dim }, &budgets[k], &actions[k]))
            .collect();
        losses.push(learner.learn_many(&ts));
    }
    (
        envs.iter().map(|env| EpisodeMetrics::compute(env, false)).collect(),
        Losses::mean(&losses),
    )
}

/// One training episode of `learner` over K copies of a world behind the trait (`worlds`,
/// copy k reset with `seeds[k]`), the learner's agents being each copy's agent ids
/// `0..possible`: each round the learner acts for every agent of every copy at once
/// (sampled, with policy seed `policy_seed`), the copies step in parallel, and it learns from
/// their rounds in copy order, so results do not depend on the number of threads. An agent
/// that is not live (its job done) has the world's last observation of it, reward 0, and its
/// action unused; a copy whose episode ended waits for the others at its last state (reward
/// 0, the same observation before and after). No round record: the learners that re-run the
/// queue world's mechanism (Hedge, difference rewards) train through [`train_episode_many`].
pub fn train_world_episode<W: env::worlds::World>(worlds: &mut [W], learner: &mut dyn Learner, seeds: &[u64], policy_seed: u64) {
    use rayon::prelude::*;
    let k = worlds.len();
    assert_eq!(seeds.len(), k, "one seed per copy");
    learner.begin_episode(policy_seed);
    for (w, &seed) in worlds.iter_mut().zip(seeds) {
        w.reset(seed);
    }
    let (n, dim) = (worlds[0].possible(), worlds[0].layout().dim());
    let mut obs: Vec<Vec<f32>> = vec![vec![0.0; n * dim]; k];
    let mut next = obs.clone();
    for (w, o) in worlds.iter_mut().zip(obs.iter_mut()) {
        observe_all(w, o, dim);
    }
    let zeros = vec![0.0; n];
    let mut actions = vec![vec![0usize; n]; k];
    let mut rewards = vec![vec![0f64; n]; k];
    while worlds.iter().any(|w| !w.done()) {
        {
            let views: Vec<Observations<'_>> = obs.iter().map(|o| Observations { data: o, dim }).collect();
            let budgets: Vec<&[f64]> = vec![&zeros; k];
            learner.act_many(&views, &budgets, &mut actions);
        }
        worlds
            .par_iter_mut()
            .zip(actions.par_iter())
            .zip(rewards.par_iter_mut().zip(next.par_iter_mut()))
            .for_each(|((w, a), (r, o))| {
                r.fill(0.0);
                if !w.done() {
                    let acting: Vec<usize> = w.live().iter().map(|&id| a[id]).collect();
                    let report = w.step(&acting).expect("learners pick levels inside the action space");
                    for (&id, &x) in report.agents.iter().zip(report.rewards) {
                        r[id] = x;
                    }
                }
                observe_all(w, o, dim);
            });
        let done = worlds.iter().all(|w| w.done());
        let ts: Vec<Transition<'_>> = (0..k)
            .map(|c| Transition {
                obs: Observations { data: &obs[c], dim },
                actions: &actions[c],
                rewards: &rewards[c],
                next_obs: Observations { data: &next[c], dim },
                done,
                round: None,
            })
            .collect();
        learner.learn_many(&ts);
        std::mem::swap(&mut obs, &mut next);
    }
}

/// Every agent's row of a world's observation (`possible` rows): the live agents' from
/// `observe`, the others' from `last_observation` (zeros where the world has none).
fn observe_all<W: env::worlds::World>(w: &mut W, out: &mut [f32], dim: usize) {
    let live = w.live().to_vec();
    let mut rows = vec![0.0f32; live.len() * dim];
    w.observe(&mut rows);
    let mut at = 0;
    for id in 0..out.len() / dim {
        let row = &mut out[id * dim..(id + 1) * dim];
        if live.get(at) == Some(&id) {
            row.copy_from_slice(&rows[at * dim..(at + 1) * dim]);
            at += 1;
        } else if !w.last_observation(id, row) {
            row.fill(0.0);
        }
    }
}

/// `k` environment copies of `sc` for training (no per-round recording).
pub(super) fn copies(sc: &env::config::Scenario, k: usize) -> Vec<ClusterEnv> {
    (0..k)
        .map(|_| {
            let mut env = ClusterEnv::new(sc.clone());
            env.set_recording(false);
            env
        })
        .collect()
}

/// The copies' metrics as one, for the episode log: means per agent, drops and rounds summed
/// (so drops per round is the mean over copies).
pub(super) fn merged(ms: Vec<EpisodeMetrics>) -> EpisodeMetrics {
    let k = ms.len() as f64;
    let mut out = ms[0].clone();
    if ms.len() == 1 {
        return out;
    }
    let mean = |f: &dyn Fn(&EpisodeMetrics) -> &Vec<f64>| -> Vec<f64> {
        (0..f(&ms[0]).len()).map(|i| ms.iter().map(|m| f(m)[i]).sum::<f64>() / k).collect()
    };
    out.throughput = mean(&|m| &m.throughput);
    out.reward = mean(&|m| &m.reward);
    out.threshold = mean(&|m| &m.threshold);
    out.spent = mean(&|m| &m.spent);
    out.welfare = ms.iter().map(|m| m.welfare).sum::<f64>() / k;
    out.dropped = (0..out.dropped.len()).map(|i| ms.iter().map(|m| m.dropped[i]).sum()).collect();
    out.rounds = ms.iter().map(|m| m.rounds).sum();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use env::config::ScenarioFile;
    use env::policy::Fixed;

    fn scenario() -> env::config::Scenario {
        let mut file = ScenarioFile::default();
        file.env.rounds = 15;
        file.resolve(std::path::Path::new("test")).unwrap()
    }

    #[test]
    fn copy_0_has_the_episode_seed_and_other_copies_streams_of_it() {
        let episode = stream_seed(7, names::TRAIN_EPISODE, 3);
        assert_eq!(env_seed(7, 3, 0), episode);
        assert_eq!(env_seed(7, 3, 2), stream_seed(episode, names::TRAIN_ENV, 2));
        let seeds: Vec<u64> = (0..4).flat_map(|e| (0..3).map(move |k| env_seed(7, e, k))).collect();
        let mut distinct = seeds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), seeds.len(), "every (episode, copy) has its own seed");
    }

    #[test]
    fn copy_0_of_many_trains_exactly_as_one_environment_does() {
        let sc = scenario();
        let mut one = copies(&sc, 1);
        let (alone, _) = train_episode(&mut one[0], &mut Fixed { level: 3 }, 5, 2);
        let mut three = copies(&sc, 3);
        let (many, _) = train_episode_many(&mut three, &mut Fixed { level: 3 }, 5, 2, &[]);
        let untimed = |m: &EpisodeMetrics| EpisodeMetrics {
            sched_us: 0.0,
            ..m.clone()
        };
        assert_eq!(untimed(&many[0]), untimed(&alone));
        assert_ne!(many[1].throughput, alone.throughput, "copy 1 sees other arrivals");
        // Pinned agents play their level whatever the learner says.
        let (pinned, _) = train_episode_pinned(&mut one[0], &mut Fixed { level: 3 }, 5, 2, &[(1, 7)]);
        // Means of 15 rounds of the same level: equal within rounding.
        assert!((pinned.threshold[1] - sc.action_levels()[7]).abs() < 1e-12);
        assert!((pinned.threshold[0] - sc.action_levels()[3]).abs() < 1e-12);
    }

    #[test]
    fn merged_copies_average_per_agent_and_sum_drops_and_rounds() {
        let m = |t: f64, d: u64| EpisodeMetrics {
            rounds: 10,
            throughput: vec![t, 2.0 * t],
            reward: vec![t, t],
            threshold: vec![0.5, 0.5],
            spent: vec![1.0, 3.0],
            dropped: vec![d, 0],
            welfare: t,
            ..Default::default()
        };
        let one = merged(vec![m(2.0, 4)]);
        assert_eq!(one, m(2.0, 4), "one copy is its own log");
        let both = merged(vec![m(2.0, 4), m(4.0, 6)]);
        assert_eq!(both.throughput, vec![3.0, 6.0]);
        assert_eq!(both.welfare, 3.0);
        assert_eq!(both.dropped, vec![10, 0]);
        assert_eq!(both.rounds, 20, "drops per round stay the mean over copies: 10 / 20");
    }
}

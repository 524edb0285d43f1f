//! Rollouts: one training episode over K copies of a world (`train.envs`), stepped in
//! parallel, with the learner acting for all copies at once and learning from their rounds in
//! copy order, so results do not depend on the number of threads. Every random number of
//! episode e comes from streams seeded by `(root seed, e)`. [`train_world_episode`] is the one
//! loop, generic over the world trait ([`Trainable`]: what the loop asks of a world beyond it);
//! the queue and valuation worlds ([`train_episode_many`]) and the market train through it.

use crate::learners::{Learner, Losses, Round, Transition};
use env::metrics::EpisodeMetrics;
use env::queue_world::QueueWorld;
use env::rng::{names, stream_seed};
use env::world::Observations;
use env::worlds::World;
use std::ops::Range;

/// What the one training rollout asks of a world beyond the trait (whose budgets and
/// mechanism round, [`World::budgets`] and [`World::mechanism_round`], are Hedge's state and
/// what it and difference rewards re-run). Defaults: every agent's row copied whole (the live
/// agents' from `observe`, the others' from `last_observation`).
pub trait Trainable: World {
    /// Before an episode: the learner reads only `reads` of each row (the world may skip
    /// computing the rest).
    fn reads(&mut self, _reads: Option<&Range<usize>>) {}

    /// Whether every agent acts every round until its copy's episode ends (the queue world's
    /// agents, the market's learning tenants): its rounds then carry no [`Transition::live`]
    /// mask, and a copy that ended early waits at its last state as a round of reward 0.
    /// Default: the world's own word ([`World::agents_stay`]); where agents arrive and leave,
    /// every round says who acted, and a finished copy's rounds say nobody did.
    fn every_agent_acts(&self) -> bool {
        self.agents_stay()
    }

    /// Every agent's row (`possible` rows) into `out`; only `reads` of each needs to be
    /// right. `scratch` is the caller's, reused between rounds.
    fn observe_rows(&mut self, out: &mut [f32], _reads: Option<&Range<usize>>, scratch: &mut Vec<f32>) {
        self.observe_every(out, None, scratch);
    }
}

/// The record of the round `w` just played, from the budgets it started with.
fn round<'a>(w: &'a dyn World, budgets: &'a [f64]) -> Option<Round<'a>> {
    w.mechanism_round().map(|r| Round {
        budgets,
        next_budgets: r.next_budgets,
        input: r.input,
        bid_values: r.bid_values,
        allocation: r.allocation,
    })
}

impl Trainable for QueueWorld {
    /// A learner reading one range of each observation (the by_type networks) lets the
    /// environment skip the utilities it does not read: at 1,000 x 4,000 the whole observation
    /// is 16 MB a copy and round, the by_type block 48 bytes an agent.
    fn reads(&mut self, reads: Option<&Range<usize>>) {
        let spec = env::world::spec_features(self.env().m());
        self.env_mut().set_utilities_observed(reads.is_none_or(|r| r.start < spec));
    }

    /// The environment's observation buffer (after the last round too), only `reads` copied
    /// when that is narrower.
    fn observe_rows(&mut self, out: &mut [f32], reads: Option<&Range<usize>>, _scratch: &mut Vec<f32>) {
        let from = self.env().observations();
        match reads {
            Some(r) if r.len() < from.dim => {
                for (to, from) in out.chunks_exact_mut(from.dim).zip(from.data.chunks_exact(from.dim)) {
                    to[r.clone()].copy_from_slice(&from[r.clone()]);
                }
            }
            _ => out.copy_from_slice(from.data),
        }
    }
}

impl Trainable for env::market::world::MarketWorld {
    /// The learning tenants act until the market ends (`MarketWorld::learners`).
    fn every_agent_acts(&self) -> bool {
        true
    }
}

/// The worlds behind the seam as the registry builds them: every round says who acted, except
/// where the world's agents all stay for the whole episode ([`World::agents_stay`]: the queue
/// world on the seam).
impl Trainable for Box<dyn World> {}

/// Run one training episode: act (sampled), step, learn, every round.
pub fn train_episode(env: &mut QueueWorld, learner: &mut dyn Learner, root: u64, episode: u64) -> (EpisodeMetrics, Losses) {
    train_episode_pinned(env, learner, root, episode, &[])
}

/// [`train_episode`] with some agents pinned: each `(agent, level)` plays that level index
/// instead of the learner's choice (the fixed opponents of a best-response check); the learner
/// still learns from every round as played.
pub fn train_episode_pinned(
    env: &mut QueueWorld,
    learner: &mut dyn Learner,
    root: u64,
    episode: u64,
    pinned: &[(usize, usize)],
) -> (EpisodeMetrics, Losses) {
    let (mut metrics, losses) = train_episode_many(std::slice::from_mut(env), learner, root, episode, pinned);
    (metrics.pop().expect("one environment"), losses)
}

pub use env::rng::env_seed;

/// One training episode of the queue (or valuation) world over every copy in `envs`
/// (`train.envs`, in seed groups of the learner's `seed_group`), through
/// [`train_world_episode`]. Returns each copy's metrics and the episode's mean losses.
pub fn train_episode_many(
    envs: &mut [QueueWorld],
    learner: &mut dyn Learner,
    root: u64,
    episode: u64,
    pinned: &[(usize, usize)],
) -> (Vec<EpisodeMetrics>, Losses) {
    let group = learner.seed_group().max(1);
    let seeds: Vec<u64> = (0..envs.len()).map(|k| env_seed(root, episode, k / group)).collect();
    let losses = train_world_episode(envs, learner, &seeds, stream_seed(root, names::POLICY_EPISODE, episode), pinned);
    (envs.iter().map(|w| EpisodeMetrics::compute(w.env(), false)).collect(), losses)
}

/// One training episode of `learner` over K copies of a world (`worlds`, copy k reset with
/// `seeds[k]`), the learner's agents being each copy's agent ids `0..possible`: each round
/// the learner acts for every agent of every copy at once (sampled, policy seed
/// `policy_seed`; the agents in `pinned` play their level index instead), the copies step in
/// parallel on the current rayon pool, and it learns from their rounds in copy order, so
/// results do not depend on the number of threads. An agent that is not live has the world's
/// last observation, reward 0, and its action unused; a copy whose episode ended waits for
/// the others at its last state (reward 0, the same observation before and after). Returns
/// the episode's mean losses. A round in which some agent of a copy did not act carries which
/// did ([`Transition::live`]); a world whose agents all act every round (the queue world, the
/// market's learners) never sets it.
pub fn train_world_episode<W: Trainable>(
    worlds: &mut [W],
    learner: &mut dyn Learner,
    seeds: &[u64],
    policy_seed: u64,
    pinned: &[(usize, usize)],
) -> Losses {
    train_world_episode_counted(worlds, learner, seeds, policy_seed, pinned).0
}

/// What a training episode played beyond its losses.
pub struct Played {
    /// Agent-steps (one per acting agent per round, over every copy).
    pub agent_steps: u64,
    /// Per copy: the mean over groups of the mean summed reward of the group's agents that
    /// acted (ES's fitness, `agents::worlds::es`).
    pub fitness: Vec<f64>,
}

/// [`train_world_episode`], also returning what it played.
pub fn train_world_episode_counted<W: Trainable>(
    worlds: &mut [W],
    learner: &mut dyn Learner,
    seeds: &[u64],
    policy_seed: u64,
    pinned: &[(usize, usize)],
) -> (Losses, Played) {
    use rayon::prelude::*;
    let k = worlds.len();
    assert_eq!(seeds.len(), k, "one seed per copy");
    learner.begin_episode(policy_seed);
    let reads = learner.reads();
    for (w, &seed) in worlds.iter_mut().zip(seeds) {
        w.reads(reads.as_ref());
        w.reset(seed);
    }
    let (n, dim) = (worlds[0].possible(), worlds[0].layout().dim());
    let mut obs: Vec<Vec<f32>> = vec![vec![0.0; n * dim]; k];
    let mut next = obs.clone();
    let mut scratch: Vec<(Vec<f32>, Vec<usize>)> = vec![(Vec::new(), Vec::new()); k];
    for ((w, o), (s, _)) in worlds.iter_mut().zip(obs.iter_mut()).zip(scratch.iter_mut()) {
        w.observe_rows(o, reads.as_ref(), s);
    }
    let mut budgets = vec![vec![0.0; n]; k];
    let mut actions = vec![vec![0usize; n]; k];
    let mut rewards = vec![vec![0f64; n]; k];
    let mut losses = Vec::new();
    // Per copy: which agents acted this round, and whether every one did.
    let mut live = vec![vec![false; n]; k];
    let masked = !worlds[0].every_agent_acts();
    let mut steps = 0u64;
    // Per copy and agent: its summed reward, and whether it acted.
    let mut returns = vec![vec![(0.0f64, false); n]; k];
    while worlds.iter().any(|w| !w.done()) {
        for (w, b) in worlds.iter().zip(budgets.iter_mut()) {
            if let Some(x) = w.budgets() {
                b.copy_from_slice(x);
            }
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
        worlds
            .par_iter_mut()
            .zip(actions.par_iter())
            .zip(rewards.par_iter_mut().zip(next.par_iter_mut()))
            .zip(scratch.par_iter_mut().zip(live.par_iter_mut()))
            .for_each(|(((w, a), (r, o)), ((s, acting), l))| {
                r.fill(0.0);
                l.fill(false);
                if !w.done() {
                    acting.clear();
                    acting.extend(w.live().iter().map(|&id| a[id]));
                    let report = w.step(acting).expect("learners pick levels inside the action space");
                    for (&id, &x) in report.agents.iter().zip(report.rewards) {
                        r[id] = x;
                        l[id] = true;
                    }
                }
                w.observe_rows(o, reads.as_ref(), s);
            });
        steps += live.iter().map(|l| l.iter().filter(|&&x| x).count() as u64).sum::<u64>();
        for ((ret, l), r) in returns.iter_mut().zip(&live).zip(&rewards) {
            for ((x, &acted), &r) in ret.iter_mut().zip(l).zip(r) {
                if acted {
                    *x = (x.0 + r, true);
                }
            }
        }
        let done = worlds.iter().all(|w| w.done());
        let ts: Vec<Transition<'_>> = (0..k)
            .map(|c| Transition {
                obs: Observations { data: &obs[c], dim },
                actions: &actions[c],
                rewards: &rewards[c],
                next_obs: Observations { data: &next[c], dim },
                done,
                live: masked.then_some(live[c].as_slice()),
                round: round(&worlds[c], &budgets[c]),
            })
            .collect();
        losses.push(learner.learn_many(&ts));
        std::mem::swap(&mut obs, &mut next);
    }
    let fitness = worlds
        .iter()
        .zip(&returns)
        .map(|(w, ret)| {
            let groups = w.group_names().len();
            let (mut sum, mut count) = (vec![0.0; groups], vec![0.0f64; groups]);
            for (id, &(x, _)) in ret.iter().enumerate().filter(|(_, r)| r.1) {
                sum[w.group(id)] += x;
                count[w.group(id)] += 1.0;
            }
            let means: Vec<f64> = sum.iter().zip(&count).map(|(s, c)| if *c > 0.0 { s / c } else { 0.0 }).collect();
            means.iter().sum::<f64>() / means.len().max(1) as f64
        })
        .collect();
    (
        Losses::mean(&losses),
        Played {
            agent_steps: steps,
            fitness,
        },
    )
}

/// `k` environment copies of `sc` for training (no per-round recording).
pub(crate) fn copies(sc: &env::config::Scenario, k: usize) -> Vec<QueueWorld> {
    (0..k)
        .map(|_| {
            let mut w = QueueWorld::new(sc.clone());
            w.env_mut().set_recording(false);
            w
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

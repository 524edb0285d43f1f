//! Full-information Hedge over a level per group held for the episode, in any world behind
//! the seam ([`env::worlds::World`]): one weight vector per group over the
//! world's levels, a level drawn per group at the start of an episode and held by every agent
//! of the group for the whole episode (the market's Hedge, a bid factor for the whole job).
//!
//! Training episode e draws each group's level from its weights, plays `train.envs` seeds with
//! them, and replays every seed once per group and other level with only that group's level
//! changed (the others as drawn; only groups with agents): the counterfactual rewards Hedge's
//! full-information update needs, on common random numbers (a replay differs from the episode played only in the
//! group's level). A level's reward is the group's mean return (the mean, over its agents that
//! acted, of their summed rewards), averaged over the seeds. `log w += eta_t * u / unit`, with
//! `eta_t = sqrt(8 ln K / t)` (no-regret theory's anytime schedule for rewards in a unit
//! range, t the updates so far) or a constant `learner.hedge.eta`.
//!
//! Why a unit fixed once per run: a world behind the seam declares no bound on its returns
//! (the queue world's Hedge has one, [`crate::learners::hedge::reward_range`]), and rescaling
//! every episode by its own spread is what drove the queue world's Hedge past the first-price
//! equilibrium (issue 41): an episode where the levels differ by a hair moved the weights as
//! much as one where they differ by everything. So the unit is the world's own where it has
//! one ([`World::return_unit`]: the market's, a job's worth), else the largest spread of the
//! levels' rewards (over groups) in the first episode where they differ at all, then kept
//! (saved in the checkpoint): the rewards of every later episode are on that one scale.
//!
//! Cost: an episode plays `envs x (1 + groups x (levels - 1))` episodes of the world (groups
//! with agents), in
//! parallel on the run's threads, collected in order (results do not depend on `threads`).

use super::base::{argmax, sample_index};
use crate::error::failed;
use env::rng::{env_seed, names, stream, unit};
use env::worlds::{Acting, Figures, Returns, World};
use rand::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Hedge's state: the log-weights and what the schedule and time average need.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpisodeHedge {
    /// Log-weights, `[group][level]`.
    pub log_weights: Vec<Vec<f64>>,
    /// Updates so far (the schedule's t).
    pub updates: u64,
    /// The reward unit (module docs); `None` until the levels' rewards first differ.
    pub unit: Option<f64>,
    /// The sum of the distributions played, `[group][level]` (time-averaged play).
    pub played: Vec<Vec<f64>>,
    /// A constant learning rate, or the anytime schedule.
    #[serde(skip)]
    eta: Option<f64>,
}

/// What one training episode played.
pub struct HedgeEpisode {
    /// The episodes played with the drawn levels, one per seed: the world's figures and
    /// what each group was paid.
    pub played: Vec<(Figures, Returns)>,
    /// The level index each group drew.
    pub picks: Vec<usize>,
    /// The episodes played in all (with the replays).
    pub episodes: usize,
    /// The agent-steps of every episode played (with the replays).
    pub agent_steps: u64,
}

impl EpisodeHedge {
    /// Uniform weights over `levels` for `groups` groups.
    pub fn new(groups: usize, levels: usize, eta: Option<f64>) -> Self {
        Self {
            log_weights: vec![vec![0.0; levels]; groups],
            updates: 0,
            unit: None,
            played: vec![vec![0.0; levels]; groups],
            eta,
        }
    }

    /// Group `g`'s distribution over the levels.
    pub fn probabilities(&self, g: usize) -> Vec<f64> {
        softmax(&self.log_weights[g])
    }

    /// Group `g`'s time-averaged play (uniform before any update).
    pub fn time_averaged(&self, g: usize) -> Vec<f64> {
        let s: f64 = self.played[g].iter().sum();
        let k = self.played[g].len();
        if s > 0.0 {
            self.played[g].iter().map(|x| x / s).collect()
        } else {
            vec![1.0 / k as f64; k]
        }
    }

    /// Each group's heaviest level.
    pub fn greedy(&self) -> Vec<usize> {
        self.log_weights.iter().map(|lw| argmax(lw.iter().copied())).collect()
    }

    /// The mean, over groups, of the weights' entropy as a share of `ln K` (1: uniform).
    pub fn entropy_share(&self) -> f64 {
        let k = self.log_weights.first().map_or(1, Vec::len);
        if k < 2 || self.log_weights.is_empty() {
            return 0.0;
        }
        let h: f64 = (0..self.log_weights.len())
            .map(|g| -self.probabilities(g).iter().filter(|&&p| p > 0.0).map(|p| p * p.ln()).sum::<f64>())
            .sum();
        h / self.log_weights.len() as f64 / (k as f64).ln()
    }

    /// Training episode `e` of the run seeded `root` on `envs` seeds: draw, play, replay,
    /// update. Only groups with agents are replayed (a group of none, the market's tenants
    /// that do not learn, keeps uniform weights).
    pub fn episode(&mut self, proto: &dyn World, root: u64, e: u64, envs: usize, pool: &rayon::ThreadPool) -> HedgeEpisode {
        let (groups, k) = (self.log_weights.len(), self.log_weights.first().map_or(0, Vec::len));
        let mut active: Vec<usize> = (0..proto.possible()).map(|id| proto.group(id)).filter(|&g| g < groups).collect();
        active.sort_unstable();
        active.dedup();
        let mut rng = stream(root, names::POLICY_EPISODE, e);
        let picks: Vec<usize> = (0..groups)
            .map(|g| sample_index(&self.probabilities(g), unit(rng.next_u64())))
            .collect();
        // Job j: seed j / per; then the drawn profile (j % per = 0) or a replay of group
        // active[a] at its l-th other level.
        let per = 1 + active.len() * k.saturating_sub(1);
        let replay = |j: usize| -> Option<(usize, usize)> {
            let r = j % per;
            (r > 0).then(|| {
                let (a, l) = ((r - 1) / (k - 1), (r - 1) % (k - 1));
                let g = active[a];
                (g, if l >= picks[g] { l + 1 } else { l })
            })
        };
        let protos = std::sync::Mutex::new(proto.fork());
        let all: Vec<(Figures, Returns)> = pool.install(|| {
            (0..envs * per)
                .into_par_iter()
                .map(|j| {
                    let mut levels = picks.clone();
                    if let Some((g, l)) = replay(j) {
                        levels[g] = l;
                    }
                    let mut world = protos.lock().expect("no panic while forking").fork();
                    let paid = env::worlds::play(world.as_mut(), &mut GroupLevels(levels), env_seed(root, e, j / per));
                    (world.figures(), paid)
                })
                .collect()
        });
        // u[g][l]: group g's mean return with g at level l (the others as drawn), over the
        // seeds: the drawn profile gives every group's at its drawn level, a replay the
        // changed group's.
        let mut u = vec![vec![0.0; k]; groups];
        for (j, (_, p)) in all.iter().enumerate() {
            match replay(j) {
                None => active.iter().for_each(|&g| u[g][picks[g]] += p.group_returns[g] / envs as f64),
                Some((g, l)) => u[g][l] += p.group_returns[g] / envs as f64,
            }
        }
        if self.unit.is_none() {
            let spread = active
                .iter()
                .map(|&g| {
                    let row = &u[g];
                    row.iter().copied().fold(f64::NEG_INFINITY, f64::max) - row.iter().copied().fold(f64::INFINITY, f64::min)
                })
                .fold(0.0, f64::max);
            self.unit = proto.return_unit().or((spread.is_finite() && spread > 0.0).then_some(spread));
        }
        for g in 0..groups {
            let p = self.probabilities(g);
            for (acc, q) in self.played[g].iter_mut().zip(&p) {
                *acc += q;
            }
        }
        self.updates += 1;
        let eta = self
            .eta
            .unwrap_or_else(|| (8.0 * (k.max(2) as f64).ln() / self.updates as f64).sqrt());
        let unit = self.unit.unwrap_or(1.0);
        for &g in &active {
            let lw = &mut self.log_weights[g];
            for (w, x) in lw.iter_mut().zip(&u[g]) {
                *w += eta * x / unit;
            }
            // Kept near 0 so that long runs never lose precision (only differences matter).
            let top = lw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            lw.iter_mut().for_each(|w| *w -= top);
        }
        let agent_steps = all.iter().map(|(_, p)| p.agent_steps).sum();
        let episodes = all.len();
        let played = all.into_iter().step_by(per).collect();
        HedgeEpisode {
            played,
            picks,
            episodes,
            agent_steps,
        }
    }

    /// The state as checkpoint bytes.
    pub fn save(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("Hedge's state serialises")
    }

    /// Restore from checkpoint bytes (the shape must be this run's).
    pub fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        let s: EpisodeHedge = serde_json::from_slice(bytes).map_err(|e| failed(format!("Hedge's checkpoint state: {e}")))?;
        let shape = |t: &[Vec<f64>]| t.iter().map(Vec::len).collect::<Vec<_>>();
        let mine = shape(&self.log_weights);
        if shape(&s.log_weights) != mine || shape(&s.played) != mine {
            return Err(failed("Hedge's checkpoint state is for other groups or levels than this run has"));
        }
        let eta = self.eta;
        *self = s;
        self.eta = eta;
        Ok(())
    }

    /// What is not finite in the weights, if anything.
    pub fn non_finite(&self) -> Option<String> {
        self.log_weights
            .iter()
            .flatten()
            .any(|w| !w.is_finite())
            .then(|| "a log-weight is not finite".to_string())
    }

    /// Each group's weights as an actor of the exported layout (one hidden unit, every weight
    /// 0 but the output biases, the log-weights): its argmax is the heaviest level whatever it
    /// reads. Returns the actors and their hidden width.
    pub fn actors(&self, dim: usize) -> (Vec<Vec<f32>>, usize) {
        let actors = self
            .log_weights
            .iter()
            .map(|lw| {
                let mut w = vec![0f32; crate::learners::nets::actor_len(dim, 1, lw.len()) - lw.len()];
                w.extend(lw.iter().map(|&x| x as f32));
                w
            })
            .collect();
        (actors, 1)
    }
}

fn softmax(lw: &[f64]) -> Vec<f64> {
    let top = lw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = lw.iter().map(|x| (x - top).exp()).collect();
    let s: f64 = w.iter().sum();
    w.into_iter().map(|x| x / s).collect()
}

/// Every agent of group g at `levels[g]` (the drawn profile, or a replay).
struct GroupLevels(Vec<usize>);

impl<'w> Acting<dyn World + 'w> for GroupLevels {
    fn act(&mut self, _world: &(dyn World + 'w), _obs: &[f32], groups: &[usize], actions: &mut [usize]) {
        for (a, &g) in actions.iter_mut().zip(groups) {
            *a = self.0[g];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world(text: &str) -> Box<dyn World> {
        let path = std::env::temp_dir().join(format!("mtf-hedge-seam-{}-{}.toml", std::process::id(), text.len()));
        std::fs::write(&path, text).unwrap();
        let w = env::registry::load(&path, &[]).unwrap();
        std::fs::remove_file(path).ok();
        w
    }

    #[test]
    fn the_replays_pay_each_level_what_the_bandit_pays_and_hedge_settles_on_each_groups_best() {
        // Without noise, group 0 (target 0.3) earns 1 - (x - 0.3)^2 per round at level x and
        // group 1 (target 0.7) 1 - (x - 0.7)^2 (`play_pays_the_bandits_known_rewards`): the
        // best levels are 3 and 7 whatever the other group plays.
        let w = world("[env]\nworld = \"bandit\"\nagents = 4\nrounds = 10\nnoise = 0.0\n");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let mut h = EpisodeHedge::new(2, w.levels().len(), None);
        let first = h.episode(w.as_ref(), 5, 0, 2, &pool);
        assert_eq!(first.episodes, 2 * (1 + 2 * 10));
        assert_eq!(first.played.len(), 2);
        // The first update's unit: group 0's spread over levels 0..1 (its worst level, 1.0,
        // loses 0.49 per round over 10 rounds for agents there all along; group 1's agents
        // arrive at round 1, 9 rounds, its worst level 0 loses 0.49 too): 4.9 for group 0.
        let unit = h.unit.unwrap();
        assert!((unit - 4.9).abs() < 1e-9, "{unit}");
        for e in 1..60 {
            h.episode(w.as_ref(), 5, e, 2, &pool);
        }
        // Without noise every update is the same up to eta_t: a level's log-weight is minus
        // the sum of the rates times its shortfall over the unit (10 rounds of group 0's, 9 of
        // group 1's), whatever was drawn.
        let rates: f64 = (1..=60).map(|t| (8.0 * 11f64.ln() / t as f64).sqrt()).sum();
        for (g, (target, rounds)) in [(0.3, 10.0), (0.7, 9.0)].into_iter().enumerate() {
            for (l, &x) in w.levels().iter().enumerate() {
                let want = -rates * rounds * (x - target) * (x - target) / 4.9;
                assert!(
                    (h.log_weights[g][l] - want).abs() < 1e-9,
                    "group {g} level {x}: {:?}",
                    h.log_weights[g]
                );
            }
        }
        assert_eq!(h.greedy(), vec![3, 7]);
        assert_eq!(h.updates, 60);
        let avg = h.time_averaged(0);
        assert!(
            (avg.iter().sum::<f64>() - 1.0).abs() < 1e-12 && argmax(avg.iter().copied()) == 3,
            "{avg:?}"
        );
        // The same on one thread; and saved and restored, it goes on as if never stopped.
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let mut a = EpisodeHedge::new(2, w.levels().len(), None);
        let mut b = EpisodeHedge::new(2, w.levels().len(), None);
        for e in 0..3 {
            a.episode(w.as_ref(), 5, e, 2, &one);
            b.episode(w.as_ref(), 5, e, 2, &pool);
        }
        assert_eq!(a, b);
        let mut c = EpisodeHedge::new(2, w.levels().len(), None);
        c.load(&a.save()).unwrap();
        a.episode(w.as_ref(), 5, 3, 2, &one);
        c.episode(w.as_ref(), 5, 3, 2, &one);
        assert_eq!(a, c);
        // A state of another shape is refused.
        let mut wrong = EpisodeHedge::new(3, w.levels().len(), None);
        assert!(wrong.load(&a.save()).is_err());
    }

    #[test]
    fn in_the_markets_duel_the_replays_pay_each_bid_factor_what_the_file_computes_by_hand() {
        // configs/market/duel.toml, first price: L (worth 2 per unit, 10 units: 20) wins the A10
        // at factor f > 0.8 and pays 10 f, else runs on demand for 10; its reward in the market
        // `mtf train` learns in is its utility over its job's worth, the world's return unit.
        // The episode's drawn factor is replayed at every other (L's group, the only one: E is
        // no agent): one update with eta = 1 puts each factor's log-weight at u(f) - u(0.9).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
        let raw = env::market::MarketFile::load_unexpanded(&path, &[]).unwrap();
        let levels = env::market::game::action_levels(&raw, "duel.toml").unwrap();
        let table = env::market::world::resolved(&raw).unwrap();
        let world = env::market::world::MarketWorld::learners(raw, levels.clone(), table);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let groups = world.group_names();
        // E is no agent (it plays its own factor): L's group is the one group.
        assert_eq!(groups, vec!["L"]);
        let mut h = EpisodeHedge::new(groups.len(), levels.len(), Some(1.0));
        let ep = h.episode(&world, 1, 0, 1, &pool);
        assert_eq!(ep.episodes, levels.len());
        let u = |f: f64| if f > 0.8 + 1e-9 { (20.0 - 10.0 * f) / 20.0 } else { 0.5 };
        assert_eq!(h.unit, Some(1.0));
        for (l, &f) in levels.iter().enumerate() {
            let want = u(f) - u(0.9);
            assert!((h.log_weights[0][l] - want).abs() < 1e-9, "factor {f}: {:?}", h.log_weights[0]);
        }
        assert_eq!(levels[h.greedy()[0]], 0.9);
    }

    #[test]
    fn the_anytime_schedule_moves_the_first_update_by_sqrt_8_ln_k_units() {
        // Levels paying 0 and the unit: after one update the log-weights differ by
        // eta_1 = sqrt(8 ln K), K = 11 levels.
        let w = world("[env]\nworld = \"bandit\"\nagents = 1\nrounds = 4\nnoise = 0.0\n");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        let groups = w.group_names().len();
        let mut h = EpisodeHedge::new(groups, w.levels().len(), None);
        h.episode(w.as_ref(), 1, 0, 1, &pool);
        let k = w.levels().len() as f64;
        let lw = &h.log_weights[0];
        let (best, worst) = (
            lw.iter().copied().fold(f64::MIN, f64::max),
            lw.iter().copied().fold(f64::MAX, f64::min),
        );
        assert!(((best - worst) - (8.0 * k.ln()).sqrt()).abs() < 1e-9, "{lw:?}");
        // A constant rate instead: eta exactly.
        let mut c = EpisodeHedge::new(groups, w.levels().len(), Some(0.25));
        c.episode(w.as_ref(), 1, 0, 1, &pool);
        let lw = &c.log_weights[0];
        let (best, worst) = (
            lw.iter().copied().fold(f64::MIN, f64::max),
            lw.iter().copied().fold(f64::MAX, f64::min),
        );
        assert!(((best - worst) - 0.25).abs() < 1e-9, "{lw:?}");
    }
}

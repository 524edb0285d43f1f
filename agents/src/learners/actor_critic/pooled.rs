//! The actor-critic where agents come and go (a world of `env::worlds`: Gavel's jobs, the
//! bandit's players): the agents of a class share one actor and one critic, and every agent's
//! life (the rounds it acted in, one after another) is learned from as the module's N-step
//! algorithm learns from a fixed agent's rounds.
//!
//! Round t of a life is learned from once round t + N of it has been played: its target is
//! `r_t + ... + gamma^(N-1) r_(t+N-1) + gamma^N V(s_(t+N))`, bootstrapped from the state the
//! agent acted on N rounds later, which it saw (a round's next observation may be a blank row
//! for an agent that has just left). When the life ends (the agent did not act this round, or
//! the episode is over) its remaining rounds are learned from with what is left of their
//! returns and no bootstrap: a job that finishes has no future, and an episode of such a world
//! ends when its agents are done or at a horizon they do not see. One update per round, over
//! every copy's ready rounds, each class's loss the mean over its rows.
//!
//! With `group > 1` a TD error is made relative to the same agent's in the same round of the
//! other copies of its seed (leave-one-out) where that agent's round is learned from in the same
//! update in another copy too, then divided by its class's running standard deviation of such
//! relative errors. A round whose twins are learned from in other updates (copies' lives ending
//! at different rounds: the last N - 1 rounds of the shorter) keeps its TD error, divided by the
//! same deviation and not counted in it.
//!
//! With `normalize` rewards are divided by their class's running root mean square, not centred
//! as the fixed agents' learner centres them: a life here ends, and with the mean taken out a
//! round's cost would be about 0 (Gavel pays a job -0.1 h every round it stays: centred, staying
//! longer cost nothing; under the welfare reward it paid while the load was below average).
//! The entropy schedule counts episodes here: a world whose episodes end when its agents are
//! done has no round count to plan by.
//!
//! What is stored per life is at most N + 1 rounds of features, kept in flat buffers that are
//! reused, so memory is the agents present times N, not the rounds played.

use super::{ActorCritic, ActorCriticConfig, Transition};
use crate::learners::base::Losses;
use crate::learners::nets::Shape;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor, TensorData};
use std::collections::VecDeque;

/// A pooled actor-critic's own state.
pub(super) struct Pooled {
    /// Each possible agent's class (the row of its actor and critic).
    pub rows: Vec<i64>,
    /// Classes (the stacked networks' first dimension).
    pub classes: usize,
    /// Per copy, per possible agent: its life's rounds not yet learned from.
    lives: Vec<Vec<Life>>,
    /// The current episode's round.
    round: u32,
}

/// A life's rounds not yet learned from, oldest first.
#[derive(Default)]
struct Life {
    /// Features, `d` per round.
    x: VecDeque<f32>,
    a: VecDeque<i64>,
    /// Rewards, scaled and normalised.
    r: VecDeque<f32>,
    t: VecDeque<u32>,
}

impl Life {
    fn len(&self) -> usize {
        self.a.len()
    }
}

impl Pooled {
    pub fn new(classes_of: Vec<usize>) -> Self {
        let classes = classes_of.iter().max().map_or(1, |m| m + 1);
        Pooled {
            rows: classes_of.into_iter().map(|c| c as i64).collect(),
            classes,
            lives: Vec::new(),
            round: 0,
        }
    }

    /// Forget every life (a loaded state starts at an episode's beginning).
    pub fn clear(&mut self) {
        self.lives.clear();
        self.round = 0;
    }
}

/// The rows of one update, per class: features, actions, the discounted rewards of each
/// target, the bootstrap state and its discount (0: none), and (agent, seed group, round) for
/// the group-relative errors.
#[derive(Default)]
struct Rows {
    x: Vec<f32>,
    a: Vec<i64>,
    partial: Vec<f32>,
    boot: Vec<f32>,
    discount: Vec<f32>,
    cell: Vec<(u32, u32, u32)>,
}

impl Rows {
    /// The oldest round of `life` with its target's discounted rewards `partial`, removed
    /// from it (its bootstrap pushed by the caller).
    fn take_oldest(&mut self, life: &mut Life, d: usize, partial: f32, cell: (u32, u32)) {
        self.x.extend(life.x.drain(..d));
        self.a.push(life.a.pop_front().expect("a round"));
        life.r.pop_front();
        let t = life.t.pop_front().expect("a round");
        self.partial.push(partial);
        self.cell.push((cell.0, cell.1, t));
    }

    /// Round 0 of `life` with its N-step return complete: `steps` rewards and the state after.
    fn take_complete(&mut self, life: &mut Life, d: usize, steps: usize, gamma: f32, cell: (u32, u32)) {
        let partial = life.r.iter().take(steps).rev().fold(0.0, |g, &r| r + gamma * g);
        self.boot.extend(life.x.range(steps * d..(steps + 1) * d));
        self.discount.push(gamma.powi(steps as i32));
        self.take_oldest(life, d, partial, cell);
    }

    /// Every round of an ended life, with what is left of its returns.
    fn take_ended(&mut self, life: &mut Life, d: usize, gamma: f32, cell: (u32, u32)) {
        let mut returns: Vec<f32> = life
            .r
            .iter()
            .rev()
            .scan(0.0, |g, &r| {
                *g = r + gamma * *g;
                Some(*g)
            })
            .collect();
        returns.reverse();
        for g in returns {
            self.boot.extend(std::iter::repeat_n(0.0, d));
            self.discount.push(0.0);
            self.take_oldest(life, d, g, cell);
        }
    }
}

impl ActorCritic {
    /// One round of every copy, pooled (see the module documentation).
    pub(super) fn learn_pooled(&mut self, ts: &[Transition<'_>]) -> Losses {
        let (shape, dev) = (self.nets.shape, self.device.clone());
        let (n, d, copies) = (shape.n, shape.d, ts.len());
        let (steps, gamma, group) = (self.cfg.steps, self.cfg.gamma as f32, self.cfg.group.max(1));
        let (scale, normalize) = (self.cfg.reward_scale, self.cfg.normalize);
        let p = self.pooled.as_mut().expect("a pooled learner");
        let classes = p.classes;
        assert!(copies % group == 0, "{copies} copies in seed groups of {group}");
        if p.lives.is_empty() {
            p.lives = (0..copies).map(|_| (0..n).map(|_| Life::default()).collect()).collect();
        }
        assert_eq!(p.lives.len(), copies, "the number of environment copies is fixed");
        let acted = |t: &Transition<'_>, i: usize| t.live.is_none_or(|l| l[i]);
        if normalize {
            for t in ts {
                for i in (0..n).filter(|&i| acted(t, i)) {
                    self.rewards.push(p.rows[i] as usize, t.rewards[i] * scale);
                }
            }
        }
        let mut rows: Vec<Rows> = (0..classes).map(|_| Rows::default()).collect();
        let done = ts[0].done;
        for (k, t) in ts.iter().enumerate() {
            let seed_group = (k / group) as u32;
            for i in 0..n {
                let c = p.rows[i] as usize;
                let life = &mut p.lives[k][i];
                let cell = (i as u32, seed_group);
                if !acted(t, i) {
                    if life.len() > 0 {
                        rows[c].take_ended(life, d, gamma, cell);
                    }
                    continue;
                }
                let r = t.rewards[i] * scale;
                let r = if normalize { r / self.rewards.rms(c) } else { r };
                life.x.extend(shape.read(&t.obs, i));
                life.a.push_back(t.actions[i] as i64);
                life.r.push_back(r as f32);
                life.t.push_back(p.round);
                if done {
                    rows[c].take_ended(life, d, gamma, cell);
                } else if life.len() > steps {
                    rows[c].take_complete(life, d, steps, gamma, cell);
                }
            }
        }
        p.round = if done { 0 } else { p.round + 1 };
        let width = rows.iter().map(|r| r.a.len()).max().unwrap_or(0);
        if width == 0 {
            return Losses {
                skipped: true,
                ..Losses::default()
            };
        }
        // Padded to one width per class; padding rows weigh 0.
        let (mut x, mut boot) = (vec![0f32; classes * width * d], vec![0f32; classes * width * d]);
        let (mut a, mut weight) = (vec![0i64; classes * width], vec![0f32; classes * width]);
        for (c, r) in rows.iter().enumerate() {
            let m = r.a.len();
            x[c * width * d..(c * width + m) * d].copy_from_slice(&r.x);
            boot[c * width * d..(c * width + m) * d].copy_from_slice(&r.boot);
            a[c * width..c * width + m].copy_from_slice(&r.a);
            weight[c * width..c * width + m].fill(1.0 / m.max(1) as f32);
        }
        let (actors, critics) = (self.nets.actors.get(), self.nets.critics.get());
        let x = Tensor::<3>::from_data(TensorData::new(x, [classes, width, d]), &dev);
        let boot = Tensor::<3>::from_data(TensorData::new(boot, [classes, width, d]), &dev);
        let v_boot = critics.forward(boot).detach().into_data().try_to_vec::<f32>().expect("f32");
        let mut target = vec![0f32; classes * width];
        for (c, r) in rows.iter().enumerate() {
            for s in 0..r.a.len() {
                target[c * width + s] = r.partial[s] + r.discount[s] * v_boot[c * width + s];
            }
        }
        let logp = log_softmax(actors.forward(x.clone()), 2);
        let entropy = -(logp.clone().exp() * logp.clone()).sum_dim(2);
        let logp_a = logp.gather(2, Tensor::<3, Int>::from_data(TensorData::new(a, [classes, width, 1]), &dev));
        let v = critics.forward(x);
        let delta = Tensor::<3>::from_data(TensorData::new(target, [classes, width, 1]), &dev) - v;
        let mut adv = delta.clone().detach().into_data().try_to_vec::<f32>().expect("f32");
        if group > 1 {
            self.relative_to_groups(&rows, width, &mut adv);
        }
        let weight = Tensor::<3>::from_data(TensorData::new(weight, [classes, width, 1]), &dev);
        let adv = Tensor::<3>::from_data(TensorData::new(adv, [classes, width, 1]), &dev);
        let critic_loss = (delta.powi_scalar(2) * weight.clone()).sum();
        let actor_loss = -(logp_a * adv * weight.clone()).sum();
        let entropy_sum = (entropy * weight).sum();
        self.update(actor_loss, critic_loss, entropy_sum)
    }

    /// Each TD error minus the mean of the same agent's in the same round of the other copies
    /// of its seed learned from in this update, then divided by its class's running standard
    /// deviation of such relative errors; a round with no twin here keeps its error, divided by
    /// the same deviation and not counted in it.
    fn relative_to_groups(&mut self, rows: &[Rows], width: usize, adv: &mut [f32]) {
        let mut order: Vec<(usize, usize)> = rows
            .iter()
            .enumerate()
            .flat_map(|(c, r)| (0..r.a.len()).map(move |s| (c, s)))
            .collect();
        order.sort_by_key(|&(c, s)| rows[c].cell[s]);
        let of = |q: usize| order[q].0 * width + order[q].1;
        let mut relative = adv.to_vec();
        let mut at = 0;
        while at < order.len() {
            let key = |q: usize| rows[order[q].0].cell[order[q].1];
            let end = (at..order.len()).find(|&q| key(q) != key(at)).unwrap_or(order.len());
            if end - at > 1 {
                let sum: f32 = (at..end).map(|q| adv[of(q)]).sum();
                let others = (end - at - 1) as f32;
                for q in at..end {
                    relative[of(q)] = adv[of(q)] - (sum - adv[of(q)]) / others;
                    self.relative.push(order[q].0, f64::from(relative[of(q)]));
                }
            }
            at = end;
        }
        for &(c, s) in &order {
            adv[c * width + s] = relative[c * width + s] / self.relative.std(c) as f32;
        }
    }

    /// Fresh pooled learners for a world whose agents arrive and leave (`classes`: each
    /// possible agent's class; see the module documentation), `planned_episodes` the entropy
    /// schedule's horizon; weights drawn from `seed`.
    pub fn pooled(shape: Shape, cfg: &ActorCriticConfig, seed: u64, classes: Vec<usize>, planned_episodes: u64) -> Self {
        let mut ac = ActorCritic::build(shape, cfg, seed, Some(Pooled::new(classes)));
        ac.planned_rounds = planned_episodes;
        ac
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::base::{Learner, Policy};
    use env::world::Observations;

    fn life(rewards: &[f32], d: usize) -> Life {
        let mut l = Life::default();
        for (t, &r) in rewards.iter().enumerate() {
            l.x.extend(std::iter::repeat_n(t as f32, d));
            l.a.push_back(t as i64);
            l.r.push_back(r);
            l.t.push_back(t as u32 + 10);
        }
        l
    }

    #[test]
    fn a_complete_round_bootstraps_from_the_state_n_rounds_on_and_an_ended_life_from_nothing() {
        // Rewards 1, 2, 3 at gamma 0.5, 2-step returns: round 0's target is 1 + 0.5 * 2 plus
        // 0.25 V(state of round 2); when the life then ends, rounds 1 and 2 get 2 + 0.5 * 3
        // and 3, with no bootstrap.
        let (d, mut rows) = (2, Rows::default());
        let mut l = life(&[1.0, 2.0, 3.0], d);
        rows.take_complete(&mut l, d, 2, 0.5, (7, 1));
        assert_eq!((rows.partial.clone(), rows.discount.clone()), (vec![2.0], vec![0.25]));
        assert_eq!(rows.boot, vec![2.0, 2.0], "the state of round 2");
        assert_eq!(
            (rows.x.clone(), rows.a.clone(), rows.cell.clone()),
            (vec![0.0, 0.0], vec![0], vec![(7, 1, 10)])
        );
        assert_eq!(l.len(), 2);
        rows.take_ended(&mut l, d, 0.5, (7, 1));
        assert_eq!(rows.partial, vec![2.0, 3.5, 3.0]);
        assert_eq!(rows.discount, vec![0.25, 0.0, 0.0]);
        assert_eq!(rows.x, vec![0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
        assert_eq!(rows.cell[1..], [(7, 1, 11), (7, 1, 12)]);
        assert_eq!((l.len(), l.x.len()), (0, 0));
    }

    #[test]
    fn a_shorter_life_is_learned_as_better() {
        // One agent in 2 copies of one seed, paid -1 every round it stays (as a Gavel job is
        // paid minus its hours): level 1 leaves after this round, level 0 stays, for at most 6
        // rounds. With the rewards' mean taken out (the fixed agents' normalisation) staying
        // would cost nothing on average (tried: it learned to stay, p = 0.9995); what
        // a life is worth is its length.
        let shape = Shape::new(1, 1, 1, 2);
        let cfg = ActorCriticConfig {
            group: 2,
            steps: 1,
            actor_lr: 3e-3,
            entropy: crate::learners::ppo::Bonus::Of(0.0),
            ..ActorCriticConfig::default()
        };
        let mut ac = ActorCritic::pooled(shape, &cfg, 3, vec![0], 0);
        let obs = [0.5f32];
        for e in 0..150 {
            ac.begin_episode(e);
            let mut alive = [true, true];
            for t in 0..6 {
                let mut actions = vec![vec![0usize]; 2];
                let views = [Observations { data: &obs, dim: 1 }, Observations { data: &obs, dim: 1 }];
                ac.act_many(&views, &[&[0.0], &[0.0]], &mut actions);
                let live: Vec<[bool; 1]> = alive.iter().map(|&a| [a]).collect();
                // -1 a round, give or take 0.5.
                let noise = |k: usize| ((e as usize * 7 + t * 3 + k * 5) % 11) as f64 / 10.0 - 0.5;
                let rewards: Vec<[f64; 1]> = (0..2).map(|k| [if alive[k] { -1.0 + noise(k) } else { 0.0 }]).collect();
                let ts: Vec<Transition<'_>> = (0..2)
                    .map(|k| Transition {
                        live: Some(&live[k]),
                        ..crate::learners::testing::transition(1, &obs, &actions[k], &rewards[k], t == 5)
                    })
                    .collect();
                ac.learn_many(&ts);
                for k in 0..2 {
                    alive[k] &= actions[k][0] == 0;
                }
            }
        }
        let p = ac.probabilities(Observations { data: &obs, dim: 1 });
        assert!(p[1] > 0.9, "leaving at once should be learned: p = {p:?}");
    }

    #[test]
    fn errors_are_relative_to_the_same_agent_in_the_same_round_of_its_seed_only() {
        // Agent 0 acted in round 5 of two copies of seed group 0 (errors 1 and 3): each minus
        // the other's. Agent 1 acted there in one copy only: its error stays, scaled the same.
        let cfg = ActorCriticConfig::default();
        let mut ac = ActorCritic::pooled(Shape::new(2, 1, 1, 3), &cfg, 1, vec![0, 0], 1);
        let rows = vec![Rows {
            a: vec![0; 3],
            cell: vec![(0, 0, 5), (1, 0, 5), (0, 0, 5)],
            ..Rows::default()
        }];
        let mut adv = vec![1.0, 7.0, 3.0];
        ac.relative_to_groups(&rows, 3, &mut adv);
        let scale = adv[2] / 2.0;
        assert!(scale > 0.0);
        for (got, want) in adv.iter().zip([-2.0, 7.0, 2.0]) {
            assert!((got / scale - want).abs() < 1e-5, "{adv:?}");
        }
    }

    #[test]
    fn learns_from_the_agents_that_acted_and_only_from_them() {
        // As PPO's pooled learner, with 2-step returns: nothing is ready in rounds 0 and 1
        // (round 2 completes round 0's return; round 3 ends agents 0 and 1's lives) nor in
        // round 4.
        let shape = Shape::new(4, 1, 1, 4);
        let cfg = ActorCriticConfig {
            group: 2,
            steps: 2,
            actor_lr: 3e-3,
            ..ActorCriticConfig::default()
        };
        let mut ac = ActorCritic::pooled(shape, &cfg, 5, vec![0; 4], 60);
        crate::learners::testing::come_and_go(&mut ac, 15, |t| [0, 1, 4].contains(&t));
        // The entropy schedule counts episodes: a quarter of 60, half of its span of 30.
        assert!((ac.entropy_coefficient() - 0.005).abs() < 1e-12, "{}", ac.entropy_coefficient());
        crate::learners::testing::come_and_go(&mut ac, 45, |t| [0, 1, 4].contains(&t));
        let obs = vec![0.5f32; 4];
        let p = ac.probabilities(Observations { data: &obs, dim: 1 });
        assert!(p[2] > 0.9 && p[0] < 0.05, "p = {:?}", &p[..4]);
        // The entropy schedule counted the episodes: 60 of 60 planned, the bonus annealed away.
        assert_eq!(ac.entropy_coefficient(), 0.0);
        let saved = ac.save().unwrap();
        let mut again = ActorCritic::pooled(shape, &cfg, 5, vec![0; 4], 60);
        again.load(&saved).unwrap();
        assert_eq!(again.probabilities(Observations { data: &obs, dim: 1 }), p);
        // Every agent of the class exports the class's actor.
        assert_eq!(ac.export_weights(0).unwrap(), ac.export_weights(3).unwrap());
    }
}

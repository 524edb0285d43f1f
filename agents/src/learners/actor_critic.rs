//! One-step actor-critic (thesis 4.2.2, SPEC 4) for all agents at once, with burn: every
//! agent's actor and critic are its own slice of the stacked networks of [`super::nets`].
//!
//! Per round, agent i with state s, action a, reward r and next state s':
//! `delta = scale * r + gamma * V(s') - V(s)` (s' detached; the episode only ever truncates,
//! so the bootstrap is never cut), critic loss `delta^2`, actor loss `-log pi(a|s) * delta`
//! (delta detached) minus `entropy * H(pi(.|s))`.

use super::base::{limits, ErrorIn, Exported, Features, Init, Learner, LearnerConfig, Losses, Policy, Transition};
use super::nets::{self, choose, device, episode_streams, scalar, ActorPolicy, Actors, Critics, Nets, Shape};
use super::parts::Parts;
use crate::error::failed;
use burn::optim::GradientsParams;
use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::{Device, Int, Tensor, TensorData};
use env::config::{ConfigError, Scenario};
use env::rng::stream;
use env::world::Observations;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

/// `[learner.actor_critic]` (defaults: the thesis code, SPEC 4).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ActorCriticConfig {
    /// Actor hidden layer width (one tanh layer).
    pub actor_hidden: usize,
    /// Critic hidden layer widths (two ReLU layers).
    pub critic_hidden: [usize; 2],
    /// Actor learning rate (AdamW).
    pub actor_lr: f64,
    /// Critic learning rate (AdamW).
    pub critic_lr: f64,
    /// Discount.
    pub gamma: f64,
    /// Entropy bonus coefficient.
    pub entropy: f64,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Reward multiplier applied before the TD error.
    pub reward_scale: f64,
    /// State features.
    pub features: Features,
}

impl Default for ActorCriticConfig {
    fn default() -> Self {
        Self {
            actor_hidden: 256,
            critic_hidden: [64, 64],
            actor_lr: 1e-3,
            critic_lr: 2.5e-3,
            gamma: 0.99,
            entropy: 0.01,
            weight_decay: 1e-4,
            reward_scale: 1.0,
            features: Features::Spec,
        }
    }
}

impl LearnerConfig for ActorCriticConfig {
    /// Widths (before any tensor of that size exists) and rates.
    fn validate(&self, _sc: &Scenario, _chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        let ac = self;
        if ac.actor_hidden == 0 || ac.critic_hidden.contains(&0) {
            return Err(err("learner.actor_critic", "hidden layer widths must be at least 1".into()));
        }
        // Checked before any tensor of that size is allocated.
        for (key, h) in [
            ("actor_hidden", ac.actor_hidden),
            ("critic_hidden[0]", ac.critic_hidden[0]),
            ("critic_hidden[1]", ac.critic_hidden[1]),
        ] {
            if h > limits::MAX_HIDDEN {
                return Err(err(
                    &format!("learner.actor_critic.{key}"),
                    format!("{h} is more than the limit of {}", limits::MAX_HIDDEN),
                ));
            }
        }
        for (key, v) in [
            ("actor_lr", ac.actor_lr),
            ("critic_lr", ac.critic_lr),
            ("reward_scale", ac.reward_scale),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(err(
                    &format!("learner.actor_critic.{key}"),
                    format!("must be a finite number > 0, got {v}"),
                ));
            }
        }
        for (key, v) in [("entropy", ac.entropy), ("weight_decay", ac.weight_decay)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(err(
                    &format!("learner.actor_critic.{key}"),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        if !(0.0..=1.0).contains(&ac.gamma) {
            return Err(err("learner.actor_critic.gamma", format!("must be in [0, 1], got {}", ac.gamma)));
        }
        Ok(())
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let (obs, used) = run.inputs(self.features);
        let levels = run.scenario.action_levels().len();
        Box::new(ActorCritic::new(Shape::new(run.scenario.n(), obs, used, levels), self, run.seed))
    }

    fn features(&self) -> Features {
        self.features
    }

    fn exported(&self, _sc: &Scenario) -> Exported {
        Exported::Actor { hidden: self.actor_hidden }
    }

    fn learns_from_rewards(&self) -> bool {
        true
    }
}

/// The parts of a saved actor-critic state: its networks ([`Nets::parts`]).
const PREFIX: &str = "actor_critic";

/// Actor-critic learners for n agents, batched.
pub struct ActorCritic {
    cfg: ActorCriticConfig,
    device: Device,
    nets: Nets,
    rngs: Vec<SmallRng>,
}

impl ActorCritic {
    /// Fresh networks for `shape`; weights drawn from `seed`.
    pub fn new(shape: Shape, cfg: &ActorCriticConfig, seed: u64) -> Self {
        let device = device();
        let Shape { n, d, k, .. } = shape;
        let actors = Actors::new(n, d, cfg.actor_hidden, k, seed, &device);
        let critics = Critics::new(n, d, cfg.critic_hidden, seed, &device);
        Self {
            cfg: cfg.clone(),
            nets: Nets::new(shape, actors, critics, cfg.weight_decay),
            device,
            rngs: (0..n).map(|i| stream(0, env::rng::names::POLICY, i as u64)).collect(),
        }
    }

    /// Every agent's action probabilities for `obs`, `[n][k]` row-major.
    pub fn probabilities(&self, obs: Observations<'_>) -> Vec<f32> {
        let logits = self.nets.actors.get().forward(self.nets.shape.states(obs, &self.device).detach());
        let p = softmax(logits, 2).into_data();
        p.as_slice::<f32>().expect("f32 probabilities").to_vec()
    }
}

impl Policy for ActorCritic {
    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let p = self.probabilities(obs);
        choose(&p, self.nets.shape.k, greedy, &mut self.rngs, actions);
    }

    fn begin_episode(&mut self, episode_seed: u64) {
        self.rngs = episode_streams(self.nets.shape.n, episode_seed);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(ActorPolicy::of(self.nets.actors.get(), self.nets.shape, &self.rngs))
    }
}

fn column(values: impl Iterator<Item = f32>, n: usize, device: &Device) -> Tensor<3> {
    Tensor::from_data(TensorData::new(values.collect::<Vec<f32>>(), [n, 1, 1]), device)
}

impl Learner for ActorCritic {
    fn act_many(&mut self, obs: &[Observations<'_>], _budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        nets::act_many(self.nets.actors.get(), obs, self.nets.shape, &mut self.rngs, actions);
    }

    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        let (shape, dev) = (self.nets.shape, self.device.clone());
        let n = shape.n;
        let (actors, critics) = (self.nets.actors.get(), self.nets.critics.get());
        let x = shape.states(t.obs, &dev);
        let x_next = shape.states(t.next_obs, &dev).detach();

        // Actor: log pi(a|s) and the entropy of pi(.|s).
        let logp = log_softmax(actors.forward(x.clone()), 2);
        let entropy = -(logp.clone().exp() * logp.clone()).sum_dim(2);
        let a = Tensor::<3, Int>::from_data(
            TensorData::new(t.actions.iter().map(|&a| a as i64).collect::<Vec<_>>(), [n, 1, 1]),
            &dev,
        );
        let logp_a = logp.gather(2, a);

        // Critic: one-step TD error.
        let v = critics.forward(x);
        let v_next = critics.forward(x_next).detach();
        let r = column(t.rewards.iter().map(|&r| (r * self.cfg.reward_scale) as f32), n, &dev);
        let delta = r + v_next * (self.cfg.gamma as f32) - v;

        let critic_loss = delta.clone().powi_scalar(2).sum();
        let actor_loss = -(logp_a * delta.detach()).sum();
        let entropy_sum = entropy.sum();
        let total = actor_loss.clone() + critic_loss.clone() - entropy_sum.clone() * (self.cfg.entropy as f32);
        let mut grads = total.backward();
        let ga = GradientsParams::from_module(&mut grads, actors);
        let gc = GradientsParams::from_module(&mut grads, critics);
        self.nets.actors.step(self.cfg.actor_lr, ga);
        self.nets.critics.step(self.cfg.critic_lr, gc);
        let per = n as f64;
        Losses {
            actor: scalar(actor_loss) / per,
            critic: scalar(critic_loss) / per,
            entropy: scalar(entropy_sum) / per,
            ..Losses::default()
        }
    }

    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
        self.nets.actors.get().export(self.nets.shape.n, agent)
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        Ok(self.nets.save(PREFIX)?.into_bytes())
    }

    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        let names = Nets::parts(PREFIX);
        let parts = Parts::read(bytes, &names.each_ref().map(String::as_str)).map_err(failed)?;
        self.nets.load(&parts, PREFIX, "actor-critic")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    use crate::learners::testing::learn_round;

    #[test]
    fn acting_for_many_copies_at_once_draws_what_one_act_per_copy_draws() {
        let (n, d, k) = (3, 4, 5);
        let cfg = ActorCriticConfig {
            actor_hidden: 8,
            ..ActorCriticConfig::default()
        };
        let (mut batched, mut looped) = (
            ActorCritic::new(Shape::new(n, d, d, k), &cfg, 7),
            ActorCritic::new(Shape::new(n, d, d, k), &cfg, 7),
        );
        batched.begin_episode(11);
        looped.begin_episode(11);
        let data: Vec<Vec<f32>> = (0..4)
            .map(|c| (0..n * d).map(|j| ((c * 31 + j * 7) % 10) as f32 / 10.0).collect())
            .collect();
        let obs: Vec<Observations<'_>> = data.iter().map(|x| Observations { data: x, dim: d }).collect();
        let budgets = vec![0.0; n];
        let b: Vec<&[f64]> = (0..4).map(|_| budgets.as_slice()).collect();
        for _ in 0..20 {
            let mut many = vec![vec![0; n]; 4];
            batched.act_many(&obs, &b, &mut many);
            let mut one = vec![vec![0; n]; 4];
            for (c, a) in one.iter_mut().enumerate() {
                looped.act(obs[c], &budgets, false, a);
            }
            assert_eq!(many, one);
        }
    }

    /// A contextual bandit: agent i is paid 1 for action `(i + s) % k` in state s, 0 otherwise.
    /// Every agent must learn its own mapping: a wrong sign, a wrong gather index or agents
    /// sharing parameters would all fail this.
    #[test]
    fn learns_a_per_agent_contextual_bandit() {
        let (n, d, k) = (3, 2, 4);
        let cfg = ActorCriticConfig {
            actor_hidden: 16,
            critic_hidden: [16, 16],
            actor_lr: 0.01,
            critic_lr: 0.01,
            gamma: 0.0,
            entropy: 0.0,
            ..ActorCriticConfig::default()
        };
        let mut ac = ActorCritic::new(Shape::new(n, d, d, k), &cfg, 5);
        ac.begin_episode(1);
        let budgets = vec![0.0; n];
        let obs_of = |s: usize| -> Vec<f32> { (0..n).flat_map(|_| if s == 0 { [1.0, 0.0] } else { [0.0, 1.0] }).collect() };
        let mut actions = vec![0; n];
        let mut rng = stream(3, "test", 0);
        for step in 0..1500 {
            let s = step % 2;
            let obs = obs_of(s);
            ac.act(Observations { data: &obs, dim: d }, &budgets, false, &mut actions);
            let rewards: Vec<f64> = (0..n).map(|i| if actions[i] == (i + s) % k { 1.0 } else { 0.0 }).collect();
            let next = obs_of(1 - s);
            let _ = rng.next_u64();
            learn_round(&mut ac, d, &obs, &next, &actions, &rewards);
        }
        for s in 0..2 {
            let obs = obs_of(s);
            ac.act(Observations { data: &obs, dim: d }, &budgets, true, &mut actions);
            assert_eq!(actions, (0..n).map(|i| (i + s) % k).collect::<Vec<_>>(), "state {s}");
        }
        // Saving and loading keeps the policy (and the optimizer) exactly.
        let bytes = ac.save().unwrap();
        let mut other = ActorCritic::new(Shape::new(n, d, d, k), &cfg, 99);
        other.load(&bytes).unwrap();
        let obs = obs_of(0);
        assert_eq!(
            ac.probabilities(Observations { data: &obs, dim: d }),
            other.probabilities(Observations { data: &obs, dim: d })
        );
        assert!(other.load(&bytes[..bytes.len() - 10]).is_err());
        assert!(ActorCritic::new(Shape::new(n + 1, d, d, k), &cfg, 1)
            .load(&bytes)
            .unwrap_err()
            .to_string()
            .contains("this run has"));
    }
}

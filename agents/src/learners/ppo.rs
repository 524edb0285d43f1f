//! PPO for every agent at once (SPEC 4), read top to bottom like CleanRL's `ppo.py`.
//!
//! IPPO: every agent has its own actor and critic (the actor-critic's stacked networks, one
//! slice of every weight tensor per agent), trained on its own reward. With
//! `critic = "central"` (MAPPO) each agent's critic reads every agent's features (the global
//! state) instead of its own; the actors stay decentralised.
//!
//! The loop: act by sampling for `rollout` rounds (0: a whole episode), then
//! 1. values and log-probabilities of the rollout under the networks that acted;
//! 2. GAE: `delta_t = r_t + gamma V(s_{t+1}) - V(s_t)`, `A_t = delta_t + gamma lambda A_{t+1}`,
//!    returns `A_t + V(s_t)`. Episodes here only ever end by truncation (a round limit), so
//!    the last step bootstraps from `V(s_T)` of the observation after it, never from 0;
//! 3. `epochs` passes over the rollout in `minibatches` shuffled minibatches (one permutation
//!    for all agents, from a named stream, so results depend only on the seed), each with
//!    - advantages normalised per agent within the minibatch,
//!    - the clipped surrogate `max(-A ratio, -A clip(ratio, 1 - eps, 1 + eps))`,
//!    - the value loss `0.5 (V - R)^2`, the entropy bonus,
//!    - one AdamW step after clipping each agent's own gradient to a global norm;
//! 4. the learning rate anneals linearly to 0 over the run's updates.
//!
//! The loss is a sum of per-agent losses that share no parameter, so every agent's update is
//! its own (the gradient clip is per agent for the same reason).

use super::limits;
use super::nets::{self, choose, device, episode_streams, scalar, ActorPolicy, Actors, Critics, Nets, Shape};
use super::parts::Parts;
use super::registry::{ErrorIn, Exported, Init, LearnerConfig};
use super::{Features, Learner, Losses, Policy, Transition};
use crate::error::failed;
use burn::module::{Module, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::{Device, Int, Tensor, TensorData};
use env::config::{ConfigError, Scenario};
use env::rng::{names, stream};
use env::world::Observations;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// Whose features a critic reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Critic {
    /// Its own agent's (IPPO).
    Local,
    /// Every agent's, concatenated (MAPPO).
    Central,
}

/// Whose actor parameters are shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Share {
    /// Every agent has its own actor.
    None,
    /// One actor per weight class.
    Class,
    /// One actor per weight class, reading the agent's id: what a one-hot agent index as an
    /// input adds to the hidden layer is a per-agent bias, which is how it is stored, so
    /// exported agents read what the others do.
    ClassId,
}

/// `[learner.ppo]` (defaults: CleanRL's `ppo.py`, as SPEC 4 lists them, with three decisions
/// of ours where SPEC 4 says otherwise:
/// - the actor is the actor-critic's network (one tanh layer of 64, not two), and the critic
///   its 64-64 ReLU critic: one stacked implementation, and one exported-agent runtime that
///   runs either learner's actors;
/// - `rollout = 0`, a whole episode (300 rounds per copy), not 128: every update sees
///   complete episodes with one bootstrap at the truncation, instead of 128, 128 and 44 rounds
///   per 300-round episode; `rollout = 128` is SPEC 4's;
/// - `train.envs` defaults to 1 for every learner, so switching `learner.kind` changes nothing
///   else; the benchmarks and the figures in agents/README use 8, SPEC 4's.)
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PpoConfig {
    /// Actor hidden width (one tanh layer, as the actor-critic's: exports the same way).
    pub actor_hidden: usize,
    /// Critic hidden widths (two ReLU layers).
    pub critic_hidden: [usize; 2],
    /// Learning rate (AdamW, both networks).
    pub lr: f64,
    /// Anneal the learning rate linearly to 0 over the run.
    pub anneal_lr: bool,
    /// Discount.
    pub gamma: f64,
    /// GAE lambda.
    pub gae_lambda: f64,
    /// Rounds per rollout (0: one whole episode).
    pub rollout: usize,
    /// Minibatches per epoch.
    pub minibatches: usize,
    /// Passes over each rollout.
    pub epochs: usize,
    /// Surrogate clipping coefficient.
    pub clip: f64,
    /// Entropy bonus coefficient.
    pub entropy: f64,
    /// Value loss coefficient.
    pub vf_coef: f64,
    /// Per-agent gradient norm limit.
    pub max_grad_norm: f64,
    /// Normalise advantages per agent within each minibatch.
    pub norm_adv: bool,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Reward multiplier.
    pub reward_scale: f64,
    /// Local (IPPO) or central (MAPPO) critics.
    pub critic: Critic,
    /// Actor parameters: one per agent, or one per weight class shared by its agents (the
    /// class is then implicit in the network; `env.observe_weight` also puts it in the input),
    /// with or without the agent's id as an input.
    pub share: Share,
    /// State features: the whole observation by default (budget share, utilities, backlog
    /// over arrival rate, and the configured extras such as `env.observe_burst`).
    pub features: Features,
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            actor_hidden: 64,
            critic_hidden: [64, 64],
            lr: 2.5e-4,
            anneal_lr: true,
            gamma: 0.99,
            gae_lambda: 0.95,
            rollout: 0,
            minibatches: 4,
            epochs: 4,
            clip: 0.2,
            entropy: 0.01,
            vf_coef: 0.5,
            max_grad_norm: 0.5,
            norm_adv: true,
            weight_decay: 0.0,
            reward_scale: 1.0,
            critic: Critic::Local,
            share: Share::None,
            features: Features::All,
        }
    }
}

impl LearnerConfig for PpoConfig {
    /// Widths (before any tensor exists, the central critic's input included), rates, counts
    /// and coefficients.
    fn validate(&self, sc: &Scenario, _chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        let p = self;
        let key = |k: &str| format!("learner.ppo.{k}");
        for (k, h) in [
            ("actor_hidden", p.actor_hidden),
            ("critic_hidden[0]", p.critic_hidden[0]),
            ("critic_hidden[1]", p.critic_hidden[1]),
        ] {
            if !(1..=limits::MAX_HIDDEN).contains(&h) {
                return Err(err(&key(k), format!("must be in [1, {}], got {h}", limits::MAX_HIDDEN)));
            }
        }
        if p.critic == crate::learners::ppo::Critic::Central {
            // Every agent's critic reads every agent's features: n x (n x d) x width weights.
            let cells = sc
                .n()
                .saturating_mul(sc.n())
                .saturating_mul(env::world::observation_dim(sc))
                .saturating_mul(p.critic_hidden[0]);
            if cells > limits::MAX_CENTRAL_CRITIC {
                return Err(err(
                    &key("critic"),
                    format!(
                        "a central critic here has {cells} first-layer weights, more than the limit of {}",
                        limits::MAX_CENTRAL_CRITIC
                    ),
                ));
            }
        }
        for (k, v) in [
            ("lr", p.lr),
            ("reward_scale", p.reward_scale),
            ("clip", p.clip),
            ("max_grad_norm", p.max_grad_norm),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(err(&key(k), format!("must be a finite number > 0, got {v}")));
            }
        }
        for (k, v) in [("entropy", p.entropy), ("vf_coef", p.vf_coef), ("weight_decay", p.weight_decay)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(err(&key(k), format!("must be a finite number >= 0, got {v}")));
            }
        }
        for (k, v) in [("gamma", p.gamma), ("gae_lambda", p.gae_lambda)] {
            if !(0.0..=1.0).contains(&v) {
                return Err(err(&key(k), format!("must be in [0, 1], got {v}")));
            }
        }
        for (k, v) in [("epochs", p.epochs), ("minibatches", p.minibatches)] {
            if !(1..=1000).contains(&v) {
                return Err(err(&key(k), format!("must be in [1, 1000], got {v}")));
            }
        }
        Ok(())
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let sc = run.scenario;
        let (obs, used) = run.inputs(self.features);
        // One update per rollout, and one at every episode's end.
        let rounds = u64::from(sc.file.env.rounds);
        let per_episode = if self.rollout == 0 {
            1
        } else {
            rounds.div_ceil(self.rollout as u64)
        };
        let ppo = Ppo::new(
            Shape::new(sc.n(), obs, used, sc.action_levels().len()),
            self,
            run.episodes.saturating_mul(per_episode),
            run.seed,
        );
        if self.share == Share::None {
            return Box::new(ppo);
        }
        // Shared actors: one per distinct weight, ascending.
        let ws = sc.weight_classes();
        let classes = sc
            .agents
            .iter()
            .map(|a| ws.iter().position(|&w| w == a.weight).expect("a class"))
            .collect();
        Box::new(ppo.shared(classes))
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

/// GAE over one agent's rollout of `T` rounds: `values` has `T + 1` entries (the last is the
/// bootstrap `V(s_T)`). Returns (advantages, returns).
pub fn gae(rewards: &[f32], values: &[f32], gamma: f32, lambda: f32) -> (Vec<f32>, Vec<f32>) {
    let t = rewards.len();
    assert_eq!(values.len(), t + 1, "values carry the bootstrap");
    let mut adv = vec![0.0; t];
    let mut next = 0.0;
    for s in (0..t).rev() {
        let delta = rewards[s] + gamma * values[s + 1] - values[s];
        next = delta + gamma * lambda * next;
        adv[s] = next;
    }
    let ret = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    (adv, ret)
}

/// Advantages normalised to mean 0 and (unbiased) standard deviation 1, as CleanRL does.
pub fn normalise(adv: &[f32]) -> Vec<f32> {
    let n = adv.len() as f32;
    let mean = adv.iter().sum::<f32>() / n;
    let var = adv.iter().map(|a| (a - mean).powi(2)).sum::<f32>() / (n - 1.0).max(1.0);
    adv.iter().map(|a| (a - mean) / (var.sqrt() + 1e-8)).collect()
}

/// The actors' loss terms, each a mean over the minibatch summed over agents: the clipped
/// surrogate `max(-A ratio, -A clip(ratio, 1 - eps, 1 + eps))` and the entropy.
///
/// # Shapes
/// every input `[n, batch, 1]`
pub fn policy_losses(new_logp: Tensor<3>, old_logp: Tensor<3>, adv: Tensor<3>, entropy: Tensor<3>, clip: f32) -> (Tensor<1>, Tensor<1>) {
    let ratio = (new_logp - old_logp).exp();
    let pg1 = -adv.clone() * ratio.clone();
    let pg2 = -adv * ratio.clamp(1.0 - clip, 1.0 + clip);
    let pg = pg1.max_pair(pg2).mean_dim(1).sum();
    let ent = entropy.mean_dim(1).sum();
    (pg, ent)
}

/// The critics' loss `0.5 (V - R)^2`, a mean over the minibatch summed over agents.
///
/// # Shapes
/// both inputs `[n, batch, 1]`
pub fn value_loss(value: Tensor<3>, ret: Tensor<3>) -> Tensor<1> {
    ((value - ret).powi_scalar(2) * 0.5).mean_dim(1).sum()
}

/// Scale each agent's slice of the gradients of `ids` so that agent's global norm is at most
/// `max_norm`.
fn clip_per_agent(grads: &mut GradientsParams, ids: &[ParamId], max_norm: f32) {
    let taken: Vec<(ParamId, Tensor<3>)> = ids.iter().filter_map(|&id| grads.remove::<3>(id).map(|g| (id, g))).collect();
    let Some(sq) = taken
        .iter()
        .map(|(_, g)| g.clone().powi_scalar(2).sum_dim(2).sum_dim(1))
        .reduce(|a, b| a + b)
    else {
        return;
    };
    let scale = (sq.sqrt() + 1e-6).recip().mul_scalar(max_norm).clamp_max(1.0);
    for (id, g) in taken {
        grads.register(id, g * scale.clone());
    }
}

/// Every agent's logits for `x: [n, batch, d]`, through its own actor or, with `rows` (each
/// agent's stacked slice), its class's.
fn logits(actors: &Actors, rows: Option<&[i64]>, x: Tensor<3>) -> Tensor<3> {
    match rows {
        None => actors.forward(x),
        Some(rows) => actors.forward_rows(x, rows),
    }
}

/// A saved PPO state: its networks ([`Nets::parts`]), then its update count.
const PREFIX: &str = "ppo";
const UPDATES: &str = "ppo/updates";

/// PPO learners for n agents, batched.
pub struct Ppo {
    cfg: PpoConfig,
    device: Device,
    /// Stacked actors (one per agent, or one per class: `rows` maps agents to them) and
    /// critics.
    nets: Nets,
    /// The actor row of every agent when actors are shared.
    rows: Option<Vec<i64>>,
    rngs: Vec<SmallRng>,
    seed: u64,
    /// Updates done, and planned over the run (for annealing).
    updates: u64,
    total_updates: u64,
    /// Environment copies the rollout comes from (set by the first round).
    copies: usize,
    /// The rollout: per round, per copy, every agent's first `d` features, action and reward.
    obs: Vec<f32>,
    actions: Vec<i64>,
    rewards: Vec<f32>,
}

impl Ppo {
    /// Fresh learners for `shape`, `total_updates` updates planned (the annealing horizon);
    /// weights from `seed`. Every agent has its own actor ([`Ppo::shared`] shares them).
    pub fn new(shape: Shape, cfg: &PpoConfig, total_updates: u64, seed: u64) -> Self {
        Self::with_actors(shape, cfg, total_updates, seed, None)
    }

    /// These learners with agents of a class (`classes[i]`, from 0) sharing one actor, fresh.
    pub fn shared(self, classes: Vec<usize>) -> Self {
        let cfg = self.cfg.clone();
        Self::with_actors(self.nets.shape, &cfg, self.total_updates, self.seed, Some(classes))
    }

    fn with_actors(shape: Shape, cfg: &PpoConfig, total_updates: u64, seed: u64, classes: Option<Vec<usize>>) -> Self {
        let device = device();
        let Shape { n, d, k, .. } = shape;
        let critic_in = match cfg.critic {
            Critic::Local => d,
            Critic::Central => n * d,
        };
        let stacked = classes.as_ref().map_or(n, |c| c.iter().max().map_or(1, |m| m + 1));
        let mut actors = Actors::new(stacked, d, cfg.actor_hidden, k, seed, &device);
        if cfg.share == Share::ClassId && classes.is_some() {
            actors = actors.with_ids(n);
        }
        let critics = Critics::new(n, critic_in, cfg.critic_hidden, seed, &device);
        Self {
            // AdamW (epsilon 1e-5, as CleanRL's), fused into one pass per tensor.
            nets: Nets::new(shape, actors, critics, cfg.weight_decay),
            rows: classes.map(|c| c.into_iter().map(|x| x as i64).collect()),
            device,
            rngs: (0..n).map(|i| stream(0, names::POLICY, i as u64)).collect(),
            seed,
            updates: 0,
            total_updates: total_updates.max(1),
            copies: 0,
            obs: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            cfg: cfg.clone(),
        }
    }

    /// One actor per agent on the plain device (acting, export): the stacked actors
    /// themselves, or the shared ones expanded.
    fn per_agent(&self, actors: &Actors) -> Actors {
        match &self.rows {
            None => actors.clone(),
            Some(rows) => actors.expanded(rows),
        }
    }

    /// Every agent's action probabilities, `[n][k]` row-major.
    pub fn probabilities(&self, obs: Observations<'_>) -> Vec<f32> {
        let x = self.nets.shape.states(obs, &self.device).detach();
        let p = softmax(logits(self.nets.actors.get(), self.rows.as_deref(), x), 2).into_data();
        p.as_slice::<f32>().expect("f32 probabilities").to_vec()
    }

    /// The stored rollout's features as `[n, K * T, d]`: agent-major, then copy, then round.
    fn features(&self, rounds: usize) -> Tensor<3> {
        let (n, d, copies) = (self.nets.shape.n, self.nets.shape.d, self.copies);
        let mut v = Vec::with_capacity(n * copies * rounds * d);
        for i in 0..n {
            for k in 0..copies {
                for t in 0..rounds {
                    let at = ((t * copies + k) * n + i) * d;
                    v.extend_from_slice(&self.obs[at..at + d]);
                }
            }
        }
        Tensor::from_data(TensorData::new(v, [n, copies * rounds, d]), &self.device)
    }

    /// The critics' input for actor features `x: [n, rows, d]`: the same, or (central) every
    /// agent's features concatenated, for every agent.
    fn critic_input(&self, x: Tensor<3>) -> Tensor<3> {
        match self.cfg.critic {
            Critic::Local => x,
            Critic::Central => {
                let [n, rows, d] = x.dims();
                // [n, rows, d] -> [rows, n * d] -> repeated for every agent.
                let global = x.swap_dims(0, 1).reshape([1, rows, n * d]);
                global.repeat_dim(0, n)
            }
        }
    }

    fn push(&mut self, ts: &[Transition<'_>]) {
        if self.copies == 0 {
            self.copies = ts.len();
        }
        assert_eq!(ts.len(), self.copies, "the number of environment copies is fixed");
        for t in ts {
            for i in 0..self.nets.shape.n {
                self.obs.extend_from_slice(&t.obs.get(i)[..self.nets.shape.d]);
            }
            self.actions.extend(t.actions.iter().map(|&a| a as i64));
            self.rewards.extend(t.rewards.iter().map(|&r| (r * self.cfg.reward_scale) as f32));
        }
    }

    /// One PPO update on the stored rollout; `next[k]` is copy k's observation after its last
    /// round.
    fn update(&mut self, next: &[Observations<'_>]) -> Losses {
        let (n, copies, dev) = (self.nets.shape.n, self.copies, self.device.clone());
        let rounds = self.rewards.len() / (n * copies);
        let rows = copies * rounds;

        // 1. What the acting networks said about the rollout (rows: copy-major, then round).
        let x = self.features(rounds);
        let xc = self.critic_input(x.clone());
        let xc_next = self.critic_input(self.nets.shape.states_many(next, &dev));
        let acts: Vec<i64> = (0..n)
            .flat_map(|i| (0..copies).flat_map(move |k| (0..rounds).map(move |t| (t * copies + k) * n + i)))
            .map(|at| self.actions[at])
            .collect();
        let a = Tensor::<3, Int>::from_data(TensorData::new(acts, [n, rows, 1]), &dev);
        let (actors, critics) = (self.nets.actors.get(), self.nets.critics.get());
        let ((values, v_next), old_logp) = rayon::join(
            || {
                let values = critics.forward(xc.clone()).detach().into_data().try_to_vec::<f32>().expect("f32");
                let v_next = critics.forward(xc_next).detach().into_data().try_to_vec::<f32>().expect("f32");
                (values, v_next)
            },
            || {
                log_softmax(logits(actors, self.rows.as_deref(), x.clone()), 2)
                    .gather(2, a.clone())
                    .detach()
            },
        );

        // 2. GAE per agent and copy, bootstrapped at the truncation.
        let (mut adv, mut ret) = (Vec::with_capacity(n * rows), Vec::with_capacity(n * rows));
        for i in 0..n {
            for k in 0..copies {
                let r: Vec<f32> = (0..rounds).map(|t| self.rewards[(t * copies + k) * n + i]).collect();
                let from = i * rows + k * rounds;
                let mut v = values[from..from + rounds].to_vec();
                v.push(v_next[i * copies + k]);
                let (ai, ri) = gae(&r, &v, self.cfg.gamma as f32, self.cfg.gae_lambda as f32);
                adv.extend(ai);
                ret.extend(ri);
            }
        }

        // 3. Epochs of shuffled minibatches.
        let frac = if self.cfg.anneal_lr {
            1.0 - self.updates as f64 / self.total_updates as f64
        } else {
            1.0
        };
        let lr = (self.cfg.lr * frac).max(0.0);
        let mb = rows.div_ceil(self.cfg.minibatches.max(1)).max(1);
        let mut order: Vec<usize> = (0..rows).collect();
        let mut rng = stream(self.seed, names::PPO_MINIBATCHES, self.updates);
        let batch = Batch {
            x,
            xc,
            a,
            old_logp,
            adv,
            ret,
            rows,
        };
        let mut sums = Losses::default();
        let mut steps = 0.0f64;
        for _epoch in 0..self.cfg.epochs {
            order.shuffle(&mut rng);
            for chunk in order.chunks(mb) {
                let [pg, vl, ent] = self.minibatch(&batch, chunk, lr);
                sums.actor += pg;
                sums.critic += vl;
                sums.entropy += ent;
                steps += 1.0;
            }
        }
        self.updates += 1;
        self.obs.clear();
        self.actions.clear();
        self.rewards.clear();
        let per = n as f64 * steps.max(1.0);
        Losses {
            actor: sums.actor / per,
            critic: sums.critic / per,
            entropy: sums.entropy / per,
            ..Losses::default()
        }
    }
}

/// A rollout ready for the epochs: features `[n, rows, d]` (critic input `xc`), actions and
/// their log-probabilities under the acting networks `[n, rows, 1]`, advantages and returns
/// (`[agent][row]`).
struct Batch {
    x: Tensor<3>,
    xc: Tensor<3>,
    a: Tensor<3, Int>,
    old_logp: Tensor<3>,
    adv: Vec<f32>,
    ret: Vec<f32>,
    rows: usize,
}

impl Ppo {
    /// One gradient step on the rows `chunk` of `b`: the losses ([`policy_losses`], [`value_loss`]), the
    /// per-agent clip, AdamW at `lr`. Returns (surrogate, value, entropy).
    ///
    /// The actors' loss (surrogate, entropy) and the critics' (value) share no parameter, so
    /// their gradients are those of the summed loss: the two steps run side by side
    /// (`rayon::join`), each the same sequential computation on any number of threads.
    fn minibatch(&mut self, b: &Batch, chunk: &[usize], lr: f64) -> [f64; 3] {
        let (n, dev) = (self.nets.shape.n, self.device.clone());
        let idx = Tensor::<1, Int>::from_data(
            TensorData::new(chunk.iter().map(|&t| t as i64).collect::<Vec<_>>(), [chunk.len()]),
            &dev,
        );
        let pick = |v: &[f32], norm: bool| -> Tensor<3> {
            let mut out = Vec::with_capacity(n * chunk.len());
            for i in 0..n {
                let col: Vec<f32> = chunk.iter().map(|&t| v[i * b.rows + t]).collect();
                out.extend(if norm { normalise(&col) } else { col });
            }
            Tensor::from_data(TensorData::new(out, [n, chunk.len(), 1]), &dev)
        };
        let adv = pick(&b.adv, self.cfg.norm_adv && chunk.len() > 1);
        let ret = pick(&b.ret, false);
        let cfg = &self.cfg;
        let (rows, actor_net, critic_net) = (self.rows.as_deref(), &mut self.nets.actors, &mut self.nets.critics);
        let max_norm = cfg.max_grad_norm as f32;
        let ((pg, ent), vl) = rayon::join(
            || {
                let actors = actor_net.get();
                let logp = log_softmax(logits(actors, rows, b.x.clone().select(1, idx.clone())), 2);
                let entropy = -(logp.clone().exp() * logp.clone()).sum_dim(2);
                let new_logp = logp.gather(2, b.a.clone().select(1, idx.clone()));
                let (pg, ent) = policy_losses(new_logp, b.old_logp.clone().select(1, idx.clone()), adv, entropy, cfg.clip as f32);
                let mut grads = (pg.clone() - ent.clone() * (cfg.entropy as f32)).backward();
                let mut ga = GradientsParams::from_module(&mut grads, actors);
                clip_per_agent(&mut ga, &actors.ids(), max_norm);
                // Shared actors are clipped per class (above); the id biases per agent.
                if let Some(id) = actors.ids_param() {
                    clip_per_agent(&mut ga, &[id], max_norm);
                }
                actor_net.step(lr, ga);
                (scalar(pg), scalar(ent))
            },
            || {
                let critics = critic_net.get();
                let vl = value_loss(critics.forward(b.xc.clone().select(1, idx.clone())), ret);
                let mut grads = (vl.clone() * (cfg.vf_coef as f32)).backward();
                let mut gc = GradientsParams::from_module(&mut grads, critics);
                clip_per_agent(&mut gc, &critics.ids(), max_norm);
                critic_net.step(lr, gc);
                scalar(vl)
            },
        );
        [pg, vl, ent]
    }
}

impl Policy for Ppo {
    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let p = self.probabilities(obs);
        choose(&p, self.nets.shape.k, greedy, &mut self.rngs, actions);
    }

    fn begin_episode(&mut self, episode_seed: u64) {
        self.rngs = episode_streams(self.nets.shape.n, episode_seed);
    }

    fn fork(&self) -> Box<dyn Policy> {
        let actors = self.per_agent(&self.nets.actors.get().valid());
        Box::new(ActorPolicy::of(&actors, self.nets.shape, &self.rngs))
    }
}

impl Learner for Ppo {
    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        self.learn_many(std::slice::from_ref(t))
    }

    fn act_many(&mut self, obs: &[Observations<'_>], _budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        // Acting needs no graph: the plain-device view of the actors records nothing.
        let actors = self.per_agent(&self.nets.actors.get().valid());
        nets::act_many(&actors, obs, self.nets.shape, &mut self.rngs, actions);
    }

    fn learn_many(&mut self, ts: &[Transition<'_>]) -> Losses {
        self.push(ts);
        let rounds = self.rewards.len() / (self.nets.shape.n * self.copies);
        if ts[0].done || (self.cfg.rollout > 0 && rounds >= self.cfg.rollout) {
            let next: Vec<Observations<'_>> = ts.iter().map(|t| t.next_obs).collect();
            self.update(&next)
        } else {
            Losses {
                skipped: true,
                ..Losses::default()
            }
        }
    }

    fn export_weights(&self, agent: usize) -> crate::Result<Vec<f32>> {
        self.per_agent(&self.nets.actors.get().valid()).export(self.nets.shape.n, agent)
    }

    fn save(&self) -> crate::Result<Vec<u8>> {
        Ok(self.nets.save(PREFIX)?.add_u64(UPDATES, &[self.updates]).into_bytes())
    }

    fn load(&mut self, bytes: &[u8]) -> crate::Result<()> {
        let names = Nets::parts(PREFIX);
        let mut wanted: Vec<&str> = names.iter().map(String::as_str).collect();
        wanted.push(UPDATES);
        let parts = Parts::read(bytes, &wanted).map_err(failed)?;
        self.nets.load(&parts, PREFIX, "PPO")?;
        self.updates = Parts::u64s(parts[5], UPDATES).map_err(failed)?.first().copied().unwrap_or(0);
        self.obs.clear();
        self.actions.clear();
        self.rewards.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::testing::learn_round;

    fn t3(v: &[f32], n: usize) -> Tensor<3> {
        let b = v.len() / n;
        Tensor::from_data(TensorData::new(v.to_vec(), [n, b, 1]), &device())
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn gae_matches_a_hand_computation_and_bootstraps_the_truncation() {
        // gamma 0.9, lambda 0.8, rewards 1, 0, 2, values 0.5, 1.0, -0.5, bootstrap 2.0:
        // delta_2 = 2 + 0.9 * 2.0 + 0.5 = 4.3;          A_2 = 4.3
        // delta_1 = 0 + 0.9 * -0.5 - 1.0 = -1.45;       A_1 = -1.45 + 0.72 * 4.3 = 1.646
        // delta_0 = 1 + 0.9 * 1.0 - 0.5 = 1.4;          A_0 = 1.4 + 0.72 * 1.646 = 2.58512
        let (adv, ret) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 2.0], 0.9, 0.8);
        for (got, want) in adv.iter().zip([2.58512, 1.646, 4.3]) {
            assert!(close(f64::from(*got), want), "{adv:?}");
        }
        for (got, want) in ret.iter().zip([3.08512, 2.646, 3.8]) {
            assert!(close(f64::from(*got), want), "{ret:?}");
        }
        // Truncation, not termination: the bootstrap value reaches the last advantage.
        let (cut, _) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 0.0], 0.9, 0.8);
        assert!(close(f64::from(adv[2] - cut[2]), 0.9 * 2.0));
        // lambda 0 is the one-step TD error; lambda 1 the discounted return minus V.
        let (td, _) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 2.0], 0.9, 0.0);
        assert!(close(f64::from(td[1]), -1.45));
        let (mc, _) = gae(&[1.0, 0.0, 2.0], &[0.5, 1.0, -0.5, 2.0], 0.9, 1.0);
        assert!(close(f64::from(mc[0]), 1.0 + 0.0 + 0.81 * 2.0 + 0.729 * 2.0 - 0.5));
    }

    #[test]
    fn normalised_advantages_have_mean_0_and_unbiased_sd_1() {
        assert_eq!(normalise(&[1.0, 2.0, 3.0]), vec![-1.0, 0.0, 1.0]);
    }

    #[test]
    fn each_loss_term_matches_a_hand_computation() {
        // Agent 0: ratios 1.5 and 0.5 (clip 0.2), advantages +1 and -1:
        //   max(-1 * 1.5, -1 * 1.2) = -1.2;  max(+1 * 0.5, +1 * 0.8) = 0.8;  mean -0.2.
        //   values 1 and 3 against returns 2 and 2: 0.5 * 1 each, mean 0.5. Entropy mean 0.4.
        // Agent 1: ratios 1, advantages 2 and 4: mean -3; values = returns; entropy 1.
        // Sums over agents: -3.2, 0.5, 1.4.
        let n = 2;
        let new = t3(&[1.5f32.ln(), 0.5f32.ln(), 0.0, 0.0], n);
        let old = t3(&[0.0; 4], n);
        let adv = t3(&[1.0, -1.0, 2.0, 4.0], n);
        let ent = t3(&[0.3, 0.5, 1.0, 1.0], n);
        let value = t3(&[1.0, 3.0, 7.0, 7.0], n);
        let ret = t3(&[2.0, 2.0, 7.0, 7.0], n);
        let (pg, e) = policy_losses(new, old, adv, ent, 0.2);
        let v = value_loss(value, ret);
        assert!(close(scalar(pg), -3.2));
        assert!(close(scalar(v), 0.5));
        assert!(close(scalar(e), 1.4));
    }

    #[test]
    fn gradient_clipping_is_per_agent() {
        // Agent 0's gradient has norm 5 (3, 4), agent 1's 0.1: with a limit of 1, agent 0's is
        // scaled to norm 1 and agent 1's is left alone.
        let dev = device();
        let id = ParamId::new();
        let mut grads = GradientsParams::new();
        grads.register(
            id,
            Tensor::<3>::from_data(TensorData::new(vec![3.0f32, 4.0, 0.06, 0.08], [2, 1, 2]), &dev),
        );
        clip_per_agent(&mut grads, &[id], 1.0);
        let g = grads.get::<3>(id).unwrap().into_data().try_to_vec::<f32>().unwrap();
        for (got, want) in g.iter().zip([0.6, 0.8, 0.06, 0.08]) {
            assert!(close(f64::from(*got), want), "{g:?}");
        }
    }

    /// A contextual bandit: agent i is paid 1 for action `(i + s) % k` in state s. A sign
    /// error in the surrogate, a wrong gather, or agents sharing parameters all fail it.
    fn bandit(cfg: &PpoConfig, rounds: usize) -> Ppo {
        let (n, d, k) = (3, 2, 4);
        let mut ppo = Ppo::new(Shape::new(n, d, d, k), cfg, 1, 5);
        ppo.begin_episode(1);
        let budgets = vec![0.0; n];
        let mut actions = vec![0; n];
        let mut rng = stream(3, "test", 0);
        let obs_of = |s: usize| -> Vec<f32> { (0..n).flat_map(|_| if s == 0 { [1.0, 0.0] } else { [0.0, 1.0] }).collect() };
        let mut s = 0;
        for _ in 0..rounds {
            let obs = obs_of(s);
            ppo.act(Observations { data: &obs, dim: d }, &budgets, false, &mut actions);
            let rewards: Vec<f64> = (0..n).map(|i| if actions[i] == (i + s) % k { 1.0 } else { 0.0 }).collect();
            let next_s = usize::from(env::rng::unit(rand::Rng::next_u64(&mut rng)) < 0.5);
            let next = obs_of(next_s);
            learn_round(&mut ppo, d, &obs, &next, &actions, &rewards);
            s = next_s;
        }
        ppo
    }

    fn bandit_config() -> PpoConfig {
        PpoConfig {
            actor_hidden: 16,
            critic_hidden: [16, 16],
            lr: 0.01,
            anneal_lr: false,
            gamma: 0.0,
            gae_lambda: 0.0,
            rollout: 64,
            entropy: 0.0,
            ..PpoConfig::default()
        }
    }

    #[test]
    fn learns_a_per_agent_contextual_bandit() {
        let cfg = bandit_config();
        let ppo = bandit(&cfg, 64 * 40);
        let (n, d, k) = (3, 2, 4);
        for s in 0..2 {
            let obs: Vec<f32> = (0..n).flat_map(|_| if s == 0 { [1.0, 0.0] } else { [0.0, 1.0] }).collect();
            let p = ppo.probabilities(Observations { data: &obs, dim: d });
            for i in 0..n {
                let right = p[i * k + (i + s) % k];
                assert!(right > 0.9, "agent {i} state {s}: p(right) = {right} ({p:?})");
            }
        }
        // Mutations checked against this test: the surrogate's sign flipped drives p(right)
        // to 0.0001; gathering action 0 instead of the taken one leaves it at chance (0.26).
    }

    #[test]
    fn a_central_critic_learns_the_bandit_too() {
        let cfg = PpoConfig {
            critic: Critic::Central,
            ..bandit_config()
        };
        let ppo = bandit(&cfg, 64 * 40);
        let obs: Vec<f32> = (0..3).flat_map(|_| [1.0, 0.0]).collect();
        let p = ppo.probabilities(Observations { data: &obs, dim: 2 });
        assert!(p[0] > 0.9 && p[4 + 1] > 0.9 && p[8 + 2] > 0.9, "{p:?}");
    }

    #[test]
    fn agents_of_a_class_share_one_actor_and_learn_their_class_mapping() {
        // Agents 0 and 1 form class 0 (paid for action s), agent 2 class 1 (paid for s + 1).
        let (n, d, k) = (3, 2, 4);
        let cfg = bandit_config();
        let mut ppo = Ppo::new(Shape::new(n, d, d, k), &cfg, 1, 5).shared(vec![0, 0, 1]);
        ppo.begin_episode(1);
        let budgets = vec![0.0; n];
        let mut actions = vec![0; n];
        let obs_of = |s: usize| -> Vec<f32> { (0..n).flat_map(|_| if s == 0 { [1.0, 0.0] } else { [0.0, 1.0] }).collect() };
        for r in 0..64 * 40 {
            let s = (r / 3) % 2;
            let obs = obs_of(s);
            ppo.act(Observations { data: &obs, dim: d }, &budgets, false, &mut actions);
            let want = [s, s, (s + 1) % k];
            let rewards: Vec<f64> = (0..n).map(|i| f64::from(u8::from(actions[i] == want[i]))).collect();
            let next = obs_of(((r + 1) / 3) % 2);
            learn_round(&mut ppo, d, &obs, &next, &actions, &rewards);
        }
        for s in 0..2 {
            let obs = obs_of(s);
            let p = ppo.probabilities(Observations { data: &obs, dim: d });
            assert_eq!(p[..k], p[k..2 * k], "one actor for class 0");
            assert!(p[s] > 0.9 && p[2 * k + (s + 1) % k] > 0.9, "state {s}: {p:?}");
        }
        assert_eq!(ppo.export_weights(0).unwrap(), ppo.export_weights(1).unwrap());
        assert_ne!(ppo.export_weights(0).unwrap(), ppo.export_weights(2).unwrap());
        // The stack has one actor per class, and it saves and loads as such.
        let mut other = Ppo::new(Shape::new(n, d, d, k), &cfg, 1, 9).shared(vec![0, 0, 1]);
        other.load(&ppo.save().unwrap()).unwrap();
        let obs = obs_of(1);
        assert_eq!(
            other.probabilities(Observations { data: &obs, dim: d }),
            ppo.probabilities(Observations { data: &obs, dim: d })
        );
        assert!(
            Ppo::new(Shape::new(n, d, d, k), &cfg, 1, 9).load(&ppo.save().unwrap()).is_err(),
            "unshared actors are 3 deep, not 2"
        );
    }

    #[test]
    fn a_shared_actor_reading_agent_ids_tells_the_agents_of_a_class_apart() {
        // Agents 0 and 1 form class 0 and see the same states, but agent 0 is paid for action
        // s and agent 1 for s + 1: one shared actor cannot serve both; with ids it can.
        let (n, d, k) = (2, 2, 4);
        let train = |share: Share| {
            let cfg = PpoConfig { share, ..bandit_config() };
            let mut ppo = Ppo::new(Shape::new(n, d, d, k), &cfg, 1, 5).shared(vec![0, 0]);
            ppo.begin_episode(1);
            let mut actions = vec![0; n];
            let obs_of = |s: usize| -> Vec<f32> { (0..n).flat_map(|_| if s == 0 { [1.0, 0.0] } else { [0.0, 1.0] }).collect() };
            for r in 0..64 * 40 {
                let s = (r / 3) % 2;
                let obs = obs_of(s);
                ppo.act(Observations { data: &obs, dim: d }, &[0.0; 2], false, &mut actions);
                let rewards: Vec<f64> = (0..n).map(|i| f64::from(u8::from(actions[i] == (s + i) % k))).collect();
                learn_round(&mut ppo, d, &obs, &obs_of(((r + 1) / 3) % 2), &actions, &rewards);
            }
            let p: Vec<Vec<f32>> = (0..2)
                .map(|s| ppo.probabilities(Observations { data: &obs_of(s), dim: d }))
                .collect();
            (ppo, p)
        };
        let (with_ids, p) = train(Share::ClassId);
        for (s, p) in p.iter().enumerate() {
            assert!(p[s] > 0.9 && p[k + (s + 1) % k] > 0.9, "state {s}: {p:?}");
        }
        // The exported (per-agent) actors act as the shared one with ids does.
        let fork_p = {
            let obs: Vec<f32> = [1.0, 0.0, 1.0, 0.0].to_vec();
            let mut policy = with_ids.fork();
            let mut a = vec![0; n];
            policy.act(Observations { data: &obs, dim: d }, &[0.0; 2], true, &mut a);
            a
        };
        assert_eq!(fork_p, vec![0, 1]);
        assert_ne!(with_ids.export_weights(0).unwrap(), with_ids.export_weights(1).unwrap());
        // Without ids both agents get one policy: each is right about half the time at best.
        let (_, p) = train(Share::Class);
        for (s, p) in p.iter().enumerate() {
            assert_eq!(p[..k], p[k..], "state {s}");
            assert!(p[s] < 0.9 && p[(s + 1) % k] < 0.9, "state {s}: {p:?}");
        }
        // Ids are saved and loaded with the actors.
        let cfg = PpoConfig {
            share: Share::ClassId,
            ..bandit_config()
        };
        let mut other = Ppo::new(Shape::new(n, d, d, k), &cfg, 1, 9).shared(vec![0, 0]);
        other.load(&with_ids.save().unwrap()).unwrap();
        let obs = [0.0, 1.0, 0.0, 1.0];
        assert_eq!(
            other.probabilities(Observations { data: &obs, dim: d }),
            with_ids.probabilities(Observations { data: &obs, dim: d })
        );
    }

    #[test]
    fn saving_and_loading_resumes_exactly() {
        let cfg = bandit_config();
        // After 3 updates (buffer empty), save; a fresh learner that loads it continues
        // exactly as the original does.
        let mut a = bandit(&cfg, 64 * 3);
        let bytes = a.save().unwrap();
        let mut b = Ppo::new(Shape::new(3, 2, 2, 4), &cfg, 1, 5);
        let obs: Vec<f32> = (0..3).flat_map(|_| [1.0, 0.0]).collect();
        assert_ne!(
            a.probabilities(Observations { data: &obs, dim: 2 }),
            b.probabilities(Observations { data: &obs, dim: 2 })
        );
        b.load(&bytes).unwrap();
        assert_eq!(b.updates, 3);
        // One more identical rollout for both.
        for ppo in [&mut a, &mut b] {
            for r in 0..64 {
                let actions = [r % 4, (r + 1) % 4, 2];
                let rewards = [1.0, 0.0, f64::from(r as u32 % 3)];
                learn_round(ppo, 2, &obs, &obs, &actions, &rewards);
            }
        }
        assert_eq!(
            a.probabilities(Observations { data: &obs, dim: 2 }),
            b.probabilities(Observations { data: &obs, dim: 2 })
        );
        assert!(b.load(&bytes[..bytes.len() - 3]).is_err());
        assert!(Ppo::new(Shape::new(4, 2, 2, 4), &cfg, 1, 5)
            .load(&bytes)
            .unwrap_err()
            .to_string()
            .contains("this run has"));
    }
}

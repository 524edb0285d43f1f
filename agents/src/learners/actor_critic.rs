//! One-step actor-critic (thesis 4.2.2, SPEC 4) for all agents at once, with burn.
//!
//! Every agent has its own actor (state -> softmax over the K levels, one tanh hidden layer)
//! and critic (state -> V, two ReLU hidden layers). Their weights are stacked along a leading
//! agent axis — `w1: [n, d, h]` and so on — and applied with batched matrix products, so one
//! forward and one backward pass serve all n agents while each keeps its own parameters: the
//! loss is a sum of per-agent losses that share no parameter, so agent i's gradient is exactly
//! the gradient of its own loss, and AdamW (element-wise) keeps every agent's update its own.
//!
//! Per round, agent i with state s, action a, reward r and next state s':
//! `delta = scale * r + gamma * V(s') - V(s)` (s' detached; the episode only ever truncates,
//! so the bootstrap is never cut), critic loss `delta^2`, actor loss `-log pi(a|s) * delta`
//! (delta detached) minus `entropy * H(pi(.|s))`.

use crate::error::failed;
use crate::learners::fused_adamw::FusedAdamW;
use crate::learners::{argmax, sample_index, Learner, Losses, Policy, Transition};
use crate::train::checkpoint::Parts;
use burn::module::{Module, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::store::ModuleRecord;
use burn::tensor::activation::{log_softmax, relu, sigmoid, softmax};
use burn::tensor::{Bytes, Device, Int, Tensor, TensorData};
use env::rng::{stream, unit};
use env::world::Observations;
use rand::rngs::SmallRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Which observation features the actor-critic reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Features {
    /// SPEC 4's state: the budget share and the agent's m utilities.
    Spec,
    /// The whole observation (adds backlog over arrival rate, and the configured extras).
    All,
}

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

/// The backend, in one line: burn's `flex` CPU backend with autodiff (burn 0.22's replacement
/// for `ndarray`: f32 `tanh`, `gemm` matrix products; single-threaded, as its `rayon` feature
/// is off, so results do not depend on `--threads`).
pub fn device() -> Device {
    Device::flex().autodiff()
}

/// tanh as `2 sigmoid(2x) - 1`: the backend's fused sigmoid (one f32 `exp` per element)
/// instead of libm's `tanhf`, which was 39% of PPO's training time and 13% of the
/// actor-critic's. Equal to tanh within a few f32 ulps of 1.
///
/// On a tracked tensor the value is computed off the graph and rejoined as
/// `y + (x - x.detach()) (1 - y^2)`: the same value to the bit (the difference is exactly 0),
/// with tanh's derivative taken from `y`. burn's sigmoid backward would recompute the sigmoid
/// from its input, a second `exp` per element (11% of PPO's training time).
pub(crate) fn tanh(x: Tensor<3>) -> Tensor<3> {
    let value = |x: Tensor<3>| sigmoid(x.mul_scalar(2.0)).mul_scalar(2.0).sub_scalar(1.0);
    if !x.is_tracked() {
        return value(x);
    }
    let y = value(x.clone().detach());
    let slope = y.clone().powi_scalar(2).neg().add_scalar(1.0);
    y + (x.clone() - x.detach()) * slope
}

/// Stacked actors: one tanh hidden layer per agent.
#[derive(Module, Debug)]
pub struct Actors {
    w1: Param<Tensor<3>>,
    b1: Param<Tensor<3>>,
    w2: Param<Tensor<3>>,
    b2: Param<Tensor<3>>,
    /// Shared actors read with the agent's id: `[n, 1, h]`, each agent's hidden-layer bias
    /// on top of its actor's. This is what a one-hot agent index as input would add (its
    /// weight row), without widening the input or what an exported agent reads.
    ids: Option<Param<Tensor<3>>>,
}

impl Actors {
    /// Fresh stacked actors: `n` agents, `d` inputs, `h` tanh units, `k` levels.
    pub(crate) fn new(n: usize, d: usize, h: usize, k: usize, seed: u64, device: &Device) -> Self {
        Actors {
            w1: init(n, d, h, d, seed, "init/actor/w1", device),
            b1: init(n, 1, h, d, seed, "init/actor/b1", device),
            w2: init(n, h, k, h, seed, "init/actor/w2", device),
            b2: init(n, 1, k, h, seed, "init/actor/b2", device),
            ids: None,
        }
    }

    /// These actors read with the id of each of `agents` agents: per-agent biases, 0 at the
    /// start (so every agent of a class starts as its class's actor).
    pub(crate) fn with_ids(mut self, agents: usize) -> Self {
        let [_, _, h] = self.b1.val().dims();
        self.ids = Some(Param::from_tensor(Tensor::zeros([agents, 1, h], &self.b1.val().device())));
        self
    }

    /// The id biases' parameter, if these actors read agent ids.
    pub(crate) fn ids_param(&self) -> Option<burn::module::ParamId> {
        self.ids.as_ref().map(|p| p.id)
    }

    /// Agent j's hidden-layer bias when it uses stacked slice `rows[j]`: its actor's, plus its
    /// id bias.
    fn row_biases(&self, idx: Tensor<1, Int>) -> Tensor<3> {
        let b1 = self.b1.val().select(0, idx);
        match &self.ids {
            Some(ids) => b1 + ids.val(),
            None => b1,
        }
    }

    /// [`Actors::forward`] with agent j using stacked slice `rows[j]` (parameter sharing within
    /// a class): each shared slice's gradient is the sum over the agents that use it.
    pub(crate) fn forward_rows(&self, x: Tensor<3>, rows: &[i64]) -> Tensor<3> {
        let idx = Tensor::<1, Int>::from_data(TensorData::new(rows.to_vec(), [rows.len()]), &self.w1.val().device());
        let pick = |p: &Param<Tensor<3>>| p.val().select(0, idx.clone());
        let h = tanh(x.matmul(pick(&self.w1)) + self.row_biases(idx.clone()));
        h.matmul(pick(&self.w2)) + pick(&self.b2)
    }

    /// Per-agent actors from stacked shared ones, for acting and export (not for training:
    /// the copies are new parameters).
    pub(crate) fn expanded(&self, rows: &[i64]) -> Actors {
        let idx = Tensor::<1, Int>::from_data(TensorData::new(rows.to_vec(), [rows.len()]), &self.w1.val().device());
        let pick = |p: &Param<Tensor<3>>| Param::from_tensor(p.val().select(0, idx.clone()));
        Actors {
            w1: pick(&self.w1),
            b1: Param::from_tensor(self.row_biases(idx.clone())),
            w2: pick(&self.w2),
            b2: pick(&self.b2),
            ids: None,
        }
    }

    /// The device its weights are on.
    pub(crate) fn device_of(&self) -> Device {
        self.w1.val().device()
    }

    /// Every parameter's id (for per-agent gradient clipping).
    pub(crate) fn ids(&self) -> Vec<burn::module::ParamId> {
        vec![self.w1.id, self.b1.id, self.w2.id, self.b2.id]
    }

    /// Agent `agent`'s weights in the exported order (w1, b1, w2, b2; each row-major).
    pub(crate) fn export(&self, n: usize, agent: usize) -> crate::Result<Vec<f32>> {
        let mut out = Vec::new();
        for p in [&self.w1, &self.b1, &self.w2, &self.b2] {
            let data = p.val().into_data();
            let all = data.as_slice::<f32>().map_err(|e| failed(format!("actor weights: {e:?}")))?;
            let per = all.len() / n;
            out.extend_from_slice(&all[agent * per..(agent + 1) * per]);
        }
        Ok(out)
    }

    /// Logits of every agent's policy.
    ///
    /// # Shapes
    /// - x: `[n, batch, d]`
    /// - output: `[n, batch, k]`
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let h = tanh(x.matmul(self.w1.val()) + self.b1.val());
        h.matmul(self.w2.val()) + self.b2.val()
    }
}

/// Stacked critics: two ReLU hidden layers per agent.
#[derive(Module, Debug)]
pub struct Critics {
    w1: Param<Tensor<3>>,
    b1: Param<Tensor<3>>,
    w2: Param<Tensor<3>>,
    b2: Param<Tensor<3>>,
    w3: Param<Tensor<3>>,
    b3: Param<Tensor<3>>,
}

impl Critics {
    /// Fresh stacked critics: `n` agents, `d` inputs, two ReLU layers.
    pub(crate) fn new(n: usize, d: usize, [c1, c2]: [usize; 2], seed: u64, device: &Device) -> Self {
        Critics {
            w1: init(n, d, c1, d, seed, "init/critic/w1", device),
            b1: init(n, 1, c1, d, seed, "init/critic/b1", device),
            w2: init(n, c1, c2, c1, seed, "init/critic/w2", device),
            b2: init(n, 1, c2, c1, seed, "init/critic/b2", device),
            w3: init(n, c2, 1, c2, seed, "init/critic/w3", device),
            b3: init(n, 1, 1, c2, seed, "init/critic/b3", device),
        }
    }

    /// Every parameter's id.
    pub(crate) fn ids(&self) -> Vec<burn::module::ParamId> {
        vec![self.w1.id, self.b1.id, self.w2.id, self.b2.id, self.w3.id, self.b3.id]
    }

    /// Every agent's state value.
    ///
    /// # Shapes
    /// - x: `[n, batch, d]`
    /// - output: `[n, batch, 1]`
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let h = relu(x.matmul(self.w1.val()) + self.b1.val());
        let h = relu(h.matmul(self.w2.val()) + self.b2.val());
        h.matmul(self.w3.val()) + self.b3.val()
    }
}

/// `[n, rows, cols]` uniform in +-1/sqrt(fan_in) (PyTorch's Linear default), from per-agent
/// streams so initial weights depend only on the seed.
fn init(n: usize, rows: usize, cols: usize, fan_in: usize, seed: u64, name: &str, device: &Device) -> Param<Tensor<3>> {
    let bound = 1.0 / (fan_in as f64).sqrt();
    let mut v = Vec::with_capacity(n * rows * cols);
    for i in 0..n {
        let mut rng = stream(seed, name, i as u64);
        v.extend((0..rows * cols).map(|_| ((2.0 * unit(rng.next_u64()) - 1.0) * bound) as f32));
    }
    Param::from_tensor(Tensor::from_data(TensorData::new(v, [n, rows, cols]), device))
}

/// The networks' input: the first `d` features of each agent's observation.
///
/// # Shapes
/// - output: `[n, 1, d]`
pub(crate) fn states(obs: Observations<'_>, n: usize, obs_dim: usize, d: usize, device: &Device) -> Tensor<3> {
    assert_eq!(obs.dim, obs_dim, "observation length");
    let data: Vec<f32> = if d == obs_dim {
        obs.data.to_vec()
    } else {
        (0..n).flat_map(|i| obs.get(i)[..d].iter().copied()).collect()
    };
    Tensor::from_data(TensorData::new(data, [n, 1, d]), device)
}

/// The first `d` features of every agent in K observation sets, agent-major.
///
/// # Shapes
/// - output: `[n, K, d]`
pub(crate) fn states_many(obs: &[Observations<'_>], n: usize, obs_dim: usize, d: usize, device: &Device) -> Tensor<3> {
    let copies = obs.len();
    let mut data = Vec::with_capacity(n * copies * d);
    for i in 0..n {
        for o in obs {
            assert_eq!(o.dim, obs_dim, "observation length");
            data.extend_from_slice(&o.get(i)[..d]);
        }
    }
    Tensor::from_data(TensorData::new(data, [n, copies, d]), device)
}

/// Sampled actions for K environment copies from one forward pass of `actors`, drawn copy by
/// copy and agent by agent from each agent's stream (the order one `act` per copy draws in).
#[allow(clippy::too_many_arguments)]
pub(crate) fn act_many(
    actors: &Actors,
    obs: &[Observations<'_>],
    (n, obs_dim, d, k): (usize, usize, usize, usize),
    device: &Device,
    rngs: &mut [SmallRng],
    actions: &mut [Vec<usize>],
) {
    let copies = obs.len();
    let x = states_many(obs, n, obs_dim, d, device).detach();
    let p = softmax(actors.forward(x), 2).into_data();
    let p = p.as_slice::<f32>().expect("f32 probabilities");
    let mut rows = vec![0.0f32; n * k];
    for (c, a) in actions.iter_mut().enumerate() {
        for i in 0..n {
            rows[i * k..(i + 1) * k].copy_from_slice(&p[(i * copies + c) * k..(i * copies + c + 1) * k]);
        }
        choose(&rows, k, false, rngs, a);
    }
}

/// The parts of a saved actor-critic state, in order.
const PARTS: [&str; 5] = [
    "actor_critic/dims",
    "actor_critic/actors",
    "actor_critic/critics",
    "actor_critic/actor_optimizer",
    "actor_critic/critic_optimizer",
];

/// Actor-critic learners for n agents, batched.
pub struct ActorCritic {
    n: usize,
    /// Observation length per agent.
    obs_dim: usize,
    /// Features the networks read: the first `d` of each observation.
    d: usize,
    k: usize,
    cfg: ActorCriticConfig,
    device: Device,
    actors: Option<Actors>,
    critics: Option<Critics>,
    opt_actor: ModuleOptimizer,
    opt_critic: ModuleOptimizer,
    rngs: Vec<SmallRng>,
}

impl ActorCritic {
    /// Fresh networks for `n` agents reading the first `d` of their `obs_dim` observation
    /// features, with `k` levels; weights drawn from `seed`.
    pub fn new(n: usize, obs_dim: usize, d: usize, k: usize, cfg: &ActorCriticConfig, seed: u64) -> Self {
        assert!(d <= obs_dim, "the networks read a prefix of the observation");
        let device = device();
        let actors = Actors::new(n, d, cfg.actor_hidden, k, seed, &device);
        let critics = Critics::new(n, d, cfg.critic_hidden, seed, &device);
        let adamw = FusedAdamW::new(cfg.weight_decay as f32);
        Self {
            n,
            obs_dim,
            d,
            k,
            cfg: cfg.clone(),
            opt_actor: adamw.clone().into(),
            opt_critic: adamw.into(),
            device,
            actors: Some(actors),
            critics: Some(critics),
            rngs: (0..n).map(|i| stream(0, env::rng::names::POLICY, i as u64)).collect(),
        }
    }

    fn states(&self, obs: Observations<'_>) -> Tensor<3> {
        states(obs, self.n, self.obs_dim, self.d, &self.device)
    }

    /// Every agent's action probabilities for `obs`, `[n][k]` row-major.
    pub fn probabilities(&self, obs: Observations<'_>) -> Vec<f32> {
        let logits = self.actors.as_ref().expect("actors").forward(self.states(obs).detach());
        let p = softmax(logits, 2).into_data();
        p.as_slice::<f32>().expect("f32 probabilities").to_vec()
    }
}

impl Policy for ActorCritic {
    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let p = self.probabilities(obs);
        choose(&p, self.k, greedy, &mut self.rngs, actions);
    }

    fn begin_episode(&mut self, episode_seed: u64) {
        self.rngs = episode_streams(self.n, episode_seed);
    }

    fn fork(&self) -> Box<dyn Policy> {
        // Acting needs no gradients: the copy lives on the plain device, so its forward passes
        // leave nothing in the autodiff graph (over a long evaluation, orphaned graph entries
        // made every step slower).
        Box::new(ActorPolicy::of(
            self.actors.as_ref().expect("actors"),
            self.n,
            self.obs_dim,
            self.d,
            self.k,
            &self.rngs,
        ))
    }
}

impl ActorPolicy {
    /// An acting copy of `actors` on the plain device.
    pub(crate) fn of(actors: &Actors, n: usize, obs_dim: usize, d: usize, k: usize, rngs: &[SmallRng]) -> Self {
        let actors = actors.valid();
        ActorPolicy {
            n,
            obs_dim,
            d,
            k,
            device: actors.w1.val().device(),
            actors,
            rngs: rngs.to_vec(),
        }
    }
}

/// The acting half of [`ActorCritic`]: actors only, on the plain device, no critics or
/// optimizer state.
pub struct ActorPolicy {
    n: usize,
    obs_dim: usize,
    d: usize,
    k: usize,
    device: Device,
    actors: Actors,
    rngs: Vec<SmallRng>,
}

impl Policy for ActorPolicy {
    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let x = states(obs, self.n, self.obs_dim, self.d, &self.device).detach();
        let p = softmax(self.actors.forward(x), 2).into_data();
        let p = p.as_slice::<f32>().expect("f32 probabilities");
        choose(p, self.k, greedy, &mut self.rngs, actions);
    }

    fn begin_episode(&mut self, episode_seed: u64) {
        self.rngs = episode_streams(self.n, episode_seed);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(ActorPolicy {
            n: self.n,
            obs_dim: self.obs_dim,
            d: self.d,
            k: self.k,
            device: self.device.clone(),
            actors: self.actors.clone(),
            rngs: self.rngs.clone(),
        })
    }
}

/// Every agent's sampling stream for an episode.
pub(crate) fn episode_streams(n: usize, episode_seed: u64) -> Vec<SmallRng> {
    (0..n).map(|i| stream(episode_seed, env::rng::names::POLICY, i as u64)).collect()
}

/// Each agent's level from its row of probabilities: argmax, or a draw from its own stream.
pub(crate) fn choose(p: &[f32], k: usize, greedy: bool, rngs: &mut [SmallRng], actions: &mut [usize]) {
    for (i, a) in actions.iter_mut().enumerate() {
        let row = &p[i * k..(i + 1) * k];
        *a = if greedy {
            argmax(row.iter().map(|&x| f64::from(x)))
        } else {
            let w: Vec<f64> = row.iter().map(|&x| f64::from(x)).collect();
            sample_index(&w, unit(rngs[i].next_u64()))
        };
    }
}

fn column(values: impl Iterator<Item = f32>, n: usize, device: &Device) -> Tensor<3> {
    Tensor::from_data(TensorData::new(values.collect::<Vec<f32>>(), [n, 1, 1]), device)
}

pub(crate) fn scalar(t: Tensor<1>) -> f64 {
    f64::from(t.into_data().as_slice::<f32>().expect("f32 scalar")[0])
}

impl Learner for ActorCritic {
    fn act_many(&mut self, obs: &[Observations<'_>], _budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        let dims = (self.n, self.obs_dim, self.d, self.k);
        act_many(
            self.actors.as_ref().expect("actors"),
            obs,
            dims,
            &self.device,
            &mut self.rngs,
            actions,
        );
    }

    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        let (n, dev) = (self.n, self.device.clone());
        let actors = self.actors.take().expect("actors");
        let critics = self.critics.take().expect("critics");
        let x = self.states(t.obs);
        let x_next = self.states(t.next_obs).detach();

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
        let ga = GradientsParams::from_module(&mut grads, &actors);
        let gc = GradientsParams::from_module(&mut grads, &critics);
        self.actors = Some(self.opt_actor.step(self.cfg.actor_lr, actors, ga));
        self.critics = Some(self.opt_critic.step(self.cfg.critic_lr, critics, gc));
        let per = n as f64;
        Losses {
            actor: scalar(actor_loss) / per,
            critic: scalar(critic_loss) / per,
            entropy: scalar(entropy_sum) / per,
            ..Losses::default()
        }
    }

    fn export_weights(&self, agent: usize) -> crate::Result<Vec<f32>> {
        self.actors.as_ref().expect("actors").export(self.n, agent)
    }

    fn save(&self) -> crate::Result<Vec<u8>> {
        let saving = |e| failed(format!("saving the actor-critic state: {e:?}"));
        let actors = self.actors.clone().expect("actors").into_record().into_bytes().map_err(saving)?;
        let critics = self.critics.clone().expect("critics").into_record().into_bytes().map_err(saving)?;
        let opt_actor = self.opt_actor.into_bytes().map_err(saving)?;
        let opt_critic = self.opt_critic.into_bytes().map_err(saving)?;
        Ok(Parts::default()
            .add_u64("actor_critic/dims", &[self.n, self.d, self.k].map(|x| x as u64))
            .add(PARTS[1], &actors)
            .add(PARTS[2], &critics)
            .add(PARTS[3], &opt_actor)
            .add(PARTS[4], &opt_critic)
            .into_bytes())
    }

    fn load(&mut self, bytes: &[u8]) -> crate::Result<()> {
        let parts = Parts::read(bytes, &PARTS).map_err(failed)?;
        let dims = Parts::u64s(parts[0], PARTS[0]).map_err(failed)?;
        let ours = [self.n, self.d, self.k].map(|x| x as u64);
        if dims != ours {
            return Err(failed(format!(
                "actor-critic state is for (agents, features, levels) = {dims:?}; this run has {ours:?}"
            )));
        }
        let parts = &parts[1..];
        let record =
            |b: &[u8]| ModuleRecord::from_bytes(Bytes::from_bytes_vec(b.to_vec())).map_err(|e| failed(format!("network weights: {e:?}")));
        let actors = self
            .actors
            .take()
            .expect("actors")
            .try_load_record(record(parts[0])?)
            .map_err(|e| failed(format!("actor weights: {e:?}")))?;
        let critics = self
            .critics
            .take()
            .expect("critics")
            .try_load_record(record(parts[1])?)
            .map_err(|e| failed(format!("critic weights: {e:?}")))?;
        self.actors = Some(actors);
        self.critics = Some(critics);
        let adamw = FusedAdamW::new(self.cfg.weight_decay as f32);
        self.opt_actor = ModuleOptimizer::from(adamw.clone())
            .from_bytes(Bytes::from_bytes_vec(parts[2].to_vec()))
            .map_err(|e| failed(format!("actor optimizer state: {e:?}")))?;
        self.opt_critic = ModuleOptimizer::from(adamw)
            .from_bytes(Bytes::from_bytes_vec(parts[3].to_vec()))
            .map_err(|e| failed(format!("critic optimizer state: {e:?}")))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigmoid_form_of_tanh_is_tanh() {
        let xs: Vec<f32> = (-2000..=2000).map(|i| i as f32 / 100.0).chain([1e-6, -1e-6, 60.0, -60.0]).collect();
        let n = xs.len();
        let y = tanh(Tensor::<3>::from_data(TensorData::new(xs.clone(), [1, 1, n]), &device())).into_data();
        for (x, y) in xs.iter().zip(y.as_slice::<f32>().unwrap()) {
            let want = f64::from(*x).tanh();
            assert!((f64::from(*y) - want).abs() < 2e-7, "tanh({x}) = {y}, want {want}");
        }
        // Tracked: the same values to the bit, and tanh's derivative.
        let x = Tensor::<3>::from_data(TensorData::new(xs.clone(), [1, 1, n]), &device()).require_grad();
        let tracked = tanh(x.clone());
        assert_eq!(tracked.clone().into_data().as_slice::<f32>().unwrap(), y.as_slice::<f32>().unwrap());
        let grads = tracked.sum().backward();
        let slope = x.grad(&grads).expect("a gradient").into_data();
        for (x, g) in xs.iter().zip(slope.as_slice::<f32>().unwrap()) {
            let want = 1.0 - f64::from(*x).tanh().powi(2);
            assert!((f64::from(*g) - want).abs() < 5e-7, "tanh'({x}) = {g}, want {want}");
        }
    }
    use crate::learners::testing::learn_round;

    #[test]
    fn acting_for_many_copies_at_once_draws_what_one_act_per_copy_draws() {
        let (n, d, k) = (3, 4, 5);
        let cfg = ActorCriticConfig {
            actor_hidden: 8,
            ..ActorCriticConfig::default()
        };
        let (mut batched, mut looped) = (ActorCritic::new(n, d, d, k, &cfg, 7), ActorCritic::new(n, d, d, k, &cfg, 7));
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
        let mut ac = ActorCritic::new(n, d, d, k, &cfg, 5);
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
        let mut other = ActorCritic::new(n, d, d, k, &cfg, 99);
        other.load(&bytes).unwrap();
        let obs = obs_of(0);
        assert_eq!(
            ac.probabilities(Observations { data: &obs, dim: d }),
            other.probabilities(Observations { data: &obs, dim: d })
        );
        assert!(other.load(&bytes[..bytes.len() - 10]).is_err());
        assert!(ActorCritic::new(n + 1, d, d, k, &cfg, 1)
            .load(&bytes)
            .unwrap_err()
            .to_string()
            .contains("this run has"));
    }
}

//! The stacked networks both burn learners use (the actor-critic and PPO), with one save and
//! one load.
//!
//! Every agent has its own actor (state -> softmax over the K levels, one tanh hidden layer) and
//! critic (state -> V, two ReLU hidden layers). Their weights are stacked along a leading agent
//! axis — `w1: [n, d, h]` and so on — and applied with batched matrix products, so one forward
//! and one backward pass serve all n agents while each keeps its own parameters: a loss that is
//! a sum of per-agent losses sharing no parameter gives agent i exactly the gradient of its own
//! loss, and AdamW (element-wise) keeps every agent's update its own.
//!
//! A [`Net`] is one such stack with its optimizer; [`Nets`] the actor and critic stacks of a
//! learner, saved as named parts (`<learner>/dims`, `/actors`, `/critics`, `/actor_optimizer`,
//! `/critic_optimizer`: the layout checkpoints have always had).

use crate::error::failed;
use crate::learners::base::{argmax, sample_index};
use crate::learners::fused_adamw::FusedAdamW;
use crate::learners::parts::Parts;
use burn::module::{Module, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::store::ModuleRecord;
use burn::tensor::activation::{relu, sigmoid, softmax};
use burn::tensor::{Bytes, Device, Int, Tensor, TensorData};
use env::rng::{stream, unit};
use env::world::Observations;
use rand::rngs::SmallRng;
use rand::Rng;

/// The backend, in one line: burn's `flex` CPU backend with autodiff (burn 0.22's replacement
/// for `ndarray`: f32 `tanh`, `gemm` matrix products; single-threaded, as its `rayon` feature
/// is off, so results do not depend on `--threads`).
pub fn device() -> Device {
    Device::flex().autodiff()
}

/// The shape of a batched learner population: `n` agents, each reading the first `d` of its
/// `obs_dim` observation features, choosing among `k` levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Agents.
    pub n: usize,
    /// Observation length per agent.
    pub obs_dim: usize,
    /// First feature the networks read (0 but for `by_type`).
    pub at: usize,
    /// Features the networks read: `obs[at..at + d]`.
    pub d: usize,
    /// Levels.
    pub k: usize,
}

impl Shape {
    /// `n` agents reading the first `d` of `obs_dim` features, `k` levels.
    pub fn new(n: usize, obs_dim: usize, d: usize, k: usize) -> Self {
        Self::reading(n, crate::learners::base::Inputs { obs_dim, at: 0, d }, k)
    }

    /// `n` agents reading `inputs`, `k` levels.
    pub fn reading(n: usize, inputs: crate::learners::base::Inputs, k: usize) -> Self {
        let crate::learners::base::Inputs { obs_dim, at, d } = inputs;
        assert!(at + d <= obs_dim, "the networks read a range of the observation");
        Self { n, obs_dim, at, d, k }
    }

    /// The range of each observation the networks read.
    pub fn range(&self) -> std::ops::Range<usize> {
        self.at..self.at + self.d
    }

    /// The features agent i's networks read in `obs`.
    #[inline]
    pub fn read<'a>(&self, obs: &Observations<'a>, i: usize) -> &'a [f32] {
        &obs.get(i)[self.at..self.at + self.d]
    }

    /// The networks' input: the first `d` features of each agent's observation.
    ///
    /// # Shapes
    /// - output: `[n, 1, d]`
    pub fn states(&self, obs: Observations<'_>, device: &Device) -> Tensor<3> {
        assert_eq!(obs.dim, self.obs_dim, "observation length");
        let data: Vec<f32> = if self.d == self.obs_dim {
            obs.data.to_vec()
        } else {
            (0..self.n).flat_map(|i| self.read(&obs, i).iter().copied()).collect()
        };
        Tensor::from_data(TensorData::new(data, [self.n, 1, self.d]), device)
    }

    /// The first `d` features of every agent in K observation sets, agent-major.
    ///
    /// # Shapes
    /// - output: `[n, K, d]`
    pub fn states_many(&self, obs: &[Observations<'_>], device: &Device) -> Tensor<3> {
        let copies = obs.len();
        let mut data = Vec::with_capacity(self.n * copies * self.d);
        for i in 0..self.n {
            for o in obs {
                assert_eq!(o.dim, self.obs_dim, "observation length");
                data.extend_from_slice(self.read(o, i));
            }
        }
        Tensor::from_data(TensorData::new(data, [self.n, copies, self.d]), device)
    }

    /// The (agents, features, levels) a saved state is checked against.
    fn dims(&self) -> [u64; 3] {
        [self.n, self.d, self.k].map(|x| x as u64)
    }
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

    /// The output layer's weights and biases times `s` (a policy head starting nearer
    /// uniform play).
    pub(crate) fn scaled_head(self, s: f32) -> Self {
        // Rebuilt from the values: a product of a tracked parameter is no leaf to train.
        let scaled = |p: &Param<Tensor<3>>| {
            let t = p.val();
            let (dims, device) = (t.dims(), t.device());
            let v: Vec<f32> = t
                .into_data()
                .try_to_vec::<f32>()
                .expect("f32 weights")
                .iter()
                .map(|x| x * s)
                .collect();
            Param::from_tensor(Tensor::from_data(TensorData::new(v, dims), &device))
        };
        Actors {
            w2: scaled(&self.w2),
            b2: scaled(&self.b2),
            ..self
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

    /// Every agent's logits for `x: [n, batch, d]`, through its own actor or, with `rows`
    /// (each agent's stacked slice), its class's.
    pub(crate) fn logits(&self, rows: Option<&[i64]>, x: Tensor<3>) -> Tensor<3> {
        match rows {
            None => self.forward(x),
            Some(rows) => self.forward_rows(x, rows),
        }
    }

    /// Every agent's action probabilities for `x: [n, 1, d]`, `[n][k]` row-major (through
    /// `rows` as [`Actors::logits`]).
    pub(crate) fn probabilities(&self, rows: Option<&[i64]>, x: Tensor<3>) -> Vec<f32> {
        let p = softmax(self.logits(rows, x), 2).into_data();
        p.as_slice::<f32>().expect("f32 probabilities").to_vec()
    }

    /// One actor per agent: these, or (with `rows`) [`Actors::expanded`].
    pub(crate) fn per_agent(&self, rows: Option<&[i64]>) -> Actors {
        match rows {
            None => self.clone(),
            Some(rows) => self.expanded(rows),
        }
    }

    /// Agent `agent`'s weights in the exported order ([`Actors::export`]) of `n` agents, each
    /// through its own actor or (with `rows`) its class's slice and its id bias: only that
    /// agent's actor is built.
    pub(crate) fn export_agent(&self, rows: Option<&[i64]>, n: usize, agent: usize) -> crate::error::Result<Vec<f32>> {
        let Some(rows) = rows else {
            return self.export(n, agent);
        };
        let row = rows
            .get(agent)
            .copied()
            .ok_or_else(|| failed(format!("agent {agent} of {}", rows.len())))?;
        let device = self.device_of();
        let one = |i: i64| Tensor::<1, Int>::from_data(TensorData::new(vec![i], [1]), &device);
        let pick = |p: &Param<Tensor<3>>| p.val().select(0, one(row));
        let b1 = match &self.ids {
            Some(ids) => pick(&self.b1) + ids.val().select(0, one(agent as i64)),
            None => pick(&self.b1),
        };
        let mut out = Vec::new();
        for t in [pick(&self.w1), b1, pick(&self.w2), pick(&self.b2)] {
            let data = t.into_data();
            out.extend_from_slice(data.as_slice::<f32>().map_err(|e| failed(format!("actor weights: {e:?}")))?);
        }
        Ok(out)
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
    pub(crate) fn export(&self, n: usize, agent: usize) -> crate::error::Result<Vec<f32>> {
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
    /// - x: `[n, batch, d]`, or `[1, batch, d]` when every critic reads the same rows (the
    ///   batch dimension broadcasts)
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

/// One network stack with its optimizer. The stack is held in an `Option` only so that an
/// optimizer step, which consumes the module and returns the updated one, can run on it in
/// place ([`Net::step`]); it is never observed empty.
pub struct Net<M> {
    module: Option<M>,
    opt: ModuleOptimizer,
}

impl<M: Module> Net<M> {
    /// `module`, optimized by fused AdamW with weight decay `weight_decay`.
    pub fn new(module: M, weight_decay: f64) -> Self {
        Self {
            module: Some(module),
            opt: FusedAdamW::new(weight_decay as f32).into(),
        }
    }

    /// The stack.
    pub fn get(&self) -> &M {
        self.module.as_ref().expect("a net is only empty inside Net::step")
    }

    /// One optimizer step at learning rate `lr` with `grads`.
    pub fn step(&mut self, lr: f64, grads: GradientsParams) {
        let module = self.module.take().expect("a net is only empty inside Net::step");
        self.module = Some(self.opt.step(lr, module, grads));
    }

    /// The stack's weights and the optimizer's state as two byte records.
    fn save(&self, what: &str) -> crate::error::Result<(Bytes, Bytes)> {
        let saving = |e| failed(format!("saving the {what}: {e:?}"));
        let weights = self.get().clone().into_record().into_bytes().map_err(saving)?;
        Ok((weights, self.opt.into_bytes().map_err(saving)?))
    }

    /// Restore from [`Net::save`]'s records (the optimizer keeps its weight decay).
    fn load(&mut self, weights: &[u8], opt: &[u8], what: &str, weight_decay: f64) -> crate::error::Result<()> {
        let record =
            ModuleRecord::from_bytes(Bytes::from_bytes_vec(weights.to_vec())).map_err(|e| failed(format!("{what} weights: {e:?}")))?;
        // On a clone (its tensors are shared, not copied): a refused record leaves the net as
        // it was.
        let module = self.get().clone().try_load_record(record).map_err(|e| {
            // burn's report lists every mismatched tensor over several lines: the first
            // line names one, which says enough.
            let full = format!("{e:?}");
            let first = full.split("\\n").next().unwrap_or(&full).chars().take(200).collect::<String>();
            failed(format!(
                "{what} weights have other shapes than this learner's networks ({first}...)"
            ))
        })?;
        if let Some(bad) = first_non_finite(&module) {
            return Err(failed(format!("{what} weights: {bad}")));
        }
        // burn reads an optimizer record lazily (at the next step), so its numbers are
        // checked here, as they are read.
        if let Some(bad) = record_non_finite(opt) {
            return Err(failed(format!("{what} optimizer state: malformed or not finite ({bad})")));
        }
        let loaded = ModuleOptimizer::from(FusedAdamW::new(weight_decay as f32))
            .from_bytes(Bytes::from_bytes_vec(opt.to_vec()))
            .map_err(|e| failed(format!("{what} optimizer state: malformed or not finite ({e:?})")))?;
        self.module = Some(module);
        self.opt = loaded;
        Ok(())
    }

    /// Where its weights first stop being finite, if they do.
    pub fn non_finite(&self) -> Option<String> {
        first_non_finite(self.get())
    }
}

/// The first f32 tensor of a burnpack record holding a value that is not finite, described.
fn record_non_finite(bytes: &[u8]) -> Option<String> {
    let tensors = burn_pack::Reader::from_bytes(Bytes::from_bytes_vec(bytes.to_vec()))
        .and_then(|r| r.into_tensors())
        .ok()?;
    for t in tensors {
        if t.dtype != burn_pack::DType::F32 {
            continue;
        }
        let name = t.name.clone();
        let data = t.into_bytes().ok()?;
        if let Some(i) = data
            .chunks_exact(4)
            .position(|b| !f32::from_le_bytes(b.try_into().expect("4 bytes")).is_finite())
        {
            return Some(format!("`{name}` element {i}"));
        }
    }
    None
}

/// The first parameter of `module` holding a value that is not finite, described.
fn first_non_finite<M: Module>(module: &M) -> Option<String> {
    struct Finite {
        tensor: usize,
        bad: Option<String>,
    }
    impl burn::module::ModuleVisitor for Finite {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if self.bad.is_none() {
                let data = param.val().into_data();
                if let Ok(xs) = data.as_slice::<f32>() {
                    if let Some(i) = xs.iter().position(|x| !x.is_finite()) {
                        self.bad = Some(format!("parameter tensor {} holds {} at element {i}", self.tensor, xs[i]));
                    }
                }
            }
            self.tensor += 1;
        }
    }
    let mut v = Finite { tensor: 0, bad: None };
    module.visit(&mut v);
    v.bad
}

/// A learner's actors and critics, each with its optimizer, saved and loaded as one.
pub struct Nets {
    /// What the networks read and choose.
    pub shape: Shape,
    /// Stacked actors.
    pub actors: Net<Actors>,
    /// Stacked critics.
    pub critics: Net<Critics>,
    weight_decay: f64,
}

impl Nets {
    /// The parts a learner's state starts with, under its `prefix`, in order.
    pub fn parts(prefix: &str) -> [String; 5] {
        ["dims", "actors", "critics", "actor_optimizer", "critic_optimizer"].map(|p| format!("{prefix}/{p}"))
    }

    /// Both stacks, each with fused AdamW at `weight_decay`.
    pub fn new(shape: Shape, actors: Actors, critics: Critics, weight_decay: f64) -> Self {
        Self {
            shape,
            actors: Net::new(actors, weight_decay),
            critics: Net::new(critics, weight_decay),
            weight_decay,
        }
    }

    /// Where the actors' or critics' weights first stop being finite, if they do.
    pub fn non_finite(&self) -> Option<String> {
        (self.actors.non_finite().map(|b| format!("actor {b}"))).or_else(|| self.critics.non_finite().map(|b| format!("critic {b}")))
    }

    /// [`Nets::parts`] of `prefix`, filled: dims, then both stacks and both optimizers.
    pub fn save(&self, prefix: &str) -> crate::error::Result<Parts> {
        let names = Self::parts(prefix);
        let (actors, opt_actor) = self.actors.save("actor")?;
        let (critics, opt_critic) = self.critics.save("critic")?;
        Ok(Parts::default()
            .add_u64(&names[0], &self.shape.dims())
            .add(&names[1], &actors)
            .add(&names[2], &critics)
            .add(&names[3], &opt_actor)
            .add(&names[4], &opt_critic))
    }

    /// Restore from the first five `parts` ([`Nets::parts`]); `who` names the learner in the
    /// error when the state is for another shape.
    pub fn load(&mut self, parts: &[&[u8]], prefix: &str, who: &str) -> crate::error::Result<()> {
        let names = Self::parts(prefix);
        let dims = Parts::u64s(parts[0], &names[0]).map_err(failed)?;
        let ours = self.shape.dims();
        if dims != ours {
            return Err(failed(format!(
                "{who} state is for (agents, features, levels) = {dims:?}; this run has {ours:?}"
            )));
        }
        self.actors.load(parts[1], parts[3], "actor", self.weight_decay)?;
        self.critics.load(parts[2], parts[4], "critic", self.weight_decay)
    }
}

/// One actor's logits for one input, in plain f32 as an exported agent computes them: `w` is
/// the actor in its exported layout (`W1 [d, h], b1 [h], W2 [h, k], b2 [k]`, row-major),
/// `h = tanh(x W1 + b1)` (libm's f32 tanh), `logits = h W2 + b2`. `hidden` is scratch. The
/// exported runtime and the evolution-strategies learner both decide with it.
pub fn actor_logits(w: &[f32], (d, h, k): (usize, usize, usize), x: &[f32], hidden: &mut Vec<f32>, logits: &mut [f32]) {
    let (w1, rest) = w.split_at(d * h);
    let (b1, rest) = rest.split_at(h);
    let (w2, b2) = rest.split_at(h * k);
    hidden.clear();
    hidden.extend_from_slice(b1);
    for (i, &xi) in x.iter().enumerate() {
        for (hj, &wij) in hidden.iter_mut().zip(&w1[i * h..(i + 1) * h]) {
            *hj += xi * wij;
        }
    }
    logits.copy_from_slice(b2);
    for (j, hj) in hidden.iter().map(|v| v.tanh()).enumerate() {
        for (l, &wjl) in logits.iter_mut().zip(&w2[j * k..(j + 1) * k]) {
            *l += hj * wjl;
        }
    }
}

/// The number of weights of one actor in the exported layout.
pub fn actor_len(d: usize, h: usize, k: usize) -> usize {
    d * h + h + h * k + k
}

/// Sampled actions for K environment copies from one forward pass of `actors` (one actor per
/// agent), drawn copy by copy and agent by agent from each agent's stream (the order one `act`
/// per copy draws in).
pub(crate) fn act_many(actors: &Actors, obs: &[Observations<'_>], shape: Shape, rngs: &mut [SmallRng], actions: &mut [Vec<usize>]) {
    let (n, k, copies) = (shape.n, shape.k, obs.len());
    let x = shape.states_many(obs, &actors.device_of()).detach();
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

/// [`act_many`] for actors shared by class (`rows[i]`: agent i's stacked actor) in a world
/// whose absent agents' rows are blank (all zero): each agent with a feature anywhere is
/// computed as [`act_many`] computes it (its own slice of the expanded actors, in every
/// copy), and an agent blank in every copy from its class's actor on a zero row, once per
/// class. Where 200 jobs may come and 30 are present, the
/// acting pass was 63% of a Gavel training episode's time, nearly all of it for the absent.
/// Every agent draws from its stream as in [`act_many`] (one number per agent and copy).
pub(crate) fn act_pooled(
    actors: &Actors,
    rows: &[i64],
    obs: &[Observations<'_>],
    shape: Shape,
    rngs: &mut [SmallRng],
    actions: &mut [Vec<usize>],
) {
    let (n, k, d, copies) = (shape.n, shape.k, shape.d, obs.len());
    // Per-agent id biases would need the present agents' own: no pooled learner has them.
    assert!(actors.ids_param().is_none(), "acting for the present agents reads no agent ids");
    let device = actors.device_of();
    let present: Vec<usize> = (0..n)
        .filter(|&i| obs.iter().any(|o| shape.read(o, i).iter().any(|&x| x != 0.0)))
        .collect();
    let classes = rows.iter().max().map_or(1, |&m| m as usize + 1);
    let actors = actors.valid();
    let blank = softmax(actors.forward(Tensor::zeros([classes, 1, d], &device)), 2).into_data();
    let blank = blank.as_slice::<f32>().expect("f32 probabilities");
    let mut p = vec![0f32; n * copies * k];
    for i in 0..n {
        let c = rows[i] as usize;
        for j in 0..copies {
            p[(i * copies + j) * k..(i * copies + j + 1) * k].copy_from_slice(&blank[c * k..(c + 1) * k]);
        }
    }
    if !present.is_empty() {
        let m = present.len();
        let mut x = Vec::with_capacity(m * copies * d);
        for &i in &present {
            for o in obs {
                x.extend_from_slice(shape.read(o, i));
            }
        }
        let x = Tensor::<3>::from_data(TensorData::new(x, [m, copies, d]), &device);
        let mine: Vec<i64> = present.iter().map(|&i| rows[i]).collect();
        let q = softmax(actors.expanded(&mine).forward(x), 2).into_data();
        let q = q.as_slice::<f32>().expect("f32 probabilities");
        for (at, &i) in present.iter().enumerate() {
            let (from, to) = (at * copies * k, i * copies * k);
            p[to..to + copies * k].copy_from_slice(&q[from..from + copies * k]);
        }
    }
    let mut row = vec![0.0f32; n * k];
    for (j, a) in actions.iter_mut().enumerate() {
        for i in 0..n {
            row[i * k..(i + 1) * k].copy_from_slice(&p[(i * copies + j) * k..(i * copies + j + 1) * k]);
        }
        choose(&row, k, false, rngs, a);
    }
}

/// The acting half of a burn learner: actors only (one per agent), on the plain device, no
/// critics or optimizer state. Forward passes here leave nothing in an autodiff graph (over a
/// long evaluation, orphaned graph entries made every step slower).
pub struct ActorPolicy {
    shape: Shape,
    device: Device,
    actors: Actors,
    rngs: Vec<SmallRng>,
    /// The mean entropy of the distributions the last `act` chose from.
    entropy: Option<f64>,
}

impl ActorPolicy {
    /// Per-agent `actors` acting for another population: its agent j with actor `map[j]`,
    /// reading `inputs` (see `Learner::transferred`).
    pub(crate) fn transferred(actors: &Actors, map: &[usize], inputs: crate::learners::base::Inputs, k: usize) -> Self {
        let rows: Vec<i64> = map.iter().map(|&j| j as i64).collect();
        let shape = Shape::reading(map.len(), inputs, k);
        Self::of(&actors.valid().expanded(&rows), shape, &episode_streams(map.len(), 0))
    }

    /// An acting copy of `actors` (one per agent) on the plain device.
    pub(crate) fn of(actors: &Actors, shape: Shape, rngs: &[SmallRng]) -> Self {
        let actors = actors.valid();
        ActorPolicy {
            shape,
            device: actors.device_of(),
            actors,
            rngs: rngs.to_vec(),
            entropy: None,
        }
    }
}

impl crate::learners::Policy for ActorPolicy {
    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let x = self.shape.states(obs, &self.device).detach();
        let p = softmax(self.actors.forward(x), 2).into_data();
        let p = p.as_slice::<f32>().expect("f32 probabilities");
        self.entropy = Some(env::policy::mean_entropy(p, self.shape.k));
        choose(p, self.shape.k, greedy, &mut self.rngs, actions);
    }

    fn entropy(&self) -> Option<f64> {
        self.entropy
    }

    fn begin_episode(&mut self, episode_seed: u64) {
        self.rngs = episode_streams(self.shape.n, episode_seed);
    }

    fn fork(&self) -> Box<dyn crate::learners::Policy> {
        Box::new(ActorPolicy {
            shape: self.shape,
            device: self.device.clone(),
            actors: self.actors.clone(),
            rngs: self.rngs.clone(),
            entropy: None,
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
            sample_index(row, unit(rngs[i].next_u64()))
        };
    }
}

/// A one-element tensor's value.
pub(crate) fn scalar(t: Tensor<1>) -> f64 {
    f64::from(t.into_data().as_slice::<f32>().expect("f32 scalar")[0])
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

    /// Nets for 2 agents, 3 features, 4 levels (actor width 5, critics 4-4), weights from `seed`.
    fn nets(seed: u64) -> Nets {
        let dev = device();
        Nets::new(
            Shape::new(2, 3, 3, 4),
            Actors::new(2, 3, 5, 4, seed, &dev),
            Critics::new(2, 3, [4, 4], seed, &dev),
            0.0,
        )
    }

    #[test]
    fn checkpoints_with_nan_weights_or_moments_loaded() {
        let dev = device();
        let names = Nets::parts("x");
        let names = names.each_ref().map(String::as_str);
        let good = nets(1).save("x").unwrap().into_bytes();
        // One step on a NaN input: NaN gradients, so NaN moments and NaN weights.
        let mut bad = nets(1);
        let x = Tensor::<3>::from_data(TensorData::new(vec![f32::NAN; 6], [2, 1, 3]), &dev);
        let mut g = bad.actors.get().forward(x).sum().backward();
        let grads = GradientsParams::from_module(&mut g, bad.actors.get());
        bad.actors.step(0.01, grads);
        assert!(bad.actors.non_finite().is_some());
        let bad = bad.save("x").unwrap().into_bytes();
        let (good, bad) = (Parts::read(&good, &names).unwrap(), Parts::read(&bad, &names).unwrap());
        let mut into = nets(2);
        let e = into.load(&bad, "x", "test").unwrap_err().to_string();
        assert!(e.contains("actor weights: parameter tensor") && e.contains("NaN"), "{e}");
        // Good weights with the NaN moments: the optimizer state is refused.
        let mixed = [good[0], good[1], good[2], bad[3], good[4]];
        let e = into.load(&mixed, "x", "test").unwrap_err().to_string();
        assert!(e.contains("actor optimizer state: malformed or not finite"), "{e}");
        // A refused state leaves the nets as they were.
        assert!(into.actors.non_finite().is_none());
        into.load(&good, "x", "test").unwrap();
    }

    #[test]
    fn nets_save_and_load_by_shape() {
        let dev = device();
        let a = nets(1);
        let mut b = nets(2);
        let saved = a.save("x").unwrap().into_bytes();
        let names = Nets::parts("x");
        let parts = Parts::read(&saved, &names.each_ref().map(String::as_str)).unwrap();
        b.load(&parts, "x", "test").unwrap();
        let x = Tensor::<3>::from_data(TensorData::new(vec![0.1f32, 0.2, 0.3, 0.4, 0.5, 0.6], [2, 1, 3]), &dev);
        assert_eq!(
            a.actors.get().forward(x.clone()).into_data().try_to_vec::<f32>().unwrap(),
            b.actors.get().forward(x.clone()).into_data().try_to_vec::<f32>().unwrap()
        );
        assert_eq!(
            a.critics.get().forward(x.clone()).into_data().try_to_vec::<f32>().unwrap(),
            b.critics.get().forward(x).into_data().try_to_vec::<f32>().unwrap()
        );
        let mut other = Nets::new(
            Shape::new(3, 3, 3, 4),
            Actors::new(3, 3, 5, 4, 1, &dev),
            Critics::new(3, 3, [4, 4], 1, &dev),
            0.0,
        );
        let e = other.load(&parts, "x", "test").unwrap_err().to_string();
        assert!(
            e.contains("test state is for (agents, features, levels) = [2, 3, 4]; this run has [3, 3, 4]"),
            "{e}"
        );
    }

    #[test]
    fn acting_for_the_present_only_draws_what_acting_for_everyone_draws() {
        // 5 agents of 2 classes in 3 copies: agent 2 blank in every copy (absent), agent 4
        // blank in copy 1 only. Every agent draws what the expanded per-agent actors draw.
        let (n, d, k, copies) = (5, 3, 4, 3);
        let rows = [0i64, 1, 0, 1, 1];
        let shape = Shape::new(n, d, d, k);
        let actors = Actors::new(2, d, 8, k, 9, &device());
        let data: Vec<Vec<f32>> = (0..copies)
            .map(|c| {
                (0..n * d)
                    .map(|j| {
                        let i = j / d;
                        if i == 2 || (i == 4 && c == 1) {
                            0.0
                        } else {
                            ((c * 13 + j * 7) % 10) as f32 / 5.0 - 1.0
                        }
                    })
                    .collect()
            })
            .collect();
        let obs: Vec<Observations<'_>> = data.iter().map(|x| Observations { data: x, dim: d }).collect();
        let (mut a, mut b) = (vec![vec![0; n]; copies], vec![vec![0; n]; copies]);
        let (mut ra, mut rb) = (episode_streams(n, 4), episode_streams(n, 4));
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            act_pooled(&actors, &rows, &obs, shape, &mut ra, &mut a);
            act_many(&actors.valid().expanded(&rows), &obs, shape, &mut rb, &mut b);
            assert_eq!(a, b);
            seen.extend(a.iter().flatten().copied());
        }
        assert!(seen.len() > 2, "the draws vary: {seen:?}");
    }

    #[test]
    fn one_pooled_agent_exports_what_the_expanded_actors_export() {
        // 4 agents of 2 classes; with id biases (non-zero here) agent 3's b1 is its class's
        // plus its own bias, which a class slice alone would miss.
        let rows = [1i64, 0, 1, 1];
        let plain = Actors::new(2, 3, 5, 4, 7, &device());
        let mut with_ids = Actors::new(2, 3, 5, 4, 7, &device()).with_ids(4);
        let ids: Vec<f32> = (0..4 * 5).map(|j| j as f32 / 10.0).collect();
        with_ids.ids = Some(Param::from_tensor(Tensor::from_data(TensorData::new(ids, [4, 1, 5]), &device())));
        for actors in [&plain, &with_ids] {
            let all = actors.valid().expanded(&rows);
            for agent in 0..4 {
                let want = all.export(4, agent).unwrap();
                assert_eq!(actors.export_agent(Some(&rows), 4, agent).unwrap(), want, "agent {agent}");
            }
            assert_eq!(actors.export_agent(None, 2, 1).unwrap(), actors.export(2, 1).unwrap());
        }
        assert_ne!(
            plain.export_agent(Some(&rows), 4, 3).unwrap(),
            with_ids.export_agent(Some(&rows), 4, 3).unwrap(),
            "the id bias is exported"
        );
        assert!(plain.export_agent(Some(&rows), 4, 4).is_err());
    }
}

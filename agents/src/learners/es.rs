//! Evolution strategies over the actors' parameters (OpenAI-ES, Salimans et al. 2017): a
//! learner that uses the simulator instead of a gradient through it.
//!
//! Each training episode is one generation. Its population is `2 * pairs` environment copies;
//! copies `2j` and `2j + 1` replay the same seed (common random numbers: the arrivals cancel
//! out of a pair's difference) and act greedily with the actors `theta + sigma eps_j` and
//! `theta - sigma eps_j` (antithetic pairs). An actor's fitness is the mean reward, over the
//! episode, of the agents that use it (one actor per weight class by default, or one per
//! agent); its fitnesses over the population are replaced by their centred ranks, and
//!
//! `g = 1 / (2 pairs sigma) sum_j (rank(+j) - rank(-j)) eps_j`
//!
//! is followed by Adam (ascent) with decoupled weight decay. The noise is drawn from the
//! generation's seed, so a generation is reproducible and a checkpoint (the actors and Adam's
//! state) is all a resumed run needs. Acting and exporting use the actor in its exported layout
//! ([`super::nets::actor_logits`]): an exported ES agent decides as its run does.
//!
//! ES trains deterministic policies: each population member acts greedily, so the argmax of the
//! actors' logits is the policy it optimises. Its acting policy is that argmax whether asked
//! for greedy or sampled actions (the softmax of its logits is not a distribution it learned),
//! with entropy 0.

use super::base::limits;
use super::base::{argmax, ErrorIn, Exported, Features, Init, Learner, LearnerConfig, Losses, Policy, Transition};
use super::nets::{actor_len, actor_logits};
use super::parts::Parts;
use crate::error::failed;
use env::config::{ConfigError, Scenario};
use env::rng::{stream, unit};
use env::world::Observations;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// `[learner.es]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EsConfig {
    /// Actor hidden width (one tanh layer, exported like PPO's actor).
    pub hidden: usize,
    /// Antithetic pairs per generation: the population is twice this many environment copies
    /// (they replace `train.envs`).
    pub pairs: usize,
    /// Standard deviation of the parameter noise.
    pub sigma: f64,
    /// Adam's learning rate.
    pub lr: f64,
    /// Decoupled weight decay per step (OpenAI-ES's L2 coefficient).
    pub weight_decay: f64,
    /// One actor per weight class, shared by its agents (else one per agent).
    pub per_class: bool,
    /// State features: the whole observation by default, as PPO's.
    pub features: Features,
    /// Fitness shaping: `ranks` (OpenAI-ES's centred ranks over the whole population) or
    /// `pair_signs` (each pair weighted by the sign of its two halves' difference times the
    /// rank of its size among the pairs). Where every pair plays its own seed and seeds differ
    /// far more than policies do (Gavel's job streams), population ranks mostly rank seeds;
    /// pair signs compare each perturbation only with its own antithetic twin.
    pub shaping: Shaping,
}

/// How a generation's fitnesses become the weights of its perturbations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shaping {
    /// Centred ranks over the population (pair weight: rank(+j) - rank(-j)).
    #[default]
    Ranks,
    /// The sign of `f(+j) - f(-j)` times the rank of `|f(+j) - f(-j)|` among the pairs, in
    /// (0, 1]; a pair whose halves did the same weighs 0.
    PairSigns,
}

impl Default for EsConfig {
    fn default() -> Self {
        Self {
            hidden: 16,
            pairs: 16,
            sigma: 0.05,
            lr: 0.02,
            weight_decay: 0.005,
            per_class: true,
            features: Features::All,
            shaping: Shaping::Ranks,
        }
    }
}

/// Largest population (pairs).
const MAX_PAIRS: usize = 512;

impl EsConfig {
    /// Its bounds (the same in every world): widths, population, rates, decay.
    pub fn check(&self, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        if !(1..=limits::MAX_HIDDEN).contains(&self.hidden) {
            return Err(err(
                "learner.es.hidden",
                format!("must be in [1, {}], got {}", limits::MAX_HIDDEN, self.hidden),
            ));
        }
        if !(1..=MAX_PAIRS).contains(&self.pairs) {
            return Err(err("learner.es.pairs", format!("must be in [1, {MAX_PAIRS}], got {}", self.pairs)));
        }
        for (k, v) in [("sigma", self.sigma), ("lr", self.lr)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(err(&format!("learner.es.{k}"), format!("must be a finite number > 0, got {v}")));
            }
        }
        limits::at_most(err, "learner.es.lr", self.lr, limits::MAX_LR)?;
        if !(self.weight_decay.is_finite() && (0.0..1.0).contains(&self.weight_decay)) {
            return Err(err(
                "learner.es.weight_decay",
                format!("must be in [0, 1), got {}", self.weight_decay),
            ));
        }
        Ok(())
    }
}

impl LearnerConfig for EsConfig {
    fn validate(&self, shape: &dyn super::WorldShape, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        self.check(err)?;
        if !chosen {
            return Ok(());
        }
        // Behind the seam ES is its own population ([`crate::worlds::es`]), which checks
        // what it keeps there.
        super::world_shape::check_features(shape, self.features, "learner.es.features", err)
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let s = run.shape;
        let inputs = run.inputs(self.features);
        let block_of: Vec<usize> = if self.per_class || !s.per_agent() {
            s.pools()
        } else {
            (0..s.agents()).collect()
        };
        Box::new(Es::new(self, inputs, s.levels().len(), block_of, run.seed))
    }

    fn features(&self) -> Features {
        self.features
    }

    fn exported(&self, _shape: &dyn super::WorldShape) -> Exported {
        Exported::Actor { hidden: self.hidden }
    }

    /// The actors, Adam's moments and a generation's noise (one draw per pair), f32.
    fn memory(&self, sc: &Scenario, _copies: usize) -> Vec<(String, u64)> {
        let d = super::base::feature_dim(sc, self.features);
        let blocks = if self.per_class { sc.weight_classes().len() } else { sc.n() };
        let params = super::base::actor_params(blocks, d, self.hidden, sc.action_levels().len());
        vec![("learner.es.hidden".into(), params.saturating_mul(4 * (3 + self.pairs as u64)))]
    }

    fn learns_from_rewards(&self) -> bool {
        true
    }

    fn copies(&self) -> Option<usize> {
        Some(2 * self.pairs)
    }
}

/// Adam's first and second moments and step count of every actor's parameters.
#[derive(Clone)]
struct Adam {
    m: Vec<f64>,
    v: Vec<f64>,
    t: u64,
}

/// What ES is made of, whatever the world: actors (one per block: a weight class, a group of
/// agents) in the exported layout, Adam's state, and a generation's noise. The queue-world
/// learner ([`Es`]) and the trainer of the worlds behind the seam (`crate::worlds::es`) both
/// drive it: they say which block acts for which row and what each copy's fitness was.
#[derive(Clone)]
pub struct EsCore {
    cfg: EsConfig,
    /// Features read, hidden width, levels.
    d: usize,
    h: usize,
    k: usize,
    /// Every block's weights in the exported layout, one after another.
    theta: Vec<f32>,
    adam: Adam,
    /// The generation's noise: `sigma eps_j` for every pair j, `[pairs][theta]`.
    noise: Vec<Vec<f32>>,
}

/// Scratch space of one forward pass.
#[derive(Default, Clone)]
pub struct Scratch {
    w: Vec<f32>,
    hidden: Vec<f32>,
}

impl EsCore {
    /// `blocks` fresh actors reading `d` features and choosing among `k` levels; weights from
    /// `seed` (uniform in +-1/sqrt(fan_in), a stream per block).
    pub fn new(cfg: &EsConfig, d: usize, k: usize, blocks: usize, seed: u64) -> Self {
        let h = cfg.hidden;
        let len = actor_len(d, h, k);
        let mut theta = Vec::with_capacity(blocks * len);
        for b in 0..blocks {
            let mut rng = stream(seed, "init/es", b as u64);
            let mut draw = |fan_in: usize, count: usize| {
                let bound = 1.0 / (fan_in as f64).sqrt();
                (0..count)
                    .map(|_| ((2.0 * unit(rng.next_u64()) - 1.0) * bound) as f32)
                    .collect::<Vec<f32>>()
            };
            let (w1, b1, w2, b2) = (draw(d, d * h), draw(d, h), draw(h, h * k), draw(h, k));
            theta.extend(w1.into_iter().chain(b1).chain(w2).chain(b2));
        }
        Self {
            cfg: cfg.clone(),
            d,
            h,
            k,
            adam: Adam {
                m: vec![0.0; theta.len()],
                v: vec![0.0; theta.len()],
                t: 0,
            },
            theta,
            noise: Vec::new(),
        }
    }

    /// Weights of one actor.
    pub fn len(&self) -> usize {
        actor_len(self.d, self.h, self.k)
    }

    /// Whether it has no actor.
    pub fn is_empty(&self) -> bool {
        self.theta.is_empty()
    }

    /// Actors.
    pub fn blocks(&self) -> usize {
        self.theta.len() / self.len()
    }

    /// Levels.
    pub fn levels(&self) -> usize {
        self.k
    }

    /// Features read.
    pub fn features(&self) -> usize {
        self.d
    }

    /// Hidden width.
    pub fn hidden(&self) -> usize {
        self.h
    }

    /// Antithetic pairs per generation.
    pub fn pairs(&self) -> usize {
        self.cfg.pairs
    }

    /// Block `b`'s weights (the exported layout).
    pub fn actor(&self, b: usize) -> &[f32] {
        let len = self.len();
        &self.theta[b * len..(b + 1) * len]
    }

    /// Block `b`'s logits for features `x` under its weights, or (with a pair and a sign) the
    /// perturbed weights `theta + sign sigma eps_pair`.
    pub fn logits(&self, b: usize, x: &[f32], perturb: Option<(usize, f32)>, scratch: &mut Scratch, logits: &mut [f32]) {
        let len = self.len();
        let base = &self.theta[b * len..(b + 1) * len];
        let w: &[f32] = match perturb {
            None => base,
            Some((j, s)) => {
                scratch.w.clear();
                scratch
                    .w
                    .extend(base.iter().zip(&self.noise[j][b * len..(b + 1) * len]).map(|(t, e)| t + s * e));
                &scratch.w
            }
        };
        actor_logits(w, (self.d, self.h, self.k), x, &mut scratch.hidden, logits);
    }

    /// The generation's noise from its seed: a standard normal per parameter per pair
    /// (Box-Muller on named-stream uniforms), times sigma.
    pub fn draw_noise(&mut self, seed: u64) {
        let len = self.theta.len();
        let sigma = self.cfg.sigma as f32;
        self.noise = (0..self.cfg.pairs)
            .map(|j| {
                let mut rng = stream(seed, "es-noise", j as u64);
                (0..len)
                    .map(|_| {
                        let (u1, u2) = (1.0 - unit(rng.next_u64()), unit(rng.next_u64()));
                        ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()) as f32 * sigma
                    })
                    .collect()
            })
            .collect();
    }

    /// The generation's update from every block's fitness in every copy (`fitness[b][c]`,
    /// copies `2j` and `2j + 1` pair j's `+` and `-`); returns the mean spread of the
    /// fitnesses over the blocks.
    pub fn update(&mut self, fitness: &[Vec<f64>]) -> f64 {
        let (pairs, len) = (self.cfg.pairs, self.len());
        let blocks = self.blocks();
        let mut grad = vec![0.0f64; self.theta.len()];
        let mut spread = 0.0;
        for (b, fitness) in fitness.iter().enumerate().take(blocks) {
            let (lo, hi) = fitness
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, z), &x| (a.min(x), z.max(x)));
            spread += hi - lo;
            let weights = pair_weights(fitness, self.cfg.shaping);
            for (j, &weight) in weights.iter().enumerate().take(pairs) {
                if weight == 0.0 {
                    continue;
                }
                for (g, &e) in grad[b * len..(b + 1) * len].iter_mut().zip(&self.noise[j][b * len..(b + 1) * len]) {
                    // eps = noise / sigma, and the estimate divides by sigma once more.
                    *g += weight * f64::from(e) / (self.cfg.sigma * self.cfg.sigma);
                }
            }
        }
        let scale = 1.0 / (2.0 * pairs as f64);
        self.adam.t += 1;
        let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
        let t = self.adam.t as i32;
        let lr = self.cfg.lr * (1.0 - b2.powi(t)).sqrt() / (1.0 - b1.powi(t));
        for (p, (g, (m, v))) in self
            .theta
            .iter_mut()
            .zip(grad.iter().zip(self.adam.m.iter_mut().zip(self.adam.v.iter_mut())))
        {
            let g = g * scale;
            *m = b1 * *m + (1.0 - b1) * g;
            *v = b2 * *v + (1.0 - b2) * g * g;
            let decayed = f64::from(*p) * (1.0 - self.cfg.weight_decay);
            *p = (decayed + lr * *m / (v.sqrt() + eps)) as f32;
        }
        spread / blocks as f64
    }

    /// Where its parameters first stop being finite, described.
    pub fn non_finite(&self) -> Option<String> {
        let i = self.theta.iter().position(|x| !x.is_finite())?;
        Some(format!("actor parameter {i} is {}", self.theta[i]))
    }

    /// Its state as named parts, `agents` recorded with the dimensions (a check on load).
    pub fn save(&self, agents: usize) -> Vec<u8> {
        let dims = [agents, self.blocks(), self.d, self.h, self.k].map(|x| x as u64);
        let theta: Vec<f64> = self.theta.iter().map(|&x| f64::from(x)).collect();
        Parts::default()
            .add_u64(PARTS[0], &dims)
            .add_f64(PARTS[1], &theta)
            .add_f64(PARTS[2], &self.adam.m)
            .add_f64(PARTS[3], &self.adam.v)
            .add_u64(PARTS[4], &[self.adam.t])
            .into_bytes()
    }

    /// Restore [`EsCore::save`]'s bytes, checking the dimensions against this one's.
    pub fn load(&mut self, bytes: &[u8], agents: usize) -> crate::error::Result<()> {
        let parts = Parts::read(bytes, &PARTS).map_err(failed)?;
        let ours = [agents, self.blocks(), self.d, self.h, self.k].map(|x| x as u64);
        let dims = Parts::u64s(parts[0], PARTS[0]).map_err(failed)?;
        if dims != ours {
            return Err(failed(format!(
                "ES state is for (agents, actors, features, hidden, levels) = {dims:?}; this run has {ours:?}"
            )));
        }
        let len = self.theta.len();
        let floats = |k: usize| -> crate::error::Result<Vec<f64>> {
            let v = Parts::f64s(parts[k], PARTS[k]).map_err(failed)?;
            if v.len() != len {
                return Err(failed(format!("part `{}` holds {} numbers, expected {len}", PARTS[k], v.len())));
            }
            Ok(v)
        };
        let (theta, m, v) = (floats(1)?, floats(2)?, floats(3)?);
        self.theta = theta.into_iter().map(|x| x as f32).collect();
        self.adam = Adam {
            m,
            v,
            t: Parts::u64s(parts[4], PARTS[4]).map_err(failed)?.first().copied().unwrap_or(0),
        };
        Ok(())
    }
}

/// The actors of a queue-world population and how they act, shared by the learner and its
/// acting forks.
#[derive(Clone)]
struct Actors {
    core: EsCore,
    /// Observation length and first feature read.
    obs_dim: usize,
    at: usize,
    /// The actor (block) of every agent.
    block_of: Vec<usize>,
}

impl Actors {
    /// Every agent's logits under `theta` (or, with a pair and a sign, the perturbed weights
    /// `theta + sign sigma eps_j`), into `logits` (`[n][k]`).
    fn logits(&self, obs: Observations<'_>, perturb: Option<(usize, f32)>, scratch: &mut Scratch, logits: &mut [f32]) {
        assert_eq!(obs.dim, self.obs_dim, "observation length");
        let (d, k) = (self.core.d, self.core.k);
        for (i, &b) in self.block_of.iter().enumerate() {
            let x = &obs.get(i)[self.at..self.at + d];
            self.core.logits(b, x, perturb, scratch, &mut logits[i * k..(i + 1) * k]);
        }
    }
}

/// Evolution strategies for n agents.
pub struct Es {
    cfg: EsConfig,
    actors: Actors,
    /// Per copy, per agent: the reward summed over the generation's rounds so far.
    returns: Vec<Vec<f64>>,
    scratch: Scratch,
    logits: Vec<f32>,
}

impl Es {
    /// Fresh actors for agents reading the first `d` of `obs_dim` features, `k` levels, agent i
    /// using actor `block_of[i]`; weights from `seed` (uniform in +-1/sqrt(fan_in)).
    pub fn new(cfg: &EsConfig, inputs: super::base::Inputs, k: usize, block_of: Vec<usize>, seed: u64) -> Self {
        let super::base::Inputs { obs_dim, at, d } = inputs;
        let blocks = block_of.iter().max().map_or(1, |m| m + 1);
        let n = block_of.len();
        Self {
            cfg: cfg.clone(),
            actors: Actors {
                core: EsCore::new(cfg, d, k, blocks, seed),
                obs_dim,
                at,
                block_of,
            },
            returns: Vec::new(),
            scratch: Scratch::default(),
            logits: vec![0.0; n * k],
        }
    }

    /// The generation's update from the population's returns: a block's fitness in a copy is
    /// the mean return of its agents there.
    fn update(&mut self) -> Losses {
        let pop = 2 * self.cfg.pairs;
        let fitness: Vec<Vec<f64>> = (0..self.actors.core.blocks())
            .map(|b| {
                let agents: Vec<usize> = (0..self.actors.block_of.len()).filter(|&i| self.actors.block_of[i] == b).collect();
                (0..pop)
                    .map(|c| agents.iter().map(|&i| self.returns[c][i]).sum::<f64>() / agents.len() as f64)
                    .collect()
            })
            .collect();
        Losses {
            reward_spread: self.actors.core.update(&fitness),
            ..Losses::default()
        }
    }
}

/// Each pair's weight under `shaping` from the population's fitnesses (copies `2j`, `2j + 1`).
pub fn pair_weights(fitness: &[f64], shaping: Shaping) -> Vec<f64> {
    let pairs = fitness.len() / 2;
    match shaping {
        Shaping::Ranks => {
            let ranks = centred_ranks(fitness);
            (0..pairs).map(|j| ranks[2 * j] - ranks[2 * j + 1]).collect()
        }
        Shaping::PairSigns => {
            let d: Vec<f64> = (0..pairs).map(|j| fitness[2 * j] - fitness[2 * j + 1]).collect();
            let size: Vec<f64> = d.iter().map(|x| x.abs()).collect();
            // Centred ranks of the sizes, moved to (0, 1]: the smallest difference weighs least.
            let ranks = centred_ranks(&size);
            d.iter()
                .zip(ranks)
                .map(|(x, r)| {
                    if *x == 0.0 {
                        0.0
                    } else {
                        x.signum() * (r + 0.5 + 1.0 / pairs as f64) / (1.0 + 1.0 / pairs as f64)
                    }
                })
                .collect()
        }
    }
}

/// Centred ranks in [-0.5, 0.5] (OpenAI-ES's fitness shaping); equal values share their mean
/// rank, so a pair whose two halves did the same contributes nothing.
pub fn centred_ranks(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    if n < 2 {
        return vec![0.0; n];
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]).then(a.cmp(&b)));
    let mut ranks = vec![0.0; n];
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && x[order[j + 1]] == x[order[i]] {
            j += 1;
        }
        let mean = (i + j) as f64 / 2.0;
        for &o in &order[i..=j] {
            ranks[o] = mean / (n - 1) as f64 - 0.5;
        }
        i = j + 1;
    }
    ranks
}

impl Policy for Es {
    fn begin_episode(&mut self, seed: u64) {
        self.actors.core.draw_noise(seed);
        self.returns.clear();
    }

    /// The unperturbed actors, as the acting fork does.
    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let mut policy = EsPolicy::of(self);
        policy.act(obs, &[], greedy, actions);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(EsPolicy::of(self))
    }
}

impl Learner for Es {
    fn reads(&self) -> Option<std::ops::Range<usize>> {
        Some(self.actors.at..self.actors.at + self.actors.core.d)
    }

    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        self.learn_many(std::slice::from_ref(t))
    }

    /// Copy `c` acts greedily with pair `c / 2`'s perturbation, `+` for even copies.
    fn act_many(&mut self, obs: &[Observations<'_>], _budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        assert_eq!(obs.len(), 2 * self.cfg.pairs, "the population is 2 * pairs copies");
        let k = self.actors.core.k;
        for (c, (o, a)) in obs.iter().zip(actions.iter_mut()).enumerate() {
            let sign = if c % 2 == 0 { 1.0 } else { -1.0 };
            self.actors.logits(*o, Some((c / 2, sign)), &mut self.scratch, &mut self.logits);
            for (i, ai) in a.iter_mut().enumerate() {
                *ai = argmax(self.logits[i * k..(i + 1) * k].iter().map(|&l| f64::from(l)));
            }
        }
    }

    fn learn_many(&mut self, ts: &[Transition<'_>]) -> Losses {
        if self.returns.is_empty() {
            self.returns = vec![vec![0.0; self.actors.block_of.len()]; ts.len()];
        }
        for (c, t) in ts.iter().enumerate() {
            for (r, &x) in self.returns[c].iter_mut().zip(t.rewards) {
                *r += x;
            }
        }
        if ts[0].done {
            let l = self.update();
            self.returns.clear();
            return l;
        }
        Losses {
            skipped: true,
            ..Losses::default()
        }
    }

    fn seed_group(&self) -> usize {
        2
    }

    fn non_finite(&self) -> Option<String> {
        self.actors.core.non_finite()
    }

    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
        Ok(self.actors.core.actor(self.actors.block_of[agent]).to_vec())
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        Ok(self.actors.core.save(self.actors.block_of.len()))
    }

    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        self.actors.core.load(bytes, self.actors.block_of.len())
    }
}

/// The parts of a saved ES state.
const PARTS: [&str; 5] = ["es/dims", "es/theta", "es/adam_m", "es/adam_v", "es/adam_t"];

/// ES's acting policy: the argmax of the unperturbed actors' logits (see the module
/// documentation).
#[derive(Clone)]
pub struct EsPolicy {
    actors: Actors,
    scratch: Scratch,
    logits: Vec<f32>,
}

impl EsPolicy {
    fn of(es: &Es) -> Self {
        Self {
            actors: es.actors.clone(),
            scratch: Scratch::default(),
            logits: es.logits.clone(),
        }
    }
}

impl Policy for EsPolicy {
    fn begin_episode(&mut self, _seed: u64) {}

    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        let k = self.actors.core.k;
        self.actors.logits(obs, None, &mut self.scratch, &mut self.logits);
        for (i, a) in actions.iter_mut().enumerate() {
            *a = argmax(self.logits[i * k..(i + 1) * k].iter().map(|&l| f64::from(l)));
        }
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    /// Deterministic: 0.
    fn entropy(&self) -> Option<f64> {
        Some(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::Inputs;

    #[test]
    fn pair_sign_weights_by_hand() {
        // Pairs: (3, 1) d = +2, (5, 5) d = 0, (0, 4) d = -4. Sizes 2, 0, 4: centred ranks
        // 0, -0.5, 0.5, shifted to (r + 0.5 + 1/3) / (4/3): 0.625, 0.25, 1.
        let w = pair_weights(&[3.0, 1.0, 5.0, 5.0, 0.0, 4.0], Shaping::PairSigns);
        assert_eq!(w, vec![0.625, 0.0, -1.0]);
        // Population ranks of the same: 3 -> 0.1, 1 -> -0.3, 5 and 5 -> 0.4 (tied), 0 -> -0.5,
        // 4 -> 0.1... (six values: ranks 0..5 over 5).
        let r = pair_weights(&[3.0, 1.0, 5.0, 5.0, 0.0, 4.0], Shaping::Ranks);
        assert_eq!(r[1], 0.0, "a tie weighs nothing either way");
        assert!(r[0] > 0.0 && r[2] < 0.0);
    }

    #[test]
    fn centred_ranks_by_hand() {
        assert_eq!(centred_ranks(&[3.0, 1.0, 2.0]), vec![0.5, -0.5, 0.0]);
        // Ties share their mean rank: (1 + 2) / 2 = 1.5 of 0..3, so 1.5 / 3 - 0.5 = 0.
        assert_eq!(centred_ranks(&[5.0, 7.0, 7.0, 9.0]), vec![-0.5, 0.0, 0.0, 0.5]);
        assert_eq!(centred_ranks(&[1.0]), vec![0.0]);
    }

    /// A one-state bandit for `n` agents in two classes, played as training plays it: each
    /// generation, every copy of the population acts and is paid `pay(class, level)`.
    fn train(cfg: &EsConfig, generations: u64, pay: impl Fn(usize, usize) -> f64) -> Es {
        let (n, d, k) = (4, 3, 10);
        let block_of = vec![0, 0, 1, 1];
        let mut es = Es::new(cfg, Inputs { obs_dim: d, at: 0, d }, k, block_of.clone(), 7);
        let obs: Vec<f32> = (0..n * d).map(|j| (j % 3) as f32 / 3.0).collect();
        let budgets = vec![0.0; n];
        let pop = 2 * cfg.pairs;
        for g in 0..generations {
            es.begin_episode(env::rng::stream_seed(1, "gen", g));
            let views: Vec<Observations<'_>> = (0..pop).map(|_| Observations { data: &obs, dim: d }).collect();
            let b: Vec<&[f64]> = (0..pop).map(|_| budgets.as_slice()).collect();
            let mut actions = vec![vec![0; n]; pop];
            for round in 0..3 {
                es.act_many(&views, &b, &mut actions);
                let rewards: Vec<Vec<f64>> = actions.iter().map(|a| (0..n).map(|i| pay(block_of[i], a[i])).collect()).collect();
                let ts: Vec<Transition<'_>> = (0..pop)
                    .map(|c| crate::learners::testing::transition(d, &obs, &actions[c], &rewards[c], round == 2))
                    .collect();
                es.learn_many(&ts);
            }
        }
        es
    }

    #[test]
    fn finds_each_class_s_best_level_and_saves_exactly() {
        // Class 0 is paid most at level 2, class 1 at level 8 (each level away costs 0.1).
        let pay = |class: usize, level: usize| -0.1 * (level as f64 - if class == 0 { 2.0 } else { 8.0 }).abs();
        let cfg = EsConfig::default();
        let es = train(&cfg, 60, pay);
        let obs: Vec<f32> = (0..12).map(|j| (j % 3) as f32 / 3.0).collect();
        let mut a = vec![0; 4];
        es.fork().act(Observations { data: &obs, dim: 3 }, &[0.0; 4], true, &mut a);
        assert_eq!(a, vec![2, 2, 8, 8]);
        // Saved and loaded, it acts the same; exported weights are the class's actor.
        let mut other = Es::new(&cfg, Inputs { obs_dim: 3, at: 0, d: 3 }, 10, vec![0, 0, 1, 1], 99);
        other.load(&es.save().unwrap()).unwrap();
        let mut b = vec![0; 4];
        other.fork().act(Observations { data: &obs, dim: 3 }, &[0.0; 4], true, &mut b);
        assert_eq!(a, b);
        assert_eq!(es.export_weights(0).unwrap(), es.export_weights(1).unwrap());
        assert_eq!(es.export_weights(0).unwrap().len(), actor_len(3, 16, 10));
        assert!(Es::new(&cfg, Inputs { obs_dim: 3, at: 0, d: 3 }, 10, vec![0, 1, 2, 3], 1)
            .load(&es.save().unwrap())
            .is_err());
    }

    #[test]
    fn every_level_paying_the_same_moves_nothing() {
        // Ties everywhere: every pair's two halves score the same, so theta only decays.
        let es = train(&EsConfig::default(), 5, |_, _| 1.0);
        let fresh = Es::new(&EsConfig::default(), Inputs { obs_dim: 3, at: 0, d: 3 }, 10, vec![0, 0, 1, 1], 7);
        for (a, b) in es.actors.core.theta.iter().zip(&fresh.actors.core.theta) {
            let decayed = b * (1.0f32 - 0.005).powi(5);
            assert!((a - decayed).abs() < 1e-6, "{a} vs {decayed}");
        }
    }
}

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
//!    the last step bootstraps from `V(s_T)` of the observation after it, never from 0. With
//!    `group = G > 1` the copies come in groups of G that share a seed (the same arrivals and
//!    service draws), and each agent's advantage is made relative to its group: copy k's
//!    `A_t` minus the mean of the other copies' `A_t` in its group, the same agent and round
//!    (leave-one-out, as RLOO does for sampled completions). The other copies' advantages do
//!    not depend on copy k's actions, so the gradient stays unbiased; what they share (the
//!    arrivals the critic cannot foresee) cancels. With
//!    `value_norm` (the default) the critics predict returns normalised by each agent's
//!    running mean and standard deviation of the returns seen, V is their output
//!    denormalised, and the value loss compares normalised returns;
//! 3. `epochs` passes over the rollout in `minibatches` shuffled minibatches (one permutation
//!    for all agents, from a named stream, so results depend only on the seed), each with
//!    - advantages normalised per agent within the minibatch,
//!    - the clipped surrogate `max(-A ratio, -A clip(ratio, 1 - eps, 1 + eps))`,
//!    - the value loss `0.5 (V - R)^2`, the entropy bonus,
//!    - one AdamW step after clipping each agent's own gradient to a global norm;
//! 4. with `anneal_lr`, the learning rate anneals linearly to 0 over the run's updates.
//!
//! The loss is a sum of per-agent losses that share no parameter, so every agent's update is
//! its own (the gradient clip is per agent for the same reason).

use super::base::{limits, ErrorIn, Exported, Features, Init, Learner, LearnerConfig, Losses, Policy, Transition};
use super::nets::{self, choose, device, episode_streams, scalar, ActorPolicy, Actors, Critics, Nets, Shape};
use super::normalize::RunningStats;
use super::parts::Parts;
use crate::error::failed;
use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use env::config::{ConfigError, Scenario};
use env::rng::{names, stream};
use env::world::Observations;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

mod loss;
#[cfg(test)]
mod tests;

use loss::clip_per_agent;
pub use loss::{gae, normalise, normalise_live, policy_losses, policy_losses_masked, value_loss, value_loss_masked};

/// Whose features a critic reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Critic {
    /// Central when the reward is shared (`env.reward = "welfare"`: every agent's return is the
    /// same function of every agent's state, which a local critic cannot see), local otherwise.
    /// The PPO sweep over replicates (agents/README.md) found central critics ahead under the
    /// welfare reward; under selfish rewards they let light agents drift (issue 25).
    Auto,
    /// Its own agent's (IPPO).
    Local,
    /// Every agent's, concatenated (MAPPO).
    Central,
}

impl Critic {
    /// What `self` means in `sc`: `Auto` decided by the reward (central under the shared
    /// welfare where the same agents act every round; local where they come and go).
    pub fn resolve(self, sc: &dyn crate::learners::WorldShape) -> Critic {
        match self {
            Critic::Auto if sc.welfare_reward() && sc.persistent() => Critic::Central,
            Critic::Auto => Critic::Local,
            c => c,
        }
    }
}

/// Whose actor parameters are shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Share {
    /// One actor per weight class for MAPPO under the shared welfare reward (there the agents
    /// of a class have one objective and interchangeable places, so one actor learns from all
    /// their rounds, and the central critic scores them against every agent's state), one per
    /// agent otherwise: PPO's default (issue 41; [`PpoConfig`] has the measurements).
    Auto,
    /// Every agent has its own actor.
    None,
    /// One actor per weight class.
    Class,
    /// One actor per weight class, reading the agent's id: what a one-hot agent index as an
    /// input adds to the hidden layer is a per-agent bias, which is how it is stored, so
    /// exported agents read what the others do.
    ClassId,
}

impl Share {
    /// Whether every agent has its own actor.
    pub fn is_none(&self) -> bool {
        *self == Share::None
    }

    /// What `self` means in `sc` for a run whose critic is `critic` (resolved): `Auto` is
    /// `Class` for MAPPO under the shared welfare reward ([`welfare_mappo`]), `None` otherwise.
    pub fn resolve(self, sc: &dyn crate::learners::WorldShape, critic: Critic) -> Share {
        match self {
            Share::Auto if welfare_mappo(sc, critic) => Share::Class,
            Share::Auto => Share::None,
            s => s,
        }
    }
}

/// Whether a run is MAPPO (`critic`, resolved, central) paid the shared welfare where the same
/// agents act every round: where PPO's `auto` share and entropy take the w124-mmpp recipe.
/// With local critics the recipe collapses: IPPO per class without a bonus on w124-mmpp
/// ended -1.50 [-1.61, -1.40] against the best fixed level, -0.89 below uniform play (5
/// replicates, 2026-12-01), where per agent at 0.01 it is -1.00.
fn welfare_mappo(sc: &dyn crate::learners::WorldShape, critic: Critic) -> bool {
    sc.welfare_reward() && sc.persistent() && critic == Critic::Central
}

/// The entropy bonus's coefficient: a number, or `"auto"` (PPO's default): none for MAPPO
/// under the shared welfare reward ([`welfare_mappo`]), 0.01 (CleanRL's, SPEC 4's) otherwise
/// ([`PpoConfig`] has the measurements).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bonus {
    /// Decided by the world's reward ([`Bonus::resolve`]).
    Auto,
    /// This coefficient.
    Of(f64),
}

impl Bonus {
    /// The coefficient where no world decides `Auto` (a learner built without one): 0.01.
    pub const UNDECIDED: f64 = 0.01;

    /// What `self` means in `sc` for a run whose critic is `critic` (resolved).
    pub fn resolve(self, sc: &dyn crate::learners::WorldShape, critic: Critic) -> Bonus {
        match self {
            Bonus::Auto if welfare_mappo(sc, critic) => Bonus::Of(0.0),
            Bonus::Auto => Bonus::Of(Self::UNDECIDED),
            b => b,
        }
    }

    /// The coefficient ([`Bonus::UNDECIDED`] for an `Auto` no world resolved).
    pub fn value(self) -> f64 {
        match self {
            Bonus::Auto => Self::UNDECIDED,
            Bonus::Of(v) => v,
        }
    }
}

impl Serialize for Bonus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Bonus::Auto => s.serialize_str("auto"),
            Bonus::Of(v) => s.serialize_f64(*v),
        }
    }
}

impl<'de> Deserialize<'de> for Bonus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Bonus;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a number >= 0 or \"auto\"")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Bonus, E> {
                Ok(Bonus::Of(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Bonus, E> {
                Ok(Bonus::Of(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Bonus, E> {
                Ok(Bonus::Of(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Bonus, E> {
                match v {
                    "auto" => Ok(Bonus::Auto),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// `[learner.ppo]` (defaults: CleanRL's `ppo.py`, as SPEC 4 lists them, with six decisions
/// of ours where SPEC 4 says otherwise:
/// - `lr = 5e-4` and `epochs = 10` (SPEC 4: 2.5e-4 and 4), and `critic = "auto"` (central
///   under the shared welfare reward): SPEC 4's values left the sampled policy statistically
///   uniform (issue 25). A TPE sweep over 4 training replicates per trial
///   (configs/sweeps/ppo-defaults.toml; agents/README.md has the table) put every 4-epoch trial
///   in the bottom half and central critics ahead under the welfare reward; among the learning
///   rates it left level (3.6e-4 to 2.5e-3), 5e-4 is the one that both finds a level paying 5%
///   more and keeps a flat bandit flat (the tests in `tests.rs`);
/// - the actor is the actor-critic's network (one tanh layer of 64, not two), and the critic
///   its 64-64 ReLU critic: one stacked implementation, and one exported-agent runtime that
///   runs either learner's actors;
/// - `rollout = 0`, a whole episode (300 rounds per copy), not 128: every update sees
///   complete episodes with one bootstrap at the truncation, instead of 128, 128 and 44 rounds
///   per 300-round episode; `rollout = 128` is SPEC 4's;
/// - `group = 8` copies per seed with group-relative advantages (issue 41): on the quickstart
///   with the welfare reward, 400 episodes, plain GAE on one copy ended -0.82 [-1.29, -0.65]
///   below the best fixed level sampled (5 replicates); groups of 8, +0.86 [+0.81, +0.95]
///   (3 replicates). `train.envs` (1 by default for every learner) counts seeds, each played by
///   a group;
/// - `share = "auto"` and `entropy = "auto"` (issue 41): for MAPPO under the shared welfare
///   reward (the default critic there) one actor per weight class and no entropy bonus,
///   elsewhere an actor per agent and 0.01 (with local critics the recipe collapses,
///   [`welfare_mappo`]). With the welfare reward on w124-mmpp at load 0.8 (20 agents; 5 replicates, 16 held-out seeds,
///   sampled, against the best fixed level) MAPPO per agent at 0.01 stayed near-uniform at
///   -0.33 [-0.38, -0.32] and per class without the bonus reached -0.00 [-0.04, +0.02]; on
///   the quickstart per class without the bonus gave +1.08 [+0.94, +1.16] against +0.83
///   [+0.78, +0.92] per agent at 0.01 (agents/README.md has both worlds' rows).
///   Under own rewards nothing was measured to move them: the selfish rows stand as they were;
/// - the value loss is not clipped: CleanRL clips it by default (`clip_vloss`), SPEC 4 does
///   not ask for it, and a large study of PPO's choices found it does not help (Andrychowicz et al.,
///   "What matters in on-policy RL", 2021).)
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
    /// Entropy bonus coefficient (at the start of the run, with `entropy_anneal`); `"auto"`
    /// (the default, [`Bonus`]): 0 for MAPPO under the shared welfare reward, else 0.01.
    pub entropy: Bonus,
    /// The fraction of the run's planned updates over which the entropy bonus falls linearly
    /// to 0 and then stays there; 0 (the default): the bonus stays `entropy` throughout.
    /// Planned as `anneal_lr` plans: extending a run's episodes on resume stretches it.
    /// Written to a run's config only when not 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub entropy_anneal: f64,
    /// Value loss coefficient.
    pub vf_coef: f64,
    /// Per-agent gradient norm limit.
    pub max_grad_norm: f64,
    /// Normalise advantages per agent within each minibatch.
    pub norm_adv: bool,
    /// The critics predict returns normalised by each agent's running mean and standard
    /// deviation of the returns seen (MAPPO's value normalisation, Yu et al. 2022): returns of
    /// 100 to 300 otherwise take the critic thousands of small steps to reach.
    pub value_norm: bool,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Reward multiplier.
    pub reward_scale: f64,
    /// Local (IPPO) or central (MAPPO) critics.
    pub critic: Critic,
    /// Actor parameters: one per agent, or one per weight class shared by its agents (the
    /// class is then implicit in the network; `env.observe_weight` also puts it in the input),
    /// with or without the agent's id as an input. Where many agents share a welfare reward
    /// (w124-mmpp's 20), `class` with `entropy = 0` is what reached the best fixed level
    /// (agents/README), and `"auto"` (the default) is that for MAPPO under the welfare reward.
    pub share: Share,
    /// State features: the whole observation by default (budget share, utilities, backlog
    /// over arrival rate, and the configured extras such as `env.observe_burst`).
    pub features: Features,
    /// Environment copies per seed (group-relative advantages, see the module documentation);
    /// 1: every copy its own seed, plain GAE. A training episode steps `train.envs` such
    /// groups.
    pub group: usize,
    /// The actor's output layer's initial weights and biases times this. At 0.03 (the
    /// default, since issue 41) an untrained policy is uniform to about 1%, as CleanRL's policy
    /// head (orthogonal init, std 0.01) is; at 1 (the default before) the initial logits spread
    /// about 0.3 across levels, a random tilt away from uniform play that 50 episodes of a weak
    /// signal did not undo (w128-mmpp: -0.012 [-0.028, -0.003] against uniform play at 1,
    /// -0.001 [-0.023, +0.011] at 0.03; the quickstart unchanged within its CI). Always
    /// written to a run's config: a run directory from before the change, whose config.toml
    /// has no such key, is read at 1, as it was trained (`train::LEGACY_DEFAULTS`).
    pub head_scale: f64,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for PpoConfig {
    fn default() -> Self {
        Self {
            actor_hidden: 64,
            critic_hidden: [64, 64],
            lr: 5e-4,
            anneal_lr: true,
            gamma: 0.99,
            gae_lambda: 0.95,
            rollout: 0,
            minibatches: 4,
            epochs: 10,
            clip: 0.2,
            entropy: Bonus::Auto,
            entropy_anneal: 0.0,
            vf_coef: 0.5,
            max_grad_norm: 0.5,
            norm_adv: true,
            value_norm: true,
            weight_decay: 0.0,
            reward_scale: 1.0,
            critic: Critic::Auto,
            share: Share::Auto,
            features: Features::All,
            group: 8,
            head_scale: 0.03,
        }
    }
}

impl PpoConfig {
    /// `self` with its `auto` settings decided by `sc`: the critic, then share and entropy
    /// (which depend on it).
    pub fn resolved(&self, sc: &dyn crate::learners::WorldShape) -> PpoConfig {
        let critic = self.critic.resolve(sc);
        PpoConfig {
            critic,
            share: self.share.resolve(sc, critic),
            entropy: self.entropy.resolve(sc, critic),
            ..self.clone()
        }
    }

    /// Its bounds (the same in every world): widths, rates, counts, coefficients.
    pub fn check(&self, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
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
        for (k, v) in [
            ("entropy", p.entropy.value()),
            ("vf_coef", p.vf_coef),
            ("weight_decay", p.weight_decay),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(err(&key(k), format!("must be a finite number >= 0, got {v}")));
            }
        }
        if !(p.head_scale.is_finite() && p.head_scale > 0.0 && p.head_scale <= 10.0) {
            return Err(err(&key("head_scale"), format!("must be in (0, 10], got {}", p.head_scale)));
        }
        for (k, v) in [
            ("gamma", p.gamma),
            ("gae_lambda", p.gae_lambda),
            ("entropy_anneal", p.entropy_anneal),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(err(&key(k), format!("must be in [0, 1], got {v}")));
            }
        }
        for (k, v) in [("epochs", p.epochs), ("minibatches", p.minibatches), ("group", p.group)] {
            if !(1..=1000).contains(&v) {
                return Err(err(&key(k), format!("must be in [1, 1000], got {v}")));
            }
        }
        for (k, v, max) in [
            ("lr", p.lr, limits::MAX_LR),
            ("reward_scale", p.reward_scale, limits::MAX_COEF),
            ("entropy", p.entropy.value(), limits::MAX_COEF),
            ("vf_coef", p.vf_coef, limits::MAX_COEF),
            ("weight_decay", p.weight_decay, limits::MAX_WEIGHT_DECAY),
        ] {
            limits::at_most(err, &key(k), v, max)?;
        }
        Ok(())
    }
}

impl LearnerConfig for PpoConfig {
    /// Widths (before any tensor exists, the central critic's input included), rates, counts
    /// and coefficients; when PPO runs, what the world cannot give it (a central critic or
    /// agent ids where agents come and go or share per group, features its rows lack, updates
    /// per rollout without a fixed episode length).
    fn validate(&self, sc: &dyn crate::learners::WorldShape, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        let p = self;
        let key = |k: &str| format!("learner.ppo.{k}");
        p.check(err)?;
        if chosen {
            let refused = if p.critic == Critic::Central && !sc.persistent() {
                Some((
                    "critic",
                    "a central critic reads every agent's row, and here agents come and go: use local (or auto)",
                ))
            } else if p.share == Share::ClassId && !sc.per_agent() {
                Some(("share", "the agents of a group share one actor here; per-agent ids (class_id) would give every one of the world's possible agents its own input: use none or class"))
            } else {
                None
            };
            if let Some((k, problem)) = refused {
                return Err(err(&key(k), problem.into()));
            }
            crate::learners::world_shape::check_features(sc, p.features, &key("features"), err)?;
            // An update per rollout needs the episode's length to plan the learning rate's
            // anneal: a world whose episodes end when its agents are done has none.
            if p.rollout > 0 && sc.rounds().is_none() {
                return Err(err(
                    &key("rollout"),
                    format!(
                        "{}: this world's episodes have no fixed length (they end when its agents are done), so updates per rollout cannot be planned; use rollout = 0 (one update per episode)",
                        p.rollout
                    ),
                ));
            }
        }
        // Where agents come and go a central critic is refused above (when PPO runs) and never
        // built: its size says nothing there.
        if sc.persistent() && p.critic.resolve(sc) == Critic::Central {
            // Every agent's critic reads every agent's features: n x (n x d) x width weights.
            let obs_dim = sc.features(crate::learners::Features::All).map_or(0, |i| i.obs_dim);
            let cells = sc
                .agents()
                .saturating_mul(sc.agents())
                .saturating_mul(obs_dim)
                .saturating_mul(p.critic_hidden[0]);
            if cells > limits::MAX_CENTRAL_CRITIC {
                return Err(err(
                    &key("critic"),
                    format!(
                        "a central critic{} here has {cells} first-layer weights, more than the limit of {}{}",
                        if p.critic == Critic::Auto {
                            " (the default under env.reward = \"welfare\")"
                        } else {
                            ""
                        },
                        limits::MAX_CENTRAL_CRITIC,
                        if p.critic == Critic::Auto {
                            "; set learner.ppo.critic = \"local\""
                        } else {
                            ""
                        }
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Actors per agent or shared per weight class (`share`), shared per pool where the run
    /// keeps no policy per agent (the market's), and pooled per group where agents come and go
    /// (an update sees the rows of the agents that acted).
    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let s = run.shape;
        let inputs = run.inputs(self.features);
        // One update per rollout (its length checked fixed), and one at every episode's end.
        let per_episode = match (self.rollout, s.rounds()) {
            (0, _) | (_, None) => 1,
            (r, Some(rounds)) => u64::from(rounds).div_ceil(r as u64),
        };
        let shape = Shape::reading(s.agents(), inputs, s.levels().len());
        let cfg = self.resolved(s);
        let updates = run.episodes.saturating_mul(per_episode);
        if !s.persistent() {
            return Box::new(Ppo::pooled(shape, &cfg, updates, run.seed, s.pools()));
        }
        // Shared actors: one per distinct weight, ascending (or per pool).
        let classes = (cfg.share != Share::None || !s.per_agent()).then(|| s.pools());
        Box::new(Ppo::new(shape, &cfg, updates, run.seed, classes))
    }

    fn features(&self) -> Features {
        self.features
    }

    fn exported(&self, _shape: &dyn crate::learners::WorldShape) -> Exported {
        Exported::Actor { hidden: self.actor_hidden }
    }

    /// The networks, and the rollout: its observations and, at once for the whole rollout, the
    /// networks' activations (the values before the update, one minibatch's forward and
    /// backward passes).
    fn memory(&self, sc: &Scenario, copies: usize) -> Vec<(String, u64)> {
        use super::base::{actor_params, critic_params, feature_dim, nets_peak};
        let (n, d, k) = (sc.n(), feature_dim(sc, self.features), sc.action_levels().len());
        let cfg = self.resolved(sc);
        let stacks = if cfg.share == Share::None { n } else { sc.weight_classes().len() };
        let central = cfg.critic == Critic::Central;
        let critic_in = if central { n * d } else { d };
        let rounds = if self.rollout == 0 {
            sc.file.env.rounds as u64
        } else {
            self.rollout as u64
        };
        let rows = (copies as u64).saturating_mul(rounds);
        // Per agent and row; a central critic's input (every agent's features) is held once
        // per row and broadcast over the critics.
        let width = (self.actor_hidden + self.critic_hidden[0] + self.critic_hidden[1] + k + if central { 0 } else { d }) as u64;
        let shared = if central { (n * d) as u64 } else { 0 };
        vec![
            (
                "learner.ppo.actor_hidden".into(),
                nets_peak(actor_params(stacks, d, self.actor_hidden, k)),
            ),
            (
                "learner.ppo.critic_hidden".into(),
                nets_peak(critic_params(n, critic_in, self.critic_hidden)),
            ),
            (
                "learner.ppo.rollout (train.envs x rounds per update)".into(),
                (n as u64)
                    .saturating_mul(width)
                    .saturating_add(shared)
                    .saturating_mul(rows)
                    .saturating_mul(4 * 3),
            ),
        ]
    }

    fn learns_from_rewards(&self) -> bool {
        true
    }

    fn group(&self) -> Option<(usize, &'static str)> {
        Some((self.group, "learner.ppo.group"))
    }
}

/// A saved PPO state: its networks ([`Nets::parts`]), then its update count.
const PREFIX: &str = "ppo";
const UPDATES: &str = "ppo/updates";
const RETURN_STATS: &str = "ppo/return_stats";

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
    /// Each agent's return statistics (value normalisation).
    returns: RunningStats,
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
    /// Pooled ([`Ppo::pooled`]): one critic and one set of return statistics per class, and
    /// the rollout stored as the acting agents' samples only.
    pooled: Option<Pooled>,
}

/// A pooled PPO's rollout: per acting agent and round, its (agent, copy, round), features,
/// action and reward; and the rounds stored.
#[derive(Default)]
struct Pooled {
    classes: usize,
    at: Vec<(u32, u32, u32)>,
    obs: Vec<f32>,
    actions: Vec<i64>,
    rewards: Vec<f32>,
    rounds: usize,
}

impl Ppo {
    /// Fresh learners for `shape`, `total_updates` updates planned (the annealing horizon);
    /// weights from `seed`. Every agent has its own actor, or with `classes` (each agent's
    /// class, from 0) the agents of a class share one.
    pub fn new(shape: Shape, cfg: &PpoConfig, total_updates: u64, seed: u64, classes: Option<Vec<usize>>) -> Self {
        Self::build(shape, cfg, total_updates, seed, classes, false)
    }

    /// [`Ppo::new`], or with `pooled` [`Ppo::pooled`]'s critics and statistics per class.
    fn build(shape: Shape, cfg: &PpoConfig, total_updates: u64, seed: u64, classes: Option<Vec<usize>>, pooled: bool) -> Self {
        let device = device();
        let Shape { n, d, k, .. } = shape;
        // Without a world to decide them, `auto` is local, unshared and 0.01.
        let cfg = &PpoConfig {
            critic: if cfg.critic == Critic::Auto { Critic::Local } else { cfg.critic },
            share: if cfg.share == Share::Auto { Share::None } else { cfg.share },
            entropy: Bonus::Of(cfg.entropy.value()),
            ..cfg.clone()
        };
        let critic_in = match cfg.critic {
            Critic::Auto | Critic::Local => d,
            Critic::Central => n * d,
        };
        let stacked = classes.as_ref().map_or(n, |c| c.iter().max().map_or(1, |m| m + 1));
        let mut actors = Actors::new(stacked, d, cfg.actor_hidden, k, seed, &device);
        if cfg.head_scale != 1.0 {
            actors = actors.scaled_head(cfg.head_scale as f32);
        }
        if cfg.share == Share::ClassId && classes.is_some() {
            actors = actors.with_ids(n);
        }
        // Pooled: a critic per class, as an actor.
        let per = if pooled { stacked } else { n };
        let critics = Critics::new(per, critic_in, cfg.critic_hidden, seed, &device);
        Self {
            // AdamW (epsilon 1e-5, as CleanRL's), fused into one pass per tensor.
            nets: Nets::new(shape, actors, critics, cfg.weight_decay),
            rows: classes.map(|c| c.into_iter().map(|x| x as i64).collect()),
            device,
            rngs: (0..n).map(|i| stream(0, names::POLICY, i as u64)).collect(),
            returns: RunningStats::new(per),
            seed,
            updates: 0,
            total_updates: total_updates.max(1),
            copies: 0,
            obs: Vec::new(),
            actions: Vec::new(),
            rewards: Vec::new(),
            pooled: pooled.then(|| Pooled {
                classes: stacked,
                ..Pooled::default()
            }),
            cfg: cfg.clone(),
        }
    }

    /// Fresh pooled learners for a world whose agents arrive and leave (`classes`: each
    /// possible agent's group): the agents of a class share one actor and one critic, and the
    /// rollout keeps only the rows of agents that acted, so an update's cost is the agent-steps
    /// played, not every possible agent times the rounds. Each agent's life is its own return
    /// (the round before it leaves is terminal), advantages are group-relative over the copies
    /// of a seed in which the same agent acted that round, and the value statistics are per
    /// class. Only a local critic (checked by the caller).
    pub fn pooled(shape: Shape, cfg: &PpoConfig, total_updates: u64, seed: u64, classes: Vec<usize>) -> Self {
        assert!(
            cfg.share != Share::ClassId,
            "pooled actors read no agent ids (refused with the config)"
        );
        Self::build(shape, cfg, total_updates, seed, Some(classes), true)
    }

    /// Every agent's action probabilities, `[n][k]` row-major.
    pub fn probabilities(&self, obs: Observations<'_>) -> Vec<f32> {
        let x = self.nets.shape.states(obs, &self.device).detach();
        self.nets.actors.get().probabilities(self.rows.as_deref(), x)
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
    /// agent's features concatenated, `[1, rows, n * d]`, which [`Critics::forward`]'s batched
    /// matmul broadcasts over the n critics (the same values as copying it n times: bit for
    /// bit, 21% less CPU and 57% less peak memory for MAPPO on w124-mmpp).
    fn critic_input(&self, x: Tensor<3>) -> Tensor<3> {
        match self.cfg.critic {
            Critic::Auto | Critic::Local => x,
            Critic::Central => {
                let [n, rows, d] = x.dims();
                // [n, rows, d] -> [1, rows, n * d]: every agent's critic reads the same
                // rows, so the batch dimension broadcasts against the n critics' weights in
                // the first matmul instead of being copied n times.
                x.swap_dims(0, 1).reshape([1, rows, n * d])
            }
        }
    }

    fn push(&mut self, ts: &[Transition<'_>]) {
        if self.copies == 0 {
            self.copies = ts.len();
        }
        assert_eq!(ts.len(), self.copies, "the number of environment copies is fixed");
        if let Some(p) = &mut self.pooled {
            let shape = self.nets.shape;
            for (k, t) in ts.iter().enumerate() {
                for i in 0..shape.n {
                    if t.live.is_none_or(|l| l[i]) {
                        p.at.push((i as u32, k as u32, p.rounds as u32));
                        p.obs.extend_from_slice(shape.read(&t.obs, i));
                        p.actions.push(t.actions[i] as i64);
                        p.rewards.push((t.rewards[i] * self.cfg.reward_scale) as f32);
                    }
                }
            }
            p.rounds += 1;
            return;
        }
        for t in ts {
            for i in 0..self.nets.shape.n {
                self.obs.extend_from_slice(self.nets.shape.read(&t.obs, i));
            }
            assert!(
                t.live.is_none(),
                "PPO with an actor per agent learns where every agent acts every round; where agents come and go, Ppo::pooled"
            );
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
                log_softmax(actors.logits(self.rows.as_deref(), x.clone()), 2)
                    .gather(2, a.clone())
                    .detach()
            },
        );

        // 2. GAE per agent and copy, bootstrapped at the truncation, in the returns' units (the
        //    critics' outputs denormalised with value normalisation).
        let (mut adv, mut ret) = (Vec::with_capacity(n * rows), Vec::with_capacity(n * rows));
        let norm = self.cfg.value_norm;
        let real = |stats: &RunningStats, i: usize, v: f32| if norm { stats.denormalise(i, f64::from(v)) as f32 } else { v };
        for i in 0..n {
            for k in 0..copies {
                let r: Vec<f32> = (0..rounds).map(|t| self.rewards[(t * copies + k) * n + i]).collect();
                let from = i * rows + k * rounds;
                let mut v: Vec<f32> = values[from..from + rounds].iter().map(|&v| real(&self.returns, i, v)).collect();
                v.push(real(&self.returns, i, v_next[i * copies + k]));
                let (ai, ri) = gae(&r, &v, self.cfg.gamma as f32, self.cfg.gae_lambda as f32);
                adv.extend(ai);
                ret.extend(ri);
            }
        }
        if self.cfg.group > 1 {
            group_relative(&mut adv, n, copies, rounds, self.cfg.group);
        }
        // The critics' targets: the returns, normalised with the statistics updated by them.
        if norm {
            for i in 0..n {
                ret[i * rows..(i + 1) * rows]
                    .iter()
                    .for_each(|&r| self.returns.push(i, f64::from(r)));
            }
            for i in 0..n {
                for r in &mut ret[i * rows..(i + 1) * rows] {
                    *r = self.returns.normalise(i, f64::from(*r)) as f32;
                }
            }
        }

        // 3. Epochs of shuffled minibatches.
        let batch = Batch {
            x,
            xc,
            a,
            old_logp,
            adv,
            ret,
            live: None,
            rows,
            agents: n,
            pooled: false,
        };
        self.epochs(&batch)
    }

    /// The entropy bonus's coefficient for the next update: `entropy`, or with
    /// `entropy_anneal` falling linearly to 0 at that fraction of the planned updates.
    pub fn entropy_coefficient(&self) -> f64 {
        super::base::annealed(self.cfg.entropy.value(), self.cfg.entropy_anneal, self.updates, self.total_updates)
    }

    /// The epochs of shuffled minibatches over a batch, and the update's mean losses.
    fn epochs(&mut self, batch: &Batch) -> Losses {
        let (n, rows) = (batch.agents, batch.rows);
        let frac = if self.cfg.anneal_lr {
            1.0 - self.updates as f64 / self.total_updates as f64
        } else {
            1.0
        };
        let lr = (self.cfg.lr * frac).max(0.0);
        let entropy = self.entropy_coefficient();
        let mb = rows.div_ceil(self.cfg.minibatches.max(1)).max(1);
        let mut order: Vec<usize> = (0..rows).collect();
        let mut rng = stream(self.seed, names::PPO_MINIBATCHES, self.updates);
        let mut sums = Losses::default();
        let mut steps = 0.0f64;
        for _epoch in 0..self.cfg.epochs {
            order.shuffle(&mut rng);
            for chunk in order.chunks(mb) {
                let [pg, vl, ent] = self.minibatch(batch, chunk, lr, entropy);
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
        if let Some(p) = &mut self.pooled {
            *p = Pooled {
                classes: p.classes,
                ..Pooled::default()
            };
        }
        let per = n as f64 * steps.max(1.0);
        Losses {
            actor: sums.actor / per,
            critic: sums.critic / per,
            entropy: sums.entropy / per,
            ..Losses::default()
        }
    }
}

impl Ppo {
    /// One update of a pooled PPO ([`Ppo::pooled`]) on its stored samples; `next[k]` is copy
    /// k's observation after the last stored round (the bootstrap of an agent that acted in
    /// it, when the episode goes on); `ended`: the episode is over, and with it every life
    /// (its value after the last round is 0: a world of this kind ends when its agents are done
    /// or at a horizon its agents do not see, and a row after an agent left may be a blank).
    fn update_pooled(&mut self, next: &[Observations<'_>], ended: bool) -> Losses {
        let dev = self.device.clone();
        let (shape, group) = (self.nets.shape, self.cfg.group.max(1));
        let d = shape.d;
        let p = self.pooled.take().expect("a pooled learner");
        let classes = p.classes;
        let rows_of = self.rows.clone().expect("pooled actors are shared by class");
        // 1. Each class's samples, by agent, copy and round: an agent's life is contiguous.
        let mut order: Vec<usize> = (0..p.at.len()).collect();
        order.sort_by_key(|&j| p.at[j]);
        let mut of_class: Vec<Vec<usize>> = vec![Vec::new(); classes];
        for &j in &order {
            of_class[rows_of[p.at[j].0 as usize] as usize].push(j);
        }
        let width = of_class.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let (mut x, mut acts, mut mask) = (
            vec![0f32; classes * width * d],
            vec![0i64; classes * width],
            vec![0f32; classes * width],
        );
        // The bootstrap rows: samples in the last stored round (their agent may act on).
        let mut boot: Vec<Vec<(usize, usize)>> = vec![Vec::new(); classes];
        for (c, js) in of_class.iter().enumerate() {
            for (s, &j) in js.iter().enumerate() {
                let at = c * width + s;
                x[at * d..(at + 1) * d].copy_from_slice(&p.obs[j * d..(j + 1) * d]);
                acts[at] = p.actions[j];
                mask[at] = 1.0;
                let (i, k, t) = p.at[j];
                if t as usize + 1 == p.rounds {
                    boot[c].push((s, k as usize * shape.n + i as usize));
                }
            }
        }
        let boot_width = boot.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let mut xb = vec![0f32; classes * boot_width * d];
        for (c, bs) in boot.iter().enumerate() {
            for (b, &(_, ki)) in bs.iter().enumerate() {
                let (k, i) = (ki / shape.n, ki % shape.n);
                let at = c * boot_width + b;
                xb[at * d..(at + 1) * d].copy_from_slice(shape.read(&next[k], i));
            }
        }
        let x = Tensor::<3>::from_data(TensorData::new(x, [classes, width, d]), &dev);
        let xb = Tensor::<3>::from_data(TensorData::new(xb, [classes, boot_width, d]), &dev);
        let a = Tensor::<3, Int>::from_data(TensorData::new(acts, [classes, width, 1]), &dev);
        let (actors, critics) = (self.nets.actors.get(), self.nets.critics.get());
        let values = critics.forward(x.clone()).detach().into_data().try_to_vec::<f32>().expect("f32");
        let v_boot = critics.forward(xb).detach().into_data().try_to_vec::<f32>().expect("f32");
        let old_logp = log_softmax(actors.forward(x.clone()), 2).gather(2, a.clone()).detach();

        // 2. GAE over each life, in the returns' units.
        let norm = self.cfg.value_norm;
        let real = |stats: &RunningStats, c: usize, v: f32| if norm { stats.denormalise(c, f64::from(v)) as f32 } else { v };
        let (mut adv, mut ret) = (vec![0f32; classes * width], vec![0f32; classes * width]);
        for (c, js) in of_class.iter().enumerate() {
            // Each sample's bootstrap value, where it is in the last stored round.
            let mut boots: Vec<Option<f32>> = vec![None; js.len()];
            for (b, &(s, _)) in boot[c].iter().enumerate() {
                boots[s] = Some(v_boot[c * boot_width + b]);
            }
            let mut s = 0;
            while s < js.len() {
                let (i, k, _) = p.at[js[s]];
                let mut e = s + 1;
                while e < js.len() && p.at[js[e]].0 == i && p.at[js[e]].1 == k && p.at[js[e]].2 == p.at[js[e - 1]].2 + 1 {
                    e += 1;
                }
                let r: Vec<f32> = js[s..e].iter().map(|&j| p.rewards[j]).collect();
                let mut v: Vec<f32> = (s..e).map(|q| real(&self.returns, c, values[c * width + q])).collect();
                // Acting in the last stored round: it may act on (bootstrap); else it left.
                v.push(match boots[e - 1] {
                    Some(vb) if !ended => real(&self.returns, c, vb),
                    _ => 0.0,
                });
                let (ai, ri) = gae(&r, &v, self.cfg.gamma as f32, self.cfg.gae_lambda as f32);
                adv[c * width + s..c * width + e].copy_from_slice(&ai);
                ret[c * width + s..c * width + e].copy_from_slice(&ri);
                s = e;
            }
        }
        // 3. Group-relative: minus the mean over the other copies of the seed in which the
        //    same agent acted in the same round.
        if group > 1 {
            let mut by_cell: std::collections::HashMap<(u32, u32, u32), Vec<usize>> = std::collections::HashMap::new();
            for (c, js) in of_class.iter().enumerate() {
                for (s, &j) in js.iter().enumerate() {
                    let (i, k, t) = p.at[j];
                    by_cell.entry((i, k / group as u32, t)).or_default().push(c * width + s);
                }
            }
            let mut cells: Vec<&Vec<usize>> = by_cell.values().filter(|v| v.len() > 1).collect();
            cells.sort_unstable();
            for cell in cells {
                let sum: f32 = cell.iter().map(|&q| adv[q]).sum();
                let others = (cell.len() - 1) as f32;
                let before: Vec<f32> = cell.iter().map(|&q| adv[q]).collect();
                for (&q, a) in cell.iter().zip(before) {
                    adv[q] = a - (sum - a) / others;
                }
            }
        }
        // 4. The critics' targets, normalised with the statistics updated by them.
        if norm {
            for c in 0..classes {
                for s in 0..of_class[c].len() {
                    self.returns.push(c, f64::from(ret[c * width + s]));
                }
            }
            for c in 0..classes {
                for s in 0..of_class[c].len() {
                    ret[c * width + s] = self.returns.normalise(c, f64::from(ret[c * width + s])) as f32;
                }
            }
        }
        self.pooled = Some(Pooled {
            classes,
            ..Pooled::default()
        });
        let batch = Batch {
            xc: x.clone(),
            x,
            a,
            old_logp,
            adv,
            ret,
            live: Some(mask),
            rows: width,
            agents: classes,
            pooled: true,
        };
        self.epochs(&batch)
    }
}

/// Each advantage minus the mean of the same agent's and round's advantages in the other
/// copies of its seed group (leave-one-out). `adv` is `[agent][copy][round]`; copies come in
/// consecutive groups of `group` (a multiple of it, checked with the config).
pub fn group_relative(adv: &mut [f32], n: usize, copies: usize, rounds: usize, group: usize) {
    assert!(group > 1 && copies % group == 0, "{copies} copies in groups of {group}");
    let others = (group - 1) as f32;
    for i in 0..n {
        for g in (0..copies).step_by(group) {
            for t in 0..rounds {
                let at = |k: usize| (i * copies + k) * rounds + t;
                let sum: f32 = (g..g + group).map(|k| adv[at(k)]).sum();
                for k in g..g + group {
                    let a = adv[at(k)];
                    adv[at(k)] = a - (sum - a) / others;
                }
            }
        }
    }
}

/// A rollout ready for the epochs: features `[n, rows, d]` (critic input `xc`), actions and
/// their log-probabilities under the acting networks `[n, rows, 1]`, advantages and returns
/// (`[agent][row]`), and where agents come and go which rows they acted in.
struct Batch {
    x: Tensor<3>,
    xc: Tensor<3>,
    a: Tensor<3, Int>,
    old_logp: Tensor<3>,
    adv: Vec<f32>,
    ret: Vec<f32>,
    live: Option<Vec<f32>>,
    rows: usize,
    /// The stacks' first dimension: agents, or (pooled) classes.
    agents: usize,
    /// Rows are pooled samples of each class (the actors read directly, not through `rows`).
    pooled: bool,
}

impl Ppo {
    /// One gradient step on the rows `chunk` of `b`: the losses ([`policy_losses`], [`value_loss`]), the
    /// per-agent clip, AdamW at `lr`. Returns (surrogate, value, entropy).
    ///
    /// The actors' loss (surrogate, entropy) and the critics' (value) share no parameter, so
    /// their gradients are those of the summed loss: the two steps run side by side
    /// (`rayon::join`), each the same sequential computation on any number of threads.
    fn minibatch(&mut self, b: &Batch, chunk: &[usize], lr: f64, entropy_coef: f64) -> [f64; 3] {
        let (n, dev) = (b.agents, self.device.clone());
        let idx = Tensor::<1, Int>::from_data(
            TensorData::new(chunk.iter().map(|&t| t as i64).collect::<Vec<_>>(), [chunk.len()]),
            &dev,
        );
        let pick = |v: &[f32], norm: bool| -> Tensor<3> {
            let mut out = Vec::with_capacity(n * chunk.len());
            for i in 0..n {
                let col: Vec<f32> = chunk.iter().map(|&t| v[i * b.rows + t]).collect();
                out.extend(match (&b.live, norm) {
                    (_, false) => col,
                    (None, true) => normalise(&col),
                    (Some(l), true) => {
                        let live: Vec<f32> = chunk.iter().map(|&t| l[i * b.rows + t]).collect();
                        normalise_live(&col, &live)
                    }
                });
            }
            Tensor::from_data(TensorData::new(out, [n, chunk.len(), 1]), &dev)
        };
        let adv = pick(&b.adv, self.cfg.norm_adv && chunk.len() > 1);
        let ret = pick(&b.ret, false);
        let mask = b.live.as_ref().map(|l| pick(l, false));
        let cfg = &self.cfg;
        let rows = if b.pooled { None } else { self.rows.as_deref() };
        let (actor_net, critic_net) = (&mut self.nets.actors, &mut self.nets.critics);
        let max_norm = cfg.max_grad_norm as f32;
        let ((pg, ent), vl) = rayon::join(
            || {
                let actors = actor_net.get();
                let logp = log_softmax(actors.logits(rows, b.x.clone().select(1, idx.clone())), 2);
                let entropy = -(logp.clone().exp() * logp.clone()).sum_dim(2);
                let new_logp = logp.gather(2, b.a.clone().select(1, idx.clone()));
                let old_logp = b.old_logp.clone().select(1, idx.clone());
                let (pg, ent) = match mask.clone() {
                    None => policy_losses(new_logp, old_logp, adv, entropy, cfg.clip as f32),
                    Some(m) => policy_losses_masked(new_logp, old_logp, adv, entropy, cfg.clip as f32, m),
                };
                let mut grads = (pg.clone() - ent.clone() * (entropy_coef as f32)).backward();
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
                let value = critics.forward(b.xc.clone().select(1, idx.clone()));
                let vl = match mask.clone() {
                    None => value_loss(value, ret),
                    Some(m) => value_loss_masked(value, ret, m),
                };
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
        let actors = self.nets.actors.get().valid().per_agent(self.rows.as_deref());
        Box::new(ActorPolicy::of(&actors, self.nets.shape, &self.rngs))
    }
}

impl Learner for Ppo {
    fn reads(&self) -> Option<std::ops::Range<usize>> {
        Some(self.nets.shape.range())
    }

    fn seed_group(&self) -> usize {
        self.cfg.group
    }

    fn transferred(&self, map: &[usize], inputs: super::base::Inputs) -> Option<Box<dyn Policy>> {
        let actors = self.nets.actors.get().valid().per_agent(self.rows.as_deref());
        Some(Box::new(ActorPolicy::transferred(&actors, map, inputs, self.nets.shape.k)))
    }

    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        self.learn_many(std::slice::from_ref(t))
    }

    fn act_many(&mut self, obs: &[Observations<'_>], _budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        if let (Some(_), Some(rows)) = (&self.pooled, &self.rows) {
            return nets::act_pooled(self.nets.actors.get(), rows, obs, self.nets.shape, &mut self.rngs, actions);
        }
        // Acting needs no graph: the plain-device view of the actors records nothing.
        let actors = self.nets.actors.get().valid().per_agent(self.rows.as_deref());
        nets::act_many(&actors, obs, self.nets.shape, &mut self.rngs, actions);
    }

    fn learn_many(&mut self, ts: &[Transition<'_>]) -> Losses {
        self.push(ts);
        let rounds = match &self.pooled {
            Some(p) => p.rounds,
            None => self.rewards.len() / (self.nets.shape.n * self.copies),
        };
        if ts[0].done || (self.cfg.rollout > 0 && rounds >= self.cfg.rollout) {
            let next: Vec<Observations<'_>> = ts.iter().map(|t| t.next_obs).collect();
            if self.pooled.is_some() {
                return self.update_pooled(&next, ts[0].done);
            }
            self.update(&next)
        } else {
            Losses {
                skipped: true,
                ..Losses::default()
            }
        }
    }

    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
        self.nets
            .actors
            .get()
            .valid()
            .export_agent(self.rows.as_deref(), self.nets.shape.n, agent)
    }

    fn non_finite(&self) -> Option<String> {
        self.nets.non_finite()
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        let parts = self.nets.save(PREFIX)?.add_u64(UPDATES, &[self.updates]);
        Ok(self.returns.save(parts, RETURN_STATS).into_bytes())
    }

    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        let names = Nets::parts(PREFIX);
        let mut wanted: Vec<&str> = names.iter().map(String::as_str).collect();
        wanted.extend([UPDATES, RETURN_STATS]);
        // A state saved before return statistics existed loads with none seen.
        let parts = match Parts::read(bytes, &wanted) {
            Ok(p) => p,
            Err(_) => Parts::read(bytes, &wanted[..6]).map_err(failed)?,
        };
        self.nets.load(&parts, PREFIX, "PPO")?;
        self.updates = Parts::u64s(parts[5], UPDATES).map_err(failed)?.first().copied().unwrap_or(0);
        self.returns = RunningStats::new(self.pooled.as_ref().map_or(self.nets.shape.n, |p| p.classes));
        if let Some(s) = parts.get(6) {
            self.returns.load(s, RETURN_STATS).map_err(failed)?;
        }
        self.obs.clear();
        self.actions.clear();
        self.rewards.clear();
        if let Some(p) = &mut self.pooled {
            *p = Pooled {
                classes: p.classes,
                ..Pooled::default()
            };
        }
        Ok(())
    }
}

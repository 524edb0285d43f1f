//! PPO's configuration (`[learner.ppo]`): its keys and defaults, the critic (local or
//! central), who shares an actor, the entropy bonus, and how `"auto"` resolves against a
//! scenario (SPEC 4; docs/CONFIG.md lists every key).

use super::Ppo;
use crate::learners::base::{limits, ErrorIn, Exported, Features, Init, Learner, LearnerConfig};
use crate::learners::nets::Shape;
use env::config::{ConfigError, Scenario};
use serde::{Deserialize, Serialize};

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
    /// One actor per weight class under the shared welfare reward, for either critic (there
    /// the agents of a class have one objective and interchangeable places, so one actor
    /// learns from all their rounds), one per agent otherwise: PPO's default (issue 41;
    /// [`PpoConfig`] has the measurements).
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

    /// What `self` means in `sc`, for either critic: `Auto` is `Class` under the shared
    /// welfare reward where the same agents act every round ([`welfare_shared`]), and where
    /// the run keeps one policy per group (behind the seam: what it trains there), `None`
    /// otherwise.
    pub fn resolve(self, sc: &dyn crate::learners::WorldShape) -> Share {
        match self {
            Share::Auto if welfare_shared(sc) || !sc.per_agent() => Share::Class,
            Share::Auto => Share::None,
            s => s,
        }
    }
}

/// Whether a run is paid the shared welfare where the same agents act every round: where
/// PPO's `auto` share is one actor per weight class, for both critics. With the welfare reward
/// on w124-mmpp at load 0.8 (5 replicates, 16 held-out seeds, sampled) IPPO per agent at 0.01
/// ended -1.00 [-1.11, -0.96] against the best fixed level, -0.39 below uniform play; per
/// class at 0.01 -0.35 [-0.68, -0.24], +0.27 [-0.06, +0.38] above uniform play (2026-12-02),
/// and on the quickstart per class +0.60 [+0.51, +0.66] against per agent's +0.61 [+0.59,
/// +0.64].
pub(crate) fn welfare_shared(sc: &dyn crate::learners::WorldShape) -> bool {
    sc.welfare_reward() && sc.persistent()
}

/// Whether a run is MAPPO (`critic`, resolved, central) paid the shared welfare where the same
/// agents act every round: where PPO's `auto` entropy is 0 (the w124-mmpp recipe). With local
/// critics no bonus collapses: IPPO per class without a bonus on w124-mmpp ended -1.50
/// [-1.61, -1.40] against the best fixed level, -0.89 below uniform play (5 replicates,
/// 2026-12-01), where with the 0.01 bonus it is -0.35.
fn welfare_mappo(sc: &dyn crate::learners::WorldShape, critic: Critic) -> bool {
    welfare_shared(sc) && critic == Critic::Central
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
///   reward (the default critic there) one actor per weight class and no entropy bonus, for
///   IPPO under it one actor per weight class and 0.01 (since 2026-12-02, [`welfare_shared`];
///   without the bonus it collapses, [`welfare_mappo`]), elsewhere an actor per agent and 0.01. With the welfare reward on w124-mmpp at load 0.8 (20 agents; 5 replicates, 16 held-out seeds,
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
    /// (agents/README), and `"auto"` (the default) is `class` under the welfare reward (both
    /// critics), `none` otherwise.
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
            share: self.share.resolve(sc),
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
    /// `critic`, `share` and `entropy` as `auto` resolved them.
    fn resolved_section(&self, sc: &dyn crate::learners::WorldShape, _episodes: u64) -> Option<toml::Value> {
        toml::Value::try_from(self.resolved(sc)).ok()
    }

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
                Some(("share", "the agents of a group share one actor here; per-agent ids (class_id) would give every one of the world's possible agents its own input: use class (or auto)"))
            } else if p.share == Share::None && !sc.per_agent() {
                Some((
                    "share",
                    "the agents of a group share one actor here (a run keeps one per group): use class (or auto)",
                ))
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
        use crate::learners::base::{actor_params, critic_params, feature_dim, nets_peak};
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

//! One-step actor-critic (thesis 4.2.2, SPEC 4) for all agents at once, with burn: every
//! agent's actor and critic are its own slice of the stacked networks of [`super::nets`].
//!
//! Per round, agent i with state s, action a, reward r and next state s':
//! `delta = r' + gamma * V(s') - V(s)` (s' detached; the episode only ever truncates, so the
//! bootstrap is never cut), critic loss `delta^2`, actor loss `-log pi(a|s) * delta` (delta
//! detached) minus `entropy * H(pi(.|s))`. With `normalize` (the default) `r'` is the agent's
//! reward `scale * r` centred and scaled by the running mean and standard deviation of its
//! rewards so far ([`super::normalize`]); without, `r' = scale * r` as in the thesis code.
//!
//! Why: the critic starts at 0 against returns of 100 to 300 (rewards of 1 to 3 at gamma
//! 0.99), so without normalisation the first TD errors are huge and each reinforces whatever
//! was sampled; the policy collapsed to an arbitrary level within a few episodes (entropy
//! 1.8e-5 at the end of the quickstart run). Centring removes the return's level (every level
//! paying the same then teaches nothing, `tests` checks it), scaling makes the step size one
//! setting for any reward scale (Naik et al., "Reward Centering", RLC 2024, on centring in
//! discounted methods).
//!
//! With `group = G > 1` the environment copies come in groups of G sharing a seed (the same
//! arrivals and service draws) and each round of a group is one update: the critic learns from
//! every copy's TD error as above, the actor from each copy's TD error minus the mean of the
//! other copies' in its group (the same agent and round; leave-one-out). The other copies'
//! errors do not depend on this copy's action, so the actor's gradient stays unbiased, and what
//! the copies share (arrivals the critic cannot foresee, most of a TD error's spread) cancels.
//!
//! With `steps = N > 1` the TD error becomes an N-step one (A3C's; Mnih et al., ICML 2016):
//! round t is learned from at round t + N - 1, with `G = r_t + ... + gamma^(N-1) r_(t+N-1) +
//! gamma^N V(s_(t+N))` in place of `r + gamma V(s')` (and the rounds left at the episode's end
//! from their shorter returns, bootstrapped at the truncation). One step is the thesis's
//! algorithm; more lean less on a critic that cannot see what a threshold does later (the
//! tokens it saves), which on the quickstart pushed one-step learners the wrong way.
//! The relative errors are divided by their own running standard deviation (per agent): the
//! rewards' statistics are mostly the shared noise, so scaled by those alone a gain 2% of a
//! round's reward would move the actor 50 times slower than the noise it no longer sees.

use super::base::{limits, ErrorIn, Exported, Features, Init, Learner, LearnerConfig, Losses, Policy, Transition};
use super::nets::{self, choose, device, episode_streams, scalar, ActorPolicy, Actors, Critics, Nets, Shape};
use super::normalize::RunningStats;
use super::parts::Parts;
use super::ppo::{Bonus, Share};
use crate::error::failed;
use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};
use env::config::{ConfigError, Scenario};
use env::rng::stream;
use env::world::Observations;
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};

mod pooled;

/// `[learner.actor_critic]` (defaults: the thesis code's, SPEC 4's, but for four decisions of
/// ours:
/// - `normalize` on and actor learning rate 1e-4 instead of 1e-3, measured on one-state
///   bandits in this file's tests: with every level paying the same plus noise, normalised
///   rewards at the thesis code's rate drive the policy to one arbitrary level (entropy 3% of
///   `ln K` after 6,000 rounds; without normalisation 63% after 20,000, falling): Adam moves
///   every weight by about the learning rate per step whatever the gradient's scale, so
///   zero-mean noise walks the logits away;
/// - `group = 8` copies per seed and `steps = 64`-step TD errors (issue 41): on the quickstart
///   with the welfare reward the one-step learner of one copy ended 3.7 below the best fixed
///   level and below uniform random play, thresholds moving the wrong way (light agents up,
///   heavy ones down; the same with groups, so the critic's bias, not only noise); with groups
///   of 8 and 64-step errors, +0.33 [+0.26, +0.38] sampled over 3 replicates of 200 episodes
///   (16-step: +0.30; entropy 0.05: -0.24 and near-uniform; the whole observation as features:
///   +0.40, within the noise of the spec's);
/// - the entropy bonus stays the thesis code's 0.01 with groups (0.05 kept the one-step
///   learner of one copy near uniform on a flat bandit; relative to its group a flat bandit
///   has no noise to walk on: entropy 95% of `ln K` after 5,000 rounds of 8 copies, and a
///   level paying 5% more found at p > 0.93, this file's tests).
/// - the entropy bonus starts at 0.01 and falls linearly to 0 over the first half of the run
///   (`entropy_anneal = 0.5`, issue 41). A constant 0.01 held the quickstart's policy spread
///   (87% of `ln K` of entropy after 800 episodes; welfare reward, sampled minus the best fixed
///   level, +0.38 [+0.12, +0.59] over 5 replicates, 37% of `mtf analyze`'s headroom); no bonus
///   scores +0.81 [+0.66, +0.96] over 5 and lands inside the selfish equilibrium's interval
///   with own rewards (docs/reports/actor-critic-no-entropy-bonus-2026-11-27.json), but the
///   first-price best response of `tests/auction_learners.rs` then settles a grid step off
///   (0.80 for 0.75; a level paying 5% more among neighbours needs the exploration). Annealed,
///   3 replicates of 400 episodes on the same seeds: over the first half +0.85 [+0.70, +0.93]
///   (quarter: +0.86 [+0.67, +1.01], whole run: +0.64 [+0.54, +0.81], constant 0: +0.91
///   [+0.82, +0.99]), own rewards -5.25 [-6.18, -4.32] (inside the equilibrium's -6.19 +-
///   1.18), and the auction's best response as with a constant 0.01. Over the learners'
///   report's 5 replicates (docs/reports/learners-2026-11-27.json): welfare +0.84 [+0.50,
///   +0.93] (81% of the headroom), own -4.91 [-5.87, -4.43] at 0.67/0.85/0.87; w124-mmpp at
///   load 0.8, welfare, 200 episodes: -0.06 [-0.11, -0.03] (no bonus -0.11, constant -0.3).
/// `configs/thesis-code.toml` sets the thesis code's values: one copy, one step, rewards as
/// they are, actor learning rate 1e-3.)
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
    /// Entropy bonus coefficient (at the start of the run, with `entropy_anneal`), or `"auto"`
    /// (the default): none where a run of at least [`CLASS_FROM_EPISODES`] episodes is paid
    /// the shared welfare and its agents stay (the w124-mmpp recipe, with `share`'s `"auto"`),
    /// 0.01 otherwise ([`ActorCriticConfig::resolved`]).
    pub entropy: Bonus,
    /// The fraction of the run's planned rounds (`train.episodes` x `env.rounds`) over which
    /// the entropy bonus falls linearly to 0 and then stays there; 0: the bonus stays
    /// `entropy` throughout (the thesis code's).
    pub entropy_anneal: f64,
    /// AdamW weight decay.
    pub weight_decay: f64,
    /// Reward multiplier applied before the TD error.
    pub reward_scale: f64,
    /// State features.
    pub features: Features,
    /// Learn from each agent's rewards centred and scaled by their running mean and standard
    /// deviation (see the module documentation): on by default; off is the thesis code's
    /// algorithm as it was.
    pub normalize: bool,
    /// Environment copies per seed (group-relative TD errors for the actor, see the module
    /// documentation); 1: every copy its own seed, learned from one after another. A training
    /// episode steps `train.envs` such groups.
    pub group: usize,
    /// Rounds per TD error (N-step returns, see the module documentation); 1: the thesis's
    /// one-step TD error.
    pub steps: usize,
    /// Actor and critic parameters in the queue world: one per agent (the thesis's), or one
    /// per weight class shared by its agents (`class`: the learner of worlds where agents come
    /// and go, [`ActorCritic::pooled`], every agent's rounds learned from by its class's
    /// networks), or `"auto"` (the default): `class` where a run of at least
    /// [`CLASS_FROM_EPISODES`] episodes is paid the shared welfare and its agents stay, `none`
    /// otherwise ([`ActorCriticConfig::resolved`]; a welfare run of fewer episodes written
    /// from 2026-12-05 to 2026-12-07 trained `class`, and its checkpoint, one network per
    /// class, is refused now as not the run's learner). In the other
    /// worlds the agents of a group always share. A run written before `auto` (2026-12-05)
    /// without the key trained per agent and reads so (`train::run_files`'s legacy defaults).
    pub share: Share,
}

impl Default for ActorCriticConfig {
    fn default() -> Self {
        Self {
            actor_hidden: 256,
            critic_hidden: [64, 64],
            actor_lr: 1e-4,
            critic_lr: 2.5e-3,
            gamma: 0.99,
            entropy: Bonus::Auto,
            entropy_anneal: 0.5,
            weight_decay: 1e-4,
            reward_scale: 1.0,
            features: Features::Spec,
            normalize: true,
            group: 8,
            steps: 64,
            share: Share::Auto,
        }
    }
}

impl ActorCriticConfig {
    /// Widths (before any tensor of that size exists) and rates: what every world checks.
    pub fn check(&self, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
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
        for (key, v) in [("entropy", ac.entropy.value()), ("weight_decay", ac.weight_decay)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(err(
                    &format!("learner.actor_critic.{key}"),
                    format!("must be a finite number >= 0, got {v}"),
                ));
            }
        }
        if !(1..=limits::MAX_STEPS).contains(&ac.steps) {
            return Err(err(
                "learner.actor_critic.steps",
                format!("must be in [1, {}], got {}", limits::MAX_STEPS, ac.steps),
            ));
        }
        if !(1..=limits::MAX_ENVS).contains(&ac.group) {
            return Err(err(
                "learner.actor_critic.group",
                format!("must be in [1, {}], got {}", limits::MAX_ENVS, ac.group),
            ));
        }
        if !(0.0..=1.0).contains(&ac.entropy_anneal) {
            return Err(err(
                "learner.actor_critic.entropy_anneal",
                format!("must be a fraction of the run in [0, 1], got {}", ac.entropy_anneal),
            ));
        }
        if ac.share == Share::ClassId {
            return Err(err(
                "learner.actor_critic.share",
                "class_id is PPO's; the actor-critic's agents share per class (\"class\"), not at all (\"none\"), or as the reward decides (\"auto\")".into(),
            ));
        }
        if !(0.0..=1.0).contains(&ac.gamma) {
            return Err(err("learner.actor_critic.gamma", format!("must be in [0, 1], got {}", ac.gamma)));
        }
        for (key, v, max) in [
            ("actor_lr", ac.actor_lr, limits::MAX_LR),
            ("critic_lr", ac.critic_lr, limits::MAX_LR),
            ("reward_scale", ac.reward_scale, limits::MAX_COEF),
            ("entropy", ac.entropy.value(), limits::MAX_COEF),
            ("weight_decay", ac.weight_decay, limits::MAX_WEIGHT_DECAY),
        ] {
            limits::at_most(err, &format!("learner.actor_critic.{key}"), v, max)?;
        }
        Ok(())
    }
}

/// The training episodes from which the actor-critic's `auto` is the w124-mmpp recipe under
/// the shared welfare reward (issue 41, 2026-12-07). A class's actor learns from every one of
/// its agents' rounds, so it moves further per episode than an agent's own: over a long run
/// that pays (w124-mmpp at load 0.8: -0.037 [-0.153, +0.002] against the best fixed level at
/// 200 episodes over 10 replicates and +0.006 [-0.036, +0.036] at 400, per agent with the
/// annealed bonus -0.06 [-0.11, -0.03] and -0.08 [-0.17, +0.03]; the quickstart at 400 +0.85
/// [+0.72, +0.93] against per agent's +0.84 [+0.50, +0.93]); over the thesis scenarios' 50 it
/// can move the wrong way before it has learned: on w128-mmpp -0.027 [-0.047, -0.006] below
/// uniform play over 5 replicates, per agent with the bonus +0.007 [-0.000, +0.015], and per
/// agent with the bonus below uniform play nowhere in the 16 shipped scenarios by more than
/// 0.0012% of the welfare (docs/reports/floor-2026-11-27.md,
/// floor-ac-w128-mmpp-probe-2026-12-06.md).
pub const CLASS_FROM_EPISODES: u64 = 200;

impl ActorCriticConfig {
    /// `self` with its `auto` settings decided by `sc` for a run of `episodes` training
    /// episodes. Under the shared welfare reward where the same agents act every round, from
    /// [`CLASS_FROM_EPISODES`] episodes on, one actor and critic per weight class and no
    /// entropy bonus (the w124-mmpp recipe, as PPO's MAPPO). Elsewhere (shorter runs; own
    /// rewards: the main job; the auctions' best responses, which need the early exploration)
    /// per agent with the bonus, 0.01 annealed; behind the seam, where a run keeps one policy
    /// per group, per group.
    pub fn resolved(&self, sc: &dyn crate::learners::WorldShape, episodes: u64) -> ActorCriticConfig {
        let shared = super::ppo::welfare_shared(sc) && episodes >= CLASS_FROM_EPISODES;
        ActorCriticConfig {
            share: match self.share {
                Share::Auto if shared || !sc.per_agent() => Share::Class,
                Share::Auto => Share::None,
                s => s,
            },
            entropy: match self.entropy {
                Bonus::Auto if shared => Bonus::Of(0.0),
                Bonus::Auto => Bonus::Of(Bonus::UNDECIDED),
                b => b,
            },
            ..self.clone()
        }
    }
}

impl LearnerConfig for ActorCriticConfig {
    /// `share` and `entropy` as `auto` resolved them.
    fn resolved_section(&self, sc: &dyn crate::learners::WorldShape, episodes: u64) -> Option<toml::Value> {
        toml::Value::try_from(self.resolved(sc, episodes)).ok()
    }

    fn validate(&self, shape: &dyn crate::learners::WorldShape, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        self.check(err)?;
        if chosen {
            crate::learners::world_shape::check_features(shape, self.features, "learner.actor_critic.features", err)?;
        }
        Ok(())
    }

    /// One actor and critic per agent, or pooled per weight class (`share = "class"`) and,
    /// where the run keeps no policy per agent, per pool.
    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let s = run.shape;
        let shape = Shape::reading(s.agents(), run.inputs(self.features), s.levels().len());
        let cfg = self.resolved(s, run.episodes);
        if cfg.share == Share::Class || !s.per_agent() || !s.persistent() {
            return Box::new(ActorCritic::pooled(shape, &cfg, run.seed, s.pools(), run.episodes));
        }
        let mut ac = ActorCritic::new(shape, &cfg, run.seed);
        ac.planned_rounds = run.episodes.saturating_mul(u64::from(s.rounds().unwrap_or(0)));
        Box::new(ac)
    }

    fn features(&self) -> Features {
        self.features
    }

    fn exported(&self, _shape: &dyn crate::learners::WorldShape) -> Exported {
        Exported::Actor { hidden: self.actor_hidden }
    }

    fn memory(&self, sc: &Scenario, _copies: usize) -> Vec<(String, u64)> {
        use super::base::{actor_params, critic_params, feature_dim, nets_peak};
        // Stacked networks: one per agent, or one per class when shared; `auto` counted as
        // per agent (as over a short run), the larger.
        let n = if self.resolved(sc, 0).share == Share::None {
            sc.n()
        } else {
            sc.weight_classes().len()
        };
        let (d, k) = (feature_dim(sc, self.features), sc.action_levels().len());
        vec![
            (
                "learner.actor_critic.actor_hidden".into(),
                nets_peak(actor_params(n, d, self.actor_hidden, k)),
            ),
            (
                "learner.actor_critic.critic_hidden".into(),
                nets_peak(critic_params(n, d, self.critic_hidden)),
            ),
        ]
    }

    fn learns_from_rewards(&self) -> bool {
        true
    }

    fn group(&self) -> Option<(usize, &'static str)> {
        Some((self.group, "learner.actor_critic.group"))
    }
}

/// The parts of a saved actor-critic state: its networks ([`Nets::parts`]), then its reward
/// statistics.
const PREFIX: &str = "actor_critic";
const REWARD_STATS: &str = "actor_critic/reward_stats";
const RELATIVE_STATS: &str = "actor_critic/relative_stats";
const ROUNDS: &str = "actor_critic/rounds";

/// Actor-critic learners for n agents, batched.
pub struct ActorCritic {
    cfg: ActorCriticConfig,
    device: Device,
    nets: Nets,
    rngs: Vec<SmallRng>,
    /// Each agent's reward statistics (with `normalize`).
    rewards: RunningStats,
    /// Each agent's statistics of its group-relative TD errors (with `group`).
    relative: RunningStats,
    /// Each copy's rounds not yet learned from (with `steps`).
    pending: Vec<Pending>,
    /// Rounds learned from so far (every copy's round counts once), saved with the state so a
    /// resumed run continues the entropy schedule where it stopped.
    rounds: u64,
    /// Rounds the run plans (the entropy schedule's horizon; 0: no plan, the bonus constant).
    planned_rounds: u64,
    /// Pooled ([`ActorCritic::pooled`]): the agents of a class share one actor and one critic,
    /// and rounds are learned from per agent life (here `rounds` and `planned_rounds` count
    /// episodes).
    pooled: Option<pooled::Pooled>,
}

/// One environment copy's rounds not yet learned from (N-step returns), oldest first: every
/// agent's features (`[n][d]`), actions and rewards (scaled, normalised).
#[derive(Default)]
struct Pending {
    x: std::collections::VecDeque<Vec<f32>>,
    a: std::collections::VecDeque<Vec<usize>>,
    r: std::collections::VecDeque<Vec<f32>>,
}

impl ActorCritic {
    /// Fresh networks for `shape`; weights drawn from `seed`.
    pub fn new(shape: Shape, cfg: &ActorCriticConfig, seed: u64) -> Self {
        Self::build(shape, cfg, seed, None)
    }

    /// [`ActorCritic::new`], or with `pooled` one actor, critic and reward statistics per
    /// class ([`ActorCritic::pooled`]).
    fn build(shape: Shape, cfg: &ActorCriticConfig, seed: u64, pooled: Option<pooled::Pooled>) -> Self {
        let device = device();
        let Shape { n, d, k, .. } = shape;
        let stacked = pooled.as_ref().map_or(n, |p| p.classes);
        let actors = Actors::new(stacked, d, cfg.actor_hidden, k, seed, &device);
        let critics = Critics::new(stacked, d, cfg.critic_hidden, seed, &device);
        Self {
            cfg: cfg.clone(),
            nets: Nets::new(shape, actors, critics, cfg.weight_decay),
            device,
            rngs: (0..n).map(|i| stream(0, env::rng::names::POLICY, i as u64)).collect(),
            rewards: RunningStats::new(stacked),
            relative: RunningStats::new(stacked),
            pending: Vec::new(),
            rounds: 0,
            planned_rounds: 0,
            pooled,
        }
    }

    /// Each agent's stacked actor slice when pooled (its class's).
    fn rows(&self) -> Option<&[i64]> {
        self.pooled.as_ref().map(|p| p.rows.as_slice())
    }

    /// One actor per agent (each pooled agent its class's).
    fn per_agent(&self) -> Actors {
        self.nets.actors.get().valid().per_agent(self.rows())
    }

    /// The entropy bonus's coefficient now: `entropy`, or with `entropy_anneal` (and a planned
    /// run) falling linearly to 0 at that fraction of the run.
    pub fn entropy_coefficient(&self) -> f64 {
        super::base::annealed(self.cfg.entropy.value(), self.cfg.entropy_anneal, self.rounds, self.planned_rounds)
    }

    /// Every agent's action probabilities for `obs`, `[n][k]` row-major.
    pub fn probabilities(&self, obs: Observations<'_>) -> Vec<f32> {
        let x = self.nets.shape.states(obs, &self.device).detach();
        match self.rows() {
            // Selecting class slices of tracked parameters would record graph entries nothing
            // uses: the plain-device view records none.
            Some(rows) => self.nets.actors.get().valid().probabilities(Some(rows), x),
            None => self.nets.actors.get().probabilities(None, x),
        }
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
        if self.pooled.is_some() {
            return Box::new(ActorPolicy::of(&self.per_agent(), self.nets.shape, &self.rngs));
        }
        Box::new(ActorPolicy::of(self.nets.actors.get(), self.nets.shape, &self.rngs))
    }
}

fn column(values: impl Iterator<Item = f32>, n: usize, device: &Device) -> Tensor<3> {
    Tensor::from_data(TensorData::new(values.collect::<Vec<f32>>(), [n, 1, 1]), device)
}

impl ActorCritic {
    /// One AdamW step of the actors and critics on `actor + critic - entropy x bonus`; the
    /// losses per agent (pooled: per class), for the log.
    fn update(&mut self, actor: Tensor<1>, critic: Tensor<1>, entropy: Tensor<1>) -> Losses {
        let total = actor.clone() + critic.clone() - entropy.clone() * (self.entropy_coefficient() as f32);
        let mut grads = total.backward();
        let ga = GradientsParams::from_module(&mut grads, self.nets.actors.get());
        let gc = GradientsParams::from_module(&mut grads, self.nets.critics.get());
        self.nets.actors.step(self.cfg.actor_lr, ga);
        self.nets.critics.step(self.cfg.critic_lr, gc);
        let per = self.pooled.as_ref().map_or(self.nets.shape.n, |p| p.classes) as f64;
        Losses {
            actor: scalar(actor) / per,
            critic: scalar(critic) / per,
            entropy: scalar(entropy) / per,
            ..Losses::default()
        }
    }

    /// Each copy's rewards of one round, scaled and (with `normalize`) normalised, the
    /// statistics updated first with every copy's: `[copy][agent]`.
    fn scaled_rewards(cfg: &ActorCriticConfig, stats: &mut RunningStats, ts: &[Transition<'_>]) -> Vec<Vec<f32>> {
        let (scale, normalize) = (cfg.reward_scale, cfg.normalize);
        if normalize {
            for t in ts {
                for (i, &r) in t.rewards.iter().enumerate() {
                    stats.push(i, r * scale);
                }
            }
        }
        ts.iter()
            .map(|t| {
                t.rewards
                    .iter()
                    .enumerate()
                    .map(|(i, &r)| (if normalize { stats.normalise(i, r * scale) } else { r * scale }) as f32)
                    .collect()
            })
            .collect()
    }

    /// Advantages `[agent][row]` made relative to the seed group (rows: `rows_per_copy`
    /// rounds of every copy, copy-minor) and divided by their running standard deviation.
    fn group_relative(stats: &mut RunningStats, n: usize, g: usize, adv: &mut [f32], copies: usize) {
        let others = (g - 1) as f32;
        let per_agent = adv.len() / n;
        for (i, agent) in adv.chunks_exact_mut(per_agent).enumerate() {
            for round in agent.chunks_exact_mut(copies) {
                for group in round.chunks_exact_mut(g) {
                    let sum: f32 = group.iter().sum();
                    for d in group.iter_mut() {
                        *d -= (sum - *d) / others;
                        stats.push(i, f64::from(*d));
                    }
                }
            }
        }
        for (i, agent) in adv.chunks_exact_mut(per_agent).enumerate() {
            let sd = stats.std(i) as f32;
            agent.iter_mut().for_each(|d| *d /= sd);
        }
    }

    /// N-step learning (`steps > 1`): store the round, and learn from the rounds whose
    /// N-step return is complete (all of them when the episode ends), every copy's in one
    /// update.
    fn learn_steps(&mut self, ts: &[Transition<'_>]) -> Losses {
        let (shape, dev) = (self.nets.shape, self.device.clone());
        let (n, d, copies) = (shape.n, shape.d, ts.len());
        if self.pending.len() != copies {
            self.pending = (0..copies).map(|_| Pending::default()).collect();
        }
        let rewards = Self::scaled_rewards(&self.cfg, &mut self.rewards, ts);
        for ((t, r), p) in ts.iter().zip(rewards).zip(&mut self.pending) {
            p.x.push_back((0..n).flat_map(|i| shape.read(&t.obs, i).iter().copied()).collect());
            p.a.push_back(t.actions.to_vec());
            p.r.push_back(r);
        }
        let held = self.pending[0].x.len();
        let ready = if ts[0].done {
            held
        } else if held >= self.cfg.steps {
            1
        } else {
            return Losses {
                skipped: true,
                ..Losses::default()
            };
        };
        let (actors, critics) = (self.nets.actors.get(), self.nets.critics.get());
        // The bootstrap: V of every copy's latest next state.
        let next: Vec<Observations<'_>> = ts.iter().map(|t| t.next_obs).collect();
        let boot = critics
            .forward(shape.states_many(&next, &dev))
            .detach()
            .into_data()
            .try_to_vec::<f32>()
            .expect("f32");
        // Rows: the `ready` oldest rounds of every copy, round-major, copy-minor.
        let rows = ready * copies;
        let gamma = self.cfg.gamma as f32;
        let mut target = vec![0.0f32; n * rows];
        for (k, p) in self.pending.iter().enumerate() {
            for i in 0..n {
                let mut g = boot[i * copies + k];
                for l in (0..held).rev() {
                    g = p.r[l][i] + gamma * g;
                    if l < ready {
                        target[i * rows + l * copies + k] = g;
                    }
                }
            }
        }
        let mut x = Vec::with_capacity(n * rows * d);
        let mut acts = Vec::with_capacity(n * rows);
        for i in 0..n {
            for l in 0..ready {
                for p in &self.pending {
                    x.extend_from_slice(&p.x[l][i * d..(i + 1) * d]);
                    acts.push(p.a[l][i] as i64);
                }
            }
        }
        let x = Tensor::<3>::from_data(TensorData::new(x, [n, rows, d]), &dev);
        let logp = log_softmax(actors.forward(x.clone()), 2);
        let entropy = -(logp.clone().exp() * logp.clone()).sum_dim(2);
        let logp_a = logp.gather(2, Tensor::<3, Int>::from_data(TensorData::new(acts, [n, rows, 1]), &dev));
        let v = critics.forward(x);
        let delta = Tensor::<3>::from_data(TensorData::new(target, [n, rows, 1]), &dev) - v;
        let mut adv = delta.clone().detach().into_data().try_to_vec::<f32>().expect("f32");
        if self.cfg.group > 1 {
            Self::group_relative(&mut self.relative, n, self.cfg.group, &mut adv, copies);
        }
        let adv = Tensor::<3>::from_data(TensorData::new(adv, [n, rows, 1]), &dev);
        let per = rows as f32;
        let critic_loss = delta.powi_scalar(2).sum() / per;
        let actor_loss = -(logp_a * adv).sum() / per;
        let entropy_sum = entropy.sum() / per;
        let losses = self.update(actor_loss, critic_loss, entropy_sum);
        for p in &mut self.pending {
            p.x.drain(..ready);
            p.a.drain(..ready);
            p.r.drain(..ready);
        }
        losses
    }

    /// One update from one round of a seed group's copies (see the module documentation).
    fn learn_group(&mut self, ts: &[Transition<'_>]) -> Losses {
        let (shape, dev) = (self.nets.shape, self.device.clone());
        let (n, g) = (shape.n, ts.len());
        let (actors, critics) = (self.nets.actors.get(), self.nets.critics.get());
        let obs: Vec<Observations<'_>> = ts.iter().map(|t| t.obs).collect();
        let next: Vec<Observations<'_>> = ts.iter().map(|t| t.next_obs).collect();
        let x = shape.states_many(&obs, &dev);
        let x_next = shape.states_many(&next, &dev).detach();

        let logp = log_softmax(actors.forward(x.clone()), 2);
        let entropy = -(logp.clone().exp() * logp.clone()).sum_dim(2);
        let acts: Vec<i64> = (0..n).flat_map(|i| ts.iter().map(move |t| t.actions[i] as i64)).collect();
        let logp_a = logp.gather(2, Tensor::<3, Int>::from_data(TensorData::new(acts, [n, g, 1]), &dev));

        let v = critics.forward(x);
        let v_next = critics.forward(x_next).detach();
        let rewards = Self::scaled_rewards(&self.cfg, &mut self.rewards, ts);
        let r: Vec<f32> = (0..n).flat_map(|i| rewards.iter().map(move |r| r[i])).collect();
        let r = Tensor::<3>::from_data(TensorData::new(r, [n, g, 1]), &dev);
        let delta = r + v_next * (self.cfg.gamma as f32) - v;
        let mut relative = delta.clone().detach().into_data().try_to_vec::<f32>().expect("f32");
        Self::group_relative(&mut self.relative, n, g, &mut relative, g);
        let relative = Tensor::<3>::from_data(TensorData::new(relative, [n, g, 1]), &dev);

        let per = g as f32;
        let critic_loss = delta.powi_scalar(2).sum() / per;
        let actor_loss = -(logp_a * relative).sum() / per;
        let entropy_sum = entropy.sum() / per;
        let losses = self.update(actor_loss, critic_loss, entropy_sum);
        losses
    }

    /// One round of one copy: the thesis's one-step update.
    fn learn_one(&mut self, t: &Transition<'_>) -> Losses {
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
        let scaled = t.rewards.iter().map(|&r| r * self.cfg.reward_scale);
        let r = if self.cfg.normalize {
            let stats = &mut self.rewards;
            let r: Vec<f64> = scaled
                .enumerate()
                .map(|(i, r)| {
                    stats.push(i, r);
                    stats.normalise(i, r)
                })
                .collect();
            column(r.into_iter().map(|r| r as f32), n, &dev)
        } else {
            column(scaled.map(|r| r as f32), n, &dev)
        };
        let delta = r + v_next * (self.cfg.gamma as f32) - v;

        let critic_loss = delta.clone().powi_scalar(2).sum();
        let actor_loss = -(logp_a * delta.detach()).sum();
        let entropy_sum = entropy.sum();
        let losses = self.update(actor_loss, critic_loss, entropy_sum);
        losses
    }
}

impl Learner for ActorCritic {
    fn reads(&self) -> Option<std::ops::Range<usize>> {
        Some(self.nets.shape.range())
    }

    fn transferred(&self, map: &[usize], inputs: super::base::Inputs) -> Option<Box<dyn Policy>> {
        Some(Box::new(ActorPolicy::transferred(
            &self.per_agent(),
            map,
            inputs,
            self.nets.shape.k,
        )))
    }

    fn act_many(&mut self, obs: &[Observations<'_>], _budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        if let Some(p) = &self.pooled {
            return nets::act_pooled(self.nets.actors.get(), &p.rows, obs, self.nets.shape, &mut self.rngs, actions);
        }
        nets::act_many(self.nets.actors.get(), obs, self.nets.shape, &mut self.rngs, actions);
    }

    fn seed_group(&self) -> usize {
        self.cfg.group
    }

    /// One copy after another; with `group`, one update per seed group; with `steps`, one
    /// update of every copy's rounds whose N-step return is complete.
    fn learn_many(&mut self, ts: &[Transition<'_>]) -> Losses {
        if self.pooled.is_some() {
            let losses = self.learn_pooled(ts);
            self.rounds += u64::from(ts[0].done);
            return losses;
        }
        let g = self.cfg.group;
        let losses = if self.cfg.steps > 1 {
            assert!(ts.len() % g == 0, "{} copies in seed groups of {g}", ts.len());
            self.learn_steps(ts)
        } else if g > 1 {
            assert!(ts.len() % g == 0, "{} copies in seed groups of {g}", ts.len());
            let losses: Vec<Losses> = ts.chunks(g).map(|c| self.learn_group(c)).collect();
            Losses::mean(&losses)
        } else {
            let losses: Vec<Losses> = ts.iter().map(|t| self.learn_one(t)).collect();
            Losses::mean(&losses)
        };
        self.rounds += 1;
        losses
    }

    /// One round of one copy (a caller that feeds each copy's round separately advances the
    /// entropy schedule once per copy).
    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        if self.cfg.steps > 1 || self.pooled.is_some() {
            return self.learn_many(std::slice::from_ref(t));
        }
        let losses = self.learn_one(t);
        self.rounds += 1;
        losses
    }

    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
        self.nets.actors.get().valid().export_agent(self.rows(), self.nets.shape.n, agent)
    }

    fn non_finite(&self) -> Option<String> {
        self.nets.non_finite()
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        let parts = self.rewards.save(self.nets.save(PREFIX)?, REWARD_STATS);
        Ok(self
            .relative
            .save(parts, RELATIVE_STATS)
            .add_u64(ROUNDS, &[self.rounds])
            .into_bytes())
    }

    /// A state saved before reward statistics (or group-relative ones) existed loads with none
    /// seen; one saved before the round count, at round 0 of the entropy schedule.
    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        let names = Nets::parts(PREFIX);
        let mut wanted: Vec<&str> = names.iter().map(String::as_str).collect();
        wanted.extend([REWARD_STATS, RELATIVE_STATS, ROUNDS]);
        let parts = (6..=wanted.len())
            .rev()
            .find_map(|m| Parts::read(bytes, &wanted[..m]).ok())
            .map_or_else(|| Parts::read(bytes, &wanted[..5]).map_err(failed), Ok)?;
        self.nets.load(&parts[..5], PREFIX, "actor-critic")?;
        let n = self.pooled.as_ref().map_or(self.nets.shape.n, |p| p.classes);
        (self.rewards, self.relative) = (RunningStats::new(n), RunningStats::new(n));
        if let Some(p) = &mut self.pooled {
            p.clear();
        }
        if let Some(s) = parts.get(5) {
            self.rewards.load(s, REWARD_STATS).map_err(failed)?;
        }
        if let Some(s) = parts.get(6) {
            self.relative.load(s, RELATIVE_STATS).map_err(failed)?;
        }
        self.rounds = match parts.get(7) {
            Some(s) => match Parts::u64s(s, ROUNDS).map_err(failed)?[..] {
                [r] => r,
                _ => return Err(failed(format!("part `{ROUNDS}` is not one number"))),
            },
            None => 0,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    use crate::learners::testing::learn_round;

    #[test]
    fn shared_by_class_one_actor_serves_each_weight_class_and_saves_as_such() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
        let sc = env::config::ScenarioFile::load(&path, &[]).unwrap();
        let classes = sc.class_of_agents();
        let (a, b) = (0..sc.n())
            .flat_map(|i| (0..sc.n()).map(move |j| (i, j)))
            .find(|&(i, j)| i != j && classes[i] == classes[j])
            .expect("a class of two agents");
        let other = (0..sc.n()).find(|&j| classes[j] != classes[a]).expect("two classes");
        let cfg = ActorCriticConfig {
            actor_hidden: 8,
            share: Share::Class,
            ..ActorCriticConfig::default()
        };
        let init = Init::new(&sc, 4);
        let shared = cfg.init(&init);
        assert_eq!(shared.export_weights(a).unwrap(), shared.export_weights(b).unwrap());
        assert_ne!(shared.export_weights(a).unwrap(), shared.export_weights(other).unwrap());
        // Its networks are one per class: an unshared learner (one per agent) refuses them.
        let unshared = ActorCriticConfig {
            share: Share::None,
            ..cfg.clone()
        };
        assert!(unshared.init(&init).load(&shared.save().unwrap()).is_err());
        assert_ne!(
            unshared.init(&init).export_weights(a).unwrap(),
            unshared.init(&init).export_weights(b).unwrap()
        );
        let mut again = cfg.init(&init);
        again.load(&shared.save().unwrap()).unwrap();
        assert_eq!(again.export_weights(b).unwrap(), shared.export_weights(b).unwrap());
        // Written to the config as set (left out when `none` before 2026-12-05's `auto`).
        let text = |c: &ActorCriticConfig| toml::to_string(c).unwrap();
        assert!(text(&cfg).contains("share = \"class\""), "{}", text(&cfg));
        assert!(text(&unshared).contains("share = \"none\""), "{}", text(&unshared));
    }

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
            entropy: Bonus::Of(0.0),
            group: 1,
            steps: 1,
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

#[cfg(test)]
mod schedule {
    use super::*;
    use crate::learners::testing::learn_round;

    fn rounds(ac: &mut ActorCritic, m: usize) {
        let (n, d) = (2, 3);
        let obs = vec![0.5f32; n * d];
        for _ in 0..m {
            learn_round(ac, d, &obs, &obs, &[0, 1], &[1.0, 2.0]);
        }
    }

    #[test]
    fn the_entropy_bonus_falls_linearly_to_0_over_its_share_of_the_run_and_resumes_where_it_was() {
        let cfg = ActorCriticConfig {
            actor_hidden: 4,
            critic_hidden: [4, 4],
            group: 1,
            steps: 1,
            entropy: Bonus::Of(0.01),
            entropy_anneal: 0.5,
            ..ActorCriticConfig::default()
        };
        let mut ac = ActorCritic::new(Shape::new(2, 3, 3, 4), &cfg, 1);
        // Without a planned run (a learner built outside `mtf train`) the bonus is constant.
        rounds(&mut ac, 3);
        assert_eq!(ac.entropy_coefficient(), 0.01);
        let mut ac = ActorCritic::new(Shape::new(2, 3, 3, 4), &cfg, 1);
        ac.planned_rounds = 40;
        assert_eq!(ac.entropy_coefficient(), 0.01);
        rounds(&mut ac, 5);
        assert!((ac.entropy_coefficient() - 0.0075).abs() < 1e-12, "{}", ac.entropy_coefficient());
        let saved = ac.save().unwrap();
        rounds(&mut ac, 10);
        assert!((ac.entropy_coefficient() - 0.0025).abs() < 1e-12, "{}", ac.entropy_coefficient());
        rounds(&mut ac, 5);
        assert_eq!(ac.entropy_coefficient(), 0.0);
        rounds(&mut ac, 7);
        assert_eq!(ac.entropy_coefficient(), 0.0, "stays 0 after its share of the run");
        // A resumed run continues from the saved round, not from the start.
        let mut resumed = ActorCritic::new(Shape::new(2, 3, 3, 4), &cfg, 1);
        resumed.planned_rounds = 40;
        resumed.load(&saved).unwrap();
        assert!((resumed.entropy_coefficient() - 0.0075).abs() < 1e-12);
        // Every copy's round counts once: 8 copies of one seed, 5 rounds.
        let grouped = ActorCriticConfig { group: 8, steps: 4, ..cfg };
        let mut g = ActorCritic::new(Shape::new(2, 3, 3, 4), &grouped, 1);
        g.planned_rounds = 40;
        let obs = vec![0.5f32; 6];
        for _ in 0..5 {
            let ts: Vec<Transition<'_>> = (0..8)
                .map(|_| crate::learners::testing::transition(3, &obs, &[0, 1], &[1.0, 2.0], false))
                .collect();
            g.learn_many(&ts);
        }
        assert!((g.entropy_coefficient() - 0.0075).abs() < 1e-12, "{}", g.entropy_coefficient());
    }
}

#[cfg(test)]
mod bandits {
    use super::*;
    use crate::learners::testing::{learn_round, NoisyBandit};

    /// The one-step learner of the thesis with this harness's normalisation: one copy, one-step
    /// TD errors, entropy bonus 0.05 (what the defaults were before seed groups).
    pub(super) fn one_step() -> ActorCriticConfig {
        ActorCriticConfig {
            group: 1,
            steps: 1,
            entropy: Bonus::Of(0.05),
            entropy_anneal: 0.0,
            ..ActorCriticConfig::default()
        }
    }

    /// `rounds` rounds of a one-state bandit for 4 agents with 10 levels: agent i is paid
    /// `pay(level)` plus noise; returns the last probabilities, `[4][10]`.
    pub(super) fn play(cfg: &ActorCriticConfig, rounds: usize, pay: impl Fn(usize) -> f64) -> Vec<f32> {
        let (n, d, k) = (4, 17, 10);
        let mut ac = ActorCritic::new(Shape::new(n, d, d, k), cfg, 5);
        ac.begin_episode(3);
        let obs: Vec<f32> = (0..n * d).map(|j| ((j * 7) % 10) as f32 / 10.0).collect();
        let mut noise = stream(9, "test-noise", 0);
        let mut actions = vec![0; n];
        for _ in 0..rounds {
            ac.act(Observations { data: &obs, dim: d }, &[0.0; 4], false, &mut actions);
            let rewards: Vec<f64> = actions
                .iter()
                .map(|&a| pay(a) + 0.5 * (env::rng::unit(rand::Rng::next_u64(&mut noise)) - 0.5))
                .collect();
            learn_round(&mut ac, d, &obs, &obs, &actions, &rewards);
        }
        ac.probabilities(Observations { data: &obs, dim: d })
    }

    fn entropy_share(p: &[f32]) -> f64 {
        env::policy::mean_entropy(p, 10) / 10f64.ln()
    }

    #[test]
    fn every_level_paying_the_same_teaches_nothing() {
        // Rewards of 2 (the quickstart's scale) whatever the level: the policy must stay near
        // uniform. Without normalisation the critic starts 200 below the return and the first
        // TD errors reinforce whatever was sampled.
        let p = play(&one_step(), 6000, |_| 2.0);
        assert!(entropy_share(&p) > 0.9, "entropy share {} ({p:?})", entropy_share(&p));
    }

    /// A [`NoisyBandit`] of 4 agents and 10 levels in 4 groups of `group` copies (1: 4
    /// independent copies); the probabilities after `rounds` rounds.
    fn noisy(cfg: &ActorCriticConfig, group: usize, rounds: usize, shared: f64, own: f64, gain: f64) -> Vec<f32> {
        let mut ac = ActorCritic::new(Shape::new(4, 17, 17, 10), cfg, 5);
        // A run of `rounds` rounds, as `mtf train` plans one (the entropy schedule's horizon).
        ac.planned_rounds = rounds as u64;
        let bandit = NoisyBandit {
            n: 4,
            d: 17,
            k: 10,
            groups: if group == 1 { 4 } else { 1 },
            group,
            rounds,
            base: 2.0,
            shared,
            own,
            gain,
            best: 7,
        };
        bandit.play(&mut ac, |l, o| l.probabilities(o))
    }

    #[test]
    fn group_relative_td_errors_cancel_the_noise_a_seed_group_shares() {
        // One-step TD errors, level 7 paying 0.1 more under a noise the group shares, 20 times
        // larger: relative to the group the noise is gone.
        let cfg = |group| ActorCriticConfig { group, ..one_step() };
        let p7 = |p: Vec<f32>| (0..4).map(|i| p[i * 10 + 7]).collect::<Vec<f32>>();
        let with = p7(noisy(&cfg(4), 4, 1500, 2.0, 0.0, 0.1));
        assert!(with.iter().all(|&p| p > 0.9), "group = 4: p(best) = {with:?}");
        let without = p7(noisy(&cfg(1), 1, 1500, 2.0, 0.0, 0.1));
        assert!(without.iter().all(|&p| p < 0.5), "group = 1: p(best) = {without:?}");
    }

    #[test]
    fn the_defaults_keep_a_flat_bandit_flat_and_find_a_level_paying_5_percent_more() {
        // Defaults (groups of 8, 64-step returns, entropy 0.01 annealed to 0 over the first
        // half of the 5000 rounds, the rest without a bonus): rewards of 2 under a shared
        // noise of +-2 and each copy's own of +-0.25. With every level paying the same the
        // policy stays near uniform; with level 7 paying 0.1 more, it is found.
        let cfg = ActorCriticConfig::default();
        let flat = noisy(&cfg, 8, 5000, 2.0, 0.25, 0.0);
        assert!(entropy_share(&flat) > 0.9, "entropy share {} ({flat:?})", entropy_share(&flat));
        let gain = noisy(&cfg, 8, 5000, 2.0, 0.25, 0.1);
        for i in 0..4 {
            assert!(gain[i * 10 + 7] > 0.9, "agent {i}: p(7) = {} ({gain:?})", gain[i * 10 + 7]);
        }
    }

    #[test]
    fn one_level_paying_clearly_more_is_found() {
        // Level 7 pays 2.1, every other level 2 (noise +-0.25): 5% more.
        let p = play(&one_step(), 6000, |a| if a == 7 { 2.1 } else { 2.0 });
        for i in 0..4 {
            assert!(p[i * 10 + 7] > 0.9, "agent {i}: p(7) = {} ({p:?})", p[i * 10 + 7]);
        }
    }
}

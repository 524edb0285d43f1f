//! The experiment config: a scenario (`seed`, `[env]`, `[mechanism]`, from `env`) plus the
//! learners (`[learner]`) and the training run (`[train]`). Raw TOML with overrides, unknown
//! keys rejected, then resolved; every error names the file, the key and the problem.

use crate::learners::actor_critic::ActorCriticConfig;
use crate::learners::hedge::HedgeConfig;
use env::config::{from_table, read_table, ConfigError, EnvSection, MechanismSection, Scenario, ScenarioFile};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Documented limits of an experiment, checked before anything of that size is allocated.
pub mod limits {
    /// Hidden layer width of the actor or critic.
    pub const MAX_HIDDEN: usize = 16_384;
    /// Evaluation episodes (`train.eval_seeds`, `--seeds`).
    pub const MAX_SEEDS: usize = 100_000;
    /// Worker threads.
    pub const MAX_THREADS: usize = 1_024;
    /// Hedge weights in all (agents x budget states x levels).
    pub const MAX_HEDGE_WEIGHTS: usize = 100_000_000;
    /// Environment copies per training run (`train.envs`).
    pub const MAX_ENVS: usize = 1024;
    /// A central critic's first-layer weights over all agents (n x n x features x width).
    pub const MAX_CENTRAL_CRITIC: usize = 200_000_000;
}

/// Which learner every agent runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LearnerKind {
    /// A constant threshold.
    Fixed,
    /// Hedge with one weight vector per budget state (thesis Algorithm 2).
    Hedge,
    /// One-step actor-critic (thesis 4.2.2), with burn.
    ActorCritic,
    /// PPO (IPPO; MAPPO with `learner.ppo.critic = "central"`), with burn.
    Ppo,
}

/// What the learners are paid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LearnerReward {
    /// The environment's reward (`env.reward`): each agent's own.
    Own,
    /// Difference rewards `D_i = G - G(agent i at learner.difference_default)` from one-round
    /// counterfactual re-runs of the mechanism ([`crate::learners::difference`]).
    Difference,
}

/// `[learner.fixed]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixedConfig {
    /// The threshold (one of the levels).
    pub threshold: f64,
}

impl Default for FixedConfig {
    fn default() -> Self {
        Self { threshold: 0.5 }
    }
}

/// `[learner]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LearnerSection {
    /// Which learner.
    pub kind: LearnerKind,
    /// What the learners are paid: their own reward, or difference rewards.
    pub reward: LearnerReward,
    /// The level difference rewards compare each agent's action against.
    pub difference_default: f64,
    /// Fixed threshold settings.
    pub fixed: FixedConfig,
    /// Hedge settings.
    pub hedge: HedgeConfig,
    /// Actor-critic settings.
    pub actor_critic: ActorCriticConfig,
    /// PPO settings.
    pub ppo: crate::learners::ppo::PpoConfig,
}

impl Default for LearnerSection {
    fn default() -> Self {
        Self {
            kind: LearnerKind::ActorCritic,
            reward: LearnerReward::Own,
            difference_default: 0.0,
            fixed: FixedConfig::default(),
            hedge: HedgeConfig::default(),
            actor_critic: ActorCriticConfig::default(),
            ppo: crate::learners::ppo::PpoConfig::default(),
        }
    }
}

/// `[train]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainSection {
    /// Training episodes.
    pub episodes: u64,
    /// Checkpoint every this many episodes (and at the end).
    pub checkpoint_every: u64,
    /// Held-out evaluation episodes at the end (greedy actions).
    pub eval_seeds: usize,
    /// Worker threads (results do not depend on it).
    pub threads: usize,
    /// Environment copies stepped in parallel every round (rollout workers); the learner acts
    /// for all of them in one batched pass and learns from all their rounds.
    pub envs: usize,
}

impl Default for TrainSection {
    fn default() -> Self {
        Self {
            episodes: 50,
            checkpoint_every: 10,
            eval_seeds: 8,
            threads: 2,
            envs: 1,
        }
    }
}

/// A whole experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ExperimentFile {
    /// Root seed.
    pub seed: u64,
    /// The world.
    pub env: EnvSection,
    /// The mechanism.
    pub mechanism: MechanismSection,
    /// The learners.
    pub learner: LearnerSection,
    /// The training run.
    pub train: TrainSection,
}

impl Default for ExperimentFile {
    fn default() -> Self {
        let s = ScenarioFile::default();
        Self {
            seed: s.seed,
            env: s.env,
            mechanism: s.mechanism,
            learner: LearnerSection::default(),
            train: TrainSection::default(),
        }
    }
}

/// What the levels of `sc`'s actions are called in messages.
pub fn levels_name(sc: &Scenario) -> &'static str {
    match sc.action_kind() {
        env::config::ActionKind::Threshold => "threshold levels",
        env::config::ActionKind::Bid => "bid levels",
    }
}

/// Where a scenario comes from: a scenario or experiment file, `--set` overrides, and a root
/// seed that overrides the file's. `simulate`, `compare` and `reproduce` load scenarios from it.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// The file (an experiment file works: its `[learner]` and `[train]` are checked, unused).
    pub config: PathBuf,
    /// `key.path=value` overrides.
    pub set: Vec<String>,
    /// Root seed override.
    pub seed: Option<u64>,
}

impl Source {
    /// The file with its overrides.
    pub fn new(config: impl Into<PathBuf>, set: &[String], seed: Option<u64>) -> Self {
        Self {
            config: config.into(),
            set: set.to_vec(),
            seed,
        }
    }

    /// The file's stem, for naming run directories.
    pub fn stem(&self) -> &str {
        self.config.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario")
    }

    /// The validated scenario, with its mechanism replaced by `mechanism` if given.
    pub fn load(&self, mechanism: Option<&str>) -> crate::Result<Scenario> {
        let mut overrides = self.set.clone();
        if let Some(m) = mechanism {
            // Reported as the caller's, not as a key of the config file.
            if !scheduler::registry::NAMES.contains(&m) {
                return Err(crate::error::user(format!(
                    "unknown mechanism `{m}` given on the command line (known: {})",
                    scheduler::registry::NAMES.join(", ")
                )));
            }
            overrides.push(format!("mechanism.name=\"{m}\""));
        }
        if let Some(s) = self.seed {
            overrides.push(format!("seed={s}"));
        }
        Ok(Experiment::load(&self.config, &overrides)?.scenario)
    }
}

/// A validated experiment.
#[derive(Clone, Debug)]
pub struct Experiment {
    /// The scenario (world and mechanism).
    pub scenario: Scenario,
    /// The learners.
    pub learner: LearnerSection,
    /// The training run.
    pub train: TrainSection,
}

impl Experiment {
    /// Load an experiment file with `--set` overrides and validate it.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Experiment, ConfigError> {
        let table = read_table(path, overrides)?;
        let file: ExperimentFile = from_table(&path.display().to_string(), table)?;
        Self::resolve(file, path)
    }

    /// Validate an experiment file.
    pub fn resolve(file: ExperimentFile, path: &Path) -> Result<Experiment, ConfigError> {
        let fname = path.display().to_string();
        let err = |key: &str, problem: String| ConfigError {
            file: fname.clone(),
            key: key.into(),
            problem,
        };
        let scenario = ScenarioFile {
            seed: file.seed,
            env: file.env,
            mechanism: file.mechanism,
        }
        .resolve(path)?;
        check_learner(&err, &scenario, &file.learner)?;
        check_actor_critic(&err, &file.learner.actor_critic)?;
        check_ppo(&err, &scenario, &file.learner.ppo)?;
        check_difference(&err, &scenario, &file.learner)?;
        check_train(&err, &file.train)?;
        // Every copy holds the scenario's agent x accelerator state.
        let cells = file.train.envs.saturating_mul(scenario.n()).saturating_mul(scenario.m());
        if cells > env::config::limits::MAX_CELLS {
            return Err(err(
                "train.envs",
                format!(
                    "{} copies of {} agents x {} accelerators are {cells} cells, more than the limit of {}",
                    file.train.envs,
                    scenario.n(),
                    scenario.m(),
                    env::config::limits::MAX_CELLS
                ),
            ));
        }
        Ok(Experiment {
            scenario,
            learner: file.learner,
            train: file.train,
        })
    }

    /// The resolved experiment as TOML: enough to rerun.
    pub fn to_toml(&self) -> String {
        let s = &self.scenario.file;
        let file = ExperimentFile {
            seed: s.seed,
            env: s.env.clone(),
            mechanism: s.mechanism.clone(),
            learner: self.learner.clone(),
            train: self.train.clone(),
        };
        toml::to_string(&file).expect("an experiment serialises")
    }
}

/// The error constructor of [`Experiment::resolve`]: file, key, problem.
type ErrorIn<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

/// `[learner]` against the scenario: the fixed level exists, Hedge's eta and table size.
fn check_learner(err: &ErrorIn<'_>, scenario: &Scenario, l: &LearnerSection) -> Result<(), ConfigError> {
    let levels = &scenario.action_levels();
    if l.kind == LearnerKind::Fixed && !levels.iter().any(|&t| (t - l.fixed.threshold).abs() < 1e-9) {
        return Err(err(
            "learner.fixed.threshold",
            format!("{} is not one of the {} {levels:?}", l.fixed.threshold, levels_name(scenario)),
        ));
    }
    if let Some(eta) = l.hedge.eta {
        if !(eta.is_finite() && eta > 0.0) {
            return Err(err("learner.hedge.eta", format!("must be a finite number > 0, got {eta}")));
        }
    }
    let states = crate::learners::hedge::budget_states(scenario);
    if l.kind == LearnerKind::Hedge && states.saturating_mul(levels.len()).saturating_mul(scenario.n()) > limits::MAX_HEDGE_WEIGHTS {
        return Err(err(
            "mechanism.total_tokens",
            format!(
                "Hedge keeps a weight per agent, budget state (floor(T) + 1 = {states}) and level: more than the limit of {}",
                limits::MAX_HEDGE_WEIGHTS
            ),
        ));
    }
    Ok(())
}

/// `[learner.actor_critic]`: widths (before any tensor of that size exists) and rates.
fn check_actor_critic(err: &ErrorIn<'_>, ac: &ActorCriticConfig) -> Result<(), ConfigError> {
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

/// `learner.reward = "difference"`: a learner that learns from the rewards it is given, a
/// mechanism without state across rounds (the counterfactual re-run is then exact), a default
/// that is one of the levels.
fn check_difference(err: &ErrorIn<'_>, sc: &Scenario, l: &LearnerSection) -> Result<(), ConfigError> {
    if l.reward != LearnerReward::Difference {
        return Ok(());
    }
    if !matches!(l.kind, LearnerKind::ActorCritic | LearnerKind::Ppo) {
        return Err(err(
            "learner.reward",
            "difference rewards train actor_critic and ppo (Hedge computes its own counterfactual reward for every level; fixed learns nothing)".into(),
        ));
    }
    let mech = &sc.file.mechanism;
    let stateful = scheduler::registry::build(&mech.name, &mech.params()).map_or(true, |m| m.state().is_some());
    if stateful {
        return Err(err(
            "learner.reward",
            format!("difference rewards re-run the mechanism on the round's input, which `{}` does not fully determine (it keeps state across rounds); use mtf, second_price or first_price", mech.name),
        ));
    }
    if !sc.action_levels().iter().any(|&x| (x - l.difference_default).abs() < 1e-9) {
        return Err(err(
            "learner.difference_default",
            format!(
                "{} is not one of the {} {:?}",
                l.difference_default,
                levels_name(sc),
                sc.action_levels()
            ),
        ));
    }
    Ok(())
}

/// `[learner.ppo]`: widths (before any tensor exists, the central critic's input included),
/// rates, counts and coefficients.
fn check_ppo(err: &ErrorIn<'_>, sc: &Scenario, p: &crate::learners::ppo::PpoConfig) -> Result<(), ConfigError> {
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

/// `[train]`: episodes, checkpoints, threads, held-out seeds.
fn check_train(err: &ErrorIn<'_>, t: &TrainSection) -> Result<(), ConfigError> {
    if t.episodes == 0 {
        return Err(err("train.episodes", "must be at least 1".into()));
    }
    if t.checkpoint_every == 0 {
        return Err(err("train.checkpoint_every", "must be at least 1".into()));
    }
    if !(1..=limits::MAX_ENVS).contains(&t.envs) {
        return Err(err("train.envs", format!("must be in [1, {}], got {}", limits::MAX_ENVS, t.envs)));
    }
    if t.threads == 0 || t.threads > limits::MAX_THREADS {
        return Err(err(
            "train.threads",
            format!("must be in [1, {}], got {}", limits::MAX_THREADS, t.threads),
        ));
    }
    if t.eval_seeds == 0 || t.eval_seeds > limits::MAX_SEEDS {
        return Err(err(
            "train.eval_seeds",
            format!(
                "must be in [1, {}], got {} (the held-out evaluation needs a seed)",
                limits::MAX_SEEDS,
                t.eval_seeds
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Experiment, ConfigError> {
        let file: ExperimentFile = from_table("x.toml", toml::from_str(text).unwrap())?;
        Experiment::resolve(file, Path::new("x.toml"))
    }

    #[test]
    fn defaults_resolve_and_round_trip() {
        let e = load("").unwrap();
        assert_eq!(e.learner.kind, LearnerKind::ActorCritic);
        assert_eq!(e.learner.actor_critic.actor_hidden, 256);
        let again = load(&e.to_toml()).unwrap();
        assert_eq!(again.to_toml(), e.to_toml());
    }

    #[test]
    fn learner_and_train_errors_name_their_keys() {
        let e = |t: &str| load(t).unwrap_err().to_string();
        assert!(e("[learner]\nkind = \"dqn\"").starts_with("x.toml: learner.kind: unknown variant `dqn`"));
        assert_eq!(
            e("[learner]\nkind = \"fixed\"\nfixed = { threshold = 0.33 }"),
            "x.toml: learner.fixed.threshold: 0.33 is not one of the threshold levels [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]"
        );
        assert_eq!(
            e("[learner.actor_critic]\ngamma = 1.5"),
            "x.toml: learner.actor_critic.gamma: must be in [0, 1], got 1.5"
        );
        assert_eq!(e("[train]\nepisodes = 0"), "x.toml: train.episodes: must be at least 1");
        assert!(e("[train]\nepoch = 3").starts_with("x.toml: train.epoch: unknown field `epoch`"));
    }
}

//! The experiment config: a scenario (`seed`, `[env]`, `[mechanism]`, from `env`) plus the
//! learners (`[learner]`) and the training run (`[train]`). Raw TOML with overrides, unknown
//! keys rejected, then resolved; every error names the file, the key and the problem.

use crate::learners::ErrorIn;
pub use crate::learners::{LearnerKind, LearnerReward, LearnerSection};
use env::config::{from_table, read_table, ConfigError, EnvSection, MechanismSection, Scenario, ScenarioFile};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub mod keys;
pub mod keys_worlds;

/// Every config key, as `mtf config --describe` prints it (docs/CONFIG.md): the experiment
/// file's, then the other worlds' files' and the sweep file's.
pub fn describe() -> String {
    keys::describe() + &keys_worlds::describe()
}

/// Documented limits of an experiment, checked before anything of that size is allocated.
pub mod limits {
    pub use crate::learners::limits::*;
    /// Evaluation episodes (`train.eval_seeds`, `--seeds`).
    pub const MAX_SEEDS: usize = 100_000;
    /// Worker threads.
    pub const MAX_THREADS: usize = 1_024;
    /// Training replicates of one run group (`train.replicates`).
    pub const MAX_REPLICATES: usize = 1000;
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
    /// Training replicates: independent training seeds of this experiment, trained as one run
    /// group (`<group>/replicate-K/`, each an ordinary run) and reported across replicates.
    pub replicates: usize,
    /// This run's index among its group's replicates: its training seed (episodes, sampling,
    /// initial parameters) is the root seed's `replicate` stream K, and replicate 0's is the root
    /// seed itself. Held-out evaluation seeds come from the root seed for every replicate, so
    /// replicates and baselines compare on the same arrivals.
    pub replicate: u64,
    /// End the run with its references on the held-out seeds: the best fixed level (picked on
    /// selection seeds) and uniform random play, as paired differences (`summary.json`
    /// `references`, the console, TensorBoard). Written to a config only when false.
    #[serde(skip_serializing_if = "is_true")]
    pub references: bool,
}

fn is_true(b: &bool) -> bool {
    *b
}

impl Default for TrainSection {
    fn default() -> Self {
        Self {
            episodes: 50,
            checkpoint_every: 10,
            eval_seeds: 8,
            threads: 2,
            envs: 1,
            replicates: 1,
            replicate: 0,
            references: true,
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
    pub fn load(&self, mechanism: Option<&str>) -> crate::error::Result<Scenario> {
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
        let blame = |e| env::config::blame_override(e, overrides);
        let file: ExperimentFile = from_table(&path.display().to_string(), table).map_err(blame)?;
        Self::resolve(file, path).map_err(blame)
    }

    /// Validate an experiment file.
    pub fn resolve(file: ExperimentFile, path: &Path) -> Result<Experiment, ConfigError> {
        let fname = path.display().to_string();
        let err = |key: &str, problem: String| ConfigError {
            file: fname.clone(),
            key: key.into(),
            problem,
        };
        let mut env = file.env;
        // A learner reading the by_type block needs the environment to write it.
        if file.learner.chosen().features() == crate::learners::Features::ByType {
            env.observe_by_type = true;
        }
        let scenario = ScenarioFile {
            seed: file.seed,
            env,
            mechanism: file.mechanism,
        }
        .resolve(path)?;
        file.learner.validate(&scenario, &err)?;
        check_train(&err, &file.train)?;
        // Every copy holds the scenario's agent x accelerator state.
        let (copies, key) = match (file.learner.chosen().copies(), file.learner.chosen().group()) {
            (Some(c), _) => (c, format!("learner.{}", file.learner.kind.name())),
            (None, Some((g, group_key))) if g > 1 => (file.train.envs.saturating_mul(g), format!("train.envs x {group_key}")),
            (None, _) => (file.train.envs, "train.envs".to_string()),
        };
        let cells = copies.saturating_mul(scenario.n()).saturating_mul(scenario.m());
        if cells > env::config::limits::MAX_CELLS {
            return Err(err(
                &key,
                format!(
                    "{} copies of {} agents x {} accelerators are {cells} cells, more than the limit of {}",
                    copies,
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

    /// The run's learner population, fresh ([`LearnerSection::build`]), its parameters drawn
    /// from the training seed.
    pub fn build_learner(&self) -> Box<dyn crate::learners::Learner> {
        self.learner
            .build(&crate::learners::Init::new(&self.scenario, self.train.episodes).with_root(self.training_seed()))
    }

    /// The environment copies a training episode steps: the learner's own number (an
    /// evolution strategy's population), or `train.envs` seeds times the learner's copies per
    /// seed (its `group`, 1 for most).
    pub fn copies(&self) -> usize {
        self.learner.copies(self.train.envs)
    }

    /// The seed of the run's training (its episodes, the learners' sampling and initial
    /// parameters): the root seed for replicate 0, the root seed's `replicate` stream otherwise.
    pub fn training_seed(&self) -> u64 {
        let root = self.scenario.file.seed;
        match self.train.replicate {
            0 => root,
            k => env::rng::stream_seed(root, env::rng::names::REPLICATE, k),
        }
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

/// `[train]`: episodes, checkpoints, threads, held-out seeds.
pub(crate) fn check_train(err: &ErrorIn<'_>, t: &TrainSection) -> Result<(), ConfigError> {
    if t.episodes == 0 {
        return Err(err("train.episodes", "must be at least 1".into()));
    }
    if t.checkpoint_every == 0 {
        return Err(err("train.checkpoint_every", "must be at least 1".into()));
    }
    if !(1..=limits::MAX_REPLICATES).contains(&t.replicates) {
        return Err(err(
            "train.replicates",
            format!("must be in [1, {}], got {}", limits::MAX_REPLICATES, t.replicates),
        ));
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

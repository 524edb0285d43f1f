//! Sweep files (`configs/sweeps/*.toml`): the base experiment, the search space, the objective,
//! the budget per trial, the sampler and the pruner. Read like configs: unknown keys rejected,
//! every error one line naming the file, the key and the problem.

use super::pruner::PrunerConfig;
use super::space::{Dist, SamplerKind, TpeConfig, Value};
use crate::config::Experiment;
use env::config::{from_table, read_table, ConfigError};
use env::registry::Stack;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Maximise or minimise the objective.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Larger is better (welfare).
    Maximize,
    /// Smaller is better (drops, losses).
    Minimize,
}

impl Direction {
    /// The loss samplers and pruners minimise.
    pub fn loss(self, value: f64) -> f64 {
        match self {
            Direction::Maximize => -value,
            Direction::Minimize => value,
        }
    }
}

/// `[objective]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Objective {
    /// A dotted path into the trial's `summary.json` (e.g. `eval_welfare.mean`).
    pub metric: String,
    /// Its direction.
    pub direction: Direction,
    /// The per-episode `metrics.jsonl` field the pruner sees.
    pub intermediate: String,
}

impl Default for Objective {
    fn default() -> Self {
        Self {
            metric: "eval_welfare.mean".into(),
            direction: Direction::Maximize,
            intermediate: "welfare".into(),
        }
    }
}

/// The name sweep files written before the figures were named once used for `reward`.
const OLD_REWARD: &str = "mean_reward";

impl Objective {
    /// The objective's path into a run's `summary.json`, as runs write it now (an older sweep
    /// file's `last_episode.mean_reward` is `last_episode.reward`). The file's own text stays
    /// as written: the study's fingerprint is made of it.
    pub fn path(&self) -> String {
        match self.metric.strip_suffix(OLD_REWARD).filter(|p| p.ends_with("last_episode.")) {
            Some(head) => format!("{head}reward"),
            None => self.metric.clone(),
        }
    }

    /// The per-episode figure the pruner follows, by its key (an older sweep file's
    /// `mean_reward` is `reward`).
    pub fn intermediate_key(&self) -> &str {
        if self.intermediate == OLD_REWARD {
            "reward"
        } else {
            &self.intermediate
        }
    }
}

/// `[budget]`: what every trial's training run is given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Budget {
    /// Training episodes per trial (`train.episodes`; default: the base config's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub episodes: Option<u64>,
    /// Held-out evaluation seeds per trial (`train.eval_seeds`; default: the base config's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eval_seeds: Option<usize>,
    /// Training replicates per trial (`train.replicates`; default: the base config's). With
    /// more than one, a trial is a run group and the objective a path into the group's
    /// `summary.json` (e.g. `vs_baseline.greedy.iqm`); the pruner follows replicate 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicates: Option<usize>,
    /// Threads per trial (workers run trials side by side; results do not depend on it).
    pub threads: usize,
    /// Further `key.path=value` overrides for every trial.
    pub set: Vec<String>,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            episodes: None,
            eval_seeds: None,
            replicates: None,
            threads: 1,
            set: Vec::new(),
        }
    }
}

/// A sweep file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepFile {
    /// The base experiment config, relative to the sweep file.
    pub base: PathBuf,
    /// Study name (default: the sweep file's stem).
    #[serde(default)]
    pub study: Option<String>,
    /// Sampler.
    #[serde(default = "default_sampler")]
    pub sampler: SamplerKind,
    /// TPE settings.
    #[serde(default)]
    pub tpe: TpeConfig,
    /// Grid: points per float parameter.
    #[serde(default = "default_grid_points")]
    pub grid_points: usize,
    /// Sampler seed (a trial's draws depend on it and the trial number only).
    #[serde(default)]
    pub seed: u64,
    /// Trials the study runs (complete + pruned + failed).
    #[serde(default = "default_trials")]
    pub trials: usize,
    /// Trials run side by side by one process.
    #[serde(default = "default_workers")]
    pub workers: usize,
    /// Trial 0 runs the base config's own values, so the study shows the improvement over the
    /// defaults.
    #[serde(default = "yes")]
    pub include_defaults: bool,
    /// The objective.
    #[serde(default)]
    pub objective: Objective,
    /// Per-trial budget.
    #[serde(default)]
    pub budget: Budget,
    /// Pruner.
    #[serde(default)]
    pub pruner: PrunerConfig,
    /// Seconds between a running trial's heartbeats in the study database.
    #[serde(default = "default_heartbeat")]
    pub heartbeat_interval: f64,
    /// Seconds without a heartbeat after which a running trial counts as dead and is re-queued
    /// (default: twice the interval).
    #[serde(default)]
    pub grace_period: Option<f64>,
    /// Seconds a worker keeps reconnecting to a study database that went away (a PostgreSQL
    /// restart: backoff from 0.25 s to 5 s) before it exits 1 (default 120).
    #[serde(default = "default_reconnect")]
    pub reconnect_timeout: f64,
    /// The search space: config key path -> distribution.
    pub params: BTreeMap<String, Dist>,
}

fn default_reconnect() -> f64 {
    120.0
}
fn default_sampler() -> SamplerKind {
    SamplerKind::Tpe
}
fn default_grid_points() -> usize {
    3
}
fn default_trials() -> usize {
    20
}
/// Workers of one sweep process: each is a thread running trials (100,000 spawned threads
/// until the system refused one, then aborted: issue 42's attack on its own fixes).
pub const MAX_WORKERS: usize = 256;

fn default_workers() -> usize {
    2
}
fn default_heartbeat() -> f64 {
    60.0
}
fn yes() -> bool {
    true
}

/// A sweep file read and checked, with its base config resolved.
#[derive(Clone, Debug)]
pub struct Sweep {
    /// The file as written.
    pub file: SweepFile,
    /// The sweep file's path.
    pub path: PathBuf,
    /// The base config's path (resolved against the sweep file's directory).
    pub base: PathBuf,
    /// The base config's values at the parameters' key paths (where it has them).
    pub defaults: BTreeMap<String, Value>,
    /// The stack that drives the base config's world: which training its trials run.
    pub kind: Stack,
}

/// What a sweep file is checked against in its base config's world.
struct Base {
    /// Per-episode figures the pruner may follow.
    known: Vec<&'static str>,
    /// A trial's summary.json, its numbers zero.
    shape: serde_json::Value,
    /// Whose summary ("a run's", ...).
    what: &'static str,
    /// Example objectives.
    e_g: &'static str,
    /// The base config with every default filled in.
    resolved: toml::Table,
}

fn err(file: &Path, key: impl Into<String>, problem: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.display().to_string(),
        key: key.into(),
        problem: problem.into(),
    }
}

/// Look a dotted key path up in a TOML table.
pub fn lookup<'a>(table: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut keys = path.split('.');
    let mut v = table.get(keys.next()?)?;
    for k in keys {
        v = match v {
            toml::Value::Table(t) => t.get(k)?,
            toml::Value::Array(a) => a.get(k.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(v)
}

/// `heartbeat_interval` and `grace_period`: positive, bounded, the grace longer than the
/// interval.
fn check_liveness(path: &Path, file: &SweepFile) -> Result<(), ConfigError> {
    if !(file.heartbeat_interval >= 0.01 && file.heartbeat_interval <= 86_400.0) {
        return Err(err(path, "heartbeat_interval", "must be a number of seconds in [0.01, 86400]"));
    }
    if !(0.0..=86_400.0).contains(&file.reconnect_timeout) {
        return Err(err(path, "reconnect_timeout", "must be a number of seconds in [0, 86400]"));
    }
    if let Some(g) = file.grace_period {
        if !(g > file.heartbeat_interval && g <= 864_000.0) {
            return Err(err(
                path,
                "grace_period",
                format!(
                    "must be longer than heartbeat_interval ({} s) and at most 864000 s",
                    file.heartbeat_interval
                ),
            ));
        }
    }
    Ok(())
}

impl Sweep {
    /// How the study tells a live trial from a dead one.
    pub fn liveness(&self) -> super::storage::Liveness {
        let interval = self.file.heartbeat_interval;
        super::storage::Liveness {
            interval,
            grace: self.file.grace_period.unwrap_or(2.0 * interval),
            reconnect: self.file.reconnect_timeout,
        }
    }

    /// Read and check a sweep file.
    pub fn load(path: &Path) -> Result<Sweep, ConfigError> {
        let table = read_table(path, &[])?;
        let file: SweepFile = from_table(&path.display().to_string(), table)?;
        if file.params.is_empty() {
            return Err(err(path, "params", "the search space is empty; add at least one parameter"));
        }
        for (k, d) in &file.params {
            d.validate().map_err(|p| err(path, format!("params.{k}"), p))?;
        }
        for (key, bad) in [
            ("trials", file.trials == 0),
            ("workers", file.workers == 0),
            ("grid_points", file.grid_points < 2),
            ("budget.threads", file.budget.threads == 0),
            ("budget.episodes", file.budget.episodes == Some(0)),
            ("budget.eval_seeds", file.budget.eval_seeds == Some(0)),
            ("budget.replicates", file.budget.replicates == Some(0)),
        ] {
            if bad {
                return Err(err(path, key, "must be at least 1 (grid_points: 2)"));
            }
        }
        if file.workers > MAX_WORKERS {
            return Err(err(path, "workers", format!("must be at most {MAX_WORKERS}, got {}", file.workers)));
        }
        check_liveness(path, &file)?;
        if file.tpe.candidates == 0 || !(file.tpe.gamma > 0.0 && file.tpe.gamma <= 1.0) {
            return Err(err(path, "tpe", "needs candidates >= 1 and gamma in (0, 1]"));
        }
        file.pruner.validate().map_err(|(k, p)| err(path, format!("pruner.{k}"), p))?;
        let base = path.parent().unwrap_or(Path::new(".")).join(&file.base);
        if !base.is_file() {
            let problem = if base.is_dir() {
                "is a directory"
            } else if base.exists() {
                "is not a regular file"
            } else {
                "does not exist"
            };
            return Err(err(path, "base", format!("{} {problem}", base.display())));
        }
        // Trials are `mtf train` on the base, by the stack that drives its world.
        let kind = env::registry::stack_of(&base, &[]);
        let mut sweep = Sweep {
            file,
            path: path.to_path_buf(),
            base,
            defaults: BTreeMap::new(),
            kind,
        };
        // The base config with the budget applied must load; its resolved form says which keys
        // exist and their default values.
        let base = match kind {
            Stack::Seam => sweep.seam_base()?,
            Stack::Queue => sweep.queue_base()?,
        };
        if !base.known.contains(&sweep.file.objective.intermediate_key()) {
            return Err(err(
                path,
                "objective.intermediate",
                format!(
                    "`{}` is not a per-episode metric of this world (one of {:?})",
                    sweep.file.objective.intermediate, base.known
                ),
            ));
        }
        let o = &sweep.file.objective;
        let metric = o.path();
        let head = metric.split('.').next().unwrap_or("");
        let heads: Vec<&str> = base
            .shape
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if !heads.contains(&head) {
            return Err(err(
                path,
                "objective.metric",
                format!("`{}` is not in {} summary.json (starts with one of {heads:?})", o.metric, base.what),
            ));
        }
        let leaf = metric.split('.').try_fold(&base.shape, |v, k| v.get(k));
        if !leaf.is_some_and(serde_json::Value::is_number) {
            return Err(err(
                path,
                "objective.metric",
                format!("`{}` is not a number in {} summary.json (e.g. {})", o.metric, base.what, base.e_g),
            ));
        }
        // Optional keys (e.g. hedge's eta, a level per weight class) are absent when unset: they
        // are real if setting them is accepted, together (one class's level alone is not a
        // valid per-class policy).
        let mut probe = BTreeMap::new();
        for (k, d) in &sweep.file.params {
            match lookup(&base.resolved, k) {
                Some(v) => {
                    sweep.defaults.insert(k.clone(), v.clone());
                }
                None => {
                    probe.insert(k.clone(), d.sample(0.5));
                }
            }
        }
        if !probe.is_empty() {
            if let Err(e) = sweep.load_base(&sweep.overrides(&probe, &[])) {
                let text = e.to_string();
                let k = probe
                    .keys()
                    .find(|k| text.contains(k.as_str()))
                    .unwrap_or_else(|| probe.keys().next().expect("one"));
                return Err(err(path, format!("params.{k}"), format!("not a key of the base config ({e})")));
            }
        }
        // Which learner the trials run is known once the command line's --set is applied:
        // `execute` checks the space against it.
        Ok(sweep)
    }

    /// Load the base config with `set` applied (a market file with its training sections).
    pub fn load_base(&self, set: &[String]) -> Result<(), ConfigError> {
        self.learner_of(set).map(|_| ())
    }

    /// The learner the trials run on the base config with `set` applied (which also checks that
    /// it loads).
    pub fn learner_of(&self, set: &[String]) -> Result<&'static str, ConfigError> {
        // The stack was read off the base file when the sweep loaded; a --set that moves it
        // would train every trial by the other (their config.toml saying otherwise).
        if env::registry::stack_of(&self.base, set) != self.kind {
            return Err(err(
                &self.base,
                "env.stack",
                "set on the command line: a sweep's trials run the stack its base config names; set env.stack there",
            ));
        }
        Ok(match self.kind {
            Stack::Seam => crate::worlds::train::SeamExperiment::load(&self.base, set)
                .map_err(|e| self.as_config_error(e))?
                .learner
                .kind
                .name(),
            Stack::Queue => Experiment::load(&self.base, set)?.learner.kind.name(),
        })
    }

    /// A seam world's loading error as the base config's (its message names the file).
    fn as_config_error(&self, e: crate::error::Error) -> ConfigError {
        match e {
            crate::error::Error::Config(c) => c,
            other => err(&self.base, "", other.to_string()),
        }
    }

    fn seam_base(&mut self) -> Result<Base, ConfigError> {
        let exp = crate::worlds::train::SeamExperiment::load(&self.base, &self.overrides(&BTreeMap::new(), &[]))
            .map_err(|e| self.as_config_error(e))?;
        let w = exp.world.as_ref();
        let known = crate::worlds::train::generation_keys(w, exp.learner.kind);
        let head = &w.metrics()[w.headline()];
        let direction = self.file.objective.direction;
        // The pruner orients what it follows by the objective's direction: the default (the
        // queue world's welfare, not a figure here) is the figure that agrees with it.
        // (A world whose figures include another `welfare`, the market's value of finished
        // work, keeps the fallback: its headline is not it.)
        if self.file.objective.intermediate == "welfare" && head.key != "welfare" {
            self.file.objective.intermediate = match (direction, head.better) {
                (Direction::Minimize, env::worlds::Better::Lower) => head.key.into(),
                _ => "fitness".into(),
            };
        }
        // Higher is better for the mean fitness; the headline as the world says; ES's spread
        // is no figure of merit.
        let key = self.file.objective.intermediate.as_str();
        let higher = match key {
            "fitness" => Some(true),
            k if k == head.key => Some(head.better == env::worlds::Better::Higher),
            _ => None,
        };
        if higher.is_some_and(|h| h != (direction == Direction::Maximize)) || key == "spread" {
            return Err(err(
                &self.path,
                "objective.intermediate",
                format!(
                    "`{key}` is {} while objective.direction is \"{}\": the pruner would cut the best trials (here {})",
                    match higher {
                        Some(true) => "better higher",
                        Some(false) => "better lower",
                        None => "no figure of merit",
                    },
                    format!("{direction:?}").to_lowercase(),
                    if direction == Direction::Maximize {
                        "\"fitness\" agrees".to_string()
                    } else if head.better == env::worlds::Better::Lower {
                        format!("\"{}\" agrees", head.key)
                    } else {
                        "no figure agrees: maximise".into()
                    }
                ),
            ));
        }
        let group = exp.train.replicates > 1;
        Ok(Base {
            known,
            shape: crate::worlds::train::summary_shape(w, group, exp.learner.kind),
            what: if group { "a run group's" } else { "a run's" },
            e_g: if group {
                "vs_best_fixed_iqm, share_improving"
            } else {
                "vs_best_fixed.mean, eval.<the world's figure>.mean, last_episode.<the world's figure>"
            },
            resolved: toml::from_str(&exp.to_toml()).expect("a resolved config is valid TOML"),
        })
    }

    fn queue_base(&mut self) -> Result<Base, ConfigError> {
        let exp = Experiment::load(&self.base, &self.overrides(&BTreeMap::new(), &[]))?;
        // The default pruner figure (welfare) is the surplus per bidder per item in the
        // valuation world.
        let world = exp.scenario.file.env.world;
        if world == env::config::World::Valuations && self.file.objective.intermediate == "welfare" {
            self.file.objective.intermediate = "surplus_per_bidder_item".into();
        }
        let group = exp.train.replicates > 1;
        Ok(Base {
            known: crate::train::EpisodeLog::keys_of(world),
            shape: if group {
                crate::train::group::summary_shape()
            } else {
                crate::train::summary_shape(world)
            },
            what: if group { "a run group's" } else { "a run's" },
            e_g: if group {
                "vs_baseline.greedy.iqm, eval_welfare.mean"
            } else {
                "eval_welfare.mean, eval.jain.mean, last_episode.welfare"
            },
            resolved: toml::from_str(&exp.to_toml()).expect("a resolved config is valid TOML"),
        })
    }

    /// Refuse a space that searches keys of a learner the trials do not run (`chosen`, unless
    /// `learner.kind` is itself searched): they would change nothing, and the "best" trial
    /// would be noise.
    pub fn check_learner_keys(&self, chosen: &str) -> Result<(), ConfigError> {
        use crate::learners::LearnerKind;
        let mut run: Vec<&str> = vec![chosen];
        if let Some(Dist::Categorical { choices }) = self.file.params.get("learner.kind") {
            run.extend(choices.iter().filter_map(|c| c.as_str()));
        }
        let ignored: Vec<&str> = self
            .file
            .params
            .keys()
            .filter(|k| {
                let section = k.strip_prefix("learner.").and_then(|r| r.split_once('.')).map(|(s, _)| s);
                section.is_some_and(|s| LearnerKind::ALL.iter().any(|l| l.name() == s) && !run.contains(&s))
            })
            .map(String::as_str)
            .collect();
        if ignored.is_empty() {
            return Ok(());
        }
        Err(err(
            &self.path,
            "params",
            format!(
                "{} set a learner the trials do not run (they train {}): they would change nothing; search the chosen learner's keys, or set learner.kind",
                ignored.join(", "),
                run.join(" or ")
            ),
        ))
    }

    /// The `--set` overrides of a trial: the file's budget, then `extra` (the command line's
    /// `--set`), then the trial's parameters (the search wins over both).
    pub fn overrides(&self, params: &BTreeMap<String, Value>, extra: &[String]) -> Vec<String> {
        let b = &self.file.budget;
        let mut set = Vec::new();
        if let Some(e) = b.episodes {
            set.push(format!("train.episodes={e}"));
        }
        if let Some(s) = b.eval_seeds {
            set.push(format!("train.eval_seeds={s}"));
        }
        if let Some(r) = b.replicates {
            set.push(format!("train.replicates={r}"));
        }
        set.extend(b.set.iter().cloned());
        set.extend(extra.iter().cloned());
        set.extend(params.iter().map(|(k, v)| format!("{k}={v}")));
        set
    }

    /// The defaults as a trial's parameters, when every parameter has a default.
    pub fn default_params(&self) -> Option<BTreeMap<String, Value>> {
        self.has_all_defaults().then(|| self.defaults.clone())
    }

    /// Does the base config give every parameter a value?
    pub fn has_all_defaults(&self) -> bool {
        self.defaults.len() == self.file.params.len()
    }

    /// What identifies a study: the search space and the objective (a study continued with a
    /// different space would mix incomparable trials).
    pub fn fingerprint(&self) -> String {
        serde_json::json!({"params": self.file.params, "objective": self.file.objective}).to_string()
    }
}

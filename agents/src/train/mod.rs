//! `mtf train`: a training run in a run directory, resumable.
//!
//! Every random number of episode e comes from streams seeded by `(root seed, e)` — the
//! environment's and the agents' sampling alike — so the learner's parameters, its optimizer
//! state and the episode counter are all a checkpoint needs: a run resumed from episode e
//! replays exactly what an uninterrupted run does from e on. `checkpoints/latest.ckpt` is
//! rewritten atomically after every episode (a killed run loses at most the episode in
//! progress); `checkpoints/episode-NNNNNN.ckpt` is kept every `checkpoint_every` episodes and at
//! the end. [`crate::train::checkpoint`] owns the format: a corrupt or truncated file is reported,
//! never trusted.

pub mod checkpoint;
pub mod group;
pub mod log;
pub mod market;
pub mod market_policy;
pub mod memory;
pub mod rollout;
pub mod selfish;

use log::{episode_log, last_logged, read_json, truncate_metrics, write_scalars};
pub use log::{logged_figure, logged_welfare, tags, EpisodeLog};
use rollout::{copies, merged};
pub use rollout::{env_seed, train_episode, train_episode_many, train_episode_pinned};

use crate::config::{Experiment, LearnerKind};
use crate::error::user;
use crate::learners::Learner;
use crate::run::{self, RunDir};
use env::eval::{evaluate, Stat, Summary};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Called after every episode (its log line is written and its checkpoint saved); `Ok(true)`
/// stops the run there, without the held-out evaluation: a sweep's pruner uses it.
#[derive(Clone)]
pub struct EpisodeHook(pub std::sync::Arc<EpisodeFn>);

/// The callback inside an [`EpisodeHook`].
pub type EpisodeFn = dyn Fn(&EpisodeLog) -> crate::error::Result<bool> + Send + Sync;

/// Whether a run should stop now (see [`TrainSpec::stop`]).
#[derive(Clone)]
pub struct StopFlag(pub std::sync::Arc<dyn Fn() -> bool + Send + Sync>);

impl std::fmt::Debug for StopFlag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopFlag")
    }
}

impl std::fmt::Debug for EpisodeHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EpisodeHook")
    }
}

/// What to train: a new run from an experiment config (with overrides), or a run directory to
/// resume; where the run directory goes; how many threads.
#[derive(Debug, Clone, Default)]
pub struct TrainSpec {
    /// Experiment config (not with `resume`).
    pub config: Option<PathBuf>,
    /// Run name (default: the config's file stem).
    pub name: Option<String>,
    /// `--set` overrides.
    pub set: Vec<String>,
    /// Continue this run directory from its last checkpoint.
    pub resume: Option<PathBuf>,
    /// Run directory (default `runs/<name>-<timestamp>`).
    pub out: Option<PathBuf>,
    /// Root seed override.
    pub seed: Option<u64>,
    /// Worker threads override.
    pub threads: Option<usize>,
    /// No progress bar.
    pub quiet: bool,
    /// Per-episode callback (sweeps): a run group's replicate 0 feeds it.
    pub on_episode: Option<EpisodeHook>,
    /// Asked after every episode of every replicate (a run group trained one replicate after
    /// another, as in the worlds behind the seam, outlives its replicate 0): true stops the run
    /// there, as a hook's true does (a sweep worker's SIGTERM, a trial the study declared stale).
    pub stop: Option<StopFlag>,
    /// Training replicates (overrides `train.replicates`): a run group.
    pub replicates: Option<usize>,
    /// Config keys a resumed run's `config.toml` may have changed since its checkpoint (e.g.
    /// `train.episodes`); any other change is refused.
    pub allow_config_change: Vec<String>,
}

/// What a training run produced.
#[derive(Debug, Clone)]
pub struct Trained {
    /// The run directory.
    pub dir: PathBuf,
    /// How the run ended.
    pub outcome: Outcome,
    /// The run's `summary.json` as a value (`None` when stopped early): a sweep's objective is a
    /// path into it.
    pub summary: Option<serde_json::Value>,
}

/// How a training run ended.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Trained, then evaluated on held-out seeds.
    Evaluated {
        /// The learner.
        learner: LearnerKind,
        /// Episodes trained by this call (the rest were done before a resume).
        episodes_run: u64,
        /// Seconds spent training.
        train_seconds: f64,
        /// The held-out evaluation, greedy.
        eval: Box<Summary>,
        /// The same policy drawing its actions as in training, on the same seeds.
        sampled: Box<Summary>,
        /// Every held-out episode's welfare, greedy and sampled, in seed order (the pairs a
        /// group's statistics are made of).
        held_out: HeldOut,
        /// Where the result sits: the best fixed level and uniform play on the same seeds
        /// (`None` with `train.references = false`).
        references: Option<Box<References>>,
        /// Its episodes.
        eval_seeds: usize,
        /// The last training episode's log line.
        last_episode: Option<EpisodeLog>,
    },
    /// A resumed run that was already complete: nothing was done.
    AlreadyComplete {
        /// Its episodes.
        episodes: u64,
    },
    /// A run group trained its replicates and summarised them.
    Group(Box<group::GroupSummary>),
    /// The episode hook stopped the run (a pruned sweep trial): no evaluation, no summary.json.
    Stopped {
        /// Episodes done.
        after: u64,
    },
}

/// The world's headline figure as the console names it (and, in the valuation world, its
/// revenue beside it).
fn headline_name(eval: &Summary) -> (&'static str, String) {
    match eval.headline().0 {
        "welfare" => ("welfare", String::new()),
        _ => (
            "surplus per bidder per item",
            format!(" (revenue per item {} greedy)", eval.figure("revenue_per_item").pm(3)),
        ),
    }
}

/// The lines `mtf train` prints.
impl std::fmt::Display for Trained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.dir.display();
        match &self.outcome {
            Outcome::Evaluated {
                learner,
                episodes_run,
                train_seconds,
                eval,
                eval_seeds,
                sampled,
                references,
                last_episode,
                ..
            } => {
                // A policy that draws its actions is stated drawing them; its argmax second, and
                // marked when it is an argmax of a near-uniform policy.
                if draws(*learner) {
                    write!(
                        f,
                        "trained {episodes_run} episodes ({learner:?}) in {train_seconds:.1} s; held-out {} {} sampled (as trained){}, over {eval_seeds} seeds; greedy {}{}\n",
                        headline_name(eval).0,
                        sampled.headline().1.pm(3),
                        headline_name(eval).1,
                        eval.headline().1.pm(3),
                        near_uniform_note(sampled),
                    )?;
                } else {
                    write!(
                        f,
                        "trained {episodes_run} episodes ({learner:?}) in {train_seconds:.1} s; held-out {} {}{}, over {eval_seeds} seeds\n",
                        headline_name(eval).0,
                        eval.headline().1.pm(3),
                        headline_name(eval).1,
                    )?;
                }
                if let Some(r) = references {
                    let (best, unif) = r.scored();
                    writeln!(
                        f,
                        "vs the best fixed level ({}, picked on other seeds): {} ({}; {} as trained, positive is better)\nvs uniform random play:  {} ({})",
                        r.best_fixed,
                        best.signed_pm(3),
                        verdict(best),
                        r.scored,
                        unif.signed_pm(3),
                        verdict(unif),
                    )?;
                    if let Some(s) = &r.selfish {
                        writeln!(
                            f,
                            "vs the selfish equilibrium ({}{}; where own rewards lead, itself {} vs the best fixed level): {} ({})",
                            s.spec,
                            if s.converged {
                                ""
                            } else {
                                ", where best responses stopped: not converged"
                            },
                            s.vs_best_fixed.signed_pm(3),
                            s.run_vs.signed_pm(3),
                            verdict(s.run_vs),
                        )?;
                        if let Some(log) = last_episode {
                            let levels: Vec<String> = log.threshold_by_weight.iter().map(|(w, l)| format!("w{w}={l:.2}")).collect();
                            writeln!(f, "mean levels in the last training episode: {}", levels.join(","))?;
                        }
                    }
                }
                write!(
                    f,
                    "run directory: {dir}\nTensorBoard:   tensorboard --logdir {}\n",
                    RunDir::at(&self.dir).tb().display()
                )
            }
            Outcome::AlreadyComplete { episodes } => {
                writeln!(
                    f,
                    "{dir}: the run is complete ({episodes} episodes, summary.json written); nothing to resume"
                )
            }
            Outcome::Group(g) => write!(f, "{g}run group:    {dir}\nTensorBoard:  tensorboard --logdir {dir}\n"),
            Outcome::Stopped { after } => write!(f, "stopped after {after} episodes\nrun directory: {dir}\n"),
        }
    }
}

/// A policy trained on `trained` can act in `scenario`: the same agents, accelerators and
/// levels (`spec` names the policy in the error). Here, below `eval`, because run groups
/// check their replicates with it too.
pub fn check_fits(spec: &str, trained: &env::config::Scenario, scenario: &env::config::Scenario) -> crate::error::Result<()> {
    let levels = scenario.action_levels();
    if (trained.n(), trained.m(), trained.action_levels()) != (scenario.n(), scenario.m(), levels) {
        return Err(crate::error::policy(
            spec,
            format!(
                "the run was trained for {} agents, {} accelerators and levels {:?}; this scenario has {}, {} and {:?}",
                trained.n(),
                trained.m(),
                trained.action_levels(),
                scenario.n(),
                scenario.m(),
                levels
            ),
        ));
    }
    Ok(())
}

/// Which trained agent each of another scenario's agents acts as, for policies that move
/// between clusters (`by_type`): agent j of weight w is the r-th agent of weight w there (r
/// counted from 0 in index order) and acts as the (r mod c)-th of the c trained agents of
/// weight w. With the same agents this is the identity. The error names a weight no trained
/// agent had.
pub fn transfer_map(trained: &[f64], target: &[f64]) -> Result<Vec<usize>, String> {
    let mut seen: Vec<(f64, usize)> = Vec::new();
    target
        .iter()
        .map(|&w| {
            let of_w: Vec<usize> = (0..trained.len()).filter(|&i| trained[i] == w).collect();
            if of_w.is_empty() {
                let mut have = trained.to_vec();
                have.sort_by(f64::total_cmp);
                have.dedup();
                return Err(format!("no trained agent has weight {w} (the trained weights are {have:?})"));
            }
            let r = match seen.iter_mut().find(|(x, _)| *x == w) {
                Some((_, r)) => {
                    *r += 1;
                    *r
                }
                None => {
                    seen.push((w, 0));
                    0
                }
            };
            Ok(of_w[r % of_w.len()])
        })
        .collect()
}

/// Check that a `by_type` run trained on `trained` can act in `scenario`: the same levels and
/// the same catalog types (names and order); n and m may differ.
pub fn check_transfer(spec: &str, trained: &env::config::Scenario, scenario: &env::config::Scenario) -> crate::error::Result<Vec<usize>> {
    let (a, b) = (&trained.file.env.catalog.types, &scenario.file.env.catalog.types);
    if trained.action_kind() != scenario.action_kind() || trained.action_levels() != scenario.action_levels() || a != b {
        return Err(crate::error::policy(
            spec,
            format!(
                "a by_type policy moves between clusters with the same levels and accelerator types; it was trained with {} levels {:?} and types {a:?}, this scenario has {} levels {:?} and {b:?}",
                trained.action_kind().as_str(),
                trained.action_levels(),
                scenario.action_kind().as_str(),
                scenario.action_levels()
            ),
        ));
    }
    let weights = |sc: &env::config::Scenario| sc.agents.iter().map(|x| x.weight).collect::<Vec<f64>>();
    transfer_map(&weights(trained), &weights(scenario)).map_err(|e| crate::error::policy(spec, e))
}

/// What stopped being finite in an episode: its losses or the learner's parameters.
fn diverged(log: &EpisodeLog, learner: &dyn Learner) -> Option<String> {
    diverged_in([log.actor_loss, log.critic_loss, log.entropy], learner)
}

fn diverged_in([actor, critic, entropy]: [f64; 3], learner: &dyn Learner) -> Option<String> {
    for (what, v) in [
        ("the actor loss", actor),
        ("the critic loss", critic),
        ("the policy entropy", entropy),
    ] {
        if !v.is_finite() {
            return Some(format!("{what} is {v}"));
        }
    }
    learner.non_finite()
}

/// Load a run directory's experiment and its learner restored from its latest checkpoint
/// ([`checkpoint::latest`]), or fresh, with 0 episodes done, when there is none and
/// `allow_fresh`.
pub fn load_run(dir: &Path, allow_fresh: bool) -> crate::error::Result<(Experiment, Box<dyn Learner>, u64)> {
    load_run_allowing(dir, allow_fresh, &[])
}

/// Refuse a run of another world where a queue- or valuation-world run is read, naming the
/// run and what reads it (before, its config was parsed as a queue-world file and the error
/// blamed its `env.world` as an unknown variant: issue 42.7). Unreadable configs pass: the
/// parse that follows names their problem.
pub fn queue_world_run(dir: &Path) -> crate::error::Result<()> {
    let Ok(text) = std::fs::read_to_string(RunDir::at(dir).config()) else {
        return Ok(());
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    let world = env::registry::world_name(&table);
    if world == "queues" || world == "valuations" {
        return Ok(());
    }
    let reads = if world == "market" {
        "a market run is read with its market file (mtf compare or mtf analyze --config MARKET_FILE with run:DIR / --run DIR, mtf export --run DIR, mtf train --resume DIR, mtf curves DIR)".to_string()
    } else {
        format!(
            "a {world} run is read with a {world} config (mtf compare --config FILE --policies run:DIR), mtf train --resume and mtf curves"
        )
    };
    Err(crate::error::run_dir(
        dir,
        format!("a run of the {world} world (env.world in its config.toml), read here as a queue-world run: {reads}"),
    ))
}

/// [`load_run`], where the run's `config.toml` may differ from the config its checkpoint
/// recorded at the keys `allowed` (and `train.threads`, which changes no result).
pub fn load_run_allowing(dir: &Path, allow_fresh: bool, allowed: &[String]) -> crate::error::Result<(Experiment, Box<dyn Learner>, u64)> {
    let config = RunDir::at(dir).config();
    if !config.exists() {
        return Err(crate::error::run_dir(dir, "not a run directory (no config.toml)"));
    }
    queue_world_run(dir)?;
    let exp = Experiment::load(&config, &run_config_sets(&config)).map_err(|e| user(e.to_string()))?;
    let mut learner = exp.build_learner();
    let Some(latest) = checkpoint::latest(dir) else {
        if allow_fresh {
            return Ok((exp, learner, 0));
        }
        return Err(crate::error::run_dir(
            &RunDir::at(dir).latest_checkpoint(),
            "no checkpoint (the run has not finished an episode)",
        ));
    };
    let (done, recorded) = checkpoint::restore(&latest, learner.as_mut())?;
    if let Some(recorded) = recorded {
        refuse_changes(&config, &recorded, &exp.to_toml(), allowed, "its checkpoint")?;
    }
    Ok((exp, learner, done))
}

/// Refuse the config `now` (the file at `config`) where it differs from `recorded` (`since`:
/// what wrote it) at keys other than `allowed` and `train.threads` (which changes no result):
/// one line naming the keys, for every resume of every world and of run groups.
pub(crate) fn refuse_changes(config: &Path, recorded: &str, now: &str, allowed: &[String], since: &str) -> crate::error::Result<()> {
    let changed: Vec<String> = changed_keys(recorded, now)
        .into_iter()
        .filter(|k| k != "train.threads" && !allowed.contains(k))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    Err(crate::error::run_dir(
        config,
        format!(
            "changed since {since} was written, at {}: resuming or evaluating it would continue a different experiment. Restore those keys, or, for a resume meant to change them, add --allow-config-change {}",
            changed.join(", "),
            changed.join(",")
        ),
    ))
}

/// Keys a run's `config.toml` gained after older runs were written, each with the value its
/// default had before: a run directory is read as it was trained, and a checkpoint's recorded
/// config compares equal to it. `learner.ppo.head_scale` is written since 2026-11-28 (a6450e0),
/// when its default went from 1 to 0.03.
const LEGACY_DEFAULTS: &[(&str, &str, f64)] = &[("ppo", "head_scale", 1.0)];

/// [`LEGACY_DEFAULTS`] filled into a run's config `table` where its `[learner.*]` section has
/// no such key.
fn legacy_defaults(table: &mut toml::Table) {
    let Some(toml::Value::Table(learner)) = table.get_mut("learner") else {
        return;
    };
    for &(section, key, then) in LEGACY_DEFAULTS {
        if let Some(toml::Value::Table(t)) = learner.get_mut(section) {
            t.entry(key).or_insert(toml::Value::Float(then));
        }
    }
}

/// The `--set`s that read the run directory config at `config` as it was trained
/// ([`LEGACY_DEFAULTS`]): none for a config written since, or one that cannot be read (its
/// reader then says why).
pub(crate) fn run_config_sets(config: &Path) -> Vec<String> {
    let Some(table) = std::fs::read_to_string(config).ok().and_then(|t| t.parse::<toml::Table>().ok()) else {
        return Vec::new();
    };
    // The keys legacy_defaults would fill: a [learner.<section>] table without them.
    let learner = table.get("learner").and_then(|l| l.as_table());
    LEGACY_DEFAULTS
        .iter()
        .filter(|(section, key, _)| {
            learner
                .and_then(|l| l.get(*section))
                .and_then(|s| s.as_table())
                .is_some_and(|s| !s.contains_key(*key))
        })
        .map(|(section, key, then)| format!("learner.{section}.{key}={then:?}"))
        .collect()
}

/// The key paths (`train.episodes`, `env.agents`) where two TOML configs differ; arrays compare
/// whole. A text that does not parse differs everywhere (`(the whole config)`). Both are read
/// with [`LEGACY_DEFAULTS`] filled in (a checkpoint written before a key was recorded without it).
pub(crate) fn changed_keys(a: &str, b: &str) -> Vec<String> {
    fn flat(prefix: &str, t: &toml::Table, out: &mut std::collections::BTreeMap<String, toml::Value>) {
        for (k, v) in t {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                toml::Value::Table(inner) => flat(&key, inner, out),
                other => {
                    out.insert(key, other.clone());
                }
            }
        }
    }
    let (Ok(mut a), Ok(mut b)) = (a.parse::<toml::Table>(), b.parse::<toml::Table>()) else {
        return vec!["(the whole config)".into()];
    };
    legacy_defaults(&mut a);
    legacy_defaults(&mut b);
    let (mut fa, mut fb) = (Default::default(), Default::default());
    flat("", &a, &mut fa);
    flat("", &b, &mut fb);
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter().filter(|k| fa.get(*k) != fb.get(*k)).cloned().collect()
}

#[derive(Serialize)]
struct SummaryFile<'a> {
    learner: LearnerKind,
    episodes: u64,
    last_episode: Option<&'a EpisodeLog>,
    train_seconds: f64,
    agent_updates_per_second: f64,
    eval_seeds: usize,
    eval: &'a Summary,
    /// `eval.welfare` again, where the queue world's sweeps read it; absent in the valuation
    /// world, which has no welfare.
    #[serde(skip_serializing_if = "Option::is_none")]
    eval_welfare: Option<Stat>,
    eval_sampled: &'a Summary,
    #[serde(skip_serializing_if = "Option::is_none")]
    eval_sampled_welfare: Option<Stat>,
    near_uniform: bool,
    /// Where the result sits: the best fixed level and uniform play on the same seeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    references: Option<&'a References>,
}

/// The shape of a training run's `summary.json` (every optional figure present, numbers 0):
/// what a sweep's objective path is checked against before any trial runs.
pub fn summary_shape(world: env::config::World) -> serde_json::Value {
    let eval = Summary::shape(world);
    let last = EpisodeLog {
        episode: 0,
        figures: EpisodeLog::keys_of(world).into_iter().map(|k| (k.to_string(), 0.0)).collect(),
        threshold_by_weight: Vec::new(),
        bids: world == env::config::World::Valuations,
        actor_loss: 0.0,
        critic_loss: 0.0,
        entropy: 0.0,
        reward_spread: 0.0,
        wall_time: 0.0,
    };
    serde_json::to_value(SummaryFile {
        learner: LearnerKind::Fixed,
        episodes: 0,
        last_episode: Some(&last),
        train_seconds: 0.0,
        agent_updates_per_second: 0.0,
        eval_seeds: 0,
        eval: &eval,
        eval_welfare: (world == env::config::World::Queues).then(Stat::default),
        eval_sampled: &eval,
        eval_sampled_welfare: (world == env::config::World::Queues).then(Stat::default),
        near_uniform: false,
        references: Some(&References {
            best_fixed: String::new(),
            best_fixed_eval: Stat::default(),
            uniform_eval: Stat::default(),
            greedy_vs_best_fixed: Stat::default(),
            sampled_vs_best_fixed: Stat::default(),
            greedy_vs_uniform: Stat::default(),
            sampled_vs_uniform: Stat::default(),
            scored: "sampled",
            selfish: Some(SelfishReference {
                spec: String::new(),
                converged: false,
                eval: Stat::default(),
                vs_best_fixed: Stat::default(),
                run_vs: Stat::default(),
            }),
        }),
    })
    .expect("a summary serialises")
}

/// A run directory opened for training: a new run, or one to resume.
struct Opened {
    exp: Experiment,
    learner: Box<dyn Learner>,
    /// Episodes already done (from the checkpoint).
    start: u64,
    dir: RunDir,
}

/// What `args` asks for: a run or a group to resume, or an experiment to start (a group when
/// it has replicates).
enum Asked {
    /// A run (or a group) to resume.
    Resume(PathBuf),
    /// A new run or group of this experiment, named.
    Start(Box<Experiment>, String),
}

/// The flags a resume refuses (its run's own config.toml decides), the same for every world:
/// checked before the world is chosen (it was chosen from --config, and a seam world's resume
/// ignored --config and --set).
pub fn resume_flags(args: &TrainSpec) -> crate::error::Result<()> {
    match (&args.resume, &args.config) {
        (Some(_), Some(_)) => Err(user("--resume continues a run with its own config.toml; do not pass --config")),
        (None, _) if !args.allow_config_change.is_empty() => Err(user(
            "--allow-config-change names keys a resumed run may change; it needs --resume RUN_DIR",
        )),
        (Some(_), None) if !args.set.is_empty() => Err(user("--set cannot change a run being resumed")),
        (Some(_), None) if args.replicates.is_some() => Err(user("--replicates cannot change a run being resumed")),
        (Some(_), None) if args.seed.is_some() => Err(user("--seed cannot change a run being resumed")),
        _ => Ok(()),
    }
}

fn asked(args: &TrainSpec) -> crate::error::Result<Asked> {
    resume_flags(args)?;
    match (&args.resume, &args.config) {
        (Some(path), _) => Ok(Asked::Resume(path.clone())),
        (None, Some(config)) => {
            let mut set = args.set.clone();
            if let Some(s) = args.seed {
                set.push(format!("seed={s}"));
            }
            if let Some(r) = args.replicates {
                set.push(format!("train.replicates={r}"));
            }
            let exp = Experiment::load(config, &set).map_err(|e| user(e.to_string()))?;
            let name = args
                .name
                .clone()
                .unwrap_or_else(|| config.file_stem().and_then(|s| s.to_str()).unwrap_or("train").to_string());
            Ok(Asked::Start(Box::new(exp), name))
        }
        (None, None) => Err(user("give --config FILE (or --resume RUN_DIR)")),
    }
}

/// Open a run to resume; `Err(trained)` is one that is already complete.
fn resume(path: &Path, allowed: &[String]) -> crate::error::Result<Result<Opened, Trained>> {
    if !RunDir::at(path).config().exists() {
        return Err(crate::error::run_dir(path, "not a run directory (no config.toml)"));
    }
    let dir = RunDir::open(path)?;
    let (exp, learner, done) = load_run_allowing(path, true, allowed)?;
    if done >= exp.train.episodes && dir.summary().exists() {
        return Ok(Err(Trained {
            dir: path.to_path_buf(),
            outcome: Outcome::AlreadyComplete { episodes: done },
            summary: Some(read_json(&dir.summary())?),
        }));
    }
    truncate_metrics(&dir.metrics(), done)?;
    Ok(Ok(Opened {
        exp,
        learner,
        start: done,
        dir,
    }))
}

/// A new run of `exp` in `dir`: the resolved config goes in before anything else can fail.
fn start(exp: Experiment, dir: RunDir) -> crate::error::Result<Opened> {
    run::write_atomic(&dir.config(), exp.to_toml().as_bytes())?;
    let learner = exp.build_learner();
    Ok(Opened {
        exp,
        learner,
        start: 0,
        dir,
    })
}

/// Where a run's result sits (issue 40's self-judging results): on its own held-out seeds, the
/// best fixed level (picked on the selection seeds, then scored on the held-out ones) and
/// uniform random play, each as the paired difference of the world's headline (the run minus
/// the reference: positive is better), greedy and drawing actions as in training.
#[derive(Debug, Clone, Serialize)]
pub struct References {
    /// The best fixed level's spec (`fixed:X`).
    pub best_fixed: String,
    /// Its held-out headline.
    pub best_fixed_eval: Stat,
    /// Uniform random play's held-out headline.
    pub uniform_eval: Stat,
    /// The run greedy minus the best fixed level.
    pub greedy_vs_best_fixed: Stat,
    /// The run sampled minus the best fixed level.
    pub sampled_vs_best_fixed: Stat,
    /// The run greedy minus uniform play.
    pub greedy_vs_uniform: Stat,
    /// The run sampled minus uniform play.
    pub sampled_vs_uniform: Stat,
    /// The evaluation that plays as the run trained: `sampled` for a learner that draws its
    /// actions, `greedy` for one that does not (ES, fixed levels, Hedge's greedy table).
    pub scored: &'static str,
    /// Under an agent's own reward (any `env.reward` but `welfare`), where selfish learners
    /// should go: the selfish equilibrium (`mtf analyze`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selfish: Option<SelfishReference>,
}

/// The selfish equilibrium as a reference: iterated best responses per weight class from the
/// best fixed level, each class's own reward on the selection seeds (`mtf analyze`'s search),
/// scored on the held-out seeds.
#[derive(Debug, Clone, Serialize)]
pub struct SelfishReference {
    /// Its policy spec (`fixed:w1=X,...`).
    pub spec: String,
    /// Whether the best responses stopped because no class gained (else a cycle or the pass
    /// limit: then it is where they stopped, not an equilibrium).
    pub converged: bool,
    /// Its held-out headline.
    pub eval: Stat,
    /// It minus the best fixed level (held-out, paired).
    pub vs_best_fixed: Stat,
    /// The run (as trained) minus it.
    pub run_vs: Stat,
}

impl References {
    /// The run against both references in the way it plays: (vs best fixed, vs uniform).
    pub fn scored(&self) -> (Stat, Stat) {
        if self.scored == "sampled" {
            (self.sampled_vs_best_fixed, self.sampled_vs_uniform)
        } else {
            (self.greedy_vs_best_fixed, self.greedy_vs_uniform)
        }
    }
}

/// Where a paired difference's CI puts it: a word a console line and a summary can carry.
pub fn verdict(d: Stat) -> &'static str {
    verdict_as(d, "above it, significant", "below it, significant")
}

/// [`verdict`] in other words for the two significant cases.
pub fn verdict_as(d: Stat, above: &'static str, below: &'static str) -> &'static str {
    if !d.has_ci() {
        "one seed: no CI"
    } else if d.mean - d.ci95 > 0.0 {
        above
    } else if d.mean + d.ci95 < 0.0 {
        below
    } else {
        "within the CI"
    }
}

/// The references of a run whose held-out headlines are `held` (greedy and sampled, in seed
/// order): the fixed levels on the selection seeds, the best and uniform play on the held-out
/// ones.
fn references(exp: &Experiment, held: &HeldOut, stochastic: bool) -> References {
    use crate::learners::wrap::{Layered, Sample};
    let sc = &exp.scenario;
    let root = sc.file.seed;
    let (eval, select) = (
        env::eval::episode_seeds(root, exp.train.eval_seeds),
        env::eval::selection_seeds(root, exp.train.eval_seeds),
    );
    let t = exp.train.threads;
    let headline = |policy: &dyn crate::learners::Policy, seeds: &[u64]| -> Vec<f64> {
        evaluate(sc, seeds, policy, false, t)
            .iter()
            .map(crate::report::table::headline_of)
            .collect()
    };
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let levels = sc.action_levels().len();
    let picked: Vec<f64> = (0..levels)
        .map(|l| mean(&headline(&crate::learners::Fixed { level: l }, &select)))
        .collect();
    let best = (0..levels).fold(0, |b, l| if picked[l] > picked[b] { l } else { b });
    let base = headline(&crate::learners::Fixed { level: best }, &eval);
    let uniform = Layered::new(Box::new(crate::learners::uniform::Uniform::new(sc.n(), levels, sc.m())), Sample);
    let unif = headline(&uniform, &eval);
    let diff = |a: &[f64], b: &[f64]| Stat::of(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<f64>>());
    let run = if stochastic { &held.sampled } else { &held.greedy };
    let selfish = (sc.file.env.reward != env::config::Reward::Welfare && sc.file.env.world == env::config::World::Queues).then(|| {
        let found = selfish::selfish(sc, best, &select, t);
        let eq = headline(&found.policy(sc), &eval);
        SelfishReference {
            spec: crate::learners::fixed::Levels::ByWeight(found.by_weight(sc)).spec(),
            converged: found.converged,
            eval: Stat::of(&eq),
            vs_best_fixed: diff(&eq, &base),
            run_vs: diff(run, &eq),
        }
    });
    References {
        best_fixed: crate::learners::fixed::Levels::All(sc.action_levels()[best]).spec(),
        best_fixed_eval: Stat::of(&base),
        uniform_eval: Stat::of(&unif),
        greedy_vs_best_fixed: diff(&held.greedy, &base),
        sampled_vs_best_fixed: diff(&held.sampled, &base),
        greedy_vs_uniform: diff(&held.greedy, &unif),
        sampled_vs_uniform: diff(&held.sampled, &unif),
        scored: if stochastic { "sampled" } else { "greedy" },
        selfish,
    }
}

/// Every held-out episode's welfare, in seed order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HeldOut {
    /// The greedy policy's.
    pub greedy: Vec<f64>,
    /// The sampled policy's.
    pub sampled: Vec<f64>,
}

/// The held-out evaluation on seeds no training episode used (the ones `mtf simulate` uses for
/// the same root seed, so fixed thresholds and baselines compare on equal arrivals): greedy,
/// then drawing its actions as in training.
fn evaluate_held_out(exp: &Experiment, learner: &dyn Learner) -> (Summary, Summary, HeldOut) {
    let seeds = env::eval::episode_seeds(exp.scenario.file.seed, exp.train.eval_seeds);
    let greedy = evaluate(&exp.scenario, &seeds, learner.fork().as_ref(), true, exp.train.threads);
    let sampled_policy = crate::learners::wrap::Layered::new(learner.fork(), crate::learners::wrap::Sample);
    let sampled = evaluate(&exp.scenario, &seeds, &sampled_policy, true, exp.train.threads);
    let welfare = |eps: &[env::metrics::EpisodeMetrics]| eps.iter().map(crate::report::table::headline_of).collect();
    let held_out = HeldOut {
        greedy: welfare(&greedy),
        sampled: welfare(&sampled),
    };
    (Summary::of(&exp.scenario, &greedy), Summary::of(&exp.scenario, &sampled), held_out)
}

/// ` (near-uniform: ...)` when a sampled evaluation's policy is nearly uniform.
fn near_uniform_note(sampled: &Summary) -> &'static str {
    if near_uniform(sampled) {
        " (the argmax of a near-uniform policy: noise, not a policy it learned)"
    } else {
        ""
    }
}

/// Whether a learner draws its actions in training (and so is judged drawing them).
pub fn draws(kind: LearnerKind) -> bool {
    matches!(
        kind,
        LearnerKind::ActorCritic | LearnerKind::Ppo | LearnerKind::Hedge | LearnerKind::Uniform
    )
}

/// Whether a policy's mean entropy in an evaluation is above
/// `env::metrics::spec::NEAR_UNIFORM` of the largest.
pub fn near_uniform(s: &Summary) -> bool {
    s.stat("entropy_share").is_some_and(|e| e.mean > env::metrics::spec::NEAR_UNIFORM)
}

/// A training run, or a group of replicates (`train.replicates`, [`group`]): open (or resume)
/// the run directory, train episode by episode (log line, TensorBoard, checkpoint, the hook),
/// then evaluate on held-out seeds and write summary.json.
pub fn execute(args: TrainSpec) -> crate::error::Result<Trained> {
    match asked(&args)? {
        Asked::Resume(path) if group::is_group(&path) => group::resume(&path, &args),
        Asked::Resume(path) => match resume(&path, &args.allow_config_change)? {
            Ok(opened) => train(opened, &args),
            Err(complete) => Ok(complete),
        },
        Asked::Start(exp, name) => {
            // Before anything large exists (or a run directory is made).
            memory::check(
                &memory::training(&exp, args.threads.unwrap_or(exp.train.threads)),
                "this training run",
            )?;
            let dir = RunDir::create(args.out.as_deref(), &name)?;
            if exp.train.replicates > 1 {
                return group::start(*exp, dir, &args);
            }
            train(start(*exp, dir)?, &args)
        }
    }
}

/// Train an opened run to its end (or until the hook stops it) and evaluate it.
fn train(opened: Opened, args: &TrainSpec) -> crate::error::Result<Trained> {
    let Opened {
        mut exp,
        mut learner,
        start,
        dir,
    } = opened;
    if let Some(t) = args.threads {
        exp.train.threads = t;
    }
    let total = exp.train.episodes;
    let root = exp.training_seed();
    let n = exp.scenario.n();
    let mut envs = copies(&exp.scenario, exp.copies());
    let mut tb = open_tb(&dir, &exp)?;
    let bar = progress(total, start, args.quiet);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(exp.train.threads)
        .build()
        .map_err(|e| crate::error::failed(format!("starting {} training threads: {e}", exp.train.threads)))?;
    let weights: Vec<f64> = exp.scenario.agents.iter().map(|a| a.weight).collect();
    let classes = exp.scenario.weight_classes();
    let started = Instant::now();
    // A resumed run that had finished training (killed in the held-out evaluation) reports
    // the last episode it logged.
    let mut last: Option<EpisodeLog> = if start > 0 { last_logged(&dir.metrics())? } else { None };
    let mut rounds_run = 0u64;
    // What every checkpoint records, so a resume can tell an edited config.toml.
    let config_text = exp.to_toml();
    for e in start..total {
        let t0 = Instant::now();
        let (ms, losses) = pool.install(|| train_episode_many(&mut envs, learner.as_mut(), root, e, &[]));
        let m = merged(ms);
        rounds_run += u64::from(m.rounds);
        let log = episode_log(e, &m, losses, t0.elapsed().as_secs_f64(), &weights, &classes);
        // A diverged learner stops the run before its state reaches a checkpoint or the log:
        // the last checkpoint (of the episode before) stays the last finite one.
        if let Some(what) = diverged(&log, learner.as_ref()) {
            bar.finish_and_clear();
            return Err(crate::error::failed(format!(
                "{}: training diverged in episode {done}: {what} ({kind}); stopped, the checkpoint of episode {e} kept. Lower the learning rate or the reward scale",
                dir.path().display(),
                done = e + 1,
                kind = exp.learner.kind.name(),
            )));
        }
        run::append_line(&dir.metrics(), &serde_json::to_string(&log)?)?;
        // Deterministic in the episode (copies and rounds are fixed), so a resumed run
        // continues the same axis.
        let agent_steps = (e + 1)
            .saturating_mul(u64::from(exp.scenario.file.env.rounds))
            .saturating_mul(exp.copies() as u64)
            .saturating_mul(n as u64);
        write_scalars(&mut tb, &log, m.rounds, agent_steps)?;
        let done = e + 1;
        checkpoint::write(
            dir.path(),
            done,
            &config_text,
            learner.as_ref(),
            done % exp.train.checkpoint_every == 0 || done == total,
        )?;
        bar.set_position(done);
        bar.set_message(format!("{} {:.2}", if log.bids { "surplus" } else { "welfare" }, log.headline()));
        if let Some(hook) = &args.on_episode {
            if (hook.0)(&log)? {
                bar.finish_and_clear();
                return Ok(Trained {
                    dir: dir.path().to_path_buf(),
                    outcome: Outcome::Stopped { after: done },
                    summary: None,
                });
            }
        }
        last = Some(log);
    }
    bar.finish_and_clear();
    let train_seconds = started.elapsed().as_secs_f64();

    let (eval, sampled, held_out) = evaluate_held_out(&exp, learner.as_ref());
    // A learner that draws its actions in training is judged drawing them.
    let stochastic = draws(exp.learner.kind);
    let refs = exp.train.references.then(|| references(&exp, &held_out, stochastic));
    let eval_seeds = held_out.greedy.len();
    let queues = exp.scenario.file.env.world == env::config::World::Queues;
    let summary = serde_json::to_value(SummaryFile {
        learner: exp.learner.kind,
        episodes: total,
        last_episode: last.as_ref(),
        train_seconds,
        agent_updates_per_second: (rounds_run * n as u64) as f64 / train_seconds.max(1e-9),
        eval_seeds,
        eval_welfare: queues.then(|| eval.welfare()),
        eval: &eval,
        eval_sampled_welfare: queues.then(|| sampled.welfare()),
        eval_sampled: &sampled,
        near_uniform: near_uniform(&sampled),
        references: refs.as_ref(),
    })?;
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    if let Some(r) = &refs {
        let (best, unif) = r.scored();
        tb.scalar("summary/vs_best_fixed", best.mean as f32, total)?;
        tb.scalar("summary/vs_uniform", unif.mean as f32, total)?;
        tb.scalar("summary/best_fixed", r.best_fixed_eval.mean as f32, total)?;
        tb.scalar("summary/uniform", r.uniform_eval.mean as f32, total)?;
        if let Some(s) = &r.selfish {
            tb.scalar("summary/vs_selfish_equilibrium", s.run_vs.mean as f32, total)?;
            tb.scalar("summary/selfish_equilibrium", s.eval.mean as f32, total)?;
        }
    }
    close_tb(&mut tb, &eval, (rounds_run * n as u64) as f64 / train_seconds.max(1e-9), total)?;
    Ok(Trained {
        dir: dir.path().to_path_buf(),
        outcome: Outcome::Evaluated {
            learner: exp.learner.kind,
            episodes_run: total - start,
            train_seconds,
            eval: Box::new(eval),
            sampled: Box::new(sampled),
            held_out,
            references: refs.map(Box::new),
            eval_seeds,
            last_episode: last,
        },
        summary: Some(summary),
    })
}

/// The run's TensorBoard event file, opened with its hyperparameters (every resolved config
/// value but the sections of learners it does not run) for the HPARAMS tab.
fn open_tb(dir: &RunDir, exp: &Experiment) -> crate::error::Result<crate::run::tb::EventWriter> {
    let mut tb = crate::run::tb::EventWriter::create(&dir.tb())?;
    let mut resolved: toml::Table = exp
        .to_toml()
        .parse()
        .map_err(|e| crate::error::failed(format!("re-reading the resolved config: {e}")))?;
    if let Some(toml::Value::Table(learner)) = resolved.get_mut("learner") {
        let kind = exp.learner.kind.name();
        learner.retain(|k, v| !v.is_table() || k == kind);
    }
    let group = dir.path().file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    tb.hparams(&resolved, &group)?;
    Ok(tb)
}

/// The summary's figures as scalars at the last episode (the HPARAMS tab's metrics), and the
/// end of the hparams session.
fn close_tb(tb: &mut crate::run::tb::EventWriter, eval: &Summary, updates_per_second: f64, step: u64) -> crate::error::Result<()> {
    // The world's own figures: the valuation world has no jobs (no welfare, Jain or drops).
    let keys: &[&str] = match eval.world {
        Some(env::config::World::Valuations) => &["surplus_per_bidder_item", "revenue_per_item", "sold_share"],
        _ => &["welfare", "jain", "dropped"],
    };
    for key in keys {
        tb.scalar(&format!("summary/eval_{key}"), eval.figure(key).mean as f32, step)?;
    }
    tb.scalar("summary/agent_updates_per_second", updates_per_second as f32, step)?;
    tb.hparams_end(true)
}

/// Progress of a long loop: a bar on a terminal, and without one (nohup, Slurm) a line on
/// stderr every few seconds with the count, the rate, the time left and the current figure,
/// so a log says how far a run has come. Nothing with `quiet`.
pub struct Progress {
    bar: indicatif::ProgressBar,
    lines: bool,
    total: u64,
    start: u64,
    what: &'static str,
    started: Instant,
    last: std::cell::Cell<Instant>,
}

/// Seconds between two progress lines when stderr is not a terminal.
pub const PROGRESS_EVERY_SECONDS: f64 = 5.0;

impl Progress {
    /// Progress over `total` units (`what`: "episode", "generation"), `start` done already.
    pub fn new(total: u64, start: u64, quiet: bool, what: &'static str) -> Self {
        let bar = progress_bar(total, &format!("{what} {{pos}}/{{len}} [{{bar:30}}] ETA {{eta}} {{msg}}"), quiet);
        bar.set_position(start);
        let now = Instant::now();
        Self {
            bar,
            lines: !quiet && !std::io::stderr().is_terminal(),
            total,
            start,
            what,
            started: now,
            last: std::cell::Cell::new(now),
        }
    }

    /// `done` units done; `msg` is the current figure.
    pub fn tick(&self, done: u64, msg: &str) {
        self.bar.set_position(done);
        self.bar.set_message(msg.to_string());
        let now = Instant::now();
        if self.lines && (now.duration_since(self.last.get()).as_secs_f64() >= PROGRESS_EVERY_SECONDS || done == self.total) {
            self.last.set(now);
            let secs = now.duration_since(self.started).as_secs_f64();
            let rate = (done - self.start) as f64 / secs.max(1e-9);
            let left = (self.total - done) as f64 / rate.max(1e-9);
            eprintln!("{} {done}/{} ({:.1}/s, about {left:.0} s left) {msg}", self.what, self.total, rate);
        }
    }

    /// Clear the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

fn progress(total: u64, start: u64, quiet: bool) -> indicatif::ProgressBar {
    let bar = progress_bar(total, "episode {pos}/{len} [{bar:30}] ETA {eta} {msg}", quiet);
    bar.set_position(start);
    bar
}

/// A progress bar on stderr with `template`; hidden with `quiet` or when stderr is not a
/// terminal (logs and pipes stay clean).
pub fn progress_bar(total: u64, template: &str, quiet: bool) -> indicatif::ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::diverged_in;
    use crate::learners::uniform::Uniform;

    #[test]
    fn a_diverged_episode_went_unnoticed() {
        let fine = Uniform::new(2, 3, 4);
        assert_eq!(diverged_in([0.5, 1.0, 1.1], &fine), None);
        assert_eq!(diverged_in([0.5, f64::NAN, 1.1], &fine).unwrap(), "the critic loss is NaN");
        assert_eq!(diverged_in([f64::INFINITY, 1.0, 1.1], &fine).unwrap(), "the actor loss is inf");
    }

    #[test]
    fn a_run_written_before_head_scale_was_recorded_reads_as_trained() {
        // Written before 2026-11-28: [learner.ppo] without head_scale, trained at 1.
        let old = "seed = 1\n[learner.ppo]\nlr = 0.0005\n";
        let dir = std::env::temp_dir().join(format!("mtf-legacy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, old).unwrap();
        assert_eq!(super::run_config_sets(&path), vec!["learner.ppo.head_scale=1.0".to_string()]);
        // Its checkpoint's recorded config (without the key) matches it read at 1, not at
        // the new default, and a written key is compared as written.
        let at = |x: &str| format!("seed = 1\n[learner.ppo]\nlr = 0.0005\nhead_scale = {x}\n");
        assert!(super::changed_keys(old, &at("1.0")).is_empty());
        assert_eq!(super::changed_keys(old, &at("0.03")), vec!["learner.ppo.head_scale"]);
        assert_eq!(super::changed_keys(&at("0.03"), &at("1.0")), vec!["learner.ppo.head_scale"]);
        // A config written since, or without a PPO section, needs nothing.
        std::fs::write(&path, at("0.03")).unwrap();
        assert!(super::run_config_sets(&path).is_empty());
        std::fs::write(&path, "seed = 1\n[learner.es]\npairs = 4\n").unwrap();
        assert!(super::run_config_sets(&path).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

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
pub mod memory;
mod progress;
mod references;
pub mod rollout;
mod run_files;
pub mod selfish;
mod transfer;

use progress::progress;
pub use progress::{progress_bar, Progress, PROGRESS_EVERY_SECONDS};
pub use references::{draws, near_uniform, verdict, verdict_as, HeldOut, References, SelfishReference, NEAR_UNIFORM_NOTE};
use references::{evaluate_held_out, near_uniform_note, references};
pub use run_files::{load_run, load_run_allowing, queue_world_run};
pub(crate) use run_files::{refuse_changes, run_config_sets};
pub use transfer::{check_fits, check_transfer, transfer_map};

use log::{episode_log, last_logged, read_json, truncate_metrics, write_scalars};
pub use log::{logged_figure, logged_welfare, tags, EpisodeLog};
use rollout::{copies, merged};
pub use rollout::{env_seed, train_episode, train_episode_many, train_episode_pinned};

use crate::config::{Experiment, LearnerKind};
use crate::error::user;
use crate::learners::Learner;
use crate::run::{self, RunDir};
use env::eval::{Stat, Summary};
use serde::Serialize;
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
    /// Asked after every episode of every replicate (a run group on one thread trains one
    /// replicate after another, so it outlives its replicate 0): true stops the run there, as
    /// a hook's true does (a sweep worker's SIGTERM, a trial the study declared stale).
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
        if let Some(section) = exp.learner.chosen().resolved_section(&exp.scenario, exp.train.episodes) {
            learner.insert(kind.to_string(), section);
        }
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
}

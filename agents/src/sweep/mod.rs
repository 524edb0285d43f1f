//! The hyperparameter sweeper, `mtf sweep`: Optuna's model on this harness's training runs.
//!
//! A sweep file ([`file`]) names a base experiment, a search space over its config keys, an
//! objective from a run's `summary.json`, a budget per trial, a sampler ([`space`]: random,
//! grid, TPE) and a pruner ([`pruner`]: median, successive halving). A study lives in SQLite
//! ([`storage`]); every worker — threads of one process, or other processes on the same study —
//! claims trials in a transaction, trains them as ordinary run directories
//! (`<out>/trials/trial-NNNN/`), reports the smoothed per-episode metric to the pruner, and
//! records the outcome. A trial that fails is recorded with its error and the sweep goes on.
//! At the end each process writes `trials.csv`, `best.toml` and the plots from the whole study.

pub mod export;
pub mod file;
pub mod plots;
pub mod pruner;
pub mod space;
pub mod storage;

use crate::error::user;
use crate::run;
use crate::train::{EpisodeHook, EpisodeLog, TrainSpec};
use env::registry::Stack;
use file::{Direction, Sweep};
use pruner::{halving_prunes, median_prunes, PrunerKind};
use space::{propose, Dist, Draws, Observed, SamplerKind, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use storage::db::Location;
use storage::{Storage, Trial, TrialState};

/// The policy spec of a trial that searched a level per weight class (every parameter a
/// `learner.fixed.by_weight.*` key), for `mtf simulate --policy` and `mtf compare`.
fn fixed_spec(params: &BTreeMap<String, Value>) -> Option<String> {
    let mut by = Vec::new();
    for (k, v) in params {
        let w = k.strip_prefix("learner.fixed.by_weight.w")?.parse::<f64>().ok()?;
        by.push((w, v.as_float().or_else(|| v.as_integer().map(|i| i as f64))?));
    }
    (!by.is_empty()).then(|| crate::learners::fixed::Levels::ByWeight(by).spec())
}

/// Set by SIGTERM: stop at the next episode boundary and claim nothing more.
fn stop_flag() -> &'static Arc<AtomicBool> {
    static STOP: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    STOP.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

fn stopping() -> bool {
    stop_flag().load(Ordering::Relaxed)
}

/// What to sweep: the sweep file, and what the command line overrides in it.
#[derive(Debug, Clone, Default)]
pub struct SweepSpec {
    /// The sweep file.
    pub config: PathBuf,
    /// Trials in the study (overrides the file).
    pub trials: Option<usize>,
    /// Trials side by side in this process (overrides the file).
    pub workers: Option<usize>,
    /// `sqlite:PATH` (default `sqlite:runs/sweeps/<study>.db`).
    pub storage: Option<String>,
    /// Study name (default: the file's `study`, else its stem).
    pub study: Option<String>,
    /// Sampler seed (overrides the file's `seed`).
    pub sampler_seed: Option<u64>,
    /// Root seed of every trial's training run (overrides the base config's `seed`).
    pub seed: Option<u64>,
    /// `--set` overrides of every trial's config (the trial's parameters win).
    pub set: Vec<String>,
    /// Worker threads of each trial's training run (overrides the file's budget).
    pub threads: Option<usize>,
    /// Output directory (default: `<storage dir>/<study>/`).
    pub out: Option<PathBuf>,
    /// No progress bar.
    pub quiet: bool,
}

/// Everything a worker needs, shared read-only.
struct Ctx {
    sweep: Sweep,
    db: Location,
    study: String,
    out: PathBuf,
    target: usize,
    seed: u64,
    root_seed: Option<u64>,
    set: Vec<String>,
    threads: usize,
    bar: indicatif::ProgressBar,
}

/// Run (or continue) a study; returns its output directory and the report printed.
pub fn execute(args: &SweepSpec) -> crate::error::Result<Swept> {
    let sweep = Sweep::load(&args.config).map_err(|e| user(e.to_string()))?;
    let study = args
        .study
        .clone()
        .or_else(|| sweep.file.study.clone())
        .unwrap_or_else(|| args.config.file_stem().and_then(|s| s.to_str()).unwrap_or("sweep").to_string());
    if study.is_empty() || !study.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(user(format!("--study `{study}`: use letters, digits, `-`, `_` and `.` only")));
    }
    let db = match &args.storage {
        None => Location::Sqlite(PathBuf::from("runs").join("sweeps").join(format!("{study}.db"))),
        Some(s) => Location::parse(s)?,
    };
    let out = args.out.clone().unwrap_or_else(|| match &db {
        Location::Sqlite(p) => p.parent().unwrap_or(Path::new(".")).join(&study),
        Location::Postgres(_) => PathBuf::from("runs").join("sweeps").join(&study),
    });
    // A sweep's folder is shared by its workers (no run lock), and its reports would land among
    // a run's files: refuse a run directory or run group.
    let as_run = run::RunDir::at(&out);
    if as_run.config().exists() || as_run.file(run::LOCK_FILE).exists() || as_run.is_group() {
        return Err(user(format!(
            "--out {}: is a run directory; a sweep writes trials/, trials.csv, best.toml and figures into its --out: give another folder",
            out.display()
        )));
    }
    let workers = args.workers.unwrap_or(sweep.file.workers);
    if !(1..=file::MAX_WORKERS).contains(&workers) {
        return Err(user(format!("--workers {workers}: must be in [1, {}]", file::MAX_WORKERS)));
    }
    let mut target = args.trials.unwrap_or(sweep.file.trials);
    if target == 0 {
        return Err(user("--trials must be at least 1"));
    }
    if sweep.file.sampler == SamplerKind::Grid {
        target = target.min(grid_size(&sweep) + usize::from(defaults_first(&sweep)));
    }
    // Opening checks the study's fingerprint before any worker starts; this connection then
    // reads the state for the progress bar and the report.
    // The command line's overrides must make a valid config before any trial runs.
    let mut probe = sweep.overrides(&BTreeMap::new(), &args.set);
    if let Some(seed) = args.seed {
        probe.push(format!("seed={seed}"));
    }
    sweep.check_learner_keys(sweep.learner_of(&probe)?)?;
    // Created once the command line is known to make a valid config: a refused one leaves
    // nothing behind.
    let trials_dir = out.join("trials");
    std::fs::create_dir_all(&trials_dir).map_err(|e| run::io_error(&trials_dir, "creating", e))?;
    let mut st = Storage::open(&db, &study, &sweep.fingerprint(), sweep.liveness())?;
    // A cluster's preemption (SIGTERM): workers stop after the episode they are in (its
    // checkpoint written), mark their trials interrupted so others pick them up, and the
    // process exits 0.
    signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(stop_flag()))
        .map_err(|e| crate::error::failed(format!("installing the SIGTERM handler: {e}")))?;
    let ctx = Ctx {
        seed: args.sampler_seed.unwrap_or(sweep.file.seed),
        root_seed: args.seed,
        set: args.set.clone(),
        threads: args.threads.unwrap_or(sweep.file.budget.threads),
        sweep,
        db,
        study,
        out: out.clone(),
        target,
        bar: crate::train::progress_bar(
            target as u64,
            "trial {pos}/{len} [{bar:30}] {elapsed_precise} ETA {eta} {msg}",
            args.quiet,
        ),
    };
    let started = Instant::now();
    update_bar(&ctx, &st.trials()?);
    std::thread::scope(|s| -> crate::error::Result<()> {
        let handles: Vec<_> = (0..workers).map(|_| s.spawn(|| worker(&ctx))).collect();
        for h in handles {
            h.join().map_err(|_| crate::error::failed("a sweep worker panicked"))??;
        }
        Ok(())
    })?;
    ctx.bar.finish_and_clear();
    let trials = st.trials()?;
    let report = report(&ctx, &trials, started.elapsed().as_secs_f64())?;
    Ok(Swept {
        best: best(&trials, ctx.sweep.file.objective.direction).map(|b| b.number),
        study: ctx.study,
        out,
        trials,
        report,
    })
}

/// A sweep's outcome: the whole study as this process saw it at the end.
#[derive(Debug, Clone)]
pub struct Swept {
    /// The study's name.
    pub study: String,
    /// The output directory (`trials.csv`, `best.toml`, plots, trial runs).
    pub out: PathBuf,
    /// Every trial of the study, by number.
    pub trials: Vec<Trial>,
    /// The best complete trial's number.
    pub best: Option<u64>,
    /// The report `mtf sweep` prints.
    pub report: String,
}

impl Swept {
    /// The study as `mtf sweep --json` prints it: study, out, best, and every trial's number,
    /// state, value, parameters and run directory.
    pub fn to_json(&self) -> serde_json::Value {
        let rows: Vec<serde_json::Value> = self
            .trials
            .iter()
            .map(|t| serde_json::json!({ "number": t.number, "state": t.state.as_str(), "value": t.value, "params": t.params, "run_dir": t.run_dir }))
            .collect();
        serde_json::json!({ "study": self.study, "out": self.out.display().to_string(), "best": self.best, "trials": rows })
    }
}

fn grid_size(sweep: &Sweep) -> usize {
    sweep.file.params.values().map(|d| d.grid(sweep.file.grid_points).len()).product()
}

/// Trial 0 trains the base config's values (`include_defaults`, when every parameter has one);
/// the sampler (a grid too) proposes from the next trial on.
fn defaults_first(sweep: &Sweep) -> bool {
    sweep.file.include_defaults && sweep.has_all_defaults()
}

fn finished(t: &Trial) -> bool {
    matches!(t.state, TrialState::Complete | TrialState::Pruned | TrialState::Failed)
}

/// The best complete trial (the earliest of equals, as Optuna reports it).
fn best(trials: &[Trial], direction: Direction) -> Option<&Trial> {
    trials
        .iter()
        .filter(|t| t.state == TrialState::Complete)
        .filter_map(|t| t.value.map(|v| (t, direction.loss(v))))
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.number.cmp(&b.0.number)))
        .map(|(t, _)| t)
}

fn update_bar(ctx: &Ctx, trials: &[Trial]) {
    ctx.bar.set_position(trials.iter().filter(|t| finished(t)).count() as u64);
    if let Some(b) = best(trials, ctx.sweep.file.objective.direction) {
        ctx.bar
            .set_message(format!("best {:.3} (trial {})", b.value.unwrap_or(f64::NAN), b.number));
    }
}

fn trial_dir(ctx: &Ctx, number: u64) -> PathBuf {
    ctx.out.join("trials").join(format!("trial-{number:04}"))
}

/// How a trial's training ended.
enum Ending {
    /// With its objective value.
    Complete(f64),
    /// Stopped by the pruner.
    Pruned,
    /// Stopped by SIGTERM, or abandoned after the study declared it stale.
    Interrupted(&'static str),
}

fn worker(ctx: &Ctx) -> crate::error::Result<()> {
    let fingerprint = ctx.sweep.fingerprint();
    let live = ctx.sweep.liveness();
    let st = Arc::new(Mutex::new(Storage::open(&ctx.db, &ctx.study, &fingerprint, live)?));
    // Heartbeats go through their own connection, so a long report or claim of this worker
    // never delays them.
    let mut beat = Storage::open(&ctx.db, &ctx.study, &fingerprint, live)?;
    let file = &ctx.sweep.file;
    let defaults_first = defaults_first(&ctx.sweep);
    while !stopping() {
        let claimed = st.lock().expect("not poisoned").claim(
            ctx.target,
            |n| trial_dir(ctx, n).display().to_string(),
            |c| {
                // The defaults trial comes first, and comes again if it was interrupted (its
                // process died) after later trials were claimed: the comparison with the
                // defaults is part of the study.
                let defaults = ctx.sweep.default_params();
                if defaults_first && !c.live.iter().any(|p| Some(p) == defaults.as_ref()) {
                    return defaults;
                }
                let index = c.index - usize::from(defaults_first);
                if file.sampler == SamplerKind::Grid && index >= grid_size(&ctx.sweep) {
                    return None;
                }
                let history: Vec<Observed> = c
                    .completed
                    .iter()
                    .map(|(p, v)| Observed {
                        params: p.clone(),
                        loss: file.objective.direction.loss(*v),
                    })
                    .collect();
                let mut draws = Draws::new(env::rng::stream_seed(ctx.seed, env::rng::names::SWEEP_TRIAL, c.number));
                Some(propose(
                    file.sampler,
                    &file.params,
                    &history,
                    index,
                    &file.tpe,
                    file.grid_points,
                    &mut draws,
                ))
            },
        )?;
        let Some(claimed) = claimed else {
            // Nothing to claim now. Trials still running elsewhere may be live, or may belong
            // to a worker that died: watch them (a read a second) and claim again when one
            // ends or is interrupted, or could be declared stale (the claim re-queues it).
            // Exit only when nothing runs, so a study is not left short by workers that all
            // saw only running trials (issue 26, class 19).
            let running = st.lock().expect("not poisoned").running()?;
            if running.is_empty() {
                return Ok(());
            }
            while !stopping() {
                let until = Instant::now() + Duration::from_secs(1);
                while Instant::now() < until && !stopping() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                let now = st.lock().expect("not poisoned").running()?;
                let changed = now.iter().map(|r| r.0).ne(running.iter().map(|r| r.0));
                if changed || now.iter().any(|r| r.1 > live.grace) {
                    break;
                }
            }
            continue;
        };
        let number = claimed.number;
        let outcome = with_heartbeat(&mut beat, number, live.interval, |abandoned| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_trial(ctx, &st, &claimed, abandoned))).unwrap_or_else(|p| {
                let what = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(crate::error::failed(format!("training panicked: {what}")))
            })
        });
        let mut guard = st.lock().expect("not poisoned");
        let recorded = match outcome {
            Ok(Ending::Complete(v)) => guard.finish(number, TrialState::Complete, Some(v), None)?,
            Ok(Ending::Pruned) => guard.finish(number, TrialState::Pruned, None, None)?,
            Ok(Ending::Interrupted(why)) => guard.finish(number, TrialState::Interrupted, None, Some(why))?,
            Err(e) => {
                let msg = format!("{e:#}").replace('\n', " ");
                guard.finish(number, TrialState::Failed, None, Some(&msg))?
            }
        };
        if !recorded {
            ctx.bar.println(format!(
                "trial {number}: the study declared it stale while it ran (no heartbeat within the grace period) and re-queued it; its outcome is not recorded"
            ));
        }
        update_bar(ctx, &guard.trials()?);
    }
    Ok(())
}

/// Run `f` while a thread records trial `number`'s heartbeat every `interval` seconds; `f`
/// gets a flag that turns true if the study no longer counts the trial as running.
fn with_heartbeat<T>(beat: &mut Storage, number: u64, interval: f64, f: impl FnOnce(&Arc<AtomicBool>) -> T) -> T {
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let abandoned = Arc::new(AtomicBool::new(false));
    std::thread::scope(|s| {
        let flag = Arc::clone(&abandoned);
        s.spawn(move || {
            let mut warned = false;
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = wait.recv_timeout(Duration::from_secs_f64(interval)) {
                match beat.heartbeat(number) {
                    Ok(true) => {}
                    Ok(false) => flag.store(true, Ordering::Relaxed),
                    // A database out of reach: keep training; the trial may be declared stale.
                    Err(e) if !warned => {
                        eprintln!("warning: trial {number}: {e}");
                        warned = true;
                    }
                    Err(_) => {}
                }
            }
        });
        let out = f(&abandoned);
        drop(done);
        out
    })
}

/// Pick a per-episode figure by name (one of [`EpisodeLog::keys`], which the sweep file was
/// checked against).
fn intermediate(log: &EpisodeLog, name: &str) -> crate::error::Result<f64> {
    log.get(name)
        .ok_or_else(|| crate::error::failed(format!("the episode log has no `{name}` (it logs {:?})", EpisodeLog::keys())))
}

/// Train one trial.
fn run_trial(ctx: &Ctx, st: &Arc<Mutex<Storage>>, claimed: &storage::Claimed, abandoned: &Arc<AtomicBool>) -> crate::error::Result<Ending> {
    let (number, params) = (claimed.number, &claimed.params);
    let dir = trial_dir(ctx, number);
    if dir.exists() {
        // Left by an earlier study under this name whose database was removed: trial numbers
        // are unique within a study, so nothing live writes here.
        std::fs::remove_dir_all(&dir).map_err(|e| run::io_error(&dir, "removing", e))?;
    }
    // A re-run of an interrupted trial continues from its checkpoint when this machine can
    // read its run directory (resume is exact); otherwise it starts over, without what a
    // failed copy left behind.
    let resumed = claimed
        .retry_of
        .as_ref()
        .is_some_and(|(_, src)| copy_checkpointed_run(Path::new(src), &dir).unwrap_or(false));
    if !resumed && dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| run::io_error(&dir, "removing", e))?;
    }
    let file = &ctx.sweep.file;
    let (pr, direction, metric) = (
        file.pruner.clone(),
        file.objective.direction,
        file.objective.intermediate_key().to_string(),
    );
    let seen = Mutex::new((Vec::<f64>::new(), f64::INFINITY));
    let storage = Arc::clone(st);
    let gone = Arc::clone(abandoned);
    let hook = EpisodeHook(Arc::new(move |log: &EpisodeLog| -> crate::error::Result<bool> {
        if stopping() || gone.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let mut seen = seen.lock().expect("not poisoned");
        seen.0.push(intermediate(log, &metric)?);
        let w = &seen.0[seen.0.len().saturating_sub(pr.window)..];
        let value = w.iter().sum::<f64>() / w.len() as f64;
        let loss = direction.loss(value);
        seen.1 = seen.1.min(loss);
        let step = log.episode + 1;
        let mut st = storage.lock().expect("not poisoned");
        st.report(number, step, value)?;
        let oriented = |v: Vec<f64>| v.into_iter().map(|x| direction.loss(x)).collect::<Vec<_>>();
        Ok(match pr.kind {
            PrunerKind::None => false,
            PrunerKind::Median => {
                let others = oriented(st.values_at(step, Some(TrialState::Complete))?);
                median_prunes(&pr, step, seen.1, st.completed()?, &others)
            }
            PrunerKind::SuccessiveHalving => pr.is_rung(step) && halving_prunes(&pr, loss, &oriented(st.values_at(step, None)?)),
        })
    }));
    // The summary of a trial that ran to its end; None when it stopped early.
    let summary = match ctx.sweep.kind {
        Stack::Seam => seam_trial(ctx, &dir, params, hook, resumed, abandoned)?,
        Stack::Queue => {
            let trained = crate::train::execute(TrainSpec {
                on_episode: Some(hook),
                ..trial_spec(ctx, &dir, params, resumed)
            })?;
            // The objective comes from the run's typed outcome, not from summary.json on disk.
            (!matches!(trained.outcome, crate::train::Outcome::Stopped { .. })).then(|| trained.summary.unwrap_or_default())
        }
    };
    let Some(summary) = summary else {
        return Ok(if abandoned.load(Ordering::Relaxed) {
            Ending::Interrupted("the study declared it stale while it ran")
        } else if stopping() {
            Ending::Interrupted("its worker received SIGTERM (it stopped after a checkpoint)")
        } else {
            Ending::Pruned
        });
    };
    objective(file, &summary)
}

/// `mtf train` of one trial: the base config with the trial's parameters into `dir`, or the
/// resumption of the interrupted trial copied there; quiet, on the sweep's threads.
fn trial_spec(ctx: &Ctx, dir: &Path, params: &BTreeMap<String, Value>, resumed: bool) -> TrainSpec {
    TrainSpec {
        config: (!resumed).then(|| ctx.sweep.base.clone()),
        name: None,
        set: if resumed {
            Vec::new()
        } else {
            ctx.sweep.overrides(params, &ctx.set)
        },
        resume: resumed.then(|| dir.to_path_buf()),
        out: (!resumed).then(|| dir.to_path_buf()),
        seed: if resumed { None } else { ctx.root_seed },
        threads: Some(ctx.threads),
        quiet: true,
        on_episode: None,
        stop: None,
        replicates: None,
        allow_config_change: Vec::new(),
    }
}

/// The objective's number in a trial's summary.
fn objective(file: &file::SweepFile, summary: &serde_json::Value) -> crate::error::Result<Ending> {
    let mut v = summary;
    for k in file.objective.path().split('.') {
        v = v.get(k).unwrap_or(&serde_json::Value::Null);
    }
    v.as_f64()
        .filter(|x| x.is_finite())
        .map(Ending::Complete)
        .ok_or_else(|| crate::error::failed(format!("the run's summary has no finite number at `{}`", file.objective.metric)))
}

/// A trial in a world behind the seam: `mtf train` in it ([`crate::worlds::train`]), the
/// pruner fed each generation (a run group's: replicate 0's); an interrupted trial resumes
/// from its checkpoint like a queue-world trial.
fn seam_trial(
    ctx: &Ctx,
    dir: &Path,
    params: &BTreeMap<String, Value>,
    hook: EpisodeHook,
    resumed: bool,
    abandoned: &Arc<AtomicBool>,
) -> crate::error::Result<Option<serde_json::Value>> {
    // Every replicate asks after each episode (a group on one thread trains one after
    // another, so the later ones outlive replicate 0's hook).
    let gone = Arc::clone(abandoned);
    let trained = crate::worlds::train::execute(&TrainSpec {
        on_episode: Some(hook),
        stop: Some(crate::train::StopFlag(Arc::new(move || stopping() || gone.load(Ordering::Relaxed)))),
        ..trial_spec(ctx, dir, params, resumed)
    })?;
    Ok((!trained.stopped).then_some(trained.summary))
}

/// Copy an interrupted trial's run directory (not its locks) to `dst` if it holds a checkpoint
/// (a group: a replicate's config); true when `dst` is then a run or group to resume.
fn copy_checkpointed_run(src: &Path, dst: &Path) -> std::io::Result<bool> {
    let src_run = run::RunDir::at(src);
    let resumable = src_run.latest_checkpoint().is_file() || src_run.is_group();
    if !resumable || !src_run.config().is_file() {
        return Ok(false);
    }
    fn copy_dir(src: &Path, dst: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dst)?;
        for entry in std::fs::read_dir(src)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == run::LOCK_FILE {
                continue;
            }
            let kind = entry.file_type()?;
            if kind.is_dir() {
                copy_dir(&entry.path(), &dst.join(&name))?;
            } else if kind.is_file() {
                std::fs::copy(entry.path(), dst.join(&name))?;
            }
        }
        Ok(())
    }
    copy_dir(src, dst)?;
    Ok(true)
}

/// A parameter value as a CSV cell or a plot coordinate.
fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A trial's resolved config with the base config's `train.eval_seeds` (its default where the
/// base does not set it) in place of the trial budget's: `mtf train --config best.toml`
/// trains as the trial did but judges on the base's seeds (it kept the budget's 4: issue 40.8).
/// Returns the text and what it evaluates on.
fn evaluated_as_the_base(trial: &str, base: &Path) -> (String, String) {
    let Ok(mut table) = trial.parse::<toml::Table>() else {
        return (trial.to_string(), "the trial's evaluation seeds".into());
    };
    let from_base = env::config::read_table(base, &[])
        .ok()
        .and_then(|b| b.get("train").and_then(|t| t.get("eval_seeds")).cloned());
    let Some(train) = table.get_mut("train").and_then(|t| t.as_table_mut()) else {
        return (trial.to_string(), "the trial's evaluation seeds".into());
    };
    let seeds = match from_base {
        Some(v) => {
            let said = format!("train.eval_seeds = {v}");
            train.insert("eval_seeds".into(), v);
            said
        }
        None => {
            train.remove("eval_seeds");
            "the default train.eval_seeds".to_string()
        }
    };
    (toml::to_string(&table).unwrap_or_else(|_| trial.to_string()), seeds)
}

/// `trials.csv`, `best.toml`, the plots, and the printed report.
fn report(ctx: &Ctx, trials: &[Trial], seconds: f64) -> crate::error::Result<String> {
    let file = &ctx.sweep.file;
    let names: Vec<&String> = file.params.keys().collect();
    let mut header: Vec<String> = ["number", "state", "value", "episodes", "last_intermediate", "seconds"]
        .map(String::from)
        .into();
    header.extend(names.iter().map(|n| n.to_string()));
    header.extend(["run_dir".to_string(), "error".to_string()]);
    let records: Vec<Vec<String>> = trials
        .iter()
        .map(|t| {
            let opt = |x: Option<f64>| x.map(|v| v.to_string()).unwrap_or_default();
            let mut rec = vec![
                t.number.to_string(),
                t.state.as_str().to_string(),
                opt(t.value),
                t.last_step.map(|s| s.0.to_string()).unwrap_or_default(),
                opt(t.last_step.map(|s| s.1)),
                t.seconds.map(|s| format!("{s:.2}")).unwrap_or_default(),
            ];
            rec.extend(names.iter().map(|n| t.params.get(*n).map(cell).unwrap_or_default()));
            rec.extend([t.run_dir.clone(), t.error.clone().unwrap_or_default()]);
            rec
        })
        .collect();
    run::write_atomic(&ctx.out.join("trials.csv"), &run::csv_bytes(&header, &records)?)?;

    let count = |s: TrialState| trials.iter().filter(|t| t.state == s).count();
    let mut msg = format!(
        "study {} ({}): {} trials — {} complete, {} pruned, {} failed, {} running, {} interrupted; {seconds:.1} s in this process\n",
        ctx.study,
        ctx.db.name(),
        trials.len(),
        count(TrialState::Complete),
        count(TrialState::Pruned),
        count(TrialState::Failed),
        count(TrialState::Running),
        count(TrialState::Interrupted),
    );
    let direction = file.objective.direction;
    let best = best(trials, direction);
    if let Some(b) = best {
        let value = b.value.unwrap_or(f64::NAN);
        msg.push_str(&format!("best {} = {value:.4} (trial {}):\n", file.objective.metric, b.number));
        for (k, v) in &b.params {
            msg.push_str(&format!("  {k} = {v}\n"));
        }
        if let Some(spec) = fixed_spec(&b.params) {
            msg.push_str(&format!("  as a policy: {spec}\n"));
        }
        if let Some(d) = trials
            .iter()
            .find(|t| t.state == TrialState::Complete && ctx.sweep.has_all_defaults() && t.params == ctx.sweep.defaults)
        {
            msg.push_str(&format!(
                "defaults (trial {}): {:.4}; best minus defaults: {:+.4}\n",
                d.number,
                d.value.unwrap_or(f64::NAN),
                value - d.value.unwrap_or(f64::NAN)
            ));
        }
        // The best trial's own resolved config: `mtf train --config best.toml` reproduces it.
        let config = run::read_text(&run::RunDir::at(&b.run_dir).config(), run::MAX_TEXT)?;
        let (config, seeds) = evaluated_as_the_base(&config, &ctx.sweep.base);
        let header = format!(
            "# Best trial {} of study `{}`: {} = {value}.\n# The trial's resolved config (its training budget included; train longer with --set train.episodes=N),\n# evaluated on {seeds} as in the base config, not the trial budget's few.\n",
            b.number, ctx.study, file.objective.metric
        );
        run::write_atomic(&ctx.out.join("best.toml"), (header + &config).as_bytes())?;
    } else {
        msg.push_str("no trial has completed yet\n");
    }
    let failed: Vec<&Trial> = trials.iter().filter(|t| t.state == TrialState::Failed).collect();
    if let Some(f) = failed.first() {
        msg.push_str(&format!(
            "{} failed; first: trial {}: {}\n",
            failed.len(),
            f.number,
            f.error.as_deref().unwrap_or("")
        ));
    }
    plots(ctx, trials)?;
    msg.push_str(&format!(
        "files: {}/trials.csv, best.toml, history.png, params.png (and .svg, .pdf)\n",
        ctx.out.display()
    ));
    Ok(msg)
}

fn plots(ctx: &Ctx, trials: &[Trial]) -> crate::error::Result<()> {
    let file = &ctx.sweep.file;
    let complete: Vec<&Trial> = trials
        .iter()
        .filter(|t| t.state == TrialState::Complete && t.value.is_some())
        .collect();
    let points: Vec<(f64, f64)> = complete.iter().map(|t| (t.number as f64, t.value.unwrap_or(f64::NAN))).collect();
    let y = file.objective.metric.clone();
    let maximize = file.objective.direction == Direction::Maximize;
    let stopped: Vec<plots::Stopped> = trials
        .iter()
        .filter(|t| matches!(t.state, TrialState::Pruned | TrialState::Interrupted))
        .filter_map(|t| t.last_step.map(|(_, v)| (t.number as f64, v, t.state == TrialState::Pruned)))
        .collect();
    plots::sweep_history(&ctx.out, &points, &stopped, maximize, &y)?;
    let panels: Vec<plots::ParamPanel> = file
        .params
        .iter()
        .map(|(name, d)| {
            let (log, labels) = match d {
                Dist::Float { log, .. } => (*log, None),
                Dist::Int { .. } => (false, None),
                Dist::Categorical { choices } => (false, Some(choices.iter().map(cell).collect::<Vec<_>>())),
            };
            let x = |v: &Value| -> Option<f64> {
                match d {
                    Dist::Categorical { choices } => choices.iter().position(|c| c == v).map(|k| k as f64),
                    _ => v.as_float().or_else(|| v.as_integer().map(|i| i as f64)),
                }
            };
            plots::ParamPanel {
                name: name.clone(),
                log,
                labels,
                points: complete.iter().filter_map(|t| Some((x(t.params.get(name)?)?, t.value?))).collect(),
            }
        })
        .collect();
    plots::sweep_params(&ctx.out, &panels, &y)?;
    Ok(())
}

//! `mtf sweep`: a hyperparameter search over training runs.

use crate::flags::{print_json, Common};
use agents::sweep::{execute, SweepSpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
#[command(mut_arg("threads", |a| a.help("Worker threads per trial (default: the sweep file's budget.threads; results do not depend on it)")))]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// Sweep file (TOML; see configs/sweeps/).
    #[arg(long, short, required = true)]
    config: Option<PathBuf>,
    /// Trials in the study, counting every process working on it (overrides the file).
    #[arg(long)]
    trials: Option<usize>,
    /// Trials trained side by side by this process (overrides the file).
    #[arg(long)]
    workers: Option<usize>,
    /// Study storage: sqlite:PATH (default sqlite:runs/sweeps/<study>.db, one machine) or
    /// postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (workers on many machines).
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
    /// Study name: continue it, or start it (default: the file's `study`, else its stem).
    #[arg(long)]
    study: Option<String>,
    /// Sampler seed (overrides the sweep file's `seed`; 0 to 2^63 - 1).
    #[arg(long, value_parser = crate::flags::parse_seed)]
    sampler_seed: Option<u64>,
    /// Output directory for trials.csv, best.toml, plots and trial runs
    /// (default: <storage dir>/<study>/).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

#[derive(clap::Subcommand, Debug)]
enum Action {
    /// Write a study as an Optuna JournalStorage file: optuna.load_study(study_name=NAME,
    /// storage=JournalStorage(JournalFileBackend(FILE))) and optuna-dashboard read it.
    Export(ExportArgs),
    /// List a study's trials by state, with running trials whose worker stopped heartbeating
    /// marked stale (the next worker's claim re-queues them): what is left of a study.
    Status(StatusArgs),
}

#[derive(clap::Args, Debug)]
struct StatusArgs {
    /// The study's name.
    #[arg(long)]
    study: String,
    /// Its storage (default sqlite:runs/sweeps/<study>.db).
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
    /// Seconds without a heartbeat after which a running trial counts as stale (the sweep
    /// file's grace_period; default 120).
    #[arg(long, default_value_t = 120.0)]
    grace: f64,
}

#[derive(clap::Args, Debug)]
struct ExportArgs {
    /// The study's name.
    #[arg(long)]
    study: String,
    /// Its storage (default sqlite:runs/sweeps/<study>.db).
    #[arg(long, value_name = "URL")]
    storage: Option<String>,
    /// The journal file to write.
    #[arg(long)]
    out: PathBuf,
    /// Replace FILE if it exists (otherwise an existing file is refused, never replaced).
    #[arg(long)]
    force: bool,
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    if let Some(Action::Status(s)) = &a.action {
        let storage = s.storage.clone().unwrap_or_else(|| format!("sqlite:runs/sweeps/{}.db", s.study));
        agents::out::print(&agents::sweep::export::status(&storage, &s.study, s.grace)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(Action::Export(e)) = a.action {
        let storage = e.storage.unwrap_or_else(|| format!("sqlite:runs/sweeps/{}.db", e.study));
        if !e.force && std::fs::symlink_metadata(&e.out).is_ok() {
            return Err(agents::error::user(format!(
                "{}: exists; mtf sweep export does not replace a file without --force",
                e.out.display()
            )));
        }
        let n = agents::sweep::export::export_optuna(&storage, &e.study, &e.out)?;
        agents::out::println(&format!(
            "{n} trials of study `{}` written to {} (an Optuna JournalStorage file)",
            e.study,
            e.out.display()
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let config = a.config.expect("clap requires --config without a subcommand");
    let swept = execute(&SweepSpec {
        config,
        trials: a.trials,
        workers: a.workers,
        storage: a.storage,
        study: a.study,
        sampler_seed: a.sampler_seed,
        seed: a.common.seed,
        set: a.common.set,
        threads: a.common.threads,
        out: a.out,
        quiet: a.common.quiet,
    })?;
    if a.common.json {
        print_json(&swept.to_json())?;
    } else {
        agents::out::print(&swept.report)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) const HELP: &str = "\
Hyperparameter search over a training config, the way Optuna does it.

The sweep file (configs/sweeps/quickstart.toml is an example) names the base config, the
search space (config key paths with float/int/categorical distributions), the objective (a
path into a run's summary.json, e.g. eval_welfare.mean, and its direction), the budget per
trial, the sampler (random, grid, tpe) and the pruner (none, median, successive_halving).

The study lives in SQLite (default runs/sweeps/<study>.db; one machine) or PostgreSQL
(--storage postgresql://USER@HOST/DB; workers anywhere). Running trials record a heartbeat
every `heartbeat_interval` seconds (sweep file, default 60); a trial silent for
`grace_period` (default twice that) is marked interrupted and re-run once by the next worker.
SIGTERM stops a worker after its current episode (checkpointed), marks its trial interrupted
and exits 0. `mtf sweep export --study NAME --out FILE` writes a study for Optuna.

Run the same command again, or with --study NAME, to continue a killed sweep; run it in
several processes at once to share the work: trials are claimed in a transaction, so none runs
twice, and --trials counts the study's trials across all of them. Each trial is an ordinary run directory under
<out>/trials/. At the end: trials.csv, best.toml (the best trial's config, ready for
`mtf train`), history.png and params.png (and .svg, .pdf).

--set, --seed and --threads apply to every trial's training run (a trial's searched
parameters win over --set); --sampler-seed seeds the sampler.";

//! `mtf train`: a training run, or the resumption of one.

use crate::flags::{print_json, Common};
use agents::train::{execute, TrainSpec};
use env::registry::Stack;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(mut_arg("threads", |a| a.help("Worker threads (default: the config's train.threads; results do not depend on it)")))]
pub(crate) struct Args {
    /// Experiment config (TOML).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Run name (default: the config's file stem).
    #[arg(long)]
    name: Option<String>,
    /// Continue RUN_DIR from its last checkpoint.
    #[arg(long, value_name = "RUN_DIR")]
    resume: Option<PathBuf>,
    /// Run directory (default runs/<name>-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Train this many replicates (training seeds) as one run group, side by side on --threads
    /// workers, and report across them (overrides train.replicates).
    #[arg(long, value_name = "R")]
    replicates: Option<usize>,
    /// With --resume: config keys the run's config.toml may have changed since its checkpoint
    /// (comma-separated, e.g. train.episodes to train longer); any other change is refused.
    #[arg(long, value_name = "KEYS", value_delimiter = ',')]
    allow_config_change: Vec<String>,
    #[command(flatten)]
    common: Common,
}

fn spec_of(a: &Args) -> TrainSpec {
    TrainSpec {
        config: a.config.clone(),
        name: a.name.clone(),
        set: a.common.set.clone(),
        resume: a.resume.clone(),
        out: a.out.clone(),
        seed: a.common.seed,
        threads: a.common.threads,
        quiet: a.common.quiet,
        on_episode: None,
        stop: None,
        replicates: a.replicates,
        allow_config_change: a.allow_config_change.clone(),
    }
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    agents::train::resume_flags(&spec_of(&a))?;
    // The file that says the world and its stack: the resumed run's config.toml (as it
    // resolved, `--set`s included), or --config with the `--set`s.
    let (config, set) = match (&a.resume, &a.config) {
        (Some(r), _) => (Some(agents::RunDir::at(r).config()), &[][..]),
        (None, c) => (c.clone(), &a.common.set[..]),
    };
    match config.map_or(Stack::Queue, |c| env::registry::stack_of(&c, set)) {
        Stack::Seam => {
            let trained = agents::worlds::train::execute(&spec_of(&a))?;
            if a.common.json {
                print_json(&serde_json::json!({ "run_dir": trained.dir.display().to_string(), "summary": trained.summary }))?;
            } else {
                agents::out::print(&trained.report)?;
            }
            return Ok(ExitCode::SUCCESS);
        }
        Stack::Queue => {}
    }
    let trained = execute(spec_of(&a))?;
    if a.common.json {
        print_json(&serde_json::json!({ "run_dir": trained.dir.display().to_string(), "summary": trained.summary }))?;
    } else {
        agents::out::print(&format!("{trained}"))?;
    }
    Ok(ExitCode::SUCCESS)
}

//! `mtf analyze`: can learning help in a scenario.

use crate::flags::{parse_paired_seeds, parse_seeds, print_json, Common};
use agents::config::Source;
use agents::eval::analyze::{analyze, defaults, markdown, write, AnalyzeSpec};
use env::registry::Stack;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Scenario config (TOML).
    #[arg(long, short)]
    config: PathBuf,
    /// A trained run directory (or a run group: scored across its replicates) to place against the analysis.
    #[arg(long)]
    run: Option<PathBuf>,
    /// Held-out episodes every result is scored on (paired: the same seeds for every policy);
    /// default 16. With --run the root seed is the run's (unless --seed): a run's summary is
    /// restated with --seeds set to its train.eval_seeds.
    #[arg(long, value_parser = parse_paired_seeds)]
    seeds: Option<usize>,
    /// Episodes the searches select on (other seeds than the held-out ones).
    #[arg(long, default_value_t = defaults::SELECT_SEEDS, value_parser = parse_seeds)]
    select_seeds: usize,
    /// Token totals of the token-scale sweep, comma-separated (the queue and valuation worlds';
    /// default 100,1000,10000).
    #[arg(long, value_delimiter = ',')]
    tokens: Option<Vec<f64>>,
    /// Baselines, comma-separated: mechanisms (played at the best fixed level), or policy specs
    /// played under the config's mechanism (fixed:w1=X,w2=Y,..., fixed:[X,...], run:RUN_DIR, ...).
    /// Default: stride,gandiva_fair,themis in the queue world (none in a world without them).
    #[arg(long)]
    baselines: Vec<String>,
    /// Run directory (default runs/analyze-<config stem>-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    match env::registry::stack_of(&a.config, &a.common.set) {
        Stack::Seam => seam(a),
        Stack::Queue => queue(a),
    }
}

/// A world behind the seam.
fn seam(a: Args) -> agents::Result<ExitCode> {
    // Refused, not ignored (accepted and dropped before 2026-12-06): the token-scale sweep
    // is written for the queue stack alone (issue 38's analyze gap), and means nothing in a
    // world without token budgets.
    if a.tokens.is_some() {
        let world = env::registry::world_name(&env::config::read_table(&a.config, &a.common.set)?);
        return Err(agents::error::user(format!(
            "--tokens: the token-scale sweep is the queue and valuation worlds' own stack's; {} is the {world} world behind the seam",
            a.config.display()
        )));
    }
    let done = agents::worlds::compare::analyze(
        &a.config,
        &a.common.set,
        a.common.seed,
        a.run.as_deref(),
        (!a.baselines.is_empty()).then_some(a.baselines.as_slice()),
        a.seeds.unwrap_or(defaults::SEEDS),
        a.select_seeds,
        a.common.threads_or_default(),
        a.out.as_deref(),
    )?;
    crate::compare::seam_report(&done, a.common.json)
}

/// The queue and valuation worlds.
fn queue(a: Args) -> agents::Result<ExitCode> {
    let seeds = a.seeds.unwrap_or(defaults::SEEDS);
    let defaults_baselines = defaults::BASELINES_TEXT.to_string();
    let spec = AnalyzeSpec {
        source: Source::new(a.config, &a.common.set, a.common.seed),
        run: a.run,
        seeds,
        select_seeds: a.select_seeds,
        tokens: a.tokens.unwrap_or_else(|| defaults::TOKENS.to_vec()),
        baselines: agents::worlds::policies::join_split(if a.baselines.is_empty() {
            std::slice::from_ref(&defaults_baselines)
        } else {
            &a.baselines
        }),
        threads: a.common.threads_or_default(),
        progress: !a.common.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
    };
    let analyzed = analyze(&spec)?;
    let dir = write(&analyzed, &spec.source, a.out.as_deref())?;
    if a.common.json {
        let mut v = serde_json::to_value(&analyzed)?;
        v["run_dir"] = dir.display().to_string().into();
        print_json(&v)?;
    } else {
        agents::out::print(&markdown(&analyzed, &spec.source.config, &[]))?;
        agents::out::println(&format!("run directory: {}", dir.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

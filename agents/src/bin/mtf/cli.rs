//! The command line: the commands, the flags they share, and dispatch.

use agents::error::user;
use clap::{CommandFactory, Parser, Subcommand};
use std::ffi::OsString;
use std::process::ExitCode;

/// The MTF harness: fair accelerator sharing, learned thresholds, baselines.
#[derive(Parser, Debug)]
#[command(name = "mtf", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Refuse a training run or simulation whose estimated peak memory is above this (512M,
    /// 8G, ...; default: the machine's available memory). The estimate names the config key
    /// that sizes most of it.
    #[arg(long, global = true, value_name = "SIZE", value_parser = agents::train::memory::parse_size)]
    max_memory: Option<u64>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// One allocation round: SPEC section 3 JSON in (stdin by default), result JSON out.
    #[command(long_about = crate::schedule::HELP)]
    Schedule(crate::schedule::Args),
    /// Evaluation episodes without learning: metrics table (mean, 95% CI) and a run directory.
    Simulate(crate::simulate::Args),
    /// A training run: learners per agent, run directory with metrics, TensorBoard, checkpoints.
    Train(crate::train::Args),
    /// Policies x mechanisms on the same seeds: comparison.md / .csv and plots (PNG, SVG).
    Compare(crate::compare::Args),
    /// Can learning help here: headroom of simple adaptive policies, best responses per weight
    /// class, the token scale, and a trained run against them.
    Analyze(crate::analyze::Args),
    /// Regenerate a paper's evaluation: `mtf reproduce thesis [--quick]`.
    Reproduce(crate::reproduce::Args),
    /// Hyperparameter search over a training config: SQLite study, samplers, pruners, plots.
    #[command(long_about = crate::sweep::HELP)]
    Sweep(crate::sweep::Args),
    /// A trained run's policies as one standalone executable (JSON lines in and out).
    Export(crate::export::Args),
    /// Training curves of runs and run groups overlaid (mean and 95% CI), with held-out levels:
    /// PNG, SVG and CSV.
    Curves(crate::curves::Args),
    /// The config reference: every key with its type, default, values, meaning and reader.
    Config(crate::config::Args),
    /// A world's headline against one config key (Gavel's JCT against the arrival rate): a
    /// line per policy and mechanism, where each blows up, table, CSV and figure.
    Scan(crate::scan::Args),
}

/// Parse `args` and run the command.
pub(crate) fn run(args: impl IntoIterator<Item = OsString>) -> agents::Result<ExitCode> {
    let mut args: Vec<OsString> = args.into_iter().collect();
    // `mtf help --help` (or `mtf help train -h`) asks for help about help: clap's help
    // subcommand takes no flags and would exit 2; print the help it names instead.
    if args.get(1).is_some_and(|a| a == "help") {
        args.retain(|a| a != "--help" && a != "-h");
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            agents::out::print(&format!("{e}"))?;
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => return Err(usage_error(&e, &args)),
    };
    agents::train::memory::set_limit(cli.max_memory);
    match cli.command {
        Command::Schedule(a) => crate::schedule::run(a),
        Command::Simulate(a) => crate::simulate::run(a),
        Command::Train(a) => crate::train::run(a),
        Command::Compare(a) => crate::compare::run(a),
        Command::Analyze(a) => crate::analyze::run(a),
        Command::Reproduce(a) => crate::reproduce::run(a),
        Command::Sweep(a) => crate::sweep::run(a),
        Command::Export(a) => crate::export::run(a),
        Command::Curves(a) => crate::curves::run(a),
        Command::Config(a) => crate::config::run(a),
        Command::Scan(a) => crate::scan::run(a),
    }
}

/// clap's message in one line, pointing at the help of the subcommand named.
fn usage_error(e: &clap::Error, args: &[OsString]) -> agents::Error {
    let sub = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| Cli::command().find_subcommand(a).is_some())
        .map(|a| format!("mtf {a} --help"))
        .unwrap_or_else(|| "mtf --help".into());
    // clap's message spans lines (what is wrong, then a tip and the usage); fold the part
    // before the first blank line into one line.
    let msg = e.to_string();
    let what: Vec<&str> = msg.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
    let what = what.join(" ");
    user(format!("{} (see `{sub}`)", what.trim_start_matches("error: ")))
}

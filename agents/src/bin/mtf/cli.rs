//! Command-line definitions (clap) and dispatch: private to the `mtf` binary.

use agents::error::user;
use clap::{CommandFactory, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// The MTF harness: fair accelerator sharing, learned thresholds, baselines.
#[derive(Parser, Debug)]
#[command(name = "mtf", version, about)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// One allocation round: SPEC section 3 JSON in (stdin by default), result JSON out.
    #[command(long_about = SCHEDULE_HELP)]
    Schedule {
        #[arg(long, short, help = format!("Mechanism: {}", scheduler::registry::NAMES.join(", ")))]
        mechanism: String,
        /// Round input JSON file (default: stdin).
        #[arg(long, short)]
        input: Option<PathBuf>,
        #[arg(long, help = format!(
            "Themis fairness knob f in [0, 1] (overrides the input's `fairness`; default {})",
            scheduler::themis::DEFAULT_FAIRNESS
        ))]
        fairness: Option<f64>,
    },
    /// Evaluation episodes without learning: metrics table (mean, 95% CI) and a run directory.
    Simulate {
        /// Scenario config (TOML).
        #[arg(long, short)]
        config: PathBuf,
        /// Mechanism (overrides mechanism.name).
        #[arg(long, short)]
        mechanism: Option<String>,
        /// Policy: fixed:X (the threshold level X), hedge (Hedge learning online), run:RUN_DIR (a trained run's greedy policies),
        /// agent:PATH (an exported agent binary; a bare name is a file in this directory;
        /// MTF_AGENT_TIMEOUT seconds per reply, default 10).
        #[arg(long, short, default_value = "fixed:0.5")]
        policy: String,
        /// Evaluation episodes (seeds derived from the root seed; at most 100000).
        #[arg(long, default_value_t = 8, value_parser = parse_seeds)]
        seeds: usize,
        /// Run directory (default runs/simulate-<config>-<timestamp>).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// A training run: learners per agent, run directory with metrics, TensorBoard, checkpoints.
    Train {
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
        #[command(flatten)]
        common: Common,
    },
    /// Policies x mechanisms on the same seeds: comparison.md / .csv and plots (PNG, SVG).
    Compare {
        /// Scenario config (TOML).
        #[arg(long, short)]
        config: PathBuf,
        /// Policies, comma-separated: fixed:X (the threshold level X), fixed:all (every level),
        /// hedge (Hedge learning online), run:RUN_DIR (a trained run's greedy policies),
        /// agent:PATH (an exported agent binary; a bare name is a file in this directory).
        #[arg(long, value_delimiter = ',', required = true)]
        policies: Vec<String>,
        /// Mechanisms, comma-separated (default: the config's).
        #[arg(long, value_delimiter = ',')]
        mechanisms: Vec<String>,
        /// Evaluation episodes per pair (the same seeds for every pair; at most 100000).
        #[arg(long, default_value_t = 8, value_parser = parse_seeds)]
        seeds: usize,
        /// Run directory (default runs/compare-<config>-<timestamp>).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Regenerate a paper's evaluation: `mtf reproduce thesis [--quick]`.
    Reproduce {
        /// What to reproduce: `thesis` (chapter 5 of the MTF thesis).
        what: String,
        /// Fewer loads, seeds and training episodes (under 10 minutes on 2 cores).
        #[arg(long)]
        quick: bool,
        /// Output directory (default runs/reproduce-thesis-<timestamp>).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Hyperparameter search over a training config: SQLite study, samplers, pruners, plots.
    #[command(long_about = SWEEP_HELP)]
    Sweep {
        /// Sweep file (TOML; see configs/sweeps/).
        #[arg(long, short)]
        config: PathBuf,
        /// Trials in the study, counting every process working on it (overrides the file).
        #[arg(long)]
        trials: Option<usize>,
        /// Trials trained side by side by this process (overrides the file).
        #[arg(long)]
        workers: Option<usize>,
        /// Study storage, sqlite:PATH (default sqlite:runs/sweeps/<study>.db).
        #[arg(long, value_name = "URL")]
        storage: Option<String>,
        /// Study name: continue it, or start it (default: the file's `study`, else its stem).
        #[arg(long)]
        study: Option<String>,
        /// Sampler seed (overrides the sweep file's `seed`).
        #[arg(long)]
        sampler_seed: Option<u64>,
        /// Output directory for trials.csv, best.toml, plots and trial runs
        /// (default: <storage dir>/<study>/).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// A trained run's policies as one standalone executable (JSON lines in and out).
    Export {
        /// The training run directory.
        #[arg(long)]
        run: PathBuf,
        /// The executable to write.
        #[arg(long)]
        out: PathBuf,
        /// One agent's policy (its index in the run), or `all` (choose with --agent at run time).
        #[arg(long, default_value = "all")]
        agent: String,
        /// Replace PATH if it exists (a regular file only).
        #[arg(long)]
        force: bool,
        /// No progress bars.
        #[arg(long)]
        quiet: bool,
        /// Print the exported manifest as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The common flags of INTERFACE: defined once, so they mean the same on every command that has
/// them (simulate, train, compare, sweep, reproduce).
#[derive(clap::Args, Debug)]
struct Common {
    /// Override any config key: key.path=value (repeatable; arrays by index or `*`, e.g.
    /// env.agents.*.load=0.8).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Root seed (overrides the config's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Worker threads (default: the config's train.threads for train and sweep, else 2;
    /// results do not depend on it).
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
    /// Machine-readable JSON on stdout instead of the report.
    #[arg(long)]
    json: bool,
    /// No progress bars or progress lines (also off when stderr is not a terminal).
    #[arg(long)]
    quiet: bool,
}

/// Threads for commands without a config default.
const DEFAULT_THREADS: usize = 2;

const SCHEDULE_HELP: &str = "\
One allocation round: reads the SPEC section 3 JSON (stdin by default), writes the result JSON to stdout.

Input, either form:
  utilities form: {\"utilities\": [[u, ..], ..] (n x m, in [0, 1]), ...}
  demand form:    {\"demands\": [d, ..] (n, jobs >= 0), \"rates\": [[r, ..], ..] (n x m, > 0), ...}
Common fields:
  thresholds  n values in [0, 1]          required by mtf
  budgets     n values in [0, 1e15]       required by mtf (tokens)
  weights     n values in [1e-9, 1e9]     default all 1 (bounds keep redistribution finite)
  turn        integer in [0, n)           default 0 (where the cyclic order starts)
Demands are at most 1e15 jobs; rates lie in [1e-9, 1e15].
Optional fields some mechanisms need:
  rates       n x m service rates (with the utilities form): required by stride,
              stride_per_accelerator, gandiva_fair and max_throughput (fastest-first order,
              speed-ups, jobs per accelerator)
  types       m accelerator type labels (gandiva_fair; default: equal rate columns share a type)
  leftovers   \"round_robin\" (default, SPEC 3.1) or \"weighted_random\" (SPEC 7, mtf only:
              each leftover goes to an agent drawn by weight, using `draws`)
  draws       m uniform numbers in [0, 1), one per accelerator: the random draws of the
              weighted-random leftovers (the scheduler draws none of its own); required with
              \"leftovers\": \"weighted_random\", ignored otherwise
  fairness    Themis's knob f in [0, 1] (default: see --fairness)
  state       state printed by the previous call of a stateful mechanism (stride passes, the
              static partition, gandiva_fair passes, Themis's ideal and served accumulators);
              omit it on the first round

Output: {\"owners\": [agent or null per accelerator], \"budgets\": [..after..], \"turn\": next,
         \"spent\": [tokens per agent], \"paid\": [bought with a token, per accelerator],
         \"state\": {..} (stateful mechanisms only)}

The round must be a JSON object; unknown fields are errors. Bad input (bad JSON, ragged
matrices, NaN, values outside the ranges above, a missing field, an unknown mechanism) prints
one line on stderr and exits with 2.";

const SWEEP_HELP: &str = "\
Hyperparameter search over a training config, the way Optuna does it.

The sweep file (configs/sweeps/quickstart.toml is an example) names the base config, the
search space (config key paths with float/int/categorical distributions), the objective (a
path into a run's summary.json, e.g. eval_welfare.mean, and its direction), the budget per
trial, the sampler (random, grid, tpe) and the pruner (none, median, successive_halving).

The study lives in SQLite (default runs/sweeps/<study>.db). Run the same command again, or
with --study NAME, to continue a killed sweep; run it in several processes at once to share
the work: trials are claimed in a transaction, so none runs twice, and --trials counts the
study's trials across all of them. Each trial is an ordinary run directory under
<out>/trials/. At the end: trials.csv, best.toml (the best trial's config, ready for
`mtf train`), history.png and params.png (and .svg).

--set, --seed and --threads apply to every trial's training run (a trial's searched
parameters win over --set); --sampler-seed seeds the sampler.";

/// A whole number of `what` in `[1, max]`.
fn bounded(s: &str, max: usize, what: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(t) if (1..=max).contains(&t) => Ok(t),
        _ => Err(format!("expected a whole number of {what} in [1, {max}], got `{s}`")),
    }
}

/// `--threads`: 1 to `config::limits::MAX_THREADS`.
fn parse_threads(s: &str) -> Result<usize, String> {
    bounded(s, agents::config::limits::MAX_THREADS, "threads")
}

/// `--seeds`: 1 to `config::limits::MAX_SEEDS`.
fn parse_seeds(s: &str) -> Result<usize, String> {
    bounded(s, agents::config::limits::MAX_SEEDS, "seeds")
}

/// Parse `args` and run the command.
pub(crate) fn run(args: impl IntoIterator<Item = OsString>) -> anyhow::Result<ExitCode> {
    let args: Vec<OsString> = args.into_iter().collect();
    // The subcommand named, for pointing a usage error at its own help.
    let sub = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| Cli::command().find_subcommand(a).is_some())
        .map(|a| format!("mtf {a} --help"))
        .unwrap_or_else(|| "mtf --help".into());
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            print!("{e}");
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => {
            // clap's message spans lines (what is wrong, then a tip and the usage); fold the part
            // before the first blank line into one line.
            let msg = e.to_string();
            let what: Vec<&str> = msg.lines().take_while(|l| !l.trim().is_empty()).map(str::trim).collect();
            let what = what.join(" ");
            return Err(user(format!("{} (see `{sub}`)", what.trim_start_matches("error: "))));
        }
    };
    match cli.command {
        Command::Schedule {
            mechanism,
            input,
            fairness,
        } => agents::schedule::run(&mechanism, input.as_deref(), fairness),
        Command::Simulate {
            config,
            mechanism,
            policy,
            seeds,
            out,
            common:
                Common {
                    set,
                    seed,
                    threads,
                    json,
                    quiet,
                },
        } => agents::simulate::run(agents::simulate::SimulateArgs {
            config,
            mechanism,
            policy,
            seeds,
            seed,
            threads: threads.unwrap_or(DEFAULT_THREADS),
            set,
            json,
            out,
            quiet,
        }),
        Command::Train {
            config,
            name,
            resume,
            out,
            common:
                Common {
                    set,
                    seed,
                    threads,
                    json,
                    quiet,
                },
        } => {
            let trained = agents::train::execute(agents::train::TrainArgs {
                config,
                name,
                set,
                resume,
                out,
                seed,
                threads,
                quiet,
                on_episode: None,
            })?;
            if json {
                let v = serde_json::json!({ "run_dir": trained.dir.display().to_string(), "summary": trained.summary });
                println!("{v}");
            } else {
                print!("{}", trained.message);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Sweep {
            config,
            trials,
            workers,
            storage,
            study,
            sampler_seed,
            out,
            common:
                Common {
                    set,
                    seed,
                    threads,
                    json,
                    quiet,
                },
        } => agents::sweep::execute(&agents::sweep::SweepArgs {
            config,
            trials,
            workers,
            storage,
            study,
            sampler_seed,
            seed,
            set,
            threads,
            json,
            out,
            quiet,
        })
        .map(|(_, report)| {
            print!("{report}");
            ExitCode::SUCCESS
        }),
        Command::Export {
            run,
            out,
            agent,
            force,
            quiet: _,
            json,
        } => agents::export::run(&run, &out, Some(agent.as_str()), force, json),
        Command::Reproduce {
            what,
            quick,
            out,
            common:
                Common {
                    set,
                    seed,
                    threads,
                    json,
                    quiet,
                },
        } => {
            if what != "thesis" {
                return Err(user(format!("mtf reproduce {what}: only `thesis` can be reproduced")));
            }
            agents::reproduce::run(agents::reproduce::ReproduceArgs {
                quick,
                out,
                threads: threads.unwrap_or(DEFAULT_THREADS),
                seed,
                set,
                quiet,
                json,
            })
        }
        Command::Compare {
            config,
            policies,
            mechanisms,
            seeds,
            out,
            common:
                Common {
                    set,
                    seed,
                    threads,
                    json,
                    quiet,
                },
        } => agents::compare::run(agents::compare::CompareArgs {
            config,
            policies,
            mechanisms,
            seeds,
            seed,
            threads: threads.unwrap_or(DEFAULT_THREADS),
            set,
            out,
            json,
            quiet,
        }),
    }
}

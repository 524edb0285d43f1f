//! `mtf scan`: a world's headline figure against one config key, a line per policy and
//! mechanism (the worlds behind the seam: Gavel's JCT against the arrival rate).

use crate::flags::{print_json, Common};
use agents::worlds::scan::{parse_values, scan, ScanSpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A config of a world behind the seam (env.world = "gavel", ...).
    #[arg(long, short)]
    config: PathBuf,
    /// The config key scanned, e.g. env.generate.rate (Gavel's jobs per hour).
    #[arg(long)]
    key: String,
    /// Its values: comma-separated, or START:END:STEP.
    #[arg(long, value_parser = values)]
    values: Values,
    /// Mechanisms, comma-separated (default: the config's).
    #[arg(long, value_delimiter = ',')]
    mechanisms: Vec<String>,
    /// Policies for mechanisms that read the agents' actions (fixed:X, fixed:G=X,H=Y,... per
    /// group, uniform, run:DIR, onnx:PATH; default fixed:0.5).
    #[arg(long)]
    policies: Vec<String>,
    /// Episodes per value (the same seeds at every value).
    #[arg(long, default_value_t = 3, value_parser = crate::flags::parse_seeds)]
    seeds: usize,
    /// A line blows up at the first value where its headline is this many times its value at
    /// the first value.
    #[arg(long, default_value_t = 3.0)]
    blowup: f64,
    /// Run directory (default runs/scan-<config stem>-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// `--values`, parsed whole (clap would split a `Vec` flag itself).
#[derive(Clone, Debug)]
struct Values(Vec<f64>);

fn values(s: &str) -> Result<Values, String> {
    parse_values(s).map(Values)
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    if env::registry::stack_of(&a.config, &a.common.set) != env::registry::Stack::Seam {
        return Err(agents::error::user(format!(
            "{}: mtf scan runs the worlds behind the seam (env.world = \"gavel\", \"bandit\"); a queue-world file scans with --set env.stack=seam (the seam's commands: agents/README.md)",
            a.config.display()
        )));
    }
    if !(a.blowup.is_finite() && a.blowup > 1.0) {
        return Err(agents::error::user(format!(
            "--blowup: expected a factor above 1, got {}",
            a.blowup
        )));
    }
    let done = scan(&ScanSpec {
        config: a.config,
        set: a.common.set.clone(),
        key: a.key,
        values: a.values.0,
        mechanisms: a.mechanisms,
        policies: a.policies,
        seeds: a.seeds,
        threads: a.common.threads_or_default(),
        blowup: a.blowup,
        out: a.out,
    })?;
    if a.common.json {
        print_json(
            &serde_json::json!({"run_dir": done.dir.display().to_string(), "lines": done.lines.iter().map(|l| serde_json::json!({"label": l.label, "blowup": l.blowup})).collect::<Vec<_>>()}),
        )?;
    } else {
        agents::out::print(&done.markdown(a.blowup))?;
        agents::out::println(&format!("run directory: {}", done.dir.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

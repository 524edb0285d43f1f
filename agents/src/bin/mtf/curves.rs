//! `mtf curves`: training curves of runs and run groups overlaid.

use crate::flags::print_json;
use agents::eval::curves::{curves, CurvesSpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Run directories or run groups. Runs whose configs differ only in their seeds (a group's
    /// replicates, or runs named one by one) are one series, its band the 95% CI over runs.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// The per-episode figure (default: welfare, or the surplus per bidder per item in the
    /// valuation world).
    #[arg(long)]
    metric: Option<String>,
    /// Reference policies, comma-separated (fixed:X, fixed:w1=X,..., run:DIR, ...): dashed lines
    /// at their level on the first run's held-out seeds.
    #[arg(long, value_name = "POLICY")]
    against: Vec<String>,
    /// Blocks each curve is averaged in.
    #[arg(long, default_value_t = 20)]
    blocks: usize,
    /// Output directory (default runs/curves-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads for --against (default 2; results do not depend on it).
    #[arg(long, default_value_t = 2, value_parser = crate::flags::parse_threads)]
    threads: usize,
    /// Machine-readable JSON on stdout instead of the report.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    let done = curves(&CurvesSpec {
        runs: a.runs,
        metric: a.metric,
        against: agents::worlds::policies::join_split(&a.against),
        blocks: a.blocks,
        out: a.out,
        threads: a.threads,
    })?;
    if a.json {
        print_json(&done)?;
    } else {
        let mut text = format!("{} over training:\n", done.metric);
        for s in &done.series {
            let last = s
                .points
                .last()
                .map(|(e, st)| format!("{} after {e} episodes", st.pm(3)))
                .unwrap_or_default();
            let held = s
                .held_out
                .map(|h| format!("; held out (as its summary scored it) {}", h.pm(3)))
                .unwrap_or_default();
            text += &format!("  {}: {last}{held}\n", s.label);
        }
        for r in &done.references {
            text += &format!("  {}: {} held out\n", r.policy, r.level.pm(3));
        }
        text += &format!("files: {} in {}\n", done.files.join(", "), done.dir.display());
        agents::out::print(&text)?;
    }
    Ok(ExitCode::SUCCESS)
}

//! `mtf export`: a trained run's policies as one standalone executable.

use crate::flags::print_json;
use agents::export::export;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The training run directory.
    #[arg(long)]
    run: PathBuf,
    /// The executable to write.
    #[arg(long)]
    out: PathBuf,
    /// One agent's policy (its index in the run), or `all` (choose with --agent at run time).
    #[arg(long, default_value = "all", value_parser = parse_agent)]
    agent: Agent,
    /// A market run's replicate whose policies to export (default 0); a queue-world run group's
    /// replicates are run directories of their own (--run DIR/replicate-N).
    #[arg(long)]
    replicate: Option<usize>,
    /// Replace PATH if it exists (a regular file only).
    #[arg(long)]
    force: bool,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
    /// Print the exported manifest as JSON.
    #[arg(long)]
    json: bool,
}

/// `--agent`: an index, or `all` (`None`).
#[derive(Clone, Debug)]
struct Agent(Option<usize>);

fn parse_agent(s: &str) -> Result<Agent, String> {
    if s == "all" {
        return Ok(Agent(None));
    }
    s.parse()
        .map(|i| Agent(Some(i)))
        .map_err(|_| format!("expected an agent index or `all`, got `{s}`"))
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    let done = export(&a.run, &a.out, a.agent.0, a.replicate, a.force)?;
    if a.json {
        print_json(&serde_json::json!({ "out": done.out.display().to_string(), "bytes": done.bytes, "manifest": done.manifest }))?;
    } else {
        let m = &done.manifest;
        agents::out::println(&format!(
            "exported {} agent(s) {:?} ({}, {} levels) to {} ({} bytes)",
            m.agents.len(),
            m.agents,
            m.kind,
            m.levels.len(),
            done.out.display(),
            done.bytes
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

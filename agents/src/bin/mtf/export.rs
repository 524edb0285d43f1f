//! `mtf export`: a trained run's policies, or an ONNX policy from any trainer, as one
//! standalone executable.

use crate::flags::print_json;
use agents::eval::policies::PolicySpec;
use agents::export::{export, export_onnx};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// The training run directory.
    #[arg(long, required_unless_present = "policy", conflicts_with_all = ["policy", "config"])]
    run: Option<PathBuf>,
    /// Instead of a run: onnx:PATH, an ONNX network from any trainer (one policy for every
    /// agent, reading the observation mtf_env gives Python); needs --config.
    #[arg(long, requires = "config", conflicts_with_all = ["replicate"])]
    policy: Option<String>,
    /// The scenario an ONNX policy acts in (its observation layout and levels).
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// `key.path=value` overrides of --config.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "config")]
    set: Vec<String>,
    /// The executable to write.
    #[arg(long)]
    out: PathBuf,
    /// One agent's policy (its index in the run; in a world behind the seam, a group's, or
    /// an agent id's where the run kept an actor per agent), or `all` (choose with --agent at
    /// run time).
    #[arg(long, default_value = "all", value_parser = parse_agent)]
    agent: Agent,
    /// The replicate whose policies to export, of a run group in a world behind the seam
    /// (default 0); a queue-world run group's replicates are run directories of their
    /// own (--run DIR/replicate-N).
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
    let done = match (&a.run, &a.policy, &a.config) {
        (Some(run), _, _) if env::registry::stack_of(&agents::RunDir::at(run).config(), &[]) == env::registry::Stack::Seam => {
            agents::worlds::export::export(run, &a.out, a.agent.0, a.replicate, a.force)?
        }
        (Some(run), _, _) => export(run, &a.out, a.agent.0, a.replicate, a.force)?,
        (None, Some(spec), Some(config)) => {
            let model = match PolicySpec::parse(spec)? {
                PolicySpec::Onnx(path) => path,
                PolicySpec::SampledOnnx(_) => {
                    return Err(agents::error::policy(
                        spec,
                        "export the model as onnx:PATH; the agent draws its actions when started with --sample --seed N",
                    ))
                }
                _ => {
                    return Err(agents::error::policy(
                        spec,
                        "--policy exports an ONNX model (onnx:PATH); a trained run is exported with --run RUN_DIR",
                    ))
                }
            };
            if a.agent.0.is_some() {
                return Err(agents::error::user(
                    "--agent: an ONNX policy is one model every agent runs; export it without --agent".to_string(),
                ));
            }
            export_onnx(&model, &agents::config::Source::new(config, &a.set, None), &a.out, a.force)?
        }
        _ => unreachable!("clap requires --run or --policy with --config"),
    };
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

//! `mtf compare`: policies x mechanisms on the same seeds.

use crate::flags::{print_json, Common, Episodes};
use agents::config::Source;
use agents::eval::compare::{compare, write, CompareSpec};
use env::registry::Stack;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Scenario config (TOML).
    #[arg(long, short)]
    config: PathBuf,
    /// Policies, comma-separated: fixed:X (level X for everyone: a threshold, or a bid factor
    /// under an auction), fixed:w1=X,w2=Y,... (a level per weight class), fixed:[X,Y,...] (a
    /// level per agent), fixed:all (every level), hedge (Hedge learning online), run:RUN_DIR (a
    /// trained run's greedy policies; a run group: every replicate), sampled:run:RUN_DIR (the
    /// same policies drawing their actions), agent:PATH (an exported agent binary, or any executable speaking the protocol of docs/AGENTS.md; a bare name
    /// is a file in this directory), onnx:PATH (an ONNX network from any trainer mapping an
    /// agent's observation to level logits; sampled:onnx:PATH draws from them). In a world
    /// behind the seam (Gavel, the market, the bandit) fixed:G=X,H=Y,... gives a level per
    /// group by its name, fixed:[X,Y,...] one per possible agent by id, and run:DIR plays as
    /// the run trained. A mechanism that ignores the
    /// agents' actions gets one row, `any`.
    #[arg(long, required = true)]
    policies: Vec<String>,
    /// Mechanisms, comma-separated (default: the config's).
    #[arg(long, value_delimiter = ',')]
    mechanisms: Vec<String>,
    /// The row every row is compared with, seed by seed: POLICY/MECHANISM (e.g. fixed:0.0/mtf;
    /// default: the best fixed level under the first mechanism).
    #[arg(long, value_name = "POLICY/MECHANISM")]
    baseline: Option<String>,
    /// Name a policy's rows in tables and figures: NAME=SPEC (repeatable; e.g.
    /// --label learned=run:runs/quickstart-20261126-101500). JSON keeps the spec beside it. A
    /// run group's name names its row across replicates, its replicates' rows (NAME, replicate
    /// K) and its sampled rows (NAME (sampled)).
    #[arg(long, value_name = "NAME=SPEC")]
    label: Vec<String>,
    #[command(flatten)]
    episodes: Episodes,
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
    let threads = a.common.threads_or_default();
    let done = agents::worlds::compare::compare(&agents::worlds::compare::SeamCompare {
        config: a.config,
        set: a.common.set,
        seed: a.common.seed,
        policies: a.policies,
        mechanisms: a.mechanisms,
        seeds: a.episodes.seeds,
        threads,
        baseline: a.baseline,
        out: a.episodes.out,
        command: "compare",
        labels: a.label,
    })?;
    seam_report(&done, a.common.json)
}

/// The queue and valuation worlds.
fn queue(a: Args) -> agents::Result<ExitCode> {
    let spec = CompareSpec {
        source: Source::new(a.config, &a.common.set, a.common.seed),
        policies: agents::worlds::policies::join_split(&a.policies),
        mechanisms: a.mechanisms,
        seeds: a.episodes.seeds,
        threads: a.common.threads_or_default(),
        baseline: a.baseline,
        labels: a.label,
    };
    let compared = compare(&spec)?;
    let dir = write(&compared, &spec.source, a.episodes.out.as_deref())?;
    if a.common.json {
        print_json(
            &serde_json::json!({ "run_dir": dir.display().to_string(), "seeds": compared.seeds, "rows": compared.rows, "groups": compared.groups }),
        )?;
    } else {
        agents::out::print(&agents::report::table::markdown(&compared.rows))?;
        agents::out::print(&agents::eval::compare::trace_note(&compared))?;
        agents::out::print(&agents::eval::compare::groups_markdown(&compared.groups))?;
        agents::out::println(&format!("run directory: {}", dir.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The report of a comparison in a world behind the seam: its table, or its JSON.
pub(crate) fn seam_report(done: &agents::worlds::compare::Compared, json: bool) -> agents::Result<ExitCode> {
    if json {
        let mut v = done.json();
        v["run_dir"] = done.dir.display().to_string().into();
        print_json(&v)?;
    } else {
        agents::out::print(&done.markdown())?;
        agents::out::println(&format!("run directory: {}", done.dir.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

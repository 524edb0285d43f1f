//! `mtf simulate`: evaluation episodes of one policy, without learning.

use crate::flags::{report, Common, Episodes};
use agents::config::Source;
use agents::eval::simulate::{simulate, SimulateSpec};
use env::registry::Stack;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Scenario config (TOML).
    #[arg(long, short)]
    config: PathBuf,
    /// Mechanism (overrides mechanism.name; in a market file mechanism.kind: second_price,
    /// first_price or mtf).
    #[arg(long, short)]
    mechanism: Option<String>,
    /// Policy: fixed:X (level X for everyone: a threshold, or a bid factor under an auction),
    /// fixed:w1=X,w2=Y,... (a level per weight class), fixed:[X,Y,...] (a level per agent),
    /// hedge (Hedge learning online), run:RUN_DIR (a trained run's greedy policies),
    /// sampled:run:RUN_DIR (the same policies drawing their actions), agent:PATH (an exported
    /// agent binary, or any executable speaking the protocol of docs/AGENTS.md; a bare name is a file in this directory; MTF_AGENT_TIMEOUT seconds per
    /// reply, default 10), onnx:PATH (an ONNX network from any trainer mapping an agent's
    /// observation to level logits; sampled:onnx:PATH draws from them).
    /// Default fixed:0.5, or the world's own rule where it has one: a market file (env.world =
    /// "market") plays its tenants' own factors (`own`), and fixed:X as every agent's bid
    /// factor (under mtf its threshold): every tenant's, or where the file marks learners
    /// (learn = true) theirs, the others at their own.
    #[arg(long, short)]
    policy: Option<String>,
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
    let done = agents::worlds::compare::simulate(
        &a.config,
        &a.common.set,
        a.common.seed,
        a.mechanism.as_deref(),
        a.policy.as_deref(),
        a.episodes.seeds,
        a.common.threads_or_default(),
        a.episodes.out.as_deref(),
    )?;
    crate::compare::seam_report(&done, a.common.json)
}

/// The queue and valuation worlds.
fn queue(a: Args) -> agents::Result<ExitCode> {
    let done = simulate(&SimulateSpec {
        source: Source::new(a.config, &a.common.set, a.common.seed),
        mechanism: a.mechanism,
        policy: a.policy.unwrap_or_else(|| "fixed:0.5".into()),
        seeds: a.episodes.seeds,
        threads: a.common.threads_or_default(),
        out: a.episodes.out,
    })?;
    report(&done, &done.dir, a.common.json)
}

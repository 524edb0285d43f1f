//! `mtf reproduce thesis`: the thesis's chapter 5, regenerated.

use crate::flags::{print_json, Common};
use agents::error::user;
use agents::experiments::thesis::{reproduce, ReproduceSpec};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// What to reproduce: `thesis` (chapter 5 of the MTF thesis).
    what: String,
    /// Fewer loads, seeds and training episodes (under 10 minutes on 2 cores).
    #[arg(long)]
    quick: bool,
    /// Output directory (default runs/reproduce-thesis-<timestamp>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The thesis configs' folder (default: configs/thesis here, or in the checkout the mtf
    /// executable was built in).
    #[arg(long, value_name = "DIR")]
    configs: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    if a.what != "thesis" {
        return Err(user(format!("mtf reproduce {}: only `thesis` can be reproduced", a.what)));
    }
    let done = reproduce(&ReproduceSpec {
        quick: a.quick,
        out: a.out,
        threads: a.common.threads_or_default(),
        seed: a.common.seed,
        set: a.common.set.clone(),
        quiet: a.common.quiet,
        configs: a.configs,
    })?;
    if a.common.json {
        print_json(&done)?;
    } else {
        agents::out::println(&format!(
            "reproduced the thesis evaluation in {:.1} s: {}",
            done.seconds,
            done.index.display()
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

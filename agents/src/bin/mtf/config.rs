//! `mtf config --describe`: every config key with its type, default, values, meaning and reader.

use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Print the reference of every config key (markdown; docs/CONFIG.md is this output).
    #[arg(long, required = true)]
    describe: bool,
}

pub(crate) fn run(a: Args) -> agents::Result<ExitCode> {
    if a.describe {
        agents::out::print(&agents::config::describe())?;
    }
    Ok(ExitCode::SUCCESS)
}

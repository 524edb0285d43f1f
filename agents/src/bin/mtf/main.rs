//! The `mtf` command: parse, run, print one error line. Every command is a private module of
//! this binary, one screen each: its flags (clap), a call into the `agents` library, the
//! printing.

mod analyze;
mod cli;
mod compare;
mod export;
mod reproduce;
mod schedule;
mod simulate;
mod sweep;
mod train;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mtf: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

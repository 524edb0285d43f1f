//! The `mtf` command: parse, run, print one error line. The command-line definitions are this
//! binary's private `cli` module; everything it calls is the `agents` library.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    match cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mtf: {err:#}");
            ExitCode::from(agents::error::exit_code(&err))
        }
    }
}

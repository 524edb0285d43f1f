//! The `mtf` command: parse, run, print one error line. See `agents::cli`.

use std::process::ExitCode;

fn main() -> ExitCode {
    match agents::cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("mtf: {err:#}");
            ExitCode::from(agents::error::exit_code(&err))
        }
    }
}

//! Standard output for the binaries. `print!` panics when standard output fails (exit 101 with
//! a backtrace); these write, flush and say what happened instead: a reader that went away
//! (`mtf train | head -c1`) is [`Error::ClosedPipe`] (the binaries exit 0 quietly), anything
//! else (a full disk) a failure naming standard output (one line, exit 1: what the command did
//! is done; only its report could not be written).

use crate::error::{Error, Result};
use std::io::Write;

/// Write `text` to standard output and flush it.
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(error)
}

/// Write `text` and a newline to standard output and flush it.
pub fn println(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(error)
}

/// What a failed write to standard output is.
pub fn error(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        Error::ClosedPipe
    } else {
        Error::Failed(format!("writing standard output: {e}"))
    }
}

//! The `mtf` command: parse, run, print one error line. Every command is a private module of
//! this binary, one screen each: its flags (clap), a call into the `agents` library, the
//! printing.

mod analyze;
mod cli;
mod compare;
mod config;
mod curves;
mod export;
mod flags;
mod reproduce;
mod schedule;
mod simulate;
mod sweep;
mod train;

use std::process::ExitCode;

/// Keep freed memory in the process: training frees and reallocates the same few megabyte-sized
/// tensors every round, and glibc's default returns such blocks to the kernel (mmap and heap
/// trimming), so every round paid for page faults and zeroed pages (10% of the actor-critic's
/// time in a profile).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 256 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 512 << 20);
    }
}

fn main() -> ExitCode {
    keep_freed_memory();
    match cli::run(std::env::args_os()) {
        Ok(code) => code,
        Err(agents::Error::ClosedPipe) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("mtf: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

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
mod scan;
mod schedule;
mod simulate;
mod sweep;
mod train;

use std::process::ExitCode;

/// Keep freed memory in the process: training frees and reallocates the same tensors every
/// round and every minibatch, and glibc's default returns blocks above its mmap threshold to
/// the kernel at once (and trims the heap), so each reuse paid for fresh zeroed pages and, with
/// worker threads, a TLB shootdown per unmap (10% of the actor-critic's time at 20 agents; at
/// 1,000 agents PPO's update tensors are 10-50 MB, and the mmap threshold cannot be raised past
/// 32 MB: `mallopt` refused the 256 MB this asked for before). So: no mmap at all (every block
/// from the heap, kept for reuse), no trimming below 2 GB, and the heap grown 256 MB at a time.
/// PPO, shared class actors, by_type, 1,000 x 4,000, 2 copies, 2 threads: 27.9k -> 41-47k
/// agent-steps/s (the same settings through glibc's environment variables).
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; called before any other thread exists.
    unsafe {
        let ok = libc::mallopt(libc::M_MMAP_MAX, 0)
            & libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX)
            & libc::mallopt(libc::M_TOP_PAD, 256 << 20);
        debug_assert_eq!(ok, 1, "glibc refused an allocator setting");
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

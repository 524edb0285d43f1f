//! Standard output closed by its reader or on a full disk: both binaries used to panic with
//! exit 101 and a backtrace (`mtf --help > /dev/full`, `mtf schedule ... | true`,
//! `mtf train | head -c1` after a complete run, `mtf-agent --help | true`). A closed pipe now
//! exits 0 quietly; a full disk exits 1 with one line.

use crate::common::{self, quickstart};
use std::process::{Command, Stdio};

/// Run `program args` with its standard output a pipe whose reader is already gone (and
/// `input` on stdin): (status, stderr).
fn closed(program: &str, args: &[&str], input: &str) -> (i32, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(input.as_bytes());
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Run `program args` with standard output on /dev/full: (status, stderr).
fn full(program: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

const ROUND: &str = r#"{"utilities": [[0.5, 0.9]], "thresholds": [0.5], "budgets": [5], "weights": [1], "turn": 0}"#;

#[test]
fn a_closed_stdout_panicked_with_exit_101() {
    let (mtf, agent) = (env!("CARGO_BIN_EXE_mtf"), env!("CARGO_BIN_EXE_mtf-agent"));
    for (program, args, input) in [
        (mtf, vec!["--help"], ""),
        (mtf, vec!["schedule", "--mechanism", "mtf"], ROUND),
        (agent, vec!["--help"], ""),
    ] {
        let (code, err) = closed(program, &args, input);
        assert_eq!((code, err.as_str()), (0, ""), "{program} {args:?}");
    }
    // A complete training run whose report nobody reads is a success, and complete.
    let out = common::tmp("closed", "train");
    let q = quickstart();
    let (code, err) = closed(
        mtf,
        &[
            "train",
            "--config",
            &q,
            "--set",
            "train.episodes=1",
            "--set",
            "env.rounds=20",
            "--set",
            "train.eval_seeds=1",
            "--out",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert_eq!((code, err.as_str()), (0, ""));
    assert!(out.join("summary.json").is_file());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
#[cfg(target_os = "linux")]
fn a_full_stdout_panicked_with_exit_101() {
    let (mtf, agent) = (env!("CARGO_BIN_EXE_mtf"), env!("CARGO_BIN_EXE_mtf-agent"));
    for (program, args) in [(mtf, vec!["--help"]), (mtf, vec!["schedule", "--help"]), (agent, vec!["--help"])] {
        let (code, err) = full(program, &args);
        assert_eq!(code, 1, "{program} {args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("standard output") && err.contains("No space left"), "{err}");
    }
}

//! Helpers shared by the end-to-end tests.

use std::path::PathBuf;
use std::process::Command;

/// Run `mtf` with `args`: (exit status, stdout, stderr).
pub fn mtf(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mtf")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Run `mtf` with `args` in directory `dir` (a README line's relative paths).
pub fn mtf_in(dir: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Run `program` with `args`, `input` on its standard input (written from a thread, so a
/// program that answers while it reads cannot deadlock on a full pipe).
pub fn run_piped(program: impl AsRef<std::ffi::OsStr>, args: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // A command that refuses its input may exit before reading all of it (the bad-input tests
    // feed it megabytes): the pipe then breaks, which is its answer, not the test's failure.
    let writer = std::thread::spawn(move || match stdin.write_all(&input) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.unwrap(),
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// A fresh temporary directory path for this test process (`kind` and `name` keep tests apart),
/// removed when the guard is dropped: a passing suite leaves nothing in the temporary
/// directory. A failing test (dropped while panicking) keeps its directory to look at.
pub fn tmp(kind: &str, name: &str) -> Tmp {
    let d = std::env::temp_dir().join(format!("mtf-{kind}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    Tmp(d)
}

/// A temporary directory's (or file's) path, removed on drop (see [`tmp`]); derefs to its
/// `PathBuf`.
pub struct Tmp(PathBuf);

impl std::ops::Deref for Tmp {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<std::path::Path> for Tmp {
    fn as_ref(&self) -> &std::path::Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Tmp {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Tmp {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        // Some tests write a file (an exported agent) at the path, not a directory.
        if self.0.is_dir() {
            let _ = std::fs::remove_dir_all(&self.0);
        } else {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// The quickstart config's absolute path (no `..`: sweep files embed it).
pub fn quickstart() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../configs/quickstart.toml")
        .canonicalize()
        .unwrap()
        .display()
        .to_string()
}

/// `mtf train` on the quickstart into `out`, quietly, one held-out seed, with `sets`
/// (`key=value` overrides); the run must succeed.
pub fn train_quickstart(out: &std::path::Path, sets: &[&str]) {
    let q = quickstart();
    let mut args = vec![
        "train",
        "--config",
        &q,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--set",
        "train.eval_seeds=1",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let (code, _, err) = mtf(&args);
    assert_eq!(code, 0, "{err}");
}

/// `mtf simulate` of `policy` on the quickstart cut to 60 rounds, over `seeds` seeds, quietly,
/// with the summary as JSON on stdout: (exit status, stdout, stderr).
pub fn simulate_quickstart(policy: &str, seeds: u32, out: &std::path::Path) -> (i32, String, String) {
    let q = quickstart();
    let seeds = seeds.to_string();
    mtf(&[
        "simulate",
        "--config",
        &q,
        "--policy",
        policy,
        "--seeds",
        &seeds,
        "--json",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--set",
        "env.rounds=60",
    ])
}

/// A run's `metrics.jsonl` in `dir`, a JSON value a line, without the wall-clock time (the one
/// field two runs of the same config may differ in).
pub fn logged(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("wall_time");
            v
        })
        .collect()
}

/// `mtf` started with `args` as a child, its output discarded (a test kills it mid-run).
pub fn spawn_quiet(args: &[String]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

//! The Python package's tests (python/tests, pytest) through scripts/python-tests.sh, so the
//! README's one test command runs them: the first run creates a virtualenv under target/ and
//! installs the pinned packages from PyPI, then builds and installs `mtf_env` with pip.

use std::process::Command;

#[test]
fn python_package_tests_pass() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("bash")
        .arg(root.join("scripts/python-tests.sh"))
        .env("MTF_BIN", env!("CARGO_BIN_EXE_mtf"))
        .output()
        .expect("bash runs");
    let text = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/python-tests.sh failed:\n{text}");
    // pytest's summary: something ran and nothing failed or was skipped.
    let summary = text.lines().rev().find(|l| l.contains(" passed")).unwrap_or("");
    assert!(
        !summary.contains("failed") && !summary.contains("skipped") && !summary.contains("error"),
        "{summary}"
    );
    eprintln!("{summary}");
}

//! Helpers shared by the end-to-end tests.
#![allow(dead_code)]

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

/// A fresh temporary directory path for this test process (`kind` and `name` keep tests apart).
pub fn tmp(kind: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mtf-{kind}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
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

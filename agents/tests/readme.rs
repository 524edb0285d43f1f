//! The README's examples run as written: every line of its `Examples` block, in one bash script,
//! in a scratch directory laid out like the repository after the two README commands
//! (`configs/`, `target/release/mtf` and `mtf-agent`, a quickstart run under `runs/`).
//!
//! Budgets are shrunk by appending `--set` overrides to the commands that train or simulate
//! (fewer rounds, episodes and held-out seeds); nothing else of a line is changed, so a renamed
//! flag, a moved config or a placeholder that does not resolve fails here.

use crate::common;
use std::path::Path;
use std::process::Command;

/// Overrides appended to each command kind so the whole block runs in seconds.
fn tiny(line: &str) -> &'static str {
    let cmd = line.split_whitespace().nth(1).unwrap_or("");
    let generated = line.contains("configs/gavel/learn.toml") || line.contains("configs/gavel/paper.toml");
    match cmd {
        "train" if line.contains("--resume") => "",
        // Gavel's world: generated jobs shrunk to a few dozen (its traces run in milliseconds).
        "train" if generated => {
            " --set train.episodes=2 --set train.eval_seeds=2 --set learner.es.pairs=2 --set env.generate.jobs=40 --set env.window=[5,30]"
        }
        "compare" | "scan" | "analyze" | "simulate" if generated => " --set env.generate.jobs=40 --set env.window=[5,30]",
        _ if line.contains("configs/gavel/") => "",
        // A market file's [learner] has no actor-critic; its training is short already.
        "train" if line.contains("configs/market/") => " --set train.episodes=2 --set train.eval_seeds=1",
        "sweep" if line.contains(" sweep export ") || line.contains(" sweep status ") => "",
        "sweep" if line.contains("configs/sweeps/gavel") => {
            " --set train.episodes=1 --set train.eval_seeds=2 --set learner.es.pairs=2 --set env.generate.jobs=40 --set env.window=[5,30]"
        }
        "sweep" if line.contains("configs/sweeps/market") => " --set train.episodes=2 --set train.eval_seeds=1 --set train.replicates=1",
        "train" | "sweep" => {
            " --set env.rounds=20 --set train.episodes=2 --set train.eval_seeds=1 --set learner.actor_critic.actor_hidden=16"
        }
        "simulate" | "compare" | "analyze" => " --set env.rounds=20",
        _ => "",
    }
}

/// The `sh` block after the line starting with "Examples", continuation lines joined.
fn examples(readme: &str) -> Vec<String> {
    let start = readme.find("\nExamples").expect("README has an Examples section");
    let block = &readme[start..];
    let open = block.find("```sh\n").expect("an sh block") + 6;
    let close = open + block[open..].find("```").expect("closed");
    let mut lines = Vec::new();
    let mut cur = String::new();
    for raw in block[open..close].lines() {
        let line = raw.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(part) => cur.push_str(part),
            None => {
                cur.push_str(line);
                lines.push(std::mem::take(&mut cur));
            }
        }
    }
    lines
}

#[test]
fn readme_examples_run_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = examples(&readme);
    assert!(lines.len() >= 12, "the examples block went missing: {lines:?}");
    let dir = common::tmp("readme", "examples");
    std::fs::create_dir_all(dir.join("target/release")).unwrap();
    std::os::unix::fs::symlink(root.join("configs").canonicalize().unwrap(), dir.join("configs")).unwrap();
    for bin in [env!("CARGO_BIN_EXE_mtf"), env!("CARGO_BIN_EXE_mtf-agent")] {
        let name = Path::new(bin).file_name().unwrap();
        std::os::unix::fs::symlink(bin, dir.join("target/release").join(name)).unwrap();
    }
    // The main job's run, small.
    let mut script = String::from("set -euo pipefail\n");
    script.push_str(&format!(
        "target/release/mtf train --config configs/quickstart.toml --quiet{}\n",
        tiny("mtf train")
    ));
    for line in &lines {
        // A trailing comment stays a comment: put the overrides before it.
        let (cmd, comment) = match line.find("  #") {
            Some(k) => (&line[..k], &line[k..]),
            None => (line.as_str(), ""),
        };
        let cmd = cmd.trim_end();
        script.push_str(&format!("echo '>>> {}' >&2\n", cmd.replace('\'', "")));
        script.push_str(&format!(
            "{cmd}{}{comment}\n",
            if cmd.starts_with("target/release/mtf ") { tiny(cmd) } else { "" }
        ));
    }
    let out = Command::new("bash").arg("-c").arg(&script).current_dir(&dir).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "a README example failed:\n{err}\nscript:\n{script}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("\"threshold\""), "the exported agent answered: {stdout}");
    assert!(stdout.contains("\"owners\""), "mtf schedule printed an allocation: {stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

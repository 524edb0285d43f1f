//! Every file or stream the harness reads has a size limit and refuses what is not a file
//! (issue 26, classes 4 and 11): endless inputs used to be read until memory ran out.

use crate::common::{self, mtf, quickstart, train_quickstart};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[cfg(unix)]
#[test]
fn an_endless_stdin_to_schedule_was_read_until_memory_ran_out() {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(["schedule", "--mechanism", "mtf"])
        .stdin(Stdio::from(std::fs::File::open("/dev/zero").unwrap()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("stdin: more than the 16777216 bytes"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(30));
}

#[cfg(unix)]
#[test]
fn a_device_or_a_directory_as_a_config_was_read_until_memory_ran_out() {
    let dir = common::tmp("limits", "config");
    std::fs::create_dir_all(&dir).unwrap();
    for (path, says) in [
        ("/dev/zero", "not a regular file"),
        ("/dev/urandom", "not a regular file"),
        (dir.to_str().unwrap(), "is a directory"),
    ] {
        for cmd in ["train", "simulate"] {
            let (code, _, err) = mtf(&[cmd, "--config", path, "--quiet"]);
            assert_eq!(code, 2, "{cmd} {path}: {err}");
            assert!(err.contains(path) && err.contains(says) && err.trim().lines().count() == 1, "{err}");
        }
    }
    // A config over the limit is refused by its size, before reading (a sparse 17 MiB file).
    let big = dir.join("big.toml");
    std::fs::File::create(&big).unwrap().set_len((1 << 24) + 1).unwrap();
    let (code, _, err) = mtf(&["train", "--config", big.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("16777217 bytes, more than the 16777216"), "{err}");
    // A trace that is a device.
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        &quickstart(),
        "--set",
        "env.arrivals=\"trace\"",
        "--set",
        "env.trace=\"/dev/zero\"",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/dev/zero") && err.contains("not a regular file"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_sweep_base_that_is_a_device_or_directory_named_neither_file_nor_key() {
    let dir = common::tmp("limits", "sweep");
    std::fs::create_dir_all(&dir).unwrap();
    for (base, says) in [("/dev/zero", "is not a regular file"), ("/tmp", "is a directory")] {
        let p = dir.join("sweep.toml");
        std::fs::write(
            &p,
            format!(
                "base = \"{base}\"\n[objective]\nmetric = \"eval_welfare.mean\"\n[params]\n\"learner.actor_critic.actor_lr\" = {{ type = \"float\", low = 1e-4, high = 1e-2 }}\n"
            ),
        )
        .unwrap();
        let db = format!("sqlite:{}", dir.join("s.db").display());
        let (code, _, err) = mtf(&["sweep", "--config", p.to_str().unwrap(), "--storage", &db, "--quiet"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains(p.to_str().unwrap()) && err.contains("base") && err.contains(says),
            "{err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
/// `--max-memory` meant nothing on a market file: no estimate existed, and a market's records
/// grow with its rounds and tenants, PPO's rollout with its copies (issue 42.3). Each command
/// is refused in one line naming the key, before its run directory.
#[test]
fn the_market_ignored_max_memory() {
    let market = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../configs/market/three-types.toml")
        .display()
        .to_string();
    let dir = common::tmp("limits", "market-memory");
    for (cmd, doing, sets, key) in [
        (
            "simulate",
            "this simulation",
            vec!["env.rounds=30000"],
            "env.rounds x market.tenants",
        ),
        (
            "compare",
            "this comparison",
            vec!["env.rounds=300000"],
            "env.rounds x market.tenants",
        ),
        (
            "train",
            "this training run",
            vec!["env.rounds=30000", "learner.kind=\"ppo\""],
            "learner.ppo",
        ),
    ] {
        let out = dir.join(cmd);
        let mut args = vec![cmd, "--config", &market, "--max-memory", "100M", "--out", out.to_str().unwrap()];
        if cmd == "compare" {
            args.extend(["--policies", "fixed:1.0"]);
        }
        for s in &sets {
            args.extend(["--set", s]);
        }
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 2, "{cmd}: {err}");
        assert!(err.contains(&format!("{doing} needs about")) && err.contains(key), "{cmd}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!out.exists(), "{cmd}: refused before the run directory");
    }
    // The shipped market fits in 100 MiB.
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        &market,
        "--max-memory",
        "100M",
        "--out",
        dir.join("ok").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_out_onto_a_run_directory_wrote_its_reports_into_the_run() {
    let dir = common::tmp("limits", "sweep-out");
    let run = dir.join("run");
    train_quickstart(&run, &["train.episodes=1", "env.rounds=5"]);
    let before: Vec<_> = std::fs::read_dir(&run).unwrap().map(|e| e.unwrap().file_name()).collect();
    let p = dir.join("sweep.toml");
    std::fs::write(
        &p,
        format!(
            "base = \"{}\"\n[objective]\nmetric = \"eval_welfare.mean\"\n[params]\n\"learner.actor_critic.actor_lr\" = {{ type = \"float\", low = 1e-4, high = 1e-2 }}\n",
            quickstart().replace('\\', "/")
        ),
    )
    .unwrap();
    let db = format!("sqlite:{}", dir.join("s.db").display());
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &db,
        "--out",
        run.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is a run directory"), "{err}");
    let after: Vec<_> = std::fs::read_dir(&run).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(before, after);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Within the documented limits, a PPO critic of 16384-16384 asked for an 8 GiB tensor and a
/// 10,000-agent simulation peaked at 4.7 GB. The estimate refuses them before allocating, in
/// one line naming the key (class 5); a run that fits still runs under a tight limit.
#[test]
fn configs_within_the_limits_allocated_more_than_the_machine_has() {
    let q = quickstart();
    let dir = common::tmp("limits", "memory");
    let start = Instant::now();
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &q,
        "--set",
        "learner.kind=ppo",
        "--set",
        "learner.ppo.critic_hidden=[16384,16384]",
        "--max-memory",
        "16G",
        "--out",
        dir.join("big").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("needs about") && err.contains("learner.ppo.critic_hidden") && err.contains("16.00 GiB (--max-memory)"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1);
    assert!(!dir.join("big").exists(), "refused before the run directory");
    assert!(start.elapsed() < Duration::from_secs(10), "refused before allocating");
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        &q,
        "--set",
        "env.agents.*.count=3333",
        "--max-memory",
        "1G",
        "--seeds",
        "1",
        "--out",
        dir.join("sim").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("this simulation needs about") && err.contains("env.agents"), "{err}");
    for (cmd, doing, extra) in [
        ("compare", "this comparison", ["--policies", "fixed:0.2"]),
        ("analyze", "this analysis", ["--seeds", "2"]),
    ] {
        let (code, _, err) = mtf(&[
            cmd,
            extra[0],
            extra[1],
            "--config",
            &q,
            "--set",
            "env.agents.*.count=3333",
            "--max-memory",
            "1G",
            "--out",
            dir.join(cmd).to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(&format!("{doing} needs about")), "{err}");
    }
    // The quickstart fits in 200 MiB.
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &q,
        "--set",
        "train.episodes=1",
        "--set",
        "env.rounds=10",
        "--set",
        "train.eval_seeds=1",
        "--max-memory",
        "200M",
        "--quiet",
        "--out",
        dir.join("ok").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = mtf(&["train", "--config", &q, "--max-memory", "lots"]);
    assert_eq!(code, 2);
    assert!(err.contains("not a size"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

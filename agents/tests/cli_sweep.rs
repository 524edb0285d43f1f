//! End-to-end tests of `mtf sweep`: two processes on one study, resume, a killed sweep,
//! bad sweep files.

use crate::common;
use common::{mtf, quickstart};
use rusqlite::Connection;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> common::Tmp {
    let d = common::tmp("sweep", name);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A tiny actor-critic sweep: 40-round episodes, 6 per trial; successive halving with rungs at
/// 2 and 4 episodes; a categorical choice (`bogus`) that makes the trial's config invalid, so
/// failures are exercised too.
fn sweep_file(dir: &Path, episodes: u64) -> PathBuf {
    let text = format!(
        r#"base = "{base}"
sampler = "random"
seed = 3
trials = 8
workers = 1

[objective]
metric = "eval_welfare.mean"
direction = "maximize"

[budget]
episodes = {episodes}
eval_seeds = 2
set = ["env.rounds=40", "learner.actor_critic.actor_hidden=32"]

[pruner]
kind = "successive_halving"
window = 1
min_resource = 2
reduction_factor = 2

[params]
"learner.actor_critic.actor_lr" = {{ type = "float", low = 1e-4, high = 1e-2, log = true }}
"learner.actor_critic.features" = {{ type = "categorical", choices = ["spec", "all", "bogus"] }}
"#,
        base = quickstart().replace('\\', "/")
    );
    let p = dir.join("sweep.toml");
    std::fs::write(&p, text).unwrap();
    p
}

struct Row {
    number: i64,
    state: String,
    value: Option<f64>,
    pid: i64,
    params: String,
    error: Option<String>,
    run_dir: String,
}

fn rows(db: &Path, study: &str) -> Vec<Row> {
    let c = Connection::open(db).unwrap();
    let mut q = c
        .prepare("SELECT number, state, value, pid, params, error, run_dir FROM trials WHERE study = ?1 ORDER BY number")
        .unwrap();
    q.query_map([study], |r| {
        Ok(Row {
            number: r.get(0)?,
            state: r.get(1)?,
            value: r.get(2)?,
            pid: r.get(3)?,
            params: r.get(4)?,
            error: r.get(5)?,
            run_dir: r.get(6)?,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

#[test]
fn two_processes_share_a_study_without_running_a_trial_twice() {
    let dir = tmp("two");
    let file = sweep_file(&dir, 6);
    let db = dir.join("study.db");
    let storage = format!("sqlite:{}", db.display());
    let out = dir.join("out");
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_mtf"))
            .args(["sweep", "--config", file.to_str().unwrap(), "--storage", &storage])
            .args(["--study", "t", "--out", out.to_str().unwrap(), "--quiet"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    for o in [&a, &b] {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }

    let trials = rows(&db, "t");
    let numbers: BTreeSet<i64> = trials.iter().map(|t| t.number).collect();
    assert_eq!(numbers.len(), trials.len(), "trial numbers are unique");
    assert_eq!(numbers, (0..8).collect(), "numbers are 0..8 with no gaps");
    let dirs: BTreeSet<&str> = trials.iter().map(|t| t.run_dir.as_str()).collect();
    assert_eq!(dirs.len(), 8, "each trial has its own run directory");
    let count = |s: &str| trials.iter().filter(|t| t.state == s).count();
    assert_eq!(count("complete") + count("pruned") + count("failed"), 8);
    assert!(count("complete") >= 1);
    let pids: BTreeSet<i64> = trials.iter().map(|t| t.pid).collect();
    assert_eq!(pids.len(), 2, "both processes ran trials");

    for t in &trials {
        let bogus = t.params.contains("bogus");
        assert_eq!(t.state == "failed", bogus, "trial {}: {} with {}", t.number, t.state, t.params);
        if bogus {
            let e = t.error.as_deref().unwrap();
            assert!(e.contains("features") && e.contains("bogus"), "{e}");
        }
        let summary = Path::new(&t.run_dir).join("summary.json");
        match t.state.as_str() {
            "complete" => {
                // The recorded value is the trial run's own summary figure.
                let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(summary).unwrap()).unwrap();
                assert_eq!(s["eval_welfare"]["mean"].as_f64(), t.value);
            }
            "pruned" => {
                assert!(!summary.exists(), "a pruned trial stops before its evaluation");
                let lines = std::fs::read_to_string(Path::new(&t.run_dir).join("metrics.jsonl")).unwrap();
                assert!(lines.lines().count() < 6, "a pruned trial stops early");
            }
            _ => {}
        }
    }

    // The best value reported is the best recorded; best.toml is that trial's config.
    let best = trials
        .iter()
        .filter_map(|t| t.value.map(|v| (v, t)))
        .max_by(|x, y| x.0.total_cmp(&y.0))
        .unwrap();
    let stdout = String::from_utf8(b.stdout).unwrap() + &String::from_utf8(a.stdout).unwrap();
    assert!(
        stdout.contains(&format!("best eval_welfare.mean = {:.4} (trial {})", best.0, best.1.number)),
        "{stdout}"
    );
    let best_toml = std::fs::read_to_string(out.join("best.toml")).unwrap();
    let trial_config = std::fs::read_to_string(Path::new(&best.1.run_dir).join("config.toml")).unwrap();
    assert!(best_toml.starts_with(&format!("# Best trial {} ", best.1.number)));
    // The trial's config, judged on the base's evaluation seeds, not the budget's 2 (it kept
    // the budget's: issue 40.8).
    let (mut want, got): (toml::Table, toml::Table) = (trial_config.parse().unwrap(), best_toml.parse().unwrap());
    assert_eq!(want["train"]["eval_seeds"].as_integer(), Some(2));
    let base: toml::Table = std::fs::read_to_string(quickstart()).unwrap().parse().unwrap();
    match base["train"].get("eval_seeds") {
        Some(v) => want["train"].as_table_mut().unwrap().insert("eval_seeds".into(), v.clone()),
        None => want["train"].as_table_mut().unwrap().remove("eval_seeds"),
    };
    assert_eq!(got, want);
    assert!(best_toml.contains("evaluated on"), "{best_toml}");
    let sim = dir.join("best-sim");
    let (code, _, err) = common::mtf(&[
        "simulate",
        "--config",
        out.join("best.toml").to_str().unwrap(),
        "--seeds",
        "1",
        "--set",
        "env.rounds=5",
        "--quiet",
        "--out",
        sim.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "best.toml is a config: {err}");

    let csv = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    assert_eq!(csv.lines().count(), 9);
    for f in ["history.png", "history.svg", "params.png", "params.svg"] {
        assert!(std::fs::metadata(out.join(f)).unwrap().len() > 1000, "{f}");
    }

    // Continuing the study adds trials after the last number.
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        file.to_str().unwrap(),
        "--storage",
        &storage,
        "--study",
        "t",
        "--out",
        out.to_str().unwrap(),
        "--trials",
        "10",
    ]);
    assert_eq!(code, 0, "{err}");
    let after = rows(&db, "t");
    assert_eq!(after.len(), 10);
    assert!(after[8..].iter().all(|t| t.state != "running"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Start `mtf sweep` with `args` and kill it (-9) while its first trial trains (it has written
/// an episode into `out`).
fn kill_in_first_trial(args: &[String], out: &Path) {
    let mut child = crate::common::spawn_quiet(args);
    let started = Instant::now();
    let first = out.join("trials").join("trial-0000").join("metrics.jsonl");
    while !first.exists() || std::fs::read_to_string(&first).unwrap().is_empty() {
        assert!(started.elapsed() < Duration::from_secs(120), "the sweep never started training");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

#[test]
fn a_killed_sweep_resumes_and_its_running_trial_is_marked_interrupted() {
    let dir = tmp("killed");
    let file = sweep_file(&dir, 40);
    // A dead worker's trial is recognised by its silence: heartbeats every 0.2 s, dead after 1 s.
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("workers = 1\n", "workers = 1\nheartbeat_interval = 0.2\ngrace_period = 1.0\n");
    std::fs::write(&file, text).unwrap();
    let db = dir.join("study.db");
    let storage = format!("sqlite:{}", db.display());
    let out = dir.join("out");
    let args = |trials: &str| {
        vec![
            "sweep".to_string(),
            "--config".into(),
            file.display().to_string(),
            "--storage".into(),
            storage.clone(),
            "--study".into(),
            "k".into(),
            "--out".into(),
            out.display().to_string(),
            "--trials".into(),
            trials.into(),
            "--quiet".into(),
        ]
    };
    kill_in_first_trial(&args("2"), &out);
    assert_eq!(rows(&db, "k")[0].state, "running");
    std::thread::sleep(Duration::from_millis(1200));

    let a: Vec<String> = args("2");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, stdout, err) = mtf(&a);
    assert_eq!(code, 0, "{err}");
    let trials = rows(&db, "k");
    assert_eq!(trials[0].state, "interrupted");
    let done = trials
        .iter()
        .filter(|t| ["complete", "pruned", "failed"].contains(&t.state.as_str()))
        .count();
    assert_eq!(done, 2, "the resumed sweep ran the study's 2 trials");
    assert!(stdout.contains("1 interrupted"), "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Workers that found only running trials exited 0 with the study short (a killed worker's
/// trial stayed "running" for good). Now a worker waits until such a trial can be declared
/// stale, re-runs it, and exits only when nothing runs; `mtf sweep status` shows the stale one.
#[test]
fn a_worker_that_saw_only_a_dead_workers_trial_left_the_study_short() {
    let dir = tmp("short");
    let file = sweep_file(&dir, 40);
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("workers = 1\n", "workers = 1\nheartbeat_interval = 0.5\ngrace_period = 3.0\n");
    std::fs::write(&file, text).unwrap();
    let db = dir.join("study.db");
    let storage = format!("sqlite:{}", db.display());
    let out = dir.join("out");
    let args: Vec<String> = [
        "sweep",
        "--config",
        file.to_str().unwrap(),
        "--storage",
        &storage,
        "--study",
        "s",
        "--out",
        out.to_str().unwrap(),
        "--trials",
        "1",
        "--quiet",
    ]
    .map(String::from)
    .to_vec();
    kill_in_first_trial(&args, &out);
    // At once: the dead worker's trial still looks alive, and is the study's one trial.
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = mtf(&a);
    assert_eq!(code, 0, "{err}");
    let trials = rows(&db, "s");
    assert_eq!(trials[0].state, "interrupted", "the dead worker's trial was declared stale");
    assert_eq!(trials.len(), 2);
    assert!(
        ["complete", "pruned", "failed"].contains(&trials[1].state.as_str()),
        "{}",
        trials[1].state
    );
    // status: one line per trial and the count per state.
    let (code, status, err) = mtf(&["sweep", "status", "--study", "s", "--storage", &storage]);
    assert_eq!(code, 0, "{err}");
    assert!(
        status.contains("2 trials") && status.contains("(re-runs 0)") && status.contains("interrupted 1"),
        "{status}"
    );
    // A running trial silent past the grace period is shown stale.
    Connection::open(&db)
        .unwrap()
        .execute(
            "UPDATE trials SET state = 'running', heartbeat = heartbeat - 1000 WHERE number = 0",
            [],
        )
        .unwrap();
    let (_, status, _) = mtf(&["sweep", "status", "--study", "s", "--storage", &storage, "--grace", "60"]);
    assert!(
        status.contains("STALE: no heartbeat for") && status.contains("(1 stale)"),
        "{status}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_sweep_files_are_one_line_and_status_2() {
    let dir = tmp("bad");
    let good = std::fs::read_to_string(sweep_file(&dir, 6)).unwrap();
    let cases = [
        (good.replace("sampler = \"random\"", "sampler = \"bayes\""), "sampler"),
        (good.replace("trials = 8", "trials = 8\ntrails = 3"), "trails"),
        (
            good.replace("low = 1e-4, high = 1e-2", "low = 1e-2, high = 1e-4"),
            "params.learner.actor_critic.actor_lr",
        ),
        (
            good.replace("learner.actor_critic.actor_lr", "learner.actor_critic.actor_lrr"),
            "not a key",
        ),
        (
            good.replace("metric = \"eval_welfare.mean\"", "metric = \"welfare\""),
            "objective.metric",
        ),
        (
            good.replace("reduction_factor = 2", "reduction_factor = 1"),
            "pruner.reduction_factor",
        ),
        (good.replace(&quickstart().replace('\\', "/"), "/nonexistent/base.toml"), "base"),
        (
            good.replace("workers = 1", "workers = 1\nheartbeat_interval = 0"),
            "heartbeat_interval",
        ),
        (
            good.replace("workers = 1", "workers = 1\nheartbeat_interval = 5\ngrace_period = 5"),
            "grace_period",
        ),
        // Found before any trial runs, not after every trial failed.
        (
            good.replace("metric = \"eval_welfare.mean\"", "metric = \"eval_welfare.nope\""),
            "`eval_welfare.nope` is not a number in a run's summary.json",
        ),
        // The group's statistics are not in one run's summary.
        (
            good.replace("metric = \"eval_welfare.mean\"", "metric = \"vs_baseline.greedy.iqm\""),
            "`vs_baseline.greedy.iqm` is not in a run's summary.json",
        ),
        (
            good.replace("eval_seeds = 2", "eval_seeds = 2\nreplicates = 0"),
            "budget.replicates",
        ),
        // Used to panic with a capacity overflow inside the trials and exit 0.
        (
            good.replace(
                "[params]",
                "[params]\n\"train.checkpoint_every\" = { type = \"int\", low = 1, high = 9223372036854775807 }",
            ),
            "within +-2^53",
        ),
    ];
    for (k, (text, needle)) in cases.iter().enumerate() {
        let p = dir.join(format!("bad-{k}.toml"));
        std::fs::write(&p, text).unwrap();
        let db = format!("sqlite:{}", dir.join("bad.db").display());
        let (code, _, err) = mtf(&["sweep", "--config", p.to_str().unwrap(), "--storage", &db, "--quiet"]);
        assert_eq!(code, 2, "case {k}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "case {k}: {err}");
        assert!(err.contains(needle) && err.contains(p.to_str().unwrap()), "case {k}: {err}");
    }
    let p = dir.join("sweep.toml");
    let (code, _, err) = mtf(&["sweep", "--config", p.to_str().unwrap(), "--storage", "postgres://x"]);
    assert_eq!(code, 2);
    assert!(err.contains("--storage"), "{err}");
    // An in-memory database "succeeded" with 0 trials.
    let (code, _, err) = mtf(&["sweep", "--config", p.to_str().unwrap(), "--storage", "sqlite::memory:"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("in-memory databases are not shared"), "{err}");
    // A file that is not an SQLite database names the file and is the input's fault.
    let junk = dir.join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &format!("sqlite:{}", junk.display()),
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(junk.to_str().unwrap()) && err.contains("not a database"), "{err}");
    // A study whose trial numbers are exhausted said "returned Real(9.2e18) where an integer
    // was expected".
    let full = dir.join("full.db");
    let full_url = format!("sqlite:{}", full.display());
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &full_url,
        "--trials",
        "1",
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    Connection::open(&full)
        .unwrap()
        .execute("UPDATE trials SET number = 9223372036854775807", [])
        .unwrap();
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &full_url,
        "--trials",
        "3",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("trial numbers reach 2^63 - 1") && err.trim().lines().count() == 1,
        "{err}"
    );
    // A database of another schema failed mid-study with "no such column" and no file named.
    let other = dir.join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE trials (study TEXT, number INTEGER, state TEXT);")
        .unwrap();
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &format!("sqlite:{}", other.display()),
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(other.to_str().unwrap()) && err.contains("table `trials` has no column `params`"),
        "{err}"
    );
    // A --set that would move the trials to the other stack trained them by the base's (their
    // config.toml saying the other): refused in one line, nothing trained.
    let moved = dir.join("moved");
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &format!("sqlite:{}", dir.join("moved.db").display()),
        "--set",
        "env.stack=\"seam\"",
        "--out",
        moved.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("env.stack") && err.trim().lines().count() == 1, "{err}");
    assert!(!moved.join("trials").exists(), "a refused sweep left its trials folder");
    assert!(!dir.join("moved.db").exists(), "the study was opened");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A sweep over training replicates: every trial is a run group and its value the group's
/// statistic across replicates.
#[test]
fn trials_over_replicates_score_the_group() {
    let dir = tmp("replicates");
    let text = std::fs::read_to_string(sweep_file(&dir, 2))
        .unwrap()
        .replace("metric = \"eval_welfare.mean\"", "metric = \"vs_baseline.greedy.iqm\"")
        .replace("eval_seeds = 2", "eval_seeds = 2\nreplicates = 2")
        .replace("trials = 8", "trials = 2")
        .replace(", \"bogus\"", "")
        .replace("kind = \"successive_halving\"", "kind = \"none\"");
    let p = dir.join("replicates.toml");
    std::fs::write(&p, text).unwrap();
    let db = dir.join("r.db");
    let out = dir.join("runs");
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        p.to_str().unwrap(),
        "--storage",
        &format!("sqlite:{}", db.display()),
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let rows = rows(&db, "replicates");
    assert_eq!(rows.len(), 2);
    for r in &rows {
        assert_eq!(r.state, "complete", "{} {:?}", r.state, r.error);
        let run = Path::new(&r.run_dir);
        assert!(run.join("replicate-1").join("summary.json").is_file(), "{}", run.display());
        let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
        assert_eq!(summary["replicates"], 2);
        assert_eq!(r.value, summary["vs_baseline"]["greedy"]["iqm"].as_f64(), "{}", r.params);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn three_sweeps_started_at_once_on_a_fresh_study_failed_with_database_is_locked() {
    let dir = tmp("race");
    let file = sweep_file(&dir, 2);
    for round in 0..4 {
        let db = format!("sqlite:{}", dir.join(format!("race-{round}.db")).display());
        let out = dir.join(format!("out-{round}"));
        let children: Vec<_> = (0..3)
            .map(|_| {
                Command::new(env!("CARGO_BIN_EXE_mtf"))
                    .args([
                        "sweep",
                        "--config",
                        file.to_str().unwrap(),
                        "--storage",
                        &db,
                        "--trials",
                        "3",
                        "--quiet",
                    ])
                    .args(["--out", out.to_str().unwrap(), "--set", "env.rounds=10"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "round {round}: {}", String::from_utf8_lossy(&o.stderr));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_interrupted_defaults_trial_was_never_retried() {
    let dir = tmp("defaults");
    let file = sweep_file(&dir, 2);
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "\"learner.actor_critic.features\" = { type = \"categorical\", choices = [\"spec\", \"all\", \"bogus\"] }\n",
        "",
    );
    std::fs::write(&file, text).unwrap();
    let db = dir.join("d.db");
    let storage = format!("sqlite:{}", db.display());
    let args = [
        "sweep",
        "--config",
        file.to_str().unwrap(),
        "--storage",
        &storage,
        "--quiet",
        "--set",
        "env.rounds=10",
    ];
    let (code, _, err) = mtf(&[&args[..], &["--trials", "2"]].concat());
    assert_eq!(code, 0, "{err}");
    // Trial 0 (the defaults) died with its process after trial 1 was claimed.
    let c = Connection::open(&db).unwrap();
    c.execute("UPDATE trials SET state = 'interrupted' WHERE number = 0", []).unwrap();
    drop(c);
    let (code, _, err) = mtf(&[&args[..], &["--trials", "2"]].concat());
    assert_eq!(code, 0, "{err}");
    let r = rows(&db, "sweep");
    assert_eq!(r.len(), 3, "one more trial ran");
    assert_eq!(r[2].params, r[0].params, "the defaults trial ran again");
    assert_eq!(r[2].state, "complete");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A PostgreSQL port that accepts and never answers held `mtf sweep` for good; now the
/// connect gives up after `connect_timeout` (here 2 s), naming the host, exit 1 (the world's
/// failure). Needs no server: a listener that never speaks.
#[test]
fn a_silent_postgres_server_blocked_the_sweep_for_good() {
    let dir = tmp("silent");
    let p = sweep_file(&dir, 2);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accept and hold every connection, silently.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    let url = format!("postgresql://mtf@127.0.0.1:{port}/study?connect_timeout=2");
    let start = Instant::now();
    let (code, _, err) = mtf(&["sweep", "--config", p.to_str().unwrap(), "--storage", &url, "--quiet"]);
    let took = start.elapsed();
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("127.0.0.1") && err.contains("no answer from the server within 2 s"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    // A 10 KB URL and a device as the SQLite file are the input's fault, one line, exit 2.
    let long = format!("postgresql://mtf@127.0.0.1:{port}/{}", "x".repeat(10_000));
    for (storage, says) in [(long.as_str(), "more than the 2048"), ("sqlite:/dev/null", "not a regular file")] {
        let (code, _, err) = mtf(&["sweep", "--config", p.to_str().unwrap(), "--storage", storage, "--quiet"]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_space_over_a_learner_the_trials_do_not_run_is_refused_and_a_per_class_space_runs() {
    let dir = tmp("ignored-keys");
    let file = sweep_file(&dir, 2);
    // The file searches actor-critic keys; the command line trains PPO: nothing would change.
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        file.to_str().unwrap(),
        "--set",
        "learner.kind=ppo",
        "--out",
        dir.join("o").to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("learner.actor_critic.actor_lr, learner.actor_critic.features") && err.contains("they train ppo"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // The command line chooses the learner the space searches: accepted.
    let ppo = dir.join("ppo.toml");
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"learner.actor_critic.actor_lr\"", "\"learner.ppo.lr\"")
        .replace(
            "\"learner.actor_critic.features\" = { type = \"categorical\", choices = [\"spec\", \"all\", \"bogus\"] }",
            "",
        )
        .replace("trials = 8", "trials = 1");
    assert!(!text.contains("actor_critic.actor_lr") && !text.contains("bogus"), "{text}");
    std::fs::write(&ppo, text).unwrap();
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        ppo.to_str().unwrap(),
        "--set",
        "learner.kind=ppo",
        "--storage",
        &format!("sqlite:{}", dir.join("ppo.db").display()),
        "--out",
        dir.join("ppo").to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    // A sweep in the valuation world follows its own per-episode figure (the surplus).
    let auction = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../configs/auctions/second-price.toml")
        .canonicalize()
        .unwrap();
    let vfile = dir.join("valuations.toml");
    std::fs::write(
        &vfile,
        format!(
            "base = \"{}\"\nsampler = \"random\"\ntrials = 2\nworkers = 1\n[objective]\nmetric = \"eval.surplus_per_bidder_item.mean\"\ndirection = \"maximize\"\n[budget]\nepisodes = 2\neval_seeds = 1\nset = [\"learner.kind=hedge\"]\n[pruner]\nkind = \"median\"\nwarmup_episodes = 1\n[params]\n\"learner.hedge.reward\" = {{ type = \"categorical\", choices = [\"net\", \"utility\"] }}\n",
            auction.display()
        ),
    )
    .unwrap();
    let (code, out, err) = mtf(&[
        "sweep",
        "--config",
        vfile.to_str().unwrap(),
        "--storage",
        &format!("sqlite:{}", dir.join("v.db").display()),
        "--out",
        dir.join("v").to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 complete"), "{out}");
    // The repository's per-class space: a level per weight class, the best as a policy spec.
    let per_class = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/sweeps/per-class.toml");
    let (code, out, err) = mtf(&[
        "sweep",
        "--config",
        per_class.to_str().unwrap(),
        "--trials",
        "3",
        "--workers",
        "1",
        "--storage",
        &format!("sqlite:{}", dir.join("pc.db").display()),
        "--set",
        "env.rounds=40",
        "--out",
        dir.join("pc").to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let spec = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("as a policy: "))
        .expect(&out)
        .to_string();
    assert!(
        spec.starts_with("fixed:w1=") && spec.contains(",w2=") && spec.contains(",w4="),
        "{spec}"
    );
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        &quickstart(),
        "--policy",
        &spec,
        "--seeds",
        "1",
        "--quiet",
        "--out",
        dir.join("s").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

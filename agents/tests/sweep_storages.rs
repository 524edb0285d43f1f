//! `mtf sweep` on both study storages, with real processes: four workers started at once on
//! one study (20 times), a worker killed with SIGKILL mid-trial (its trial goes stale and is
//! continued from its checkpoint by another worker), a worker stopped with SIGTERM (it
//! interrupts its trial, which another worker continues at once). PostgreSQL runs in a throwaway server that
//! `scripts/postgres-test-server.sh` starts and stops.

use crate::common;
use agents::sweep::file::Sweep;
use agents::sweep::storage::db::Location;
use agents::sweep::storage::{Liveness, Storage, Trial, TrialState};
use common::{mtf, quickstart};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A sweep of short actor-critic trials (`episodes` of 20 rounds each), with the given
/// heartbeat settings.
fn sweep_file(dir: &Path, episodes: u64, heartbeat: &str) -> PathBuf {
    let text = format!(
        r#"base = "{base}"
sampler = "random"
seed = 5
trials = 8
workers = 1
{heartbeat}

[budget]
episodes = {episodes}
eval_seeds = 1
set = ["env.rounds=20", "learner.actor_critic.actor_hidden=16"]

[params]
"learner.actor_critic.actor_lr" = {{ type = "float", low = 1e-4, high = 1e-2, log = true }}
"#,
        base = quickstart().replace('\\', "/")
    );
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(format!("sweep-{episodes}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

fn trials(file: &Path, storage: &str, study: &str) -> Vec<Trial> {
    let sweep = Sweep::load(file).unwrap();
    let loc = Location::parse(storage).unwrap();
    Storage::open(&loc, study, &sweep.fingerprint(), Liveness::default())
        .unwrap()
        .trials()
        .unwrap()
}

fn spawn(file: &Path, storage: &str, study: &str, out: &Path, trials: usize) -> Child {
    Command::new(env!("CARGO_BIN_EXE_mtf"))
        .args(["sweep", "--config", file.to_str().unwrap(), "--storage", storage, "--study", study])
        .args(["--out", out.to_str().unwrap(), "--trials", &trials.to_string(), "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finished(t: &Trial) -> bool {
    matches!(t.state, TrialState::Complete | TrialState::Pruned | TrialState::Failed)
}

/// Four processes on one fresh study, started together, `reps` times: every run succeeds,
/// trial numbers are unique and gap-free, exactly `--trials` trials ran, none twice.
fn four_at_once(dir: &Path, storage: &dyn Fn(usize) -> String, reps: usize) {
    let file = sweep_file(dir, 1, "");
    for rep in 0..reps {
        let (s, study) = (storage(rep), format!("four-{rep}"));
        let out = dir.join(&study);
        let children: Vec<Child> = (0..4).map(|_| spawn(&file, &s, &study, &out, 8)).collect();
        for c in children {
            let o = c.wait_with_output().unwrap();
            assert!(o.status.success(), "repetition {rep}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let t = trials(&file, &s, &study);
        let numbers: Vec<u64> = t.iter().map(|t| t.number).collect();
        assert_eq!(numbers, (0..8).collect::<Vec<u64>>(), "repetition {rep}: unique, gap-free numbers");
        assert!(t.iter().all(finished), "repetition {rep}: every trial finished");
        assert!(t.iter().all(|t| t.state == TrialState::Complete), "repetition {rep}");
        let dirs: BTreeSet<&str> = t.iter().map(|t| t.run_dir.as_str()).collect();
        assert_eq!(dirs.len(), 8, "repetition {rep}: one run directory per trial");
    }
}

fn wait_for_first_episode(out: &Path, child: &mut Child) {
    let first = out.join("trials").join("trial-0000").join("metrics.jsonl");
    let started = Instant::now();
    while !first.exists() || std::fs::read_to_string(&first).unwrap().is_empty() {
        assert!(child.try_wait().unwrap().is_none(), "the sweep ended before training");
        assert!(started.elapsed() < Duration::from_secs(120), "the sweep never started training");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A worker killed mid-trial: after the grace period its trial is stale; the next worker
/// marks it interrupted and runs its parameters again, once, to completion.
fn sigkill(dir: &Path, storage: &str) {
    let file = sweep_file(dir, 60, "heartbeat_interval = 0.2\ngrace_period = 1.0");
    let out = dir.join("killed");
    let mut a = spawn(&file, storage, "killed", &out, 2);
    wait_for_first_episode(&out, &mut a);
    a.kill().unwrap();
    a.wait().unwrap();
    assert_eq!(trials(&file, storage, "killed")[0].state, TrialState::Running);
    std::thread::sleep(Duration::from_millis(1300));
    let b = spawn(&file, storage, "killed", &out, 2).wait_with_output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let t = trials(&file, storage, "killed");
    assert_eq!(t[0].state, TrialState::Interrupted);
    assert!(t[0].error.as_deref().unwrap().starts_with("stale"), "{:?}", t[0].error);
    let retries: Vec<&Trial> = t.iter().filter(|x| x.retry_of == Some(0)).collect();
    assert_eq!(retries.len(), 1, "re-queued exactly once");
    assert_eq!((retries[0].state, &retries[0].params), (TrialState::Complete, &t[0].params));
    assert_eq!(t.iter().filter(|x| finished(x)).count(), 2, "the study's 2 trials, no more");
    assert_eq!(
        t.iter().filter(|x| x.params == t[0].params && finished(x)).count(),
        1,
        "no duplicate"
    );
}

/// The re-run continued the interrupted trial from its checkpoint: its episodes begin with the
/// interrupted run's (resume is exact) and go on to the budget.
fn continued(orig: &Trial, retry: &Trial, episodes: usize) {
    let read = |t: &Trial| std::fs::read_to_string(Path::new(&t.run_dir).join("metrics.jsonl")).unwrap();
    let (before, after) = (read(orig), read(retry));
    let before: Vec<&str> = before.lines().collect();
    let after: Vec<&str> = after.lines().collect();
    assert!(
        !before.is_empty() && before.len() < episodes,
        "interrupted after {} episodes",
        before.len()
    );
    assert_eq!(after.len(), episodes);
    // Up to the checkpoint (every episode is checkpointed; a kill may lose the last line).
    let k = before.len() - 1;
    assert_eq!(after[..k], before[..k], "the re-run continued the interrupted run");
}

/// SIGTERM (a preemption): the worker stops after a checkpoint, marks its trial interrupted
/// and exits 0; the next worker continues that trial at once (no grace period to wait out).
fn sigterm(dir: &Path, storage: &str) {
    let file = sweep_file(dir, 60, "");
    let out = dir.join("term");
    let mut a = spawn(&file, storage, "term", &out, 2);
    wait_for_first_episode(&out, &mut a);
    let sent = Instant::now();
    assert!(Command::new("kill")
        .args(["-TERM", &a.id().to_string()])
        .status()
        .unwrap()
        .success());
    let status = a.wait().unwrap();
    assert!(status.success(), "a SIGTERM'd worker exits 0: {status:?}");
    assert!(sent.elapsed() < Duration::from_secs(30), "it stopped after the episode it was in");
    let t = trials(&file, storage, "term");
    assert_eq!(t[0].state, TrialState::Interrupted);
    assert!(t[0].error.as_deref().unwrap().contains("SIGTERM"), "{:?}", t[0].error);
    assert!(out.join("trials/trial-0000/checkpoints/latest.ckpt").exists(), "it checkpointed");
    // Another worker, with the default one-minute heartbeat, picks it up right away.
    let b = spawn(&file, storage, "term", &out, 2).wait_with_output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let t = trials(&file, storage, "term");
    let retry = t
        .iter()
        .find(|x| x.retry_of == Some(0))
        .expect("the interrupted trial was re-queued");
    assert_eq!((retry.state, &retry.params), (TrialState::Complete, &t[0].params));
    assert_eq!(t.iter().filter(|x| finished(x)).count(), 2);
    continued(&t[0], retry, 60);
}

#[test]
fn sqlite_four_workers_at_once_twenty_times() {
    let dir = common::tmp("storages", "sqlite-four");
    let db = |rep: usize| format!("sqlite:{}", dir.join(format!("s-{rep}.db")).display());
    four_at_once(&dir, &db, 20);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sqlite_killed_and_terminated_workers_trials_are_re_run() {
    let dir = common::tmp("storages", "sqlite-signals");
    sigkill(&dir.join("k"), &format!("sqlite:{}", dir.join("k.db").display()));
    sigterm(&dir.join("t"), &format!("sqlite:{}", dir.join("t.db").display()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// The throwaway server, stopped when dropped (also when a check fails).
struct Server {
    dir: common::Tmp,
    url: String,
}

impl Server {
    fn start() -> Server {
        let dir = common::tmp("storages", "postgres-server");
        std::fs::create_dir_all(&dir).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres-test-server.sh");
        let out = Command::new("bash").arg(&script).arg("start").arg(&dir).output().unwrap();
        assert!(
            out.status.success(),
            "starting PostgreSQL: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Server { dir, url }
    }
}

impl Server {
    /// An immediate shutdown and a start of the same server (a crash and a recovery, as its
    /// clients see it).
    fn restart(&self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres-test-server.sh");
        let out = Command::new("bash").arg(&script).arg("restart").arg(&self.dir).output().unwrap();
        assert!(
            out.status.success(),
            "restarting PostgreSQL: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A PostgreSQL restart mid-sweep killed the worker: it now reconnects (backoff, up to
/// `reconnect_timeout`) and finishes the study.
fn server_restart(dir: &Path, server: &Server) {
    let file = sweep_file(dir, 60, "heartbeat_interval = 0.2\ngrace_period = 30.0");
    let out = dir.join("restart");
    let mut a = spawn(&file, &server.url, "restart", &out, 2);
    wait_for_first_episode(&out, &mut a);
    server.restart();
    let a = a.wait_with_output().unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let t = trials(&file, &server.url, "restart");
    assert_eq!(
        t.iter().filter(|x| finished(x)).count(),
        2,
        "{:?}",
        t.iter().map(|x| x.state).collect::<Vec<_>>()
    );
}

impl Drop for Server {
    fn drop(&mut self) {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/postgres-test-server.sh");
        let _ = Command::new("bash").arg(&script).arg("stop").arg(&self.dir).status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn postgres_studies_behave_like_sqlite_ones() {
    let server = Server::start();
    let dir = common::tmp("storages", "postgres");
    let url = server.url.clone();
    four_at_once(&dir.join("four"), &|_| url.clone(), 20);
    sigkill(&dir.join("k"), &server.url);
    sigterm(&dir.join("t"), &server.url);
    server_restart(&dir.join("r"), &server);

    // Bad storages: one line, no password echoed; a server out of reach is the world's
    // failure (exit 1: the study in it is intact), a malformed URL or a database that does not
    // exist the input's (exit 2).
    let file = sweep_file(&dir.join("bad"), 1, "");
    let f = file.to_str().unwrap();
    let (base, _) = server.url.rsplit_once('/').unwrap();
    let no_such_db = format!("{}/nosuchdb", base.replacen("mtf@", "mtf:wrong@", 1));
    for (storage, want, status) in [
        ("postgresql://mtf:secret@127.0.0.1:1/mtf", "postgresql://mtf:***@127.0.0.1:1/mtf", 1),
        (
            "postgresql://127.0.0.1/mtf",
            "expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DB",
            2,
        ),
        (no_such_db.as_str(), "nosuchdb", 2),
    ] {
        let (code, _, err) = mtf(&["sweep", "--config", f, "--storage", storage, "--quiet"]);
        assert_eq!(code, status, "{storage}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(want) && !err.contains("secret") && !err.contains(":wrong@"), "{err}");
    }
    // Another search space under an existing study's name.
    let other = std::fs::read_to_string(&file).unwrap().replace("1e-2", "2e-2");
    let other_file = dir.join("bad/other.toml");
    std::fs::write(&other_file, other).unwrap();
    let (code, _, err) = mtf(&[
        "sweep",
        "--config",
        other_file.to_str().unwrap(),
        "--storage",
        &server.url,
        "--study",
        "four-0",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("different search space"), "{err}");
    // A database of another schema version.
    let mut c = postgres::Client::connect(&server.url, postgres::NoTls).unwrap();
    c.execute("UPDATE mtf_meta SET value = '9' WHERE key = 'schema_version'", &[])
        .unwrap();
    let (code, _, err) = mtf(&["sweep", "--config", f, "--storage", &server.url, "--study", "v"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("schema version 9"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

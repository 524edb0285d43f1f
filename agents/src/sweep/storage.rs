//! Studies in SQLite: trials, their parameters, states, objective values and per-episode
//! intermediate values. Several processes (and several workers in each) share one file: a trial
//! is claimed inside a `BEGIN IMMEDIATE` transaction (one writer at a time; the others wait on
//! the busy timeout), which reads the history, proposes, and inserts the new trial with the next
//! number, so no two workers ever get the same trial. A trial left `running` by a process that
//! no longer exists (killed) is marked `interrupted` by the next claim and does not count
//! towards the study's trials, so a killed sweep resumes where it stopped.

use super::space::Value;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A trial's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrialState {
    /// Being trained by a live worker.
    Running,
    /// Finished with an objective value.
    Complete,
    /// Stopped early by the pruner.
    Pruned,
    /// Its training run failed (the error is recorded).
    Failed,
    /// Its process died while it ran; it does not count towards the study's trials.
    Interrupted,
}

impl TrialState {
    /// The name stored and printed.
    pub fn as_str(self) -> &'static str {
        match self {
            TrialState::Running => "running",
            TrialState::Complete => "complete",
            TrialState::Pruned => "pruned",
            TrialState::Failed => "failed",
            TrialState::Interrupted => "interrupted",
        }
    }

    fn parse(s: &str) -> TrialState {
        match s {
            "complete" => TrialState::Complete,
            "pruned" => TrialState::Pruned,
            "failed" => TrialState::Failed,
            "interrupted" => TrialState::Interrupted,
            _ => TrialState::Running,
        }
    }
}

/// One trial as stored.
#[derive(Clone, Debug)]
pub struct Trial {
    /// Trial number, unique in the study.
    pub number: u64,
    /// State.
    pub state: TrialState,
    /// Parameter values.
    pub params: BTreeMap<String, Value>,
    /// Objective value (complete trials).
    pub value: Option<f64>,
    /// Error (failed trials).
    pub error: Option<String>,
    /// Its run directory.
    pub run_dir: String,
    /// Seconds from claim to finish.
    pub seconds: Option<f64>,
    /// Last step (episodes) reported, and the intermediate value there.
    pub last_step: Option<(u64, f64)>,
}

/// A study in an SQLite file; one per worker thread (connections are not shared).
pub struct Storage {
    conn: Connection,
    study: String,
}

fn now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// This machine's name (a pid means something only on its own host).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// A `running` trial whose process is gone. With `/proc` (Linux) that is exact for trials of
/// this host; elsewhere, and for other hosts, a trial silent for an hour counts as gone.
fn is_dead(trial_host: &str, pid: i64, heartbeat: f64) -> bool {
    if trial_host == host() && Path::new("/proc/self").exists() {
        return !Path::new(&format!("/proc/{pid}")).exists();
    }
    now() - heartbeat > 3600.0
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS studies (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    study TEXT NOT NULL,
    number INTEGER NOT NULL,
    state TEXT NOT NULL,
    params TEXT NOT NULL,
    value REAL,
    error TEXT,
    run_dir TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started REAL NOT NULL,
    heartbeat REAL NOT NULL,
    finished REAL,
    PRIMARY KEY (study, number)
);
CREATE TABLE IF NOT EXISTS steps (
    study TEXT NOT NULL,
    number INTEGER NOT NULL,
    step INTEGER NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (study, number, step)
);
";

/// A storage error that names the database file. The input is at fault (exit 2) when the file
/// is not an SQLite database, is read-only, cannot be opened, or lacks the study schema.
fn db_error(path: &Path, doing: &str, e: rusqlite::Error) -> crate::Error {
    use rusqlite::ErrorCode as C;
    let msg = format!("{}: {doing} the study database: {e}", path.display());
    let user_fault = match &e {
        rusqlite::Error::SqliteFailure(f, _) => matches!(
            f.code,
            C::NotADatabase | C::ReadOnly | C::CannotOpen | C::PermissionDenied | C::DatabaseCorrupt | C::DiskFull
        ),
        rusqlite::Error::SqlInputError { .. } => true,
        _ => msg.contains("no such column") || msg.contains("no such table"),
    };
    if user_fault {
        crate::error::user(msg)
    } else {
        crate::error::failed(msg)
    }
}

/// Name the study database in an error from a study operation (claims, reports, reads): a
/// storage error becomes `PATH: using the study database: ...`, exit 2 when the file is at
/// fault (see [`db_error`]); other errors pass unchanged.
pub fn name_db(e: crate::Error, path: &Path) -> crate::Error {
    match e {
        crate::Error::Storage(sql) => db_error(path, "using", sql),
        other => other,
    }
}

/// Every column this storage reads and writes, per table: a database made by something else
/// (or by a future version) is refused at open, naming the file, instead of failing in the
/// middle of a study with "no such column".
const COLUMNS: &[(&str, &[&str])] = &[
    ("studies", &["name", "fingerprint", "created"]),
    (
        "trials",
        &[
            "study",
            "number",
            "state",
            "params",
            "value",
            "error",
            "run_dir",
            "host",
            "pid",
            "started",
            "heartbeat",
            "finished",
        ],
    ),
    ("steps", &["study", "number", "step", "value"]),
];

fn check_schema(conn: &Connection, path: &Path) -> crate::Result<()> {
    for (table, want) in COLUMNS {
        let mut q = conn
            .prepare(&format!("PRAGMA table_info({table})"))
            .map_err(|e| db_error(path, "reading the schema of", e))?;
        let have: Vec<String> = q
            .query_map([], |r| r.get::<_, String>(1))
            .and_then(|rows| rows.collect())
            .map_err(|e| db_error(path, "reading the schema of", e))?;
        if let Some(missing) = want.iter().find(|c| !have.iter().any(|h| h == *c)) {
            return Err(crate::error::user(format!(
                "{}: table `{table}` has no column `{missing}`: not a study database of this version of mtf (choose another --storage)",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Run `f` until it does not fail with SQLITE_BUSY / SQLITE_LOCKED, for up to two minutes.
fn retry_busy<T>(path: &Path, mut f: impl FnMut() -> rusqlite::Result<T>) -> crate::Result<T> {
    let start = std::time::Instant::now();
    let mut wait = Duration::from_millis(5);
    loop {
        match f() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if matches!(e.code, rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
                    && start.elapsed() < Duration::from_secs(120) =>
            {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_millis(200));
            }
            other => return other.map_err(|e| db_error(path, "opening", e)),
        }
    }
}

/// What a claim's proposal sees: the trial number it will get, how many trials count so far,
/// and the completed trials' (parameters, value).
pub struct ClaimContext<'a> {
    /// The new trial's number.
    pub number: u64,
    /// Trials that count (not interrupted) before this one.
    pub index: usize,
    /// Completed trials.
    pub completed: &'a [(BTreeMap<String, Value>, f64)],
    /// Parameters of every trial that counts (running, complete, pruned, failed).
    pub live: &'a [BTreeMap<String, Value>],
}

impl Storage {
    /// Open (creating if needed) `study` in the SQLite file at `path`. A study that exists with
    /// another fingerprint (search space, objective) is an error.
    pub fn open(path: &Path, study: &str, fingerprint: &str) -> crate::Result<Storage> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| crate::run_dir::io_error(dir, "creating", e))?;
        }
        let mut conn = Connection::open(path).map_err(|e| db_error(path, "opening", e))?;
        conn.busy_timeout(Duration::from_secs(120))
            .map_err(|e| db_error(path, "opening", e))?;
        // WAL lets readers (progress, pruners) proceed while a claim writes. Switching to WAL
        // needs the database to itself and SQLite does not wait on the busy handler for it, so
        // several processes opening a fresh study at once retry here instead of failing.
        retry_busy(path, || conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(())))?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| db_error(path, "opening", e))?;
        tx.execute_batch(SCHEMA).map_err(|e| db_error(path, "creating the schema in", e))?;
        check_schema(&tx, path)?;
        let existing: Option<String> = tx
            .query_row("SELECT fingerprint FROM studies WHERE name = ?1", [study], |r| r.get(0))
            .optional()?;
        match existing {
            Some(f) if f != fingerprint => {
                return Err(crate::error::user(format!(
                    "{}: study `{study}` was created with a different search space or objective; continue it with the same sweep file or choose another --study",
                    path.display()
                )))
            }
            Some(_) => {}
            None => {
                tx.execute(
                    "INSERT INTO studies (name, fingerprint, created) VALUES (?1, ?2, ?3)",
                    params![study, fingerprint, now()],
                )?;
            }
        }
        tx.commit()?;
        Ok(Storage {
            conn,
            study: study.to_string(),
        })
    }

    /// Claim the next trial, unless `target` trials already count: mark dead workers' trials
    /// interrupted, ask `propose` for parameters (None: nothing left, e.g. a finished grid), and
    /// insert the trial as running, all in one write transaction.
    pub fn claim(
        &mut self,
        target: usize,
        run_dir: impl Fn(u64) -> String,
        propose: impl FnOnce(&ClaimContext) -> Option<BTreeMap<String, Value>>,
    ) -> crate::Result<Option<(u64, BTreeMap<String, Value>)>> {
        let study = self.study.clone();
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let running: Vec<(i64, String, i64, f64)> = {
            let mut q = tx.prepare("SELECT number, host, pid, heartbeat FROM trials WHERE study = ?1 AND state = 'running'")?;
            let rows = q.query_map([&study], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
            rows.collect::<Result<_, _>>()?
        };
        for (number, h, pid, beat) in running {
            if is_dead(&h, pid, beat) {
                tx.execute(
                    "UPDATE trials SET state = 'interrupted', error = 'its process died', finished = ?3 WHERE study = ?1 AND number = ?2",
                    params![study, number, now()],
                )?;
            }
        }
        let index: i64 = tx.query_row(
            "SELECT COUNT(*) FROM trials WHERE study = ?1 AND state != 'interrupted'",
            [&study],
            |r| r.get(0),
        )?;
        if index as usize >= target {
            return Ok(None);
        }
        let number: i64 = tx.query_row("SELECT COALESCE(MAX(number) + 1, 0) FROM trials WHERE study = ?1", [&study], |r| {
            r.get(0)
        })?;
        let number = number as u64;
        let completed: Vec<(BTreeMap<String, Value>, f64)> = {
            let mut q = tx.prepare("SELECT params, value FROM trials WHERE study = ?1 AND state = 'complete' ORDER BY number")?;
            let rows = q.query_map([&study], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))?;
            let mut out = Vec::new();
            for row in rows {
                let (p, v) = row?;
                out.push((decode_params(&p)?, v));
            }
            out
        };
        let live: Vec<BTreeMap<String, Value>> = {
            let mut q = tx.prepare("SELECT params FROM trials WHERE study = ?1 AND state != 'interrupted' ORDER BY number")?;
            let rows = q.query_map([&study], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(decode_params(&row?)?);
            }
            out
        };
        let ctx = ClaimContext {
            number,
            index: index as usize,
            completed: &completed,
            live: &live,
        };
        let Some(params) = propose(&ctx) else {
            return Ok(None);
        };
        let t = now();
        tx.execute(
            "INSERT INTO trials (study, number, state, params, run_dir, host, pid, started, heartbeat) VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?7)",
            params![
                study,
                number as i64,
                serde_json::to_string(&params)?,
                run_dir(number),
                host(),
                i64::from(std::process::id()),
                t
            ],
        )?;
        tx.commit()?;
        Ok(Some((number, params)))
    }

    /// Record a trial's intermediate value at `step` (episodes done).
    pub fn report(&mut self, number: u64, step: u64, value: f64) -> crate::Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT OR REPLACE INTO steps (study, number, step, value) VALUES (?1, ?2, ?3, ?4)",
            params![self.study, number as i64, step as i64, value],
        )?;
        tx.execute(
            "UPDATE trials SET heartbeat = ?3 WHERE study = ?1 AND number = ?2",
            params![self.study, number as i64, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every trial's intermediate value at `step`, by state filter (`None`: all states).
    pub fn values_at(&self, step: u64, state: Option<TrialState>) -> crate::Result<Vec<f64>> {
        let mut q = self.conn.prepare(
            "SELECT s.value FROM steps s JOIN trials t ON t.study = s.study AND t.number = s.number
             WHERE s.study = ?1 AND s.step = ?2 AND (?3 IS NULL OR t.state = ?3)",
        )?;
        let rows = q.query_map(params![self.study, step as i64, state.map(TrialState::as_str)], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Completed trials so far.
    pub fn completed(&self) -> crate::Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM trials WHERE study = ?1 AND state = 'complete'",
            [&self.study],
            |r| r.get(0),
        )?;
        Ok(n as usize)
    }

    /// Close a trial.
    pub fn finish(&mut self, number: u64, state: TrialState, value: Option<f64>, error: Option<&str>) -> crate::Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE trials SET state = ?3, value = ?4, error = ?5, finished = ?6 WHERE study = ?1 AND number = ?2",
            params![self.study, number as i64, state.as_str(), value, error, now()],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Every trial of the study, by number.
    pub fn trials(&self) -> crate::Result<Vec<Trial>> {
        let mut q = self.conn.prepare(
            "SELECT number, state, params, value, error, run_dir, started, finished,
                    (SELECT step FROM steps s WHERE s.study = t.study AND s.number = t.number ORDER BY step DESC LIMIT 1),
                    (SELECT value FROM steps s WHERE s.study = t.study AND s.number = t.number ORDER BY step DESC LIMIT 1)
             FROM trials t WHERE study = ?1 ORDER BY number",
        )?;
        let rows = q.query_map([&self.study], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<f64>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, String>(5)?,
                r.get::<_, f64>(6)?,
                r.get::<_, Option<f64>>(7)?,
                r.get::<_, Option<i64>>(8)?,
                r.get::<_, Option<f64>>(9)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (number, state, params, value, error, run_dir, started, finished, step, at) = row?;
            out.push(Trial {
                number: number as u64,
                state: TrialState::parse(&state),
                params: decode_params(&params)?,
                value,
                error,
                run_dir,
                seconds: finished.map(|f| f - started),
                last_step: step.map(|s| s as u64).zip(at),
            });
        }
        Ok(out)
    }
}

fn decode_params(json: &str) -> crate::Result<BTreeMap<String, Value>> {
    serde_json::from_str(json).map_err(|e| crate::error::user(format!("a stored trial's parameters are not valid ({e}): {json}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mtf-storage-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d.join("study.db")
    }

    fn one(x: f64) -> BTreeMap<String, Value> {
        BTreeMap::from([("x".to_string(), Value::Float(x))])
    }

    #[test]
    fn concurrent_claims_get_unique_numbers_and_stop_at_the_target() {
        let path = db("claims");
        Storage::open(&path, "s", "fp").unwrap();
        let claimed = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for w in 0..4 {
                let (path, claimed) = (&path, &claimed);
                s.spawn(move || {
                    let mut st = Storage::open(path, "s", "fp").unwrap();
                    while let Some((n, _)) = st.claim(25, |n| format!("t{n}"), |c| Some(one(c.index as f64))).unwrap() {
                        st.report(n, 1, w as f64).unwrap();
                        st.finish(n, TrialState::Complete, Some(n as f64), None).unwrap();
                        claimed.lock().unwrap().push(n);
                    }
                });
            }
        });
        let mut got = claimed.into_inner().unwrap();
        got.sort_unstable();
        assert_eq!(got, (0..25).collect::<Vec<u64>>());
        let st = Storage::open(&path, "s", "fp").unwrap();
        let trials = st.trials().unwrap();
        assert_eq!(trials.len(), 25);
        assert!(trials.iter().all(|t| t.state == TrialState::Complete && t.last_step.is_some()));
        assert_eq!(st.values_at(1, Some(TrialState::Complete)).unwrap().len(), 25);
        // Another search space under the same name is refused.
        assert!(Storage::open(&path, "s", "other").is_err());
    }

    #[test]
    fn a_dead_process_trial_is_interrupted_and_replaced() {
        let path = db("dead");
        let mut st = Storage::open(&path, "s", "fp").unwrap();
        let (n, _) = st.claim(2, |n| format!("t{n}"), |_| Some(one(0.0))).unwrap().unwrap();
        // Pretend a process that no longer exists claimed it.
        st.conn
            .execute(
                "UPDATE trials SET pid = ?1 WHERE number = ?2",
                params![i64::from(u32::MAX - 7), n as i64],
            )
            .unwrap();
        let (m, _) = st
            .claim(
                2,
                |n| format!("t{n}"),
                |c| {
                    assert_eq!(c.index, 0, "the interrupted trial does not count");
                    Some(one(1.0))
                },
            )
            .unwrap()
            .unwrap();
        assert_eq!(m, n + 1);
        let trials = st.trials().unwrap();
        assert_eq!(trials[0].state, TrialState::Interrupted);
        assert_eq!(trials[1].state, TrialState::Running);
        // Our own running trial is alive: it counts, one more fits.
        assert!(st.claim(2, |n| format!("t{n}"), |_| Some(one(2.0))).unwrap().is_some());
        assert!(st.claim(2, |n| format!("t{n}"), |_| Some(one(3.0))).unwrap().is_none());
    }
}

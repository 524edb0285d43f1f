//! Studies in a database: trials, their parameters, states, objective values and per-episode
//! intermediate values, in SQLite (one machine; the default) or PostgreSQL (workers on many
//! machines), behind one interface ([`db`]) with one set of study semantics:
//!
//! - A trial is claimed in one transaction that reads the history, proposes, and inserts the
//!   trial with the next number, so trial numbers are unique and gap-free and `--trials`
//!   counts across every worker. SQLite serialises claims with `BEGIN IMMEDIATE`; PostgreSQL
//!   locks the study's row (`SELECT ... FOR UPDATE`, as Optuna's RDB storage does), and a
//!   transaction that fails on a serialization failure or deadlock is retried.
//! - A running trial's worker records the database's clock in `heartbeat` every
//!   `heartbeat_interval` seconds. A trial whose heartbeat is older than `grace_period` is
//!   stale, whichever host ran it: the next claim marks it `interrupted` (it stops counting
//!   towards the study's trials) and re-queues it once: the next trial claimed runs its
//!   parameters again (`retry_of` names the original), the defaults trial included. A retry
//!   that goes stale is not retried again (Optuna's fail-stale-trials plus
//!   retry-failed-trials with one retry).
//! - A worker told to stop (SIGTERM) marks its trial interrupted at once, so another worker
//!   picks it up without waiting for the grace period.
//!
//! The schema carries a version (`mtf_meta.schema_version`); a database of another version, or
//! a study created with another search space, is refused with one line.

pub mod db;

use super::space::Value;
use db::{named, Db, DbError, Location, Tx, Val};
use std::collections::BTreeMap;
use std::time::Duration;

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
    /// The interrupted trial this one re-runs.
    pub retry_of: Option<u64>,
    /// When it was claimed and finished (seconds since the epoch, the database's clock).
    pub started: f64,
    /// When it finished.
    pub finished: Option<f64>,
}

/// How a study decides that a running trial's worker is gone.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Liveness {
    /// Seconds between a running trial's heartbeats.
    pub interval: f64,
    /// Seconds without a heartbeat after which a running trial is stale.
    pub grace: f64,
    /// Seconds a worker keeps reconnecting to a database that went away (a PostgreSQL
    /// restart) before it gives up.
    pub reconnect: f64,
}

impl Liveness {
    /// How long a worker keeps reconnecting (`reconnect`).
    fn patience(&self) -> Duration {
        Duration::from_secs_f64(self.reconnect)
    }
}

impl Default for Liveness {
    fn default() -> Self {
        Liveness {
            interval: 60.0,
            grace: 120.0,
            reconnect: 120.0,
        }
    }
}

/// A study in a database; one per worker thread (connections are not shared).
pub struct Storage {
    db: Db,
    loc: Location,
    study: String,
    live: Liveness,
}

/// This machine's name (recorded with each trial, for people reading the study).
fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// The schema this version reads and writes.
pub const SCHEMA_VERSION: &str = "2";

/// Tables, in the SQL both databases accept (`{int}` and `{real}` per backend).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS mtf_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS studies (
    name TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    created {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS trials (
    study TEXT NOT NULL,
    number {int} NOT NULL,
    state TEXT NOT NULL,
    params TEXT NOT NULL,
    value {real},
    error TEXT,
    run_dir TEXT NOT NULL,
    host TEXT NOT NULL,
    pid {int} NOT NULL,
    started {real} NOT NULL,
    heartbeat {real} NOT NULL,
    finished {real},
    retry_of {int},
    PRIMARY KEY (study, number)
);
CREATE TABLE IF NOT EXISTS steps (
    study TEXT NOT NULL,
    number {int} NOT NULL,
    step {int} NOT NULL,
    value {real} NOT NULL,
    PRIMARY KEY (study, number, step)
);
";

/// The tables Optuna's RDB storage creates that mtf's schema does not have (`studies` and
/// `trials` it shares by name): each is an index on `mtf_meta` here, so Optuna refuses the
/// database before writing to it (`mtf sweep export` writes a journal Optuna reads).
pub const OPTUNA_TABLES: &[&str] = &[
    "study_directions",
    "study_user_attributes",
    "study_system_attributes",
    "trial_user_attributes",
    "trial_system_attributes",
    "trial_params",
    "trial_values",
    "trial_intermediate_values",
    "trial_heartbeats",
    "version_info",
    "alembic_version",
];

/// Every column this storage reads and writes, per table: a database made by something else is
/// refused at open, naming it, instead of failing in the middle of a study.
const COLUMNS: &[(&str, &str)] = &[
    ("studies", "name, fingerprint, created"),
    (
        "trials",
        "study, number, state, params, value, error, run_dir, host, pid, started, heartbeat, finished, retry_of",
    ),
    ("steps", "study, number, step, value"),
];

/// Run one transaction, retrying it while the database says to (SQLite busy, a PostgreSQL
/// serialization failure or deadlock), for up to two minutes.
fn retrying<T>(
    db: &mut Db,
    loc: &Location,
    patience: Duration,
    mut f: impl FnMut(&mut Tx<'_>) -> Result<T, DbError>,
) -> Result<T, DbError> {
    let start = std::time::Instant::now();
    let mut wait = Duration::from_millis(5);
    let mut gone = Reconnect::new(patience);
    loop {
        let attempt = db.begin().and_then(|mut tx| {
            let out = f(&mut tx)?;
            tx.commit()?;
            Ok(out)
        });
        match attempt {
            Err(DbError::Busy(_)) if start.elapsed() < Duration::from_secs(120) => {
                std::thread::sleep(wait);
                wait = (wait * 2).min(Duration::from_millis(200));
            }
            // A server restart: reconnect, then retry the transaction (one that committed
            // before the connection dropped can only have claimed a trial twice; the copy
            // nobody runs goes stale and is re-queued).
            Err(DbError::Gone(_)) if gone.wait(db, loc) => {}
            other => return other,
        }
    }
}

/// Reconnecting to a database that went away: backoff from 0.25 s doubling to 5 s, for up to
/// `patience` from the first failure.
struct Reconnect {
    since: Option<std::time::Instant>,
    backoff: Duration,
    patience: Duration,
}

impl Reconnect {
    fn new(patience: Duration) -> Reconnect {
        Reconnect {
            since: None,
            backoff: Duration::from_millis(250),
            patience,
        }
    }

    /// After a failure: false when patience has run out; else wait and try to reopen `db`
    /// (the caller retries either way).
    fn wait(&mut self, db: &mut Db, loc: &Location) -> bool {
        if self.since.get_or_insert_with(std::time::Instant::now).elapsed() >= self.patience {
            return false;
        }
        std::thread::sleep(self.backoff);
        self.backoff = (self.backoff * 2).min(Duration::from_secs(5));
        if let Ok(fresh) = Db::open(loc, OPEN_TIMEOUT) {
            *db = fresh;
        }
        true
    }
}

/// How long a lock wait or a statement may take (SQLite's busy timeout, PostgreSQL's
/// statement_timeout).
const OPEN_TIMEOUT: Duration = Duration::from_secs(120);

/// A claimed trial.
#[derive(Clone, Debug, PartialEq)]
pub struct Claimed {
    /// Its number.
    pub number: u64,
    /// Its parameters.
    pub params: BTreeMap<String, Value>,
    /// The interrupted trial it re-runs, and that trial's run directory (whose checkpoint it
    /// may continue from).
    pub retry_of: Option<(u64, String)>,
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

fn params_of(rows: &[Vec<Val>]) -> Result<Vec<BTreeMap<String, Value>>, DbError> {
    rows.iter().map(|r| decode_params(&text(&r[0])?)).collect()
}

fn text(v: &Val) -> Result<String, DbError> {
    v.text().map_err(|e| DbError::Other(e.to_string()))
}

fn int(v: &Val) -> Result<i64, DbError> {
    v.int().map_err(|e| DbError::Other(e.to_string()))
}

fn real(v: &Val) -> Result<f64, DbError> {
    v.real().map_err(|e| DbError::Other(e.to_string()))
}

/// Switch SQLite to WAL, which lets readers (progress, pruners) proceed while a claim writes.
/// It needs the database to itself and SQLite does not wait on the busy handler for it, so
/// several processes opening a fresh study at once retry here.
fn wal(db: &mut Db) -> Result<(), DbError> {
    let start = std::time::Instant::now();
    loop {
        match db.query("PRAGMA journal_mode=WAL", &[]) {
            Err(DbError::Busy(_)) if start.elapsed() < Duration::from_secs(120) => std::thread::sleep(Duration::from_millis(20)),
            other => return other.map(drop),
        }
    }
}

impl Storage {
    /// Open (creating if needed) `study` at `loc`. A study that exists with another
    /// fingerprint (search space, objective) is an error, as is a database of another schema
    /// version; SQLite on a network filesystem is refused.
    pub fn open(loc: &Location, study: &str, fingerprint: &str, live: Liveness) -> crate::error::Result<Storage> {
        if let Location::Sqlite(path) = loc {
            let dir = path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(std::path::Path::new("."));
            std::fs::create_dir_all(dir).map_err(|e| crate::run::io_error(dir, "creating", e))?;
            if let Some(fs) = db::network_fs(dir) {
                return Err(crate::error::user(format!(
                    "{}: the study database is on a network filesystem ({fs}), where SQLite's locks do not work; share a study across machines with --storage postgresql://USER@HOST/DB",
                    path.display()
                )));
            }
        }
        let mut db = Db::open(loc, OPEN_TIMEOUT).map_err(|e| named(loc, "opening", e))?;
        if !db.is_postgres() {
            wal(&mut db).map_err(|e| named(loc, "opening", e))?;
        }
        Self::create_schema(&mut db, loc).map_err(|e| named(loc, "creating the schema in", e))?;
        for (table, cols) in COLUMNS {
            if let Err(DbError::User(m) | DbError::Other(m) | DbError::Busy(m)) =
                db.query(&format!("SELECT {cols} FROM {table} WHERE 1 = 0"), &[])
            {
                return Err(crate::error::user(format!(
                    "{}: table `{table}` is not as this version of mtf writes it ({m}): not a study database of this version (choose another --storage)",
                    loc.name()
                )));
            }
        }
        let existing = retrying(&mut db, loc, live.patience(), |tx| {
            tx.exec(
                "INSERT INTO studies (name, fingerprint, created) VALUES (?1, ?2, {now}) ON CONFLICT (name) DO NOTHING",
                &[study.into(), fingerprint.into()],
            )?;
            text(&tx.query("SELECT fingerprint FROM studies WHERE name = ?1", &[study.into()])?[0][0])
        })
        .map_err(|e| named(loc, "opening", e))?;
        if existing != fingerprint {
            return Err(crate::error::user(format!(
                "{}: study `{study}` was created with a different search space or objective; continue it with the same sweep file or choose another --study",
                loc.name()
            )));
        }
        Ok(Storage {
            db,
            loc: loc.clone(),
            study: study.to_string(),
            live,
        })
    }

    /// Create the tables (safe with several workers at once: SQLite takes the write lock,
    /// PostgreSQL an advisory lock, for the whole creation) and check the schema version.
    /// SQLite studies of the first version (no `mtf_meta`, no `retry_of`) are upgraded.
    fn create_schema(db: &mut Db, loc: &Location) -> Result<(), DbError> {
        let pg = db.is_postgres();
        let schema = SCHEMA
            .replace("{int}", if pg { "BIGINT" } else { "INTEGER" })
            .replace("{real}", if pg { "DOUBLE PRECISION" } else { "REAL" });
        let version = retrying(db, loc, Duration::ZERO, |tx| {
            if pg {
                tx.query("SELECT pg_advisory_xact_lock(7220611)", &[])?;
            } else {
                // Check before creating anything: a database made by something else is left
                // as it was.
                let tables = tx.query("SELECT name FROM sqlite_master WHERE type = 'table'", &[])?;
                let has = |t: &str| tables.iter().any(|r| r[0] == Val::from(t));
                for (table, cols) in COLUMNS.iter().filter(|(t, _)| has(t)) {
                    let have = tx.query(&format!("SELECT name FROM pragma_table_info('{table}')"), &[])?;
                    let missing = cols
                        .split(", ")
                        .find(|c| *c != "retry_of" && !have.iter().any(|r| r[0] == Val::from(*c)));
                    if let Some(c) = missing {
                        return Err(DbError::User(format!(
                            "table `{table}` has no column `{c}`: not a study database of this version of mtf (choose another --storage)"
                        )));
                    }
                    if *table == "trials" && !has("mtf_meta") && !have.iter().any(|r| r[0] == Val::from("retry_of")) {
                        // A study of the first version: it gains the retry column.
                        tx.exec("ALTER TABLE trials ADD COLUMN retry_of INTEGER", &[])?;
                    }
                }
            }
            for stmt in schema.split(';').filter(|s| !s.trim().is_empty()) {
                tx.exec(stmt, &[])?;
            }
            // Optuna opening this database (optuna-dashboard, load_study) created its 11 tables
            // beside mtf's and then crashed on mtf's `trials`. An index under each of those
            // names makes its table creation fail at the first, before it writes anything.
            let names = if pg {
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema()"
            } else {
                "SELECT name FROM sqlite_master"
            };
            let taken = tx.query(names, &[])?;
            for name in OPTUNA_TABLES.iter().filter(|t| !taken.iter().any(|r| r[0] == Val::from(**t))) {
                tx.exec(&format!("CREATE INDEX {name} ON mtf_meta (key)"), &[])?;
            }
            tx.exec(
                "INSERT INTO mtf_meta (key, value) VALUES ('schema_version', ?1) ON CONFLICT (key) DO NOTHING",
                &[SCHEMA_VERSION.into()],
            )?;
            text(&tx.query("SELECT value FROM mtf_meta WHERE key = 'schema_version'", &[])?[0][0])
        })?;
        if version != SCHEMA_VERSION {
            return Err(DbError::User(format!(
                "schema version {version}, but this version of mtf reads and writes version {SCHEMA_VERSION} (use the mtf that created it, or another --storage)"
            )));
        }
        Ok(())
    }

    /// Open a study that exists, for reading; returns it with its fingerprint. Nothing is
    /// created: a missing database or study is an error naming it.
    pub fn open_existing(loc: &Location, study: &str) -> crate::error::Result<(Storage, String)> {
        if let Location::Sqlite(path) = loc {
            if !path.is_file() {
                return Err(crate::error::user(format!("{}: no such study database", path.display())));
            }
        }
        let mut db = Db::open(loc, OPEN_TIMEOUT).map_err(|e| named(loc, "opening", e))?;
        let rows = db
            .query("SELECT fingerprint FROM studies WHERE name = ?1", &[study.into()])
            .map_err(|e| named(loc, "reading", e))?;
        let Some(row) = rows.first() else {
            return Err(crate::error::user(format!("{}: no study named `{study}`", loc.name())));
        };
        let fingerprint = row[0].text()?;
        let live = Liveness::default();
        Ok((Storage::open(loc, study, &fingerprint, live)?, fingerprint))
    }

    /// Every intermediate value of the study: (trial number, step, value), in order.
    pub fn steps(&mut self) -> crate::error::Result<Vec<(u64, u64, f64)>> {
        let rows = self.read(
            "SELECT number, step, value FROM steps WHERE study = ?1 ORDER BY number, step",
            &[self.study.as_str().into()],
        )?;
        rows.iter()
            .map(|r| Ok((r[0].int()? as u64, r[1].int()? as u64, r[2].real()?)))
            .collect()
    }

    /// Where the study lives, as errors name it.
    pub fn location(&self) -> &Location {
        &self.loc
    }

    /// Claim the next trial, unless `target` trials already count: mark stale trials
    /// interrupted, re-run the oldest interrupted trial not yet retried, or else ask `propose`
    /// for parameters (None: nothing left, e.g. a finished grid), and insert the trial as
    /// running, all in one transaction.
    pub fn claim(
        &mut self,
        target: usize,
        run_dir: impl Fn(u64) -> String,
        propose: impl Fn(&ClaimContext) -> Option<BTreeMap<String, Value>>,
    ) -> crate::error::Result<Option<Claimed>> {
        let (study, grace, pg) = (self.study.as_str(), self.live.grace, self.db.is_postgres());
        let (host, pid) = (host(), i64::from(std::process::id()));
        let loc = &self.loc;
        retrying(&mut self.db, &self.loc, self.live.patience(), |tx| {
            if pg {
                // Claims of one study queue on its row, as Optuna's RDB storage does.
                tx.query("SELECT name FROM studies WHERE name = ?1 FOR UPDATE", &[study.into()])?;
            }
            tx.exec(
                "UPDATE trials SET state = 'interrupted', error = ?2, finished = {now}
                 WHERE study = ?1 AND state = 'running' AND heartbeat < {now} - ?3",
                &[
                    study.into(),
                    format!("stale: no heartbeat for more than {grace} s (its worker died or lost the database)").into(),
                    grace.into(),
                ],
            )?;
            let counts = tx.query(
                "SELECT COALESCE(MAX(number) + 1, 0), SUM(CASE WHEN state != 'interrupted' THEN 1 ELSE 0 END)
                 FROM trials WHERE study = ?1",
                &[study.into()],
            )?;
            // MAX(number) + 1 past 2^63 - 1 comes back as a float (SQLite) or an overflow
            // error (PostgreSQL): only a crafted or damaged study gets there.
            if matches!(counts[0][0], Val::Real(_)) {
                return Err(DbError::User(
                    "the study's trial numbers reach 2^63 - 1: no number is left for a new trial (a damaged or crafted study database)"
                        .into(),
                ));
            }
            let number = int(&counts[0][0])? as u64;
            let index = counts[0][1].opt(Val::int).map_err(|e| DbError::Other(e.to_string()))?.unwrap_or(0) as usize;
            if index >= target {
                return Ok(None);
            }
            let retry = tx.query(
                "SELECT number, params, run_dir FROM trials t WHERE study = ?1 AND state = 'interrupted' AND retry_of IS NULL
                 AND NOT EXISTS (SELECT 1 FROM trials r WHERE r.study = t.study AND r.retry_of = t.number)
                 ORDER BY number LIMIT 1",
                &[study.into()],
            )?;
            let (params, retry_of) = match retry.first() {
                Some(r) => (decode_params(&text(&r[1])?)?, Some((int(&r[0])? as u64, text(&r[2])?))),
                None => {
                    let done = tx.query(
                        "SELECT params, value FROM trials WHERE study = ?1 AND state = 'complete' ORDER BY number",
                        &[study.into()],
                    )?;
                    let values = done.iter().map(|r| real(&r[1])).collect::<Result<Vec<_>, _>>()?;
                    let completed: Vec<_> = params_of(&done)?.into_iter().zip(values).collect();
                    let live = params_of(&tx.query(
                        "SELECT params FROM trials WHERE study = ?1 AND state != 'interrupted' ORDER BY number",
                        &[study.into()],
                    )?)?;
                    let ctx = ClaimContext {
                        number,
                        index,
                        completed: &completed,
                        live: &live,
                    };
                    match propose(&ctx) {
                        Some(p) => (p, None),
                        None => return Ok(None),
                    }
                }
            };
            let json = serde_json::to_string(&params).map_err(|e| DbError::Other(e.to_string()))?;
            tx.exec(
                "INSERT INTO trials (study, number, state, params, run_dir, host, pid, started, heartbeat, retry_of)
                 VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, {now}, {now}, ?7)",
                &[
                    study.into(),
                    number.into(),
                    json.into(),
                    run_dir(number).into(),
                    host.as_str().into(),
                    pid.into(),
                    retry_of.as_ref().map(|r| r.0).into(),
                ],
            )?;
            Ok(Some(Claimed { number, params, retry_of }))
        })
        .map_err(|e| named(loc, "claiming a trial in", e))
    }

    /// Record that trial `number` is alive (the database's clock). False when it is no longer
    /// running (declared stale, or finished).
    pub fn heartbeat(&mut self, number: u64) -> crate::error::Result<bool> {
        let study = self.study.as_str();
        let n = retrying(&mut self.db, &self.loc, self.live.patience(), |tx| {
            tx.exec(
                "UPDATE trials SET heartbeat = {now} WHERE study = ?1 AND number = ?2 AND state = 'running'",
                &[study.into(), number.into()],
            )
        })
        .map_err(|e| named(&self.loc, "recording a heartbeat in", e))?;
        Ok(n > 0)
    }

    /// Record a trial's intermediate value at `step` (episodes done); a heartbeat too.
    pub fn report(&mut self, number: u64, step: u64, value: f64) -> crate::error::Result<()> {
        let study = self.study.as_str();
        retrying(&mut self.db, &self.loc, self.live.patience(), |tx| {
            tx.exec(
                "INSERT INTO steps (study, number, step, value) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (study, number, step) DO UPDATE SET value = excluded.value",
                &[study.into(), number.into(), step.into(), value.into()],
            )?;
            tx.exec(
                "UPDATE trials SET heartbeat = {now} WHERE study = ?1 AND number = ?2 AND state = 'running'",
                &[study.into(), number.into()],
            )
        })
        .map_err(|e| named(&self.loc, "reporting to", e))?;
        Ok(())
    }

    fn read(&mut self, sql: &str, params: &[Val]) -> crate::error::Result<Vec<Vec<Val>>> {
        // Outside any transaction (a read must not take SQLite's write lock), but through a
        // server restart like the transactions.
        let mut gone = Reconnect::new(self.live.patience());
        loop {
            match self.db.query(sql, params) {
                Err(DbError::Gone(_)) if gone.wait(&mut self.db, &self.loc) => {}
                other => return other.map_err(|e| named(&self.loc, "reading", e)),
            }
        }
    }

    /// The running trials, each with the seconds since its last heartbeat (the database's
    /// clock), by number.
    pub fn running(&mut self) -> crate::error::Result<Vec<(u64, f64)>> {
        let rows = self.read(
            "SELECT number, {now} - heartbeat FROM trials WHERE study = ?1 AND state = 'running' ORDER BY number",
            &[self.study.as_str().into()],
        )?;
        rows.iter().map(|r| Ok((r[0].int()? as u64, r[1].real()?))).collect()
    }

    /// Every trial's intermediate value at `step`, by state filter (`None`: all states).
    pub fn values_at(&mut self, step: u64, state: Option<TrialState>) -> crate::error::Result<Vec<f64>> {
        let rows = self.read(
            "SELECT s.value FROM steps s JOIN trials t ON t.study = s.study AND t.number = s.number
             WHERE s.study = ?1 AND s.step = ?2 AND (t.state = ?3 OR ?4 = 1)",
            &[
                self.study.as_str().into(),
                step.into(),
                state.map_or("", TrialState::as_str).into(),
                i64::from(state.is_none()).into(),
            ],
        )?;
        rows.iter().map(|r| r[0].real()).collect()
    }

    /// Completed trials so far.
    pub fn completed(&mut self) -> crate::error::Result<usize> {
        let rows = self.read(
            "SELECT COUNT(*) FROM trials WHERE study = ?1 AND state = 'complete'",
            &[self.study.as_str().into()],
        )?;
        Ok(rows[0][0].int()? as usize)
    }

    /// Close a running trial; false (and nothing written) when it is no longer running: it
    /// was declared stale meanwhile and re-queued, so its outcome is not recorded twice.
    pub fn finish(&mut self, number: u64, state: TrialState, value: Option<f64>, error: Option<&str>) -> crate::error::Result<bool> {
        let study = self.study.as_str();
        let n = retrying(&mut self.db, &self.loc, self.live.patience(), |tx| {
            tx.exec(
                "UPDATE trials SET state = ?3, value = ?4, error = ?5, finished = {now}
                 WHERE study = ?1 AND number = ?2 AND state = 'running'",
                &[study.into(), number.into(), state.as_str().into(), value.into(), error.into()],
            )
        })
        .map_err(|e| named(&self.loc, "recording a trial in", e))?;
        Ok(n > 0)
    }

    /// Every trial of the study, by number.
    pub fn trials(&mut self) -> crate::error::Result<Vec<Trial>> {
        let rows = self.read(
            "SELECT number, state, params, value, error, run_dir, started, finished,
                    (SELECT step FROM steps s WHERE s.study = t.study AND s.number = t.number ORDER BY step DESC LIMIT 1),
                    (SELECT value FROM steps s WHERE s.study = t.study AND s.number = t.number ORDER BY step DESC LIMIT 1),
                    retry_of
             FROM trials t WHERE study = ?1 ORDER BY number",
            &[self.study.as_str().into()],
        )?;
        rows.iter()
            .map(|r| {
                let started = r[6].real()?;
                Ok(Trial {
                    number: r[0].int()? as u64,
                    state: TrialState::parse(&r[1].text()?),
                    params: decode_params(&r[2].text()?).map_err(|e| named(&self.loc, "reading", e))?,
                    value: r[3].opt(Val::real)?,
                    error: r[4].opt(Val::text)?,
                    run_dir: r[5].text()?,
                    seconds: r[7].opt(Val::real)?.map(|f| f - started),
                    last_step: r[8].opt(Val::int)?.map(|s| s as u64).zip(r[9].opt(Val::real)?),
                    retry_of: r[10].opt(Val::int)?.map(|x| x as u64),
                    started,
                    finished: r[7].opt(Val::real)?,
                })
            })
            .collect()
    }
}

fn decode_params(json: &str) -> Result<BTreeMap<String, Value>, DbError> {
    serde_json::from_str(json).map_err(|e| DbError::User(format!("a stored trial's parameters are not valid ({e}): {json}")))
}

#[cfg(test)]
mod tests;

//! The two study databases behind one small interface: SQLite (one machine) and PostgreSQL
//! (workers anywhere). The study logic in [`super`] writes its SQL once, with `?N`
//! placeholders and `{now}` for the database's clock, and reads rows as [`Val`]s; this module
//! adapts the text and the values to each backend.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Longest `--storage` value.
const MAX_URL: usize = 2048;

/// How long a PostgreSQL connect may take when the URL does not say (`connect_timeout`).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a study lives (`--storage`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `sqlite:PATH`.
    Sqlite(PathBuf),
    /// `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB` (or `postgres://`).
    Postgres(String),
}

impl Location {
    /// Read `--storage`; errors are one line naming the value.
    pub fn parse(s: &str) -> crate::error::Result<Location> {
        if s.len() > MAX_URL {
            return Err(crate::error::user(format!(
                "--storage: {} bytes, more than the {MAX_URL} a storage URL may have",
                s.len()
            )));
        }
        if s.starts_with("postgresql://") || s.starts_with("postgres://") {
            let rest = s.split_once("://").map(|x| x.1).unwrap_or("");
            let (auth_host, db) = rest.split_once('/').unwrap_or((rest, ""));
            let db = db.split('?').next().unwrap_or("");
            if !auth_host.contains('@') || auth_host.ends_with('@') || db.is_empty() {
                return Err(crate::error::user(format!(
                    "--storage `{}`: expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DB",
                    redact(s)
                )));
            }
            s.parse::<postgres::Config>()
                .map_err(|e| crate::error::user(format!("--storage `{}`: {e}", redact(s))))?;
            return Ok(Location::Postgres(s.to_string()));
        }
        match s.strip_prefix("sqlite:") {
            // In-memory or URI databases vanish with the process (or with each connection) and
            // cannot be shared by the workers: a study needs a file.
            Some(p) if p.starts_with(':') || p.starts_with("file:") => Err(crate::error::user(format!(
                "--storage `{s}`: a study must live in a file that every worker opens (sqlite:PATH); in-memory databases are not shared"
            ))),
            // A device or a directory is not a database file (`sqlite:/dev/null` failed later
            // with "disk I/O error").
            Some(p) if std::fs::metadata(p).is_ok_and(|m| !m.is_file()) => Err(crate::error::user(format!(
                "--storage `{s}`: {p} is not a regular file; a study lives in a database file"
            ))),
            Some(p) if !p.is_empty() => Ok(Location::Sqlite(PathBuf::from(p))),
            _ => Err(crate::error::user(format!(
                "--storage `{s}`: expected sqlite:PATH or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB"
            ))),
        }
    }

    /// How errors name it: the path, or the URL without its password.
    pub fn name(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Postgres(u) => redact(u),
        }
    }
}

/// The URL with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.split_once('@') {
        Some((auth, host)) if auth.contains(':') => {
            format!("{scheme}://{}:***@{host}", auth.split(':').next().unwrap_or(""))
        }
        _ => url.to_string(),
    }
}

/// A value in or out of a query.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
}

impl Val {
    fn bad(&self, want: &str) -> crate::error::Error {
        crate::error::failed(format!("the study database returned {self:?} where {want} was expected"))
    }
    /// An integer column.
    pub fn int(&self) -> crate::error::Result<i64> {
        match self {
            Val::Int(i) => Ok(*i),
            _ => Err(self.bad("an integer")),
        }
    }
    /// A float column (integers widen).
    pub fn real(&self) -> crate::error::Result<f64> {
        match self {
            Val::Real(x) => Ok(*x),
            Val::Int(i) => Ok(*i as f64),
            _ => Err(self.bad("a number")),
        }
    }
    /// A text column.
    pub fn text(&self) -> crate::error::Result<String> {
        match self {
            Val::Text(s) => Ok(s.clone()),
            _ => Err(self.bad("text")),
        }
    }
    /// A nullable column.
    pub fn opt<T>(&self, f: impl Fn(&Val) -> crate::error::Result<T>) -> crate::error::Result<Option<T>> {
        match self {
            Val::Null => Ok(None),
            v => f(v).map(Some),
        }
    }
}

impl From<i64> for Val {
    fn from(x: i64) -> Val {
        Val::Int(x)
    }
}
impl From<u64> for Val {
    fn from(x: u64) -> Val {
        Val::Int(x as i64)
    }
}
impl From<f64> for Val {
    fn from(x: f64) -> Val {
        Val::Real(x)
    }
}
impl From<&str> for Val {
    fn from(x: &str) -> Val {
        Val::Text(x.to_string())
    }
}
impl From<String> for Val {
    fn from(x: String) -> Val {
        Val::Text(x)
    }
}
impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(x: Option<T>) -> Val {
        x.map_or(Val::Null, Into::into)
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value};
        Ok(ToSqlOutput::Owned(match self {
            Val::Null => Value::Null,
            Val::Int(i) => Value::Integer(*i),
            Val::Real(x) => Value::Real(*x),
            Val::Text(s) => Value::Text(s.clone()),
        }))
    }
}

impl postgres::types::ToSql for Val {
    fn to_sql(
        &self,
        ty: &postgres::types::Type,
        out: &mut postgres::types::private::BytesMut,
    ) -> Result<postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        use postgres::types::Type;
        // The server infers each parameter's type from the statement; convert to it.
        match (self, ty) {
            (Val::Null, _) => Ok(postgres::types::IsNull::Yes),
            (Val::Int(i), &Type::FLOAT8) => (*i as f64).to_sql(ty, out),
            (Val::Int(i), &Type::INT4) => i32::try_from(*i)?.to_sql(ty, out),
            (Val::Int(i), _) => i.to_sql(ty, out),
            (Val::Real(x), _) => x.to_sql(ty, out),
            (Val::Text(s), _) => s.to_sql(ty, out),
        }
    }

    fn accepts(ty: &postgres::types::Type) -> bool {
        <i64 as postgres::types::ToSql>::accepts(ty)
            || <i32 as postgres::types::ToSql>::accepts(ty)
            || <f64 as postgres::types::ToSql>::accepts(ty)
            || <String as postgres::types::ToSql>::accepts(ty)
    }

    postgres::types::to_sql_checked!();
}

/// An open connection.
pub enum Db {
    /// SQLite, with the file it opened.
    Sqlite(rusqlite::Connection),
    /// PostgreSQL.
    Postgres(postgres::Client),
}

/// A transaction: SQLite's `BEGIN IMMEDIATE` (one writer at a time), PostgreSQL's READ
/// COMMITTED (claims serialise on the study row's lock instead).
pub enum Tx<'a> {
    /// SQLite.
    Sqlite(rusqlite::Transaction<'a>),
    /// PostgreSQL.
    Postgres(postgres::Transaction<'a>),
}

/// `?N` placeholders to PostgreSQL's `$N`, and `{now}` to the backend's clock (seconds since
/// the epoch as a float: the database server's own time, so every host agrees).
fn adapt(sql: &str, pg: bool) -> String {
    let now = if pg {
        "(EXTRACT(EPOCH FROM clock_timestamp())::double precision)"
    } else {
        "((julianday('now') - 2440587.5) * 86400.0)"
    };
    let sql = sql.replace("{now}", now);
    if !pg {
        return sql;
    }
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

fn sqlite_val(v: rusqlite::types::ValueRef<'_>) -> Val {
    use rusqlite::types::ValueRef as R;
    match v {
        R::Null => Val::Null,
        R::Integer(i) => Val::Int(i),
        R::Real(x) => Val::Real(x),
        R::Text(t) => Val::Text(String::from_utf8_lossy(t).into_owned()),
        R::Blob(b) => Val::Text(String::from_utf8_lossy(b).into_owned()),
    }
}

fn pg_val(row: &postgres::Row, i: usize) -> Result<Val, postgres::Error> {
    use postgres::types::Type;
    let ty = row.columns()[i].type_().clone();
    Ok(if ty == Type::VOID {
        Val::Null
    } else if ty == Type::INT8 {
        row.try_get::<_, Option<i64>>(i)?.map_or(Val::Null, Val::Int)
    } else if ty == Type::INT4 {
        row.try_get::<_, Option<i32>>(i)?.map_or(Val::Null, |x| Val::Int(x.into()))
    } else if ty == Type::FLOAT8 {
        row.try_get::<_, Option<f64>>(i)?.map_or(Val::Null, Val::Real)
    } else {
        row.try_get::<_, Option<String>>(i)?.map_or(Val::Null, Val::Text)
    })
}

/// A database error, classified: `Busy` is worth retrying (SQLite busy or locked, a
/// PostgreSQL serialization failure or deadlock), `User` is the input's fault (not a
/// database, read-only, refused, wrong password), `Other` is anything else.
#[derive(Debug)]
pub enum DbError {
    /// Retry the transaction.
    Busy(String),
    /// Exit 2.
    User(String),
    /// Exit 1.
    Other(String),
    /// The connection is gone (a server restarted or out of reach): reconnect and retry, for
    /// a while; then exit 1.
    Gone(String),
}

impl From<rusqlite::Error> for DbError {
    fn from(e: rusqlite::Error) -> DbError {
        use rusqlite::ErrorCode as C;
        let msg = e.to_string();
        match &e {
            rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, C::DatabaseBusy | C::DatabaseLocked) => DbError::Busy(msg),
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(
                    f.code,
                    C::NotADatabase | C::ReadOnly | C::CannotOpen | C::PermissionDenied | C::DatabaseCorrupt | C::DiskFull
                ) =>
            {
                DbError::User(msg)
            }
            rusqlite::Error::SqlInputError { .. } => DbError::User(msg),
            _ if msg.contains("no such column") || msg.contains("no such table") => DbError::User(msg),
            _ => DbError::Other(msg),
        }
    }
}

impl From<postgres::Error> for DbError {
    fn from(e: postgres::Error) -> DbError {
        use postgres::error::SqlState;
        let msg = match e.as_db_error() {
            Some(d) => d.message().to_string(),
            None => e.to_string(),
        };
        match e.code() {
            Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE || *c == SqlState::T_R_DEADLOCK_DETECTED => DbError::Busy(msg),
            // Authentication, a database that does not exist, SQL the schema refuses: the
            // URL or the database given is at fault.
            Some(c) if c.code().starts_with("28") || c.code().starts_with("3D") || c.code().starts_with("42") => DbError::User(msg),
            // A server gone or out of reach is the world's failure, not the input's (exit 1);
            // the study is in the database, intact.
            // Closed, refused, reset or cut off mid-message ("error communicating with the
            // server": an I/O error underneath).
            None if e.is_closed()
                || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>())
                || msg.contains("error connecting")
                || msg.contains("communicating")
                || msg.contains("connection") =>
            {
                DbError::Gone(format!(
                    "{msg} (the server is out of reach; the study in it is intact: run the same command again to continue)"
                ))
            }
            // The server shut down under us (admin_shutdown, crash_shutdown, cannot_connect_now).
            Some(c) if c.code().starts_with("57") => DbError::Gone(format!(
                "{msg} (the server went away; the study in it is intact: run the same command again to continue)"
            )),
            _ => DbError::Other(msg),
        }
    }
}

/// A [`DbError`] as the library's error, naming the database and what was being done.
pub fn named(loc: &Location, doing: &str, e: DbError) -> crate::error::Error {
    let (problem, user) = match e {
        DbError::User(m) => (m, true),
        DbError::Busy(m) | DbError::Other(m) | DbError::Gone(m) => (m, false),
    };
    crate::error::Error::Study {
        db: loc.name(),
        doing: doing.to_string(),
        problem,
        user,
    }
}

impl Db {
    /// Connect; `timeout` bounds how long a connection attempt or a lock wait may take.
    pub fn open(loc: &Location, timeout: Duration) -> Result<Db, DbError> {
        match loc {
            Location::Sqlite(path) => {
                let conn = rusqlite::Connection::open(path)?;
                conn.busy_timeout(timeout)?;
                Ok(Db::Sqlite(conn))
            }
            Location::Postgres(url) => {
                let mut cfg: postgres::Config = url.parse()?;
                // libpq's `connect_timeout` URL parameter, default 10 s. The driver applies it
                // to the socket's connect only, so a port that accepts and never answers would
                // hold the handshake for good: the whole connect runs on a thread we stop
                // waiting for.
                let limit = cfg.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT);
                cfg.connect_timeout(limit);
                if cfg.get_application_name().is_none() {
                    cfg.application_name("mtf sweep");
                }
                // A statement the server has not finished in `timeout` (lock waits included)
                // is cancelled by the server, unless the URL sets its own options.
                if cfg.get_options().is_none() {
                    cfg.options(&format!("-c statement_timeout={}", timeout.as_millis()));
                }
                // Reads on a connection whose server vanished end after the keepalives fail.
                cfg.keepalives(true).keepalives_idle(Duration::from_secs(30));
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let _ = tx.send(cfg.connect(postgres::NoTls));
                });
                match rx.recv_timeout(limit + Duration::from_secs(1)) {
                    Ok(client) => Ok(Db::Postgres(client?)),
                    Err(_) => Err(DbError::Other(format!(
                        "no answer from the server within {} s (connect_timeout; set it in the URL, e.g. ?connect_timeout=30)",
                        limit.as_secs_f64()
                    ))),
                }
            }
        }
    }

    /// Whether this is PostgreSQL.
    pub fn is_postgres(&self) -> bool {
        matches!(self, Db::Postgres(_))
    }

    /// Begin a transaction.
    pub fn begin(&mut self) -> Result<Tx<'_>, DbError> {
        Ok(match self {
            Db::Sqlite(c) => Tx::Sqlite(c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?),
            Db::Postgres(c) => Tx::Postgres(c.transaction()?),
        })
    }

    /// One query outside any explicit transaction: a read does not take SQLite's write lock
    /// (claims do), and SQLite's `PRAGMA journal_mode`, which a transaction refuses, runs here.
    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError> {
        match self {
            Db::Sqlite(c) => sqlite_rows(c, sql, params),
            Db::Postgres(c) => pg_rows(c, sql, params),
        }
    }
}

/// Every row of a query on SQLite (a connection or a transaction), as values.
fn sqlite_rows(c: &rusqlite::Connection, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError> {
    let mut q = c.prepare(&adapt(sql, false))?;
    let width = q.column_count();
    let rows = q.query_map(rusqlite::params_from_iter(params.iter()), |r| {
        (0..width)
            .map(|i| r.get_ref(i).map(sqlite_val))
            .collect::<rusqlite::Result<Vec<Val>>>()
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Every row of a query on PostgreSQL (a client or a transaction), as values.
fn pg_rows(c: &mut impl postgres::GenericClient, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError> {
    let p: Vec<&(dyn postgres::types::ToSql + Sync)> = params.iter().map(|v| v as _).collect();
    let rows = c.query(adapt(sql, true).as_str(), &p)?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        out.push((0..r.len()).map(|i| pg_val(r, i)).collect::<Result<Vec<Val>, _>>()?);
    }
    Ok(out)
}

impl Tx<'_> {
    /// Execute a statement; returns the rows it changed.
    pub fn exec(&mut self, sql: &str, params: &[Val]) -> Result<u64, DbError> {
        match self {
            Tx::Sqlite(t) => Ok(t.execute(&adapt(sql, false), rusqlite::params_from_iter(params.iter()))? as u64),
            Tx::Postgres(t) => {
                let p: Vec<&(dyn postgres::types::ToSql + Sync)> = params.iter().map(|v| v as _).collect();
                Ok(t.execute(adapt(sql, true).as_str(), &p)?)
            }
        }
    }

    /// Run a query; every row as values.
    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Vec<Val>>, DbError> {
        match self {
            Tx::Sqlite(t) => sqlite_rows(t, sql, params),
            Tx::Postgres(t) => pg_rows(t, sql, params),
        }
    }

    /// Commit.
    pub fn commit(self) -> Result<(), DbError> {
        match self {
            Tx::Sqlite(t) => Ok(t.commit()?),
            Tx::Postgres(t) => Ok(t.commit()?),
        }
    }
}

/// Filesystem magic numbers (statfs `f_type`) of network filesystems, on which SQLite's locks
/// and WAL do not work (SQLite's own documentation; Optuna's FAQ warns the same).
const NETWORK_FS: &[(i64, &str)] = &[
    (0x6969, "NFS"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
    (0x517B, "SMB"),
    (0x0BD0_0BD0, "Lustre"),
    (0x4757_4650, "GPFS"),
    (0x1983_0326, "BeeGFS"),
    (0x5346_414F, "AFS"),
    (0x0102_1997, "9P"),
    (0x1956_3400, "CephFS"),
];

/// The network filesystem `dir` is on, if any (Linux; elsewhere None).
pub fn network_fs(dir: &Path) -> Option<&'static str> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut st: libc::statfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid NUL-terminated path and `st` a writable statfs.
        if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
            return None;
        }
        network_fs_type(st.f_type as i64)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// The network filesystem of a statfs `f_type`, if it is one.
pub fn network_fs_type(f_type: i64) -> Option<&'static str> {
    NETWORK_FS.iter().find(|(m, _)| *m == f_type).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_clock_adapt_to_postgres() {
        assert_eq!(
            adapt("SELECT ?1, '?', ?12 WHERE x < {now}", true).split(" WHERE").next().unwrap(),
            "SELECT $1, '?', $12"
        );
        assert!(adapt("x < {now}", true).contains("clock_timestamp()"));
        assert_eq!(adapt("SELECT ?1", false), "SELECT ?1");
        assert!(adapt("{now}", false).contains("julianday"));
    }

    #[test]
    fn storage_urls_parse_or_say_what_is_wrong() {
        assert_eq!(Location::parse("sqlite:a/b.db").unwrap(), Location::Sqlite("a/b.db".into()));
        assert!(matches!(
            Location::parse("postgresql://u:pw@h:5432/db").unwrap(),
            Location::Postgres(_)
        ));
        assert!(matches!(Location::parse("postgres://u@h/db").unwrap(), Location::Postgres(_)));
        for bad in [
            "postgresql://h/db",
            "postgresql://u@h",
            "postgresql://u@h:notaport/db",
            "mysql://u@h/db",
            "sqlite:",
            "sqlite::memory:",
        ] {
            let e = Location::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        assert_eq!(redact("postgresql://u:secret@h/db"), "postgresql://u:***@h/db");
        assert!(!Location::parse("postgresql://u:secret@h:x/db")
            .unwrap_err()
            .to_string()
            .contains("secret"));
    }

    #[test]
    fn network_filesystems_are_recognised() {
        assert_eq!(network_fs_type(0x6969), Some("NFS"));
        assert_eq!(network_fs_type(0xFF53_4D42), Some("CIFS"));
        assert_eq!(network_fs_type(0xEF53), None); // ext4
        assert_eq!(network_fs_type(0x0102_1994), None); // tmpfs
        assert_eq!(network_fs(Path::new("/")), network_fs(Path::new("/")));
    }
}

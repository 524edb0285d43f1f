//! Run directories (`runs/<name>-<YYYYMMDD-HHMMSS>/`): their layout ([`RunDir`], every file name
//! once), their one writer's lock, atomic file writes, bounded reads, and TensorBoard ([`tb`]).

pub mod tb;

use std::io::Write;
use std::path::{Path, PathBuf};

/// UTC timestamp `YYYYMMDD-HHMMSS`, now.
pub fn timestamp() -> String {
    timestamp_of(jiff::Timestamp::now())
}

/// UTC timestamp `YYYYMMDD-HHMMSS` of an instant.
pub fn timestamp_of(t: jiff::Timestamp) -> String {
    t.strftime("%Y%m%d-%H%M%S").to_string()
}

/// The exclusive right to write one run directory, held for the life of the value (and so of the
/// process): the lock file `<dir>/.lock` is locked with the OS's advisory file lock, which the
/// kernel releases when the process dies, even by kill -9. A second writer is refused.
#[derive(Debug)]
pub struct RunLock {
    _file: std::fs::File,
}

/// The file names of a run directory, once.
pub mod names {
    /// The resolved config, written first.
    pub const CONFIG: &str = "config.toml";
    /// One JSON object per episode (or per evaluation), append-only.
    pub const METRICS: &str = "metrics.jsonl";
    /// The final figures, written last.
    pub const SUMMARY: &str = "summary.json";
    /// TensorBoard event files.
    pub const TB: &str = "tb";
    /// Checkpoints.
    pub const CHECKPOINTS: &str = "checkpoints";
    /// The checkpoint rewritten after every episode, in [`CHECKPOINTS`].
    pub const LATEST: &str = "latest.ckpt";
    /// The writer's lock file.
    pub const LOCK: &str = ".lock";
}

/// Name of the lock file inside a run directory.
pub const LOCK_FILE: &str = names::LOCK;

/// A run directory: where each of its files is, and, when it was created or opened for
/// writing, its writer's lock (held for the life of the value).
#[derive(Debug)]
pub struct RunDir {
    path: PathBuf,
    _lock: Option<RunLock>,
}

impl RunDir {
    /// The run directory at `path`, to read (no lock).
    pub fn at(path: impl Into<PathBuf>) -> RunDir {
        RunDir {
            path: path.into(),
            _lock: None,
        }
    }

    /// A fresh run directory with its writer's lock: `out` if given (it must not hold a run
    /// already), else `runs/<name>-<timestamp>` (with a numeric suffix if that exists).
    pub fn create(out: Option<&Path>, name: &str) -> crate::error::Result<RunDir> {
        let (path, lock) = create(out, name)?;
        Ok(RunDir { path, _lock: Some(lock) })
    }

    /// The existing run directory at `path`, with its writer's lock.
    pub fn open(path: &Path) -> crate::error::Result<RunDir> {
        let lock = lock(path)?;
        Ok(RunDir {
            path: path.to_path_buf(),
            _lock: Some(lock),
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A file of the run directory by name (reports: `comparison.md`, `analysis.md`, ...).
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// `config.toml`.
    pub fn config(&self) -> PathBuf {
        self.file(names::CONFIG)
    }

    /// `metrics.jsonl`.
    pub fn metrics(&self) -> PathBuf {
        self.file(names::METRICS)
    }

    /// `summary.json`.
    pub fn summary(&self) -> PathBuf {
        self.file(names::SUMMARY)
    }

    /// `tb/`.
    pub fn tb(&self) -> PathBuf {
        self.file(names::TB)
    }

    /// `checkpoints/`.
    pub fn checkpoints(&self) -> PathBuf {
        self.file(names::CHECKPOINTS)
    }

    /// `checkpoints/latest.ckpt`.
    pub fn latest_checkpoint(&self) -> PathBuf {
        self.checkpoints().join(names::LATEST)
    }

    /// `checkpoints/episode-NNNNNN.ckpt`, the copy kept after `episodes` episodes.
    pub fn kept_checkpoint(&self, episodes: u64) -> PathBuf {
        self.checkpoints().join(format!("episode-{episodes:06}.ckpt"))
    }

    /// Whether `name` is a kept checkpoint's file name.
    pub fn is_kept_checkpoint(name: &str) -> bool {
        name.starts_with("episode-") && name.ends_with(".ckpt")
    }

    /// Replicate `k`'s run directory in a run group: `replicate-K`.
    pub fn replicate(&self, k: usize) -> PathBuf {
        self.file(&format!("replicate-{k}"))
    }

    /// Whether it is a run group (training replicates): its replicate 0 is a run.
    pub fn is_group(&self) -> bool {
        if RunDir::at(self.replicate(0)).config().exists() {
            return true;
        }
        // A group missing its replicate 0 is still one (read as a lone run, it was refused for
        // a missing checkpoint): its config says train.replicates > 1, or it holds replicates.
        let Some(table) = read_text(&self.config(), MAX_TEXT).ok().and_then(|t| t.parse::<toml::Table>().ok()) else {
            return false;
        };
        let many = table
            .get("train")
            .and_then(|t| t.get("replicates"))
            .and_then(|v| v.as_integer())
            .is_some_and(|r| r > 1);
        many || (1..4).any(|k| self.replicate(k).exists())
    }

    /// Whether it holds a run (a config or a summary).
    pub fn holds_run(&self) -> bool {
        self.config().exists() || self.summary().exists()
    }
}

/// Largest config or summary file read back from a run directory (16 MiB).
pub const MAX_TEXT: u64 = 1 << 24;

/// A run directory's name after the config file it runs (`configs/market/duel.toml`: `duel`).
pub fn stem(config: &Path) -> &str {
    config.file_stem().and_then(|s| s.to_str()).unwrap_or("run")
}

/// Take the writer's lock on run directory `dir` (which must exist), then remove the temporary
/// files of writes a killed process left behind (`*.tmp`, here and in `checkpoints/`): with the
/// lock held, no other process can be writing them.
fn lock(dir: &Path) -> crate::error::Result<RunLock> {
    let path = dir.join(LOCK_FILE);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io_error(&path, "opening", e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            return Err(crate::error::run_dir(
                dir,
                format!(
                    "another mtf process is writing this run directory (it holds {}); wait for it to finish, or choose another directory",
                    path.display()
                ),
            ))
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_error(&path, "locking", e)),
    }
    for sub in [dir.to_path_buf(), dir.join(names::CHECKPOINTS)] {
        let Ok(entries) = std::fs::read_dir(&sub) else { continue };
        for entry in entries.flatten() {
            let p = entry.path();
            let is_tmp = p.extension().is_some_and(|x| x == "tmp");
            if is_tmp && entry.file_type().is_ok_and(|t| t.is_file()) {
                std::fs::remove_file(&p).map_err(|e| io_error(&p, "removing", e))?;
            }
        }
    }
    Ok(RunLock { _file: file })
}

/// An I/O error that names its file: `PATH: doing: error`. Errors the user can fix (a missing
/// file, no permission, a full or read-only disk) exit 2 ([`crate::error::Error::exit_code`]).
pub fn io_error(path: &Path, doing: &str, e: std::io::Error) -> crate::error::Error {
    crate::error::Error::Io {
        path: path.to_path_buf(),
        doing: doing.to_string(),
        source: e,
    }
}

/// Check that a run name is one plain path component (no `/`, `..` or control characters), so
/// `--name` cannot place a run outside the output folder.
pub fn check_name(name: &str) -> crate::error::Result<()> {
    let bad = name.is_empty() || name == "." || name == ".." || name.chars().any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        return Err(crate::error::user(format!(
            "--name {name:?}: a run name is one plain file name (no `/`, `..` or control characters); use --out DIR to choose the folder"
        )));
    }
    Ok(())
}

/// Read a regular file of at most `max` bytes, naming it in every error. FIFOs, devices and
/// directories are refused (reading `/dev/zero` or a FIFO would never end).
pub fn read_regular(path: &Path, max: u64) -> crate::error::Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| io_error(path, "reading", e))?;
    if !meta.is_file() {
        return Err(crate::error::user(format!(
            "{}: not a regular file (a directory, FIFO or device)",
            path.display()
        )));
    }
    if meta.len() > max {
        return Err(crate::error::user(format!(
            "{}: {} bytes, more than the {max} a file of this kind may have",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| io_error(path, "reading", e))
}

/// [`read_regular`] for a UTF-8 text file.
pub fn read_text(path: &Path, max: u64) -> crate::error::Result<String> {
    String::from_utf8(read_regular(path, max)?).map_err(|e| crate::error::user(format!("{}: not UTF-8 text ({e})", path.display())))
}

/// See [`RunDir::create`].
fn create(out: Option<&Path>, name: &str) -> crate::error::Result<(PathBuf, RunLock)> {
    check_name(name)?;
    let dir = match out {
        Some(p) => p.to_path_buf(),
        None => {
            let base = PathBuf::from("runs").join(format!("{name}-{}", timestamp()));
            let mut dir = base.clone();
            let mut k = 2;
            while dir.exists() {
                dir = PathBuf::from(format!("{}-{k}", base.display()));
                k += 1;
            }
            dir
        }
    };
    std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, "creating", e))?;
    // Lock first, then look: two processes given the same --out cannot both pass the check.
    let lock = lock(&dir)?;
    if RunDir::at(&dir).holds_run() {
        return Err(crate::error::run_dir(&dir, "already holds a run; choose another --out"));
    }
    Ok((dir, lock))
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, synced, then
/// renamed over the target, so a reader sees the old file or the new one, never a torn one. The
/// temporary name is unique to the process and the call, so concurrent writers (two sweep
/// processes finishing one study) never write into each other's temporary file. A target that
/// exists and is not a regular file (a device such as `/dev/full`, a FIFO, a directory) is
/// refused: renaming over it would replace it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> crate::error::Result<()> {
    write_atomic_with(path, |f| f.write_all(bytes))
}

/// [`write_atomic`] of what `write` streams (through a buffer), for a file too large to hold
/// whole in memory first (a long episode's round log).
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> crate::error::Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() {
            return Err(crate::error::user(format!(
                "{}: exists and is not a regular file; refusing to replace it",
                path.display()
            )));
        }
    }
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!(
        "{}.{}-{call}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    let written = (|| {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        write(&mut f)?;
        f.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io_error(path, "writing", e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error(path, "replacing", e)
    })?;
    Ok(())
}

/// A CSV file's bytes: a header row, then records, every field quoted as RFC 4180 needs.
pub fn csv_bytes(header: &[String], records: &[Vec<String>]) -> crate::error::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| crate::error::failed(format!("writing CSV: {e}"));
    w.write_record(header).map_err(fail)?;
    for r in records {
        w.write_record(r).map_err(fail)?;
    }
    w.into_inner().map_err(|e| crate::error::failed(format!("writing CSV: {e}")))
}

/// Append one line to a JSON-lines file (created if absent).
pub fn append_line(path: &Path, line: &str) -> crate::error::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| io_error(path, "appending to", e))?;
    // One write call per line, synced: a line is in the file whole or not at all.
    f.write_all(format!("{line}\n").as_bytes())
        .and_then(|()| f.sync_data())
        .map_err(|e| io_error(path, "appending to", e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_known_instants() {
        let at = |secs: i64| timestamp_of(jiff::Timestamp::from_second(secs).unwrap());
        assert_eq!(at(0), "19700101-000000");
        // 2026-11-21T02:00:00Z, and the last second of a leap year's February.
        assert_eq!(at(1_795_226_400), "20261121-020000");
        assert_eq!(at(951_868_799), "20000229-235959");
    }

    #[test]
    fn timestamp_has_the_run_directory_shape() {
        let t = timestamp();
        assert_eq!(t.len(), 15);
        assert_eq!(&t[8..9], "-");
        assert!(t[..8].chars().chain(t[9..].chars()).all(|c| c.is_ascii_digit()));
        assert!(t.starts_with("20"));
    }

    #[test]
    fn two_writers_of_one_run_directory_interleaved_episodes() {
        let dir = std::env::temp_dir().join(format!("mtf-lock-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("checkpoints")).unwrap();
        std::fs::write(dir.join("checkpoints/latest.ckpt.ckpt.1-0.tmp"), b"torn").unwrap();
        let first = lock(&dir).unwrap();
        assert!(
            !dir.join("checkpoints/latest.ckpt.ckpt.1-0.tmp").exists(),
            "stale temporary files are removed"
        );
        let second = lock(&dir).unwrap_err().to_string();
        assert!(second.contains("another mtf process is writing this run directory"), "{second}");
        drop(first);
        lock(&dir).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn disk_full_and_read_only_named_no_path() {
        use std::io::{Error, ErrorKind};
        for kind in [ErrorKind::StorageFull, ErrorKind::ReadOnlyFilesystem, ErrorKind::PermissionDenied] {
            let e = io_error(Path::new("runs/x/metrics.jsonl"), "appending to", Error::from(kind));
            assert!(e.to_string().starts_with("runs/x/metrics.jsonl: appending to: "), "{e}");
            assert_eq!(e.exit_code(), 2, "{kind:?} is the user's to fix");
        }
        // A real full device: the error names it.
        let e = append_line(Path::new("/dev/full"), "x").unwrap_err().to_string();
        assert!(e.starts_with("/dev/full: appending to: No space left on device"), "{e}");
    }

    #[test]
    fn csv_fields_with_commas_and_quotes_are_quoted() {
        let bytes = csv_bytes(&["policy".into(), "x".into()], &[vec!["run:a,b".into(), "say \"hi\"".into()]]).unwrap();
        assert_eq!(String::from_utf8(bytes).unwrap(), "policy,x\n\"run:a,b\",\"say \"\"hi\"\"\"\n");
    }

    #[test]
    fn name_escaped_the_output_folder() {
        for bad in ["../../escape", "a/b", "..", "", "x\ny"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        check_name("quickstart-2").unwrap();
    }

    #[test]
    fn dev_full_was_replaced_by_a_regular_file() {
        let e = write_atomic(Path::new("/dev/full"), b"x").unwrap_err().to_string();
        assert!(e.contains("/dev/full: exists and is not a regular file"), "{e}");
        assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device_like());
    }

    trait CharDevice {
        fn is_char_device_like(&self) -> bool;
    }
    impl CharDevice for std::fs::FileType {
        fn is_char_device_like(&self) -> bool {
            use std::os::unix::fs::FileTypeExt;
            self.is_char_device()
        }
    }

    #[test]
    fn fifo_or_dev_zero_hung_or_exhausted_memory() {
        let e = read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with("/dev/zero: not a regular file"), "{e}");
        let e = read_regular(Path::new("/"), 1 << 20).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let e = read_regular(Path::new("/nonexistent/x"), 10).unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x: reading:"), "{e}");
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = std::env::temp_dir().join(format!("mtf-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "two");
        assert!(!dir.join("x.json.tmp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

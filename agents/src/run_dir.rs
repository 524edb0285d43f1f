//! Run directories (`runs/<name>-<YYYYMMDD-HHMMSS>/`) and atomic file writes.

use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// UTC timestamp `YYYYMMDD-HHMMSS`.
pub fn timestamp() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}{m:02}{d:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Create a fresh run directory: `out` if given (must not hold a run already), else
/// `runs/<name>-<timestamp>` (with a numeric suffix if that exists).
pub fn create(out: Option<&Path>, name: &str) -> anyhow::Result<PathBuf> {
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
    if dir.join("summary.json").exists() || dir.join("config.toml").exists() {
        return Err(crate::error::user(format!(
            "{}: already holds a run; choose another --out",
            dir.display()
        )));
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Write `bytes` to `path` atomically: a temporary file in the same directory, synced, then
/// renamed over the target, so a reader sees the old file or the new one, never a torn one. The
/// temporary name is unique to the process and the call, so concurrent writers (two sweep
/// processes finishing one study) never write into each other's temporary file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!(
        "{}.{}-{call}.tmp",
        path.extension().and_then(|e| e.to_str()).unwrap_or(""),
        std::process::id()
    ));
    let mut f = std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    Ok(())
}

/// Append one line to a JSON-lines file (created if absent).
pub fn append_line(path: &Path, line: &str) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("appending to {}", path.display()))?;
    writeln!(f, "{line}")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_has_the_run_directory_shape() {
        let t = timestamp();
        assert_eq!(t.len(), 15);
        assert_eq!(&t[8..9], "-");
        assert!(t[..8].chars().chain(t[9..].chars()).all(|c| c.is_ascii_digit()));
        assert!(t.starts_with("20"));
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

//! Checkpoint files of a training run: `MTFCKPT3`, the episodes done (u64), the length of the
//! payload (u64), the payload, then FNV-1a 64 of everything before it. The payload is the
//! resolved config the run trained with (its length as u64, then the TOML text: `--resume`
//! refuses a `config.toml` edited since, naming the keys) and the learner's state
//! (`MTFCKPT2` files, read too, hold the learner's state alone). A learner's state
//! is a list of named parts ([`crate::learners::parts::Parts`]), the one framing every learner uses (integers and
//! floats little-endian; the actor-critic's networks and optimizer states as burn records). Written
//! atomically (`latest.ckpt` after every episode, `episode-NNNNNN.ckpt` kept every
//! `train.checkpoint_every`); read back with every malformation a [`CheckpointError`] naming
//! the file, never trusted and never a panic.

use crate::learners::Learner;
use crate::run;
use env::rng::fnv1a;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"MTFCKPT3";

/// Format 2 (no config): read, without the config check.
const MAGIC_V2: &[u8; 8] = b"MTFCKPT2";

/// Format 1 (before named parts): refused with a message saying so.
const MAGIC_V1: &[u8; 8] = b"MTFCKPT1";

/// Header (magic, episodes, length) and footer (checksum) bytes.
const FRAME: usize = 32;

/// Largest checkpoint file read (a learner's state is a few MB; anything larger is not ours).
pub(crate) const MAX_BYTES: u64 = 1 << 32;

pub use crate::error::CheckpointError;

/// A checkpoint file's bytes: the episodes done, the resolved config trained with, the
/// learner's state.
pub fn encode(episodes_done: u64, config: &str, learner: &[u8]) -> Vec<u8> {
    let payload = 8 + config.len() + learner.len();
    let mut out = Vec::with_capacity(payload + FRAME);
    out.extend(MAGIC);
    out.extend(episodes_done.to_le_bytes());
    out.extend((payload as u64).to_le_bytes());
    out.extend((config.len() as u64).to_le_bytes());
    out.extend(config.as_bytes());
    out.extend(learner);
    out.extend(fnv1a(&out).to_le_bytes());
    out
}

/// A decoded checkpoint.
#[derive(Debug, PartialEq)]
pub struct Decoded<'a> {
    /// Episodes done.
    pub episodes: u64,
    /// The resolved config the run trained with (`None` in format 2 files).
    pub config: Option<&'a str>,
    /// The learner's state.
    pub learner: &'a [u8],
}

/// Decode a checkpoint read from `path`.
pub fn decode<'a>(path: &Path, bytes: &'a [u8]) -> Result<Decoded<'a>, CheckpointError> {
    let path = || path.to_path_buf();
    if bytes.len() >= 8 && &bytes[..8] == MAGIC_V1 {
        return Err(CheckpointError::OldFormat { path: path() });
    }
    let v2 = bytes.len() >= 8 && &bytes[..8] == MAGIC_V2;
    if bytes.len() < FRAME || (&bytes[..8] != MAGIC && !v2) {
        return Err(CheckpointError::NotCheckpoint { path: path() });
    }
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let body = &bytes[..bytes.len() - 8];
    let got = (body.len() - 24) as u64;
    let expected = word(16);
    if got != expected {
        return Err(CheckpointError::Length {
            path: path(),
            got,
            expected,
        });
    }
    if fnv1a(body) != word(bytes.len() - 8) {
        return Err(CheckpointError::Checksum { path: path() });
    }
    let payload = &body[24..];
    if v2 {
        return Ok(Decoded {
            episodes: word(8),
            config: None,
            learner: payload,
        });
    }
    // The checksum held, so a bad config length is a writer's bug or a crafted file.
    let malformed = || CheckpointError::NotCheckpoint { path: path() };
    let len = payload
        .get(..8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .ok_or_else(malformed)?;
    let rest = &payload[8..];
    if len > rest.len() as u64 {
        return Err(malformed());
    }
    let (config, learner) = rest.split_at(len as usize);
    Ok(Decoded {
        episodes: word(8),
        config: Some(std::str::from_utf8(config).map_err(|_| malformed())?),
        learner,
    })
}

/// Write `latest.ckpt` (and a numbered copy when `keep`) into `dir/checkpoints`, atomically.
pub fn write(dir: &Path, episodes_done: u64, config: &str, learner: &dyn Learner, keep: bool) -> crate::error::Result<()> {
    let bytes = encode(episodes_done, config, &learner.save()?);
    let run = run::RunDir::at(dir);
    let ck = run.checkpoints();
    std::fs::create_dir_all(&ck).map_err(|e| run::io_error(&ck, "creating", e))?;
    run::write_atomic(&run.latest_checkpoint(), &bytes)?;
    if keep {
        run::write_atomic(&run.kept_checkpoint(episodes_done), &bytes)?;
    }
    Ok(())
}

/// The checkpoint a run continues from: `checkpoints/latest.ckpt`, or, when that is missing
/// (deleted, or lost with a disk), the newest `episode-NNNNNN.ckpt`. `None`: no checkpoint.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    let run = run::RunDir::at(dir);
    let (ck, latest) = (run.checkpoints(), run.latest_checkpoint());
    if std::fs::symlink_metadata(&latest).is_ok() {
        return Some(latest);
    }
    let mut numbered: Vec<PathBuf> = std::fs::read_dir(&ck)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|s| s.to_str()).unwrap_or("");
            run::RunDir::is_kept_checkpoint(name)
        })
        .collect();
    numbered.sort();
    numbered.pop()
}

/// Restore `learner` from the checkpoint at `path`; returns the episodes it had done and the
/// config it was trained with (when the file records it).
pub fn restore(path: &Path, learner: &mut dyn Learner) -> crate::error::Result<(u64, Option<String>)> {
    let bytes = run::read_regular(path, MAX_BYTES)?;
    let d = decode(path, &bytes)?;
    learner.load(d.learner).map_err(|e| CheckpointError::Learner {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok((d.episodes, d.config.map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_detect_truncation_and_corruption() {
        let p = Path::new("run/checkpoints/latest.ckpt");
        let bytes = encode(7, "seed = 1", b"learner state");
        let want = Decoded {
            episodes: 7,
            config: Some("seed = 1"),
            learner: &b"learner state"[..],
        };
        assert_eq!(decode(p, &bytes).unwrap(), want);
        let e = decode(p, &bytes[..bytes.len() - 3]).unwrap_err();
        assert!(matches!(e, CheckpointError::Length { got: 26, expected: 29, .. }), "{e}");
        assert!(e.to_string().starts_with("run/checkpoints/latest.ckpt: truncated or padded"));
        let mut bad = bytes.clone();
        bad[30] ^= 1;
        assert!(matches!(decode(p, &bad).unwrap_err(), CheckpointError::Checksum { .. }));
        assert!(matches!(decode(p, b"hello").unwrap_err(), CheckpointError::NotCheckpoint { .. }));
        // Format 2: the learner's state alone, read without a config.
        let mut v2 = MAGIC_V2.to_vec();
        v2.extend(7u64.to_le_bytes());
        v2.extend(13u64.to_le_bytes());
        v2.extend(b"learner state");
        v2.extend(fnv1a(&v2).to_le_bytes());
        let d = decode(p, &v2).unwrap();
        assert_eq!((d.episodes, d.config, d.learner), (7, None, &b"learner state"[..]));
        let mut v1 = bytes.clone();
        v1[..8].copy_from_slice(MAGIC_V1);
        assert!(matches!(decode(p, &v1).unwrap_err(), CheckpointError::OldFormat { .. }));
    }

    #[test]
    fn a_length_field_of_2_pow_64_minus_1_is_an_error_not_an_overflow() {
        let mut bytes = encode(1, "", b"x");
        bytes[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            decode(Path::new("c"), &bytes).unwrap_err(),
            CheckpointError::Length { .. }
        ));
    }
}

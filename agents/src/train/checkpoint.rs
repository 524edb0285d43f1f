//! Checkpoint files of a training run: `MTFCKPT2`, the episodes done (u64), the length of the
//! learner's state (u64), the state, then FNV-1a 64 of everything before it. A learner's state
//! is a list of named parts ([`crate::learners::parts::Parts`]), the one framing every learner uses (integers and
//! floats little-endian; the actor-critic's networks and optimizer states as burn records). Written
//! atomically (`latest.ckpt` after every episode, `episode-NNNNNN.ckpt` kept every
//! `train.checkpoint_every`); read back with every malformation a [`CheckpointError`] naming
//! the file, never trusted and never a panic.

use crate::learners::Learner;
use crate::run;
use env::rng::fnv1a;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"MTFCKPT2";

/// Format 1 (before named parts): refused with a message saying so.
const MAGIC_V1: &[u8; 8] = b"MTFCKPT1";

/// Header (magic, episodes, length) and footer (checksum) bytes.
const FRAME: usize = 32;

/// Largest checkpoint file read (a learner's state is a few MB; anything larger is not ours).
const MAX_BYTES: u64 = 1 << 32;

pub use crate::error::CheckpointError;

/// A checkpoint file's bytes.
pub fn encode(episodes_done: u64, learner: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(learner.len() + FRAME);
    out.extend(MAGIC);
    out.extend(episodes_done.to_le_bytes());
    out.extend((learner.len() as u64).to_le_bytes());
    out.extend(learner);
    out.extend(fnv1a(&out).to_le_bytes());
    out
}

/// Decode a checkpoint read from `path`: (episodes done, learner bytes).
pub fn decode<'a>(path: &Path, bytes: &'a [u8]) -> Result<(u64, &'a [u8]), CheckpointError> {
    let path = || path.to_path_buf();
    if bytes.len() >= 8 && &bytes[..8] == MAGIC_V1 {
        return Err(CheckpointError::OldFormat { path: path() });
    }
    if bytes.len() < FRAME || &bytes[..8] != MAGIC {
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
    Ok((word(8), &body[24..]))
}

/// Write `latest.ckpt` (and a numbered copy when `keep`) into `dir/checkpoints`, atomically.
pub fn write(dir: &Path, episodes_done: u64, learner: &dyn Learner, keep: bool) -> crate::error::Result<()> {
    let bytes = encode(episodes_done, &learner.save()?);
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

/// Restore `learner` from the checkpoint at `path`; returns the episodes it had done.
pub fn restore(path: &Path, learner: &mut dyn Learner) -> crate::error::Result<u64> {
    let bytes = run::read_regular(path, MAX_BYTES)?;
    let (done, state) = decode(path, &bytes)?;
    learner.load(state).map_err(|e| CheckpointError::Learner {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoints_detect_truncation_and_corruption() {
        let p = Path::new("run/checkpoints/latest.ckpt");
        let bytes = encode(7, b"learner state");
        assert_eq!(decode(p, &bytes).unwrap(), (7, &b"learner state"[..]));
        let e = decode(p, &bytes[..bytes.len() - 3]).unwrap_err();
        assert!(matches!(e, CheckpointError::Length { got: 10, expected: 13, .. }), "{e}");
        assert!(e.to_string().starts_with("run/checkpoints/latest.ckpt: truncated or padded"));
        let mut bad = bytes.clone();
        bad[30] ^= 1;
        assert!(matches!(decode(p, &bad).unwrap_err(), CheckpointError::Checksum { .. }));
        assert!(matches!(decode(p, b"hello").unwrap_err(), CheckpointError::NotCheckpoint { .. }));
        let mut v1 = bytes.clone();
        v1[..8].copy_from_slice(MAGIC_V1);
        assert!(matches!(decode(p, &v1).unwrap_err(), CheckpointError::OldFormat { .. }));
    }

    #[test]
    fn a_length_field_of_2_pow_64_minus_1_is_an_error_not_an_overflow() {
        let mut bytes = encode(1, b"x");
        bytes[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            decode(Path::new("c"), &bytes).unwrap_err(),
            CheckpointError::Length { .. }
        ));
    }
}

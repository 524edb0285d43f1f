//! Checkpoint files of a training run: `MTFCKPT2`, the episodes done (u64), the length of the
//! learner's state (u64), the state, then FNV-1a 64 of everything before it. A learner's state
//! is a list of named parts ([`Parts`]), the one framing every learner uses (integers and
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

/// A learner's state: named byte parts, each written as `name length (u64), name, length
/// (u64), bytes`. Loading asks for the parts by name, in order, so a state of another learner
/// kind or layout is refused by name rather than misread.
#[derive(Default)]
pub struct Parts(Vec<u8>);

impl Parts {
    /// Append a part.
    pub fn add(mut self, name: &str, bytes: &[u8]) -> Self {
        for field in [name.as_bytes(), bytes] {
            self.0.extend((field.len() as u64).to_le_bytes());
            self.0.extend(field);
        }
        self
    }

    /// Append a part of u64 integers.
    pub fn add_u64(self, name: &str, xs: &[u64]) -> Self {
        let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.add(name, &bytes)
    }

    /// Append a part of f64 numbers.
    pub fn add_f64(self, name: &str, xs: &[f64]) -> Self {
        let bytes: Vec<u8> = xs.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.add(name, &bytes)
    }

    /// The encoded state.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    /// Split `bytes` into exactly the parts `names`, in order. The error says what is wrong
    /// (the learner's `load` wraps it into [`CheckpointError::Learner`], naming the file).
    pub fn read<'a>(bytes: &'a [u8], names: &[&str]) -> Result<Vec<&'a [u8]>, String> {
        let mut rest = bytes;
        let mut field = || -> Result<&'a [u8], String> {
            let len = rest
                .get(..8)
                .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
                .ok_or("the learner state is truncated")?;
            let body = rest.get(8..).unwrap_or_default();
            if (body.len() as u64) < len {
                return Err("the learner state is truncated".into());
            }
            let (out, after) = body.split_at(len as usize);
            rest = after;
            Ok(out)
        };
        let mut parts = Vec::with_capacity(names.len());
        for name in names {
            let got = field()?;
            if got != name.as_bytes() {
                return Err(format!(
                    "the learner state has part `{}` where `{name}` was expected (another learner kind?)",
                    String::from_utf8_lossy(got)
                ));
            }
            parts.push(field()?);
        }
        if !rest.is_empty() {
            return Err(format!("the learner state has {} bytes after its last part", rest.len()));
        }
        Ok(parts)
    }

    /// A part of u64 integers.
    pub fn u64s(part: &[u8], name: &str) -> Result<Vec<u64>, String> {
        if part.len() % 8 != 0 {
            return Err(format!("part `{name}` is not whole 8-byte integers"));
        }
        Ok(part
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect())
    }

    /// A part of finite f64 numbers.
    pub fn f64s(part: &[u8], name: &str) -> Result<Vec<f64>, String> {
        if part.len() % 8 != 0 {
            return Err(format!("part `{name}` is not whole 8-byte numbers"));
        }
        let xs: Vec<f64> = part
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        if xs.iter().any(|x| !x.is_finite()) {
            return Err(format!("part `{name}` holds a value that is not finite"));
        }
        Ok(xs)
    }
}

/// Write `latest.ckpt` (and a numbered copy when `keep`) into `dir/checkpoints`, atomically.
pub fn write(dir: &Path, episodes_done: u64, learner: &dyn Learner, keep: bool) -> crate::Result<()> {
    let bytes = encode(episodes_done, &learner.save()?);
    let ck = dir.join("checkpoints");
    std::fs::create_dir_all(&ck).map_err(|e| run::io_error(&ck, "creating", e))?;
    run::write_atomic(&ck.join("latest.ckpt"), &bytes)?;
    if keep {
        run::write_atomic(&ck.join(format!("episode-{episodes_done:06}.ckpt")), &bytes)?;
    }
    Ok(())
}

/// The checkpoint a run continues from: `checkpoints/latest.ckpt`, or, when that is missing
/// (deleted, or lost with a disk), the newest `episode-NNNNNN.ckpt`. `None`: no checkpoint.
pub fn latest(dir: &Path) -> Option<PathBuf> {
    let ck = dir.join("checkpoints");
    let latest = ck.join("latest.ckpt");
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
            name.starts_with("episode-") && name.ends_with(".ckpt")
        })
        .collect();
    numbered.sort();
    numbered.pop()
}

/// Restore `learner` from the checkpoint at `path`; returns the episodes it had done.
pub fn restore(path: &Path, learner: &mut dyn Learner) -> crate::Result<u64> {
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
    fn parts_are_read_back_by_name_and_malformed_states_are_refused() {
        let bytes = Parts::default().add_u64("dims", &[3, 4]).add_f64("w", &[0.5, -1.0]).into_bytes();
        let parts = Parts::read(&bytes, &["dims", "w"]).unwrap();
        assert_eq!(Parts::u64s(parts[0], "dims").unwrap(), [3, 4]);
        assert_eq!(Parts::f64s(parts[1], "w").unwrap(), [0.5, -1.0]);
        let e = Parts::read(&bytes, &["logw", "w"]).unwrap_err();
        assert!(e.contains("part `dims` where `logw` was expected"), "{e}");
        assert!(Parts::read(&bytes[..bytes.len() - 1], &["dims", "w"])
            .unwrap_err()
            .contains("truncated"));
        assert!(Parts::read(&bytes, &["dims"]).unwrap_err().contains("bytes after its last part"));
        // A length of 2^64 - 1 is an error, not an allocation or an overflow.
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(Parts::read(&huge, &["dims", "w"]).unwrap_err().contains("truncated"));
        let nan = Parts::default().add_f64("w", &[f64::NAN]).into_bytes();
        assert!(Parts::f64s(Parts::read(&nan, &["w"]).unwrap()[0], "w")
            .unwrap_err()
            .contains("not finite"));
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

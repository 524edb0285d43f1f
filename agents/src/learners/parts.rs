//! A learner's saved state: named byte parts, the one framing every learner uses (integers and
//! floats little-endian; the networks and optimizer states as burn records). A checkpoint
//! (`train::checkpoint`) wraps these bytes with its header and checksum.

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
    /// (the learner's `load` wraps it into [`crate::error::CheckpointError::Learner`], naming the file).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! FNV-1a 64, the one implementation of the harness: the environment's stream names and the
//! checksums of checkpoints and exported agents (over bytes, [`bytes`]), and Gandiva_fair's
//! bucketing of rate columns (over 64-bit words, [`word`]). One place, so formats that depend
//! on it cannot drift apart.

/// FNV-1a 64's offset basis: the hash of nothing.
pub const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64's prime.
const PRIME: u64 = 0x0100_0000_01b3;

/// One step of FNV-1a over a whole 64-bit word (a bucket hash, not the byte-wise standard).
#[inline]
pub fn word(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(PRIME)
}

/// FNV-1a 64 of some bytes (the standard byte-wise hash).
pub fn bytes(data: &[u8]) -> u64 {
    data.iter().fold(OFFSET, |h, &b| word(h, u64::from(b)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn known_fnv1a_64_values() {
        // Published FNV-1a 64 test vectors.
        assert_eq!(super::bytes(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::bytes(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::bytes(b"foobar"), 0x8594_4171_f739_67e8);
    }
}

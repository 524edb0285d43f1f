//! Python's `random.Random` (MT19937 with CPython's seeding, `getrandbits`, `randrange` and
//! `shuffle`), bit for bit.
//!
//! Why it is here: Gavel's heterogeneity-agnostic policies draw from Python generators seeded
//! `seed` (FIFO's random type) and `seed + 5` (the order in which a round visits the GPU
//! types), and which job runs where follows those draws. Reproducing Gavel's own numbers on
//! its traces (the fidelity check of `env::worlds::gavel`) needs the same draws; mtf's own
//! streams (`env::rng`) are used everywhere else.

/// CPython's Mersenne Twister generator.
#[derive(Clone, Debug)]
pub struct PyRandom {
    mt: Box<[u32; N]>,
    index: usize,
}

const N: usize = 624;
const M: usize = 397;

impl PyRandom {
    /// `random.Random(seed)` for a non-negative integer seed (CPython's `init_by_array` on the
    /// seed's 32-bit words, least significant first).
    pub fn new(seed: u64) -> Self {
        let key: Vec<u32> = if seed >> 32 == 0 {
            vec![seed as u32]
        } else {
            vec![seed as u32, (seed >> 32) as u32]
        };
        let mut r = Self {
            mt: Box::new([0; N]),
            index: N,
        };
        r.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_664_525)).wrapping_add(key[j]).wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
        }
        r.mt[0] = 0x8000_0000;
        r.index = N;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            self.mt[i] = 1_812_433_253u32
                .wrapping_mul(self.mt[i - 1] ^ (self.mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        self.index = N;
    }

    /// The next 32 random bits (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn twist(&mut self) {
        const UPPER: u32 = 0x8000_0000;
        const LOWER: u32 = 0x7fff_ffff;
        const MATRIX: u32 = 0x9908_b0df;
        for k in 0..N {
            let y = (self.mt[k] & UPPER) | (self.mt[(k + 1) % N] & LOWER);
            let mag = if y & 1 == 1 { MATRIX } else { 0 };
            self.mt[k] = self.mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.index = 0;
    }

    /// `random()`: a float in [0, 1) with 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = self.next_u32() >> 5;
        let b = self.next_u32() >> 6;
        (f64::from(a) * 67_108_864.0 + f64::from(b)) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `getrandbits(k)` for `1 <= k <= 32`.
    pub fn getrandbits(&mut self, k: u32) -> u32 {
        debug_assert!((1..=32).contains(&k));
        self.next_u32() >> (32 - k)
    }

    /// `randrange(n)` (`_randbelow`: rejection on `n.bit_length()` bits), `0 < n < 2^32`.
    pub fn randrange(&mut self, n: usize) -> usize {
        assert!(n > 0 && n <= u32::MAX as usize, "randrange(0) or a range past 32 bits");
        let k = usize::BITS - n.leading_zeros();
        loop {
            let r = self.getrandbits(k) as usize;
            if r < n {
                return r;
            }
        }
    }

    /// `shuffle(x)`: Fisher-Yates from the end, `j = randrange(i + 1)`.
    pub fn shuffle<T>(&mut self, x: &mut [T]) {
        for i in (1..x.len()).rev() {
            let j = self.randrange(i + 1);
            x.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known answers printed by CPython 3.11 on this machine (`python3 -c ...`).
    #[test]
    fn cpython_known_answers() {
        let mut r = PyRandom::new(0);
        assert_eq!(r.random(), 0.844_421_851_525_048_1);
        assert_eq!(r.getrandbits(32), 3_255_389_356);
        assert_eq!(r.randrange(3), 1);
        assert_eq!(r.randrange(7), 0);
        // Gavel's round order of GPU types at seed 0 (its shuffler is seeded seed + 5).
        let mut r = PyRandom::new(5);
        let orders: Vec<[&str; 3]> = (0..4)
            .map(|_| {
                let mut l = ["v100", "p100", "k80"];
                r.shuffle(&mut l);
                l
            })
            .collect();
        assert_eq!(orders[2], ["p100", "v100", "k80"]);
        assert_eq!(orders[3], ["k80", "v100", "p100"]);
        let mut l: Vec<u32> = (0..10).collect();
        PyRandom::new(7).shuffle(&mut l);
        assert_eq!(l, vec![8, 3, 1, 4, 7, 0, 9, 6, 2, 5]);
        let mut r = PyRandom::new((1 << 40) + 3);
        let draws: Vec<usize> = (0..5).map(|_| r.randrange(10)).collect();
        assert_eq!(draws, vec![3, 0, 8, 1, 9]);
        let s = PyRandom::new(0);
        assert_eq!(&s.mt[..3], &[2_147_483_648, 766_982_754, 497_961_170]);
    }
}

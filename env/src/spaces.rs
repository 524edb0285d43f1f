//! Action and observation spaces (gym's `Discrete` and `Box`), with `contains` and `sample`.

use rand::{Rng, RngExt};

/// Actions `0..n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Discrete {
    /// Number of actions.
    pub n: usize,
}

impl Discrete {
    /// Whether `a` is an action of this space.
    pub fn contains(&self, a: usize) -> bool {
        a < self.n
    }

    /// A uniformly random action.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        rng.random_range(0..self.n)
    }
}

/// A box of f32 vectors with per-coordinate bounds (high may be infinite).
#[derive(Clone, Debug, PartialEq)]
pub struct BoxSpace {
    /// Lower bounds.
    pub low: Vec<f32>,
    /// Upper bounds.
    pub high: Vec<f32>,
}

impl BoxSpace {
    /// Dimension.
    pub fn dim(&self) -> usize {
        self.low.len()
    }

    /// Whether `x` has the right length and every coordinate is finite and within bounds.
    pub fn contains(&self, x: &[f32]) -> bool {
        x.len() == self.low.len()
            && x.iter()
                .zip(self.low.iter().zip(&self.high))
                .all(|(v, (lo, hi))| v.is_finite() && v >= lo && v <= hi)
    }

    /// A random point: uniform on bounded coordinates, exponential(1) above the bound on
    /// unbounded ones.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Vec<f32> {
        self.low
            .iter()
            .zip(&self.high)
            .map(|(&lo, &hi)| {
                let u: f32 = rng.random();
                if hi.is_finite() {
                    lo + u * (hi - lo)
                } else {
                    lo - (1.0 - u).ln()
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_contained() {
        let mut rng = crate::rng::stream(1, "test", 0);
        let d = Discrete { n: 10 };
        let b = BoxSpace {
            low: vec![0.0, 0.0],
            high: vec![1.0, f32::INFINITY],
        };
        for _ in 0..1000 {
            assert!(d.contains(d.sample(&mut rng)));
            assert!(b.contains(&b.sample(&mut rng)));
        }
        assert!(!d.contains(10));
        assert!(!b.contains(&[0.5]));
        assert!(!b.contains(&[1.5, 0.0]));
        assert!(!b.contains(&[f32::NAN, 0.0]));
    }
}

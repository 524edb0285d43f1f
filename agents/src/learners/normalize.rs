//! Running statistics per agent, for normalising what a learner learns from: the actor-critic's
//! rewards (centred and scaled) and PPO's value targets (its critics predict normalised
//! returns, as MAPPO's value normalisation does). Welford's algorithm over every value seen,
//! saved with the learner so a resumed run continues with the same statistics.

use super::parts::Parts;

/// Per agent: count, mean and sum of squared deviations of every value seen.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningStats {
    count: Vec<f64>,
    mean: Vec<f64>,
    m2: Vec<f64>,
}

/// The standard deviation below which values are not scaled up (a constant stream has none).
const MIN_STD: f64 = 1e-4;

impl RunningStats {
    /// For `n` agents, nothing seen yet.
    pub fn new(n: usize) -> Self {
        Self {
            count: vec![0.0; n],
            mean: vec![0.0; n],
            m2: vec![0.0; n],
        }
    }

    /// Agent `i` saw `x`.
    pub fn push(&mut self, i: usize, x: f64) {
        self.count[i] += 1.0;
        let d = x - self.mean[i];
        self.mean[i] += d / self.count[i];
        self.m2[i] += d * (x - self.mean[i]);
    }

    /// Agent `i`'s mean.
    pub fn mean(&self, i: usize) -> f64 {
        self.mean[i]
    }

    /// Agent `i`'s standard deviation (of the values seen, the population's), at least
    /// `MIN_STD`.
    pub fn std(&self, i: usize) -> f64 {
        let var = if self.count[i] > 0.0 { self.m2[i] / self.count[i] } else { 0.0 };
        var.sqrt().max(MIN_STD)
    }

    /// Agent `i`'s root mean square (at least the standard deviation's floor): a scale that
    /// keeps a reward's sign and level.
    pub fn rms(&self, i: usize) -> f64 {
        let var = if self.count[i] > 0.0 { self.m2[i] / self.count[i] } else { 0.0 };
        (var + self.mean[i] * self.mean[i]).sqrt().max(MIN_STD)
    }

    /// `x` normalised with agent `i`'s statistics: `(x - mean) / std`.
    pub fn normalise(&self, i: usize, x: f64) -> f64 {
        (x - self.mean[i]) / self.std(i)
    }

    /// `z` back in agent `i`'s units: `z std + mean`.
    pub fn denormalise(&self, i: usize, z: f64) -> f64 {
        z * self.std(i) + self.mean[i]
    }

    /// The statistics as a saved part: count, mean and m2 of every agent.
    pub fn save(&self, parts: Parts, name: &str) -> Parts {
        let v: Vec<f64> = (0..self.count.len())
            .flat_map(|i| [self.count[i], self.mean[i], self.m2[i]])
            .collect();
        parts.add_f64(name, &v)
    }

    /// Restore from [`RunningStats::save`]'s part.
    pub fn load(&mut self, part: &[u8], name: &str) -> Result<(), String> {
        let v = Parts::f64s(part, name)?;
        let n = self.count.len();
        if v.len() != 3 * n {
            return Err(format!("part `{name}` holds {} numbers, expected {} (3 per agent)", v.len(), 3 * n));
        }
        for i in 0..n {
            (self.count[i], self.mean[i], self.m2[i]) = (v[3 * i], v[3 * i + 1], v[3 * i + 2]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_deviation_of_a_known_stream() {
        let mut s = RunningStats::new(2);
        for x in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            s.push(1, x);
        }
        // The textbook sample: mean 5, population sd 2.
        assert_eq!(s.mean(1), 5.0);
        assert_eq!(s.std(1), 2.0);
        assert_eq!(s.normalise(1, 9.0), 2.0);
        assert_eq!(s.denormalise(1, -1.5), 2.0);
        // Agent 0 saw nothing, then only constants: no scaling up.
        assert_eq!(s.std(0), MIN_STD);
        for _ in 0..5 {
            s.push(0, 3.0);
        }
        assert_eq!(s.normalise(0, 3.0), 0.0);
        let saved = s.save(Parts::default(), "stats").into_bytes();
        let mut back = RunningStats::new(2);
        back.load(Parts::read(&saved, &["stats"]).unwrap()[0], "stats").unwrap();
        assert_eq!(back, s);
        assert!(RunningStats::new(3)
            .load(Parts::read(&saved, &["stats"]).unwrap()[0], "stats")
            .is_err());
    }
}

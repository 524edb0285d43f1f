//! Statistics over training replicates, as Agarwal et al. ask of deep RL results ("Deep
//! Reinforcement Learning at the Edge of the Statistical Precipice", NeurIPS 2021; their
//! `rliable` library): the interquartile mean, percentile bootstrap confidence intervals
//! (stratified when there are several tasks), and the probability of improvement.
//!
//! Here a replicate's score is its paired difference to a baseline: the mean over the same
//! held-out evaluation seeds of (its welfare − the baseline's), so the arrivals cancel out of
//! every score and the bootstrap over replicates measures what training seeds change. The
//! bootstrap draws come from a fixed stream, so a report is the same every time it is made.

use env::rng::{stream, unit};
use rand::Rng;
use serde::Serialize;

/// Bootstrap resamples (rliable uses 50,000; 10,000 puts the 2.5% and 97.5% percentiles within
/// about 0.3% of their limits' rank).
pub const REPS: usize = 10_000;

/// The interquartile mean: the mean of the middle half of `xs`, as `scipy.stats.trim_mean(xs,
/// 0.25)` computes it (rliable's IQM): `floor(n / 4)` values cut from each end of the sorted
/// sample. NaN for an empty sample.
pub fn iqm(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let cut = s.len() / 4;
    let mid = &s[cut..s.len() - cut];
    mid.iter().sum::<f64>() / mid.len() as f64
}

/// The mean.
pub fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The probability that a run of X beats a run of Y, `P(X > Y) + P(X = Y) / 2` over every pair
/// (the Mann-Whitney U statistic over `|X| |Y|`): rliable's probability of improvement on one
/// task.
pub fn prob_improvement(xs: &[f64], ys: &[f64]) -> f64 {
    let mut wins = 0.0;
    for x in xs {
        for y in ys {
            wins += if x > y {
                1.0
            } else if x == y {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (xs.len() * ys.len()) as f64
}

/// The percentile bootstrap's 95% interval of `statistic` over `strata`: every resample draws,
/// within each stratum (a task), as many values as it has, with replacement, and `statistic`
/// is taken over the pooled draws. With one stratum this is the plain percentile bootstrap.
pub fn bootstrap_ci(strata: &[&[f64]], statistic: impl Fn(&[f64]) -> f64, seed: u64) -> [f64; 2] {
    let mut rng = stream(seed, "bootstrap", 0);
    let total: usize = strata.iter().map(|s| s.len()).sum();
    let mut draw = Vec::with_capacity(total);
    let mut stats: Vec<f64> = (0..REPS)
        .map(|_| {
            draw.clear();
            for s in strata {
                for _ in 0..s.len() {
                    draw.push(s[((unit(rng.next_u64()) * s.len() as f64) as usize).min(s.len() - 1)]);
                }
            }
            statistic(&draw)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    [percentile(&stats, 2.5), percentile(&stats, 97.5)]
}

/// The `p`th percentile of sorted values, interpolated linearly between ranks (numpy's default).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo as f64)
}

/// What training replicates achieved against a baseline: each replicate's score is its paired
/// mean difference to the baseline over the same evaluation seeds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Replicates {
    /// The replicates' scores, in replicate order.
    pub scores: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// Their interquartile mean.
    pub iqm: f64,
    /// The IQM's 95% percentile-bootstrap interval over replicates.
    pub iqm_ci: [f64; 2],
    /// The probability that a replicate beats the baseline (score > 0; a tie counts half): the
    /// probability of improvement against a baseline with no training variance.
    pub prob_improvement: f64,
    /// Its 95% bootstrap interval over replicates.
    pub prob_improvement_ci: [f64; 2],
}

impl Replicates {
    /// The statistics of `scores` (one per replicate; at least one), bootstrapped from `seed`.
    pub fn of(scores: &[f64], seed: u64) -> Replicates {
        let beats = |xs: &[f64]| prob_improvement(xs, &[0.0]);
        Replicates {
            scores: scores.to_vec(),
            mean: mean(scores),
            iqm: iqm(scores),
            iqm_ci: bootstrap_ci(&[scores], iqm, seed),
            prob_improvement: beats(scores),
            prob_improvement_ci: bootstrap_ci(&[scores], beats, seed ^ 1),
        }
    }

    /// `IQM [lo, hi]` with three decimals, and `P(> baseline)`.
    pub fn cell(&self) -> String {
        format!(
            "{:+.3} [{:+.3}, {:+.3}]; P(>) {:.2}",
            self.iqm, self.iqm_ci[0], self.iqm_ci[1], self.prob_improvement
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iqm_is_scipys_trim_mean_at_a_quarter() {
        // scipy.stats.trim_mean(x, 0.25): n = 8 cuts 2 per end, n = 5 cuts 1, n = 3 cuts 0.
        assert_eq!(iqm(&[8.0, 1.0, 7.0, 2.0, 6.0, 3.0, 5.0, 4.0]), 4.5);
        assert_eq!(iqm(&[100.0, 1.0, 2.0, 3.0, -50.0]), 2.0);
        assert_eq!(iqm(&[1.0, 2.0, 9.0]), 4.0);
        assert_eq!(iqm(&[3.0]), 3.0);
    }

    #[test]
    fn probability_of_improvement_counts_pairs_and_half_ties() {
        // Pairs (x, y): 3 > 1, 3 > 2, 1 = 1 (half), 1 < 2: (1 + 1 + 0.5 + 0) / 4.
        assert_eq!(prob_improvement(&[3.0, 1.0], &[1.0, 2.0]), 0.625);
        assert_eq!(prob_improvement(&[1.0], &[1.0]), 0.5);
    }

    #[test]
    fn percentiles_interpolate_as_numpy_does() {
        let s = [1.0, 2.0, 3.0, 4.0];
        // numpy.percentile([1, 2, 3, 4], 2.5) = 1.075; 97.5 -> 3.925.
        assert!((percentile(&s, 2.5) - 1.075).abs() < 1e-12);
        assert!((percentile(&s, 97.5) - 3.925).abs() < 1e-12);
        assert_eq!(percentile(&s, 50.0), 2.5);
    }

    #[test]
    fn bootstrap_intervals_cover_and_shrink_and_do_not_move_between_calls() {
        // A constant sample has a zero-width interval.
        assert_eq!(bootstrap_ci(&[&[2.0; 5]], mean, 1), [2.0, 2.0]);
        // The mean of 1..=20: sd 5.92, standard error 1.32; the 95% interval is about
        // 10.5 +- 2.6 wide, and it holds the mean.
        let xs: Vec<f64> = (1..=20).map(f64::from).collect();
        let [lo, hi] = bootstrap_ci(&[&xs], mean, 7);
        assert!(lo < 10.5 && hi > 10.5 && (hi - lo - 2.0 * 1.96 * 1.323).abs() < 0.4, "[{lo}, {hi}]");
        assert_eq!(bootstrap_ci(&[&xs], mean, 7), [lo, hi]);
        // Stratified: each stratum keeps its size, so two strata of constants give one value.
        assert_eq!(bootstrap_ci(&[&[1.0, 1.0], &[3.0, 3.0]], mean, 3), [2.0, 2.0]);
    }

    #[test]
    fn replicates_summarise_scores_against_the_baseline() {
        let r = Replicates::of(&[-1.0, 0.5, 1.0, 2.0, 0.0], 5);
        assert_eq!(r.mean, 0.5);
        assert_eq!(r.iqm, 0.5);
        // 3 of 5 beat 0, one ties: (3 + 0.5) / 5.
        assert_eq!(r.prob_improvement, 0.7);
        assert!(r.iqm_ci[0] <= r.iqm && r.iqm <= r.iqm_ci[1]);
        assert!(r.prob_improvement_ci[0] <= 0.7 && 0.7 <= r.prob_improvement_ci[1]);
    }
}

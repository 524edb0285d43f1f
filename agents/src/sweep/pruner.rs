//! Pruners: stop a trial early when its intermediate values (one per training episode) say it
//! will not win. Both follow Optuna's definitions, on losses (smaller is better; the study
//! negates a maximised objective before it gets here).
//!
//! - **Median** (`MedianPruner`): after `warmup` steps, and once `startup` trials have completed,
//!   a trial whose best value so far is worse than the median of the completed trials' values at
//!   the same step is pruned.
//! - **Successive halving** (asynchronous, `SuccessiveHalvingPruner`): rungs sit at steps
//!   `min_resource * eta^(s + k)`; a trial reaching a rung is promoted only if its value is in the
//!   best `1 / eta` of every trial that reached that rung (running, finished or pruned), and
//!   pruned otherwise. Before `eta` trials have reached a rung, only the best of them goes on.

use serde::{Deserialize, Serialize};

/// Which pruner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrunerKind {
    /// Never prune.
    None,
    /// Median of the completed trials at the same step.
    Median,
    /// Asynchronous successive halving.
    SuccessiveHalving,
}

/// `[pruner]` of a sweep file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrunerConfig {
    /// Which pruner.
    pub kind: PrunerKind,
    /// The intermediate value at an episode is the mean of the last `window` episodes' metric:
    /// one training episode's welfare is noisy (bursty arrivals), and pruning on noise discards
    /// good trials.
    pub window: usize,
    /// Median: completed trials needed before any pruning.
    pub startup_trials: usize,
    /// Median: episodes before a trial can be pruned.
    pub warmup_episodes: u64,
    /// Successive halving: the first rung's step (episodes).
    pub min_resource: u64,
    /// Successive halving: eta, the factor between rungs and the fraction promoted (1 / eta).
    pub reduction_factor: u64,
    /// Successive halving: s, skips the first s rungs.
    pub min_early_stopping_rate: u32,
}

impl Default for PrunerConfig {
    fn default() -> Self {
        Self {
            kind: PrunerKind::None,
            window: 10,
            startup_trials: 5,
            warmup_episodes: 0,
            min_resource: 10,
            reduction_factor: 3,
            min_early_stopping_rate: 0,
        }
    }
}

impl PrunerConfig {
    /// Check the settings; the error names the key.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.window == 0 {
            return Err(("window", "must be at least 1".into()));
        }
        if self.min_resource == 0 {
            return Err(("min_resource", "must be at least 1".into()));
        }
        if self.reduction_factor < 2 {
            return Err(("reduction_factor", format!("must be at least 2, got {}", self.reduction_factor)));
        }
        Ok(())
    }

    /// Is `step` (episodes done) a successive-halving rung?
    pub fn is_rung(&self, step: u64) -> bool {
        let mut r = self
            .min_resource
            .saturating_mul(self.reduction_factor.saturating_pow(self.min_early_stopping_rate));
        while r < step {
            r = r.saturating_mul(self.reduction_factor);
        }
        r == step
    }
}

/// Median rule: `own_best` is the trial's best loss up to `step`; `completed_at_step` the
/// completed trials' losses at `step`; `completed` how many trials have completed.
pub fn median_prunes(cfg: &PrunerConfig, step: u64, own_best: f64, completed: usize, completed_at_step: &[f64]) -> bool {
    if step <= cfg.warmup_episodes || completed < cfg.startup_trials.max(1) || completed_at_step.is_empty() {
        return false;
    }
    let mut v = completed_at_step.to_vec();
    v.sort_by(f64::total_cmp);
    let median = if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    };
    own_best > median
}

/// Successive-halving rule at a rung: `own` is the trial's loss there and `competing` every
/// loss recorded at the rung, its own included.
pub fn halving_prunes(cfg: &PrunerConfig, own: f64, competing: &[f64]) -> bool {
    let mut v = competing.to_vec();
    v.sort_by(f64::total_cmp);
    let k = (v.len() as u64 / cfg.reduction_factor).saturating_sub(1) as usize;
    own > v[k.min(v.len().saturating_sub(1))]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(kind: PrunerKind) -> PrunerConfig {
        PrunerConfig {
            kind,
            startup_trials: 2,
            warmup_episodes: 3,
            min_resource: 2,
            reduction_factor: 3,
            ..PrunerConfig::default()
        }
    }

    #[test]
    fn median_prunes_only_the_worse_half_after_warm_up_and_start_up() {
        let c = cfg(PrunerKind::Median);
        let others = [1.0, 2.0, 3.0];
        assert!(median_prunes(&c, 5, 2.5, 3, &others));
        assert!(!median_prunes(&c, 5, 2.0, 3, &others), "equal to the median goes on");
        assert!(!median_prunes(&c, 3, 9.0, 3, &others), "inside the warm-up");
        assert!(!median_prunes(&c, 5, 9.0, 1, &others[..1]), "before start-up trials completed");
        assert!(!median_prunes(&c, 5, 9.0, 3, &[]), "no completed trial reached this step");
        // Even count: the median is the mean of the middle two.
        assert!(median_prunes(&c, 5, 2.6, 4, &[1.0, 2.0, 3.0, 4.0]));
        assert!(!median_prunes(&c, 5, 2.5, 4, &[1.0, 2.0, 3.0, 4.0]));
    }

    #[test]
    fn successive_halving_keeps_the_best_third_at_each_rung() {
        let c = cfg(PrunerKind::SuccessiveHalving);
        // Rungs at 2, 6, 18, 54 ...
        let rungs: Vec<u64> = (1..60).filter(|&s| c.is_rung(s)).collect();
        assert_eq!(rungs, vec![2, 6, 18, 54]);
        let skip = PrunerConfig {
            min_early_stopping_rate: 1,
            ..c.clone()
        };
        assert!(!skip.is_rung(2) && skip.is_rung(6));
        // Fewer than eta competitors: only the best goes on.
        assert!(!halving_prunes(&c, 1.0, &[1.0, 2.0]));
        assert!(halving_prunes(&c, 2.0, &[1.0, 2.0]));
        // Six competitors: the best two go on.
        let six = [5.0, 1.0, 4.0, 2.0, 6.0, 3.0];
        let kept: Vec<f64> = six.iter().copied().filter(|&x| !halving_prunes(&c, x, &six)).collect();
        assert_eq!(kept, vec![1.0, 2.0]);
    }
}

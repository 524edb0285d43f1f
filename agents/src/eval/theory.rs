//! Learners against auction theory (SPEC 8): train a learner population in which some agents are
//! pinned to fixed levels (the opponents of a best-response check), and measure an agent's
//! surplus on held-out seeds. `agents/tests/auction_learners.rs` asserts with it;
//! `cargo run --release -p agents --example auction_learners` prints every learner's figures.

use crate::learners::wrap::{LayeredLearner, LearnerLayer};
use crate::learners::{Learner, Losses, Policy, Round, Transition};
use env::config::Scenario;

/// What the learners' counterfactuals are told about a round.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// The round as played.
    True,
    /// Bids at factor 1 of the round before: a stale record (what the hardening issue fixed),
    /// to show that a learner's answer depends on the true one.
    Stale,
}

/// Train `learner` for `episodes` episodes of `sc` (seeds from `root`); agents in `pinned`
/// play their fixed level index instead of the learner's choice. One seed per episode, played
/// by as many copies as the learner's seed group has (one for most).
pub fn train_against(sc: &Scenario, learner: &mut dyn Learner, episodes: u64, pinned: &[(usize, usize)], root: u64, record: Record) {
    let mut envs = crate::train::rollout::copies(sc, learner.seed_group().max(1));
    let mut stale = LayeredLearner::new(learner, StaleRecord { previous: Vec::new() });
    for e in 0..episodes {
        match record {
            Record::True => crate::train::train_episode_many(&mut envs, stale.inner_mut(), root, e, pinned),
            Record::Stale => crate::train::train_episode_many(&mut envs, &mut stale, root, e, pinned),
        };
    }
}

/// A learner whose counterfactuals see the previous round's bid values ([`Record::Stale`]).
struct StaleRecord {
    previous: Vec<f64>,
}

impl LearnerLayer for StaleRecord {
    fn learn(&mut self, inner: &mut dyn Learner, t: &Transition<'_>) -> Losses {
        let round = t.round("a stale record");
        if self.previous.is_empty() {
            self.previous = round.bid_values.to_vec();
        }
        let losses = inner.learn(&Transition {
            round: Some(Round {
                bid_values: &self.previous,
                ..round
            }),
            ..*t
        });
        self.previous.clear();
        self.previous.extend_from_slice(round.bid_values);
        losses
    }

    /// Round by round through [`StaleRecord::learn`], so each sees the round before.
    fn learn_many(&mut self, inner: &mut dyn Learner, ts: &[Transition<'_>]) -> Losses {
        let losses: Vec<Losses> = ts.iter().map(|t| self.learn(inner, t)).collect();
        Losses::mean(&losses)
    }
}

pub use crate::learners::wrap::pinned;

/// What a policy achieves in the valuation world on `seeds` (greedy): the summary (revenue,
/// surplus, bid factors) and each agent's surplus per item.
pub fn evaluate(sc: &Scenario, policy: &dyn Policy, seeds: &[u64]) -> (env::eval::Summary, Vec<f64>) {
    let eps = env::eval::evaluate(sc, seeds, policy, false, 2);
    let per_item = (0..sc.n())
        .map(|i| eps.iter().map(|e| e.reward[i]).sum::<f64>() / eps.len() as f64 / sc.m() as f64)
        .collect();
    (env::eval::Summary::of(sc, &eps), per_item)
}

/// Agent 0's surplus per item when it plays level index `own` and every other agent `others`.
pub fn surplus_per_item(sc: &Scenario, own: usize, others: usize, seeds: &[u64]) -> f64 {
    let policy = pinned(
        Box::new(crate::learners::Fixed { level: own }),
        (1..sc.n()).map(|i| (i, others)).collect(),
    );
    evaluate(sc, &policy, seeds).1[0]
}

/// A first-price bidder's expected surplus per item when it bids `alpha` times its value and
/// the `n - 1` others `beta` times theirs, values i.i.d. U[0, 1) (SPEC 8's valuation world).
/// It wins when every other `beta v_j < alpha v`. For `alpha <= beta`:
/// `(1 - alpha) (alpha / beta)^(n-1) / (n + 1)`; for `alpha > beta` it also wins every value
/// above `beta / alpha` outright: `(1 - alpha) (c^2 / (n + 1) + (1 - c^2) / 2)`, `c = beta /
/// alpha`. Both sides meet at `alpha = beta` with the same slope, zero at `(n - 1) / n`.
pub fn first_price_surplus(alpha: f64, beta: f64, n: usize) -> f64 {
    let n1 = (n + 1) as f64;
    if n <= 1 {
        // Alone: it wins every item and pays its bid.
        return (1.0 - alpha) / 2.0;
    }
    if alpha <= 0.0 {
        // A bid of 0 wins nothing against bids above 0, and a tie at 0 sells nothing.
        return 0.0;
    }
    if alpha <= beta {
        (1.0 - alpha) * (alpha / beta).powi(n as i32 - 1) / n1
    } else {
        let c = beta / alpha;
        (1.0 - alpha) * (c * c / n1 + (1.0 - c * c) / 2.0)
    }
}

/// The symmetric equilibria of the first-price game on a grid of bid factors: every level at
/// which no other level of the grid pays a bidder more while the `n - 1` others stay there.
pub fn first_price_equilibria(levels: &[f64], n: usize) -> Vec<f64> {
    levels
        .iter()
        .copied()
        .filter(|&beta| {
            let stay = first_price_surplus(beta, beta, n);
            levels.iter().all(|&a| first_price_surplus(a, beta, n) <= stay + 1e-15)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_price_surplus_by_hand() {
        // SPEC 8's numbers (n = 4): U(0.75 | 0.75) = 0.05, U(0.7 | 0.75) = 0.0488.
        assert!((first_price_surplus(0.75, 0.75, 4) - 0.05).abs() < 1e-15);
        assert!((first_price_surplus(0.7, 0.75, 4) - 0.3 * (0.7f64 / 0.75).powi(3) / 5.0).abs() < 1e-15);
        // Above the others: 0.8 against 0.75, c = 0.9375: 0.2 (c^2 / 5 + (1 - c^2) / 2).
        let c2 = 0.9375f64 * 0.9375;
        assert!((first_price_surplus(0.8, 0.75, 4) - 0.2 * (c2 / 5.0 + (1.0 - c2) / 2.0)).abs() < 1e-15);
        // The two sides meet: continuous at alpha = beta.
        for n in [2, 3, 6] {
            let b = 0.6;
            let (lo, hi) = (first_price_surplus(b - 1e-9, b, n), first_price_surplus(b + 1e-9, b, n));
            assert!((lo - hi).abs() < 1e-8, "n = {n}: {lo} vs {hi}");
        }
    }

    #[test]
    fn grid_equilibria_sit_at_n_minus_1_over_n() {
        // The continuous game's equilibrium is (n - 1) / n; a grid's symmetric equilibria are
        // the grid points around it from which no step pays (on 0.01: 3 bidders 0.66-0.67,
        // 4 bidders 0.74-0.75, 6 bidders 0.83, the numbers issue 41 computed independently).
        let grid = |step: f64| -> Vec<f64> {
            (0..=(1.5 / step).round() as usize)
                .map(|k| (k as f64 * step * 1e6).round() / 1e6)
                .collect()
        };
        assert_eq!(first_price_equilibria(&grid(0.01), 3), vec![0.66, 0.67]);
        assert_eq!(first_price_equilibria(&grid(0.01), 4), vec![0.74, 0.75]);
        assert_eq!(first_price_equilibria(&grid(0.01), 6), vec![0.83]);
        assert_eq!(first_price_equilibria(&grid(0.05), 4), vec![0.7, 0.75]);
        for n in 2..=8 {
            let eq = first_price_equilibria(&grid(0.01), n);
            let theory = (n - 1) as f64 / n as f64;
            assert!(!eq.is_empty() && eq.iter().all(|&e| (e - theory).abs() <= 0.02), "n = {n}: {eq:?}");
        }
    }
}

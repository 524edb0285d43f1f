//! Learners against auction theory (SPEC 8): train a learner population in which some agents are
//! pinned to fixed levels (the opponents of a best-response check), and measure an agent's
//! surplus on held-out seeds. `agents/tests/auction_learners.rs` asserts with it;
//! `cargo run --release -p agents --example auction_learners` prints every learner's figures.

use crate::learners::wrap::{Layered, LayeredLearner, LearnerLayer, Pin};
use crate::learners::{Learner, Losses, Policy, Transition};
use env::config::Scenario;
use env::world::ClusterEnv;

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
    let mut envs: Vec<ClusterEnv> = (0..learner.seed_group().max(1))
        .map(|_| {
            let mut env = ClusterEnv::new(sc.clone());
            env.set_recording(false);
            env
        })
        .collect();
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
        if self.previous.is_empty() {
            self.previous = t.bid_values.to_vec();
        }
        let losses = inner.learn(&Transition {
            bid_values: &self.previous,
            ..*t
        });
        self.previous.clear();
        self.previous.extend_from_slice(t.bid_values);
        losses
    }

    /// Round by round through [`StaleRecord::learn`], so each sees the round before.
    fn learn_many(&mut self, inner: &mut dyn Learner, ts: &[Transition<'_>]) -> Losses {
        let losses: Vec<Losses> = ts.iter().map(|t| self.learn(inner, t)).collect();
        Losses::mean(&losses)
    }
}

/// A policy with some agents pinned to fixed level indices.
pub fn pinned(inner: Box<dyn Policy>, pinned: Vec<(usize, usize)>) -> Layered<Pin> {
    Layered::new(inner, Pin(pinned))
}

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

//! Learners against auction theory (SPEC 8): train a learner population in which some agents are
//! pinned to fixed levels (the opponents of a best-response check), and measure an agent's
//! surplus on held-out seeds. `agents/tests/auction_learners.rs` asserts with it;
//! `cargo run --release -p agents --example auction_learners` prints every learner's figures.

use crate::learners::{Learner, Policy, Transition};
use env::config::Scenario;
use env::world::{ClusterEnv, Observations};

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
/// play their fixed level index instead of the learner's choice.
pub fn train_against(sc: &Scenario, learner: &mut dyn Learner, episodes: u64, pinned: &[(usize, usize)], root: u64, record: Record) {
    let mut env = ClusterEnv::new(sc.clone());
    env.set_recording(false);
    let mut stale = StaleRecord {
        inner: learner,
        previous: Vec::new(),
    };
    for e in 0..episodes {
        let learner: &mut dyn Learner = match record {
            Record::True => &mut *stale.inner,
            Record::Stale => &mut stale,
        };
        crate::train::train_episode_pinned(&mut env, learner, root, e, pinned);
    }
}

/// A learner whose counterfactuals see the previous round's bid values ([`Record::Stale`]).
struct StaleRecord<'a> {
    inner: &'a mut dyn Learner,
    previous: Vec<f64>,
}

impl Policy for StaleRecord<'_> {
    fn begin_episode(&mut self, seed: u64) {
        self.inner.begin_episode(seed);
    }

    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        self.inner.act(obs, budgets, greedy, actions);
    }

    fn fork(&self) -> Box<dyn Policy> {
        self.inner.fork()
    }
}

impl Learner for StaleRecord<'_> {
    fn learn(&mut self, t: &Transition<'_>) -> crate::learners::Losses {
        if self.previous.is_empty() {
            self.previous = t.bid_values.to_vec();
        }
        let losses = self.inner.learn(&Transition {
            bid_values: &self.previous,
            ..*t
        });
        self.previous.clear();
        self.previous.extend_from_slice(t.bid_values);
        losses
    }

    fn save(&self) -> crate::Result<Vec<u8>> {
        self.inner.save()
    }

    fn load(&mut self, bytes: &[u8]) -> crate::Result<()> {
        self.inner.load(bytes)
    }

    fn export_weights(&self, agent: usize) -> crate::Result<Vec<f32>> {
        self.inner.export_weights(agent)
    }
}

/// A policy with some agents pinned to fixed level indices.
pub struct Pinned {
    /// The policy of the agents not pinned.
    pub inner: Box<dyn Policy>,
    /// (agent, level index) pairs.
    pub pinned: Vec<(usize, usize)>,
}

impl Policy for Pinned {
    fn begin_episode(&mut self, seed: u64) {
        self.inner.begin_episode(seed);
    }

    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        self.inner.act(obs, budgets, greedy, actions);
        for &(i, level) in &self.pinned {
            actions[i] = level;
        }
    }

    fn after_step(&mut self, env: &ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        self.inner.after_step(env, budgets_before, actions);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(Pinned {
            inner: self.inner.fork(),
            pinned: self.pinned.clone(),
        })
    }
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
    let policy = Pinned {
        inner: Box::new(crate::learners::Fixed { level: own }),
        pinned: (1..sc.n()).map(|i| (i, others)).collect(),
    };
    evaluate(sc, &policy, seeds).1[0]
}

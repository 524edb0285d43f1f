//! Difference rewards (`learner.reward = "difference"`): cooperative credit assignment for
//! researchers studying welfare rather than selfish rewards. Agent i is paid
//! `D_i = G(a) - G(a with agent i at the default level)`, the round's welfare with its action
//! minus the welfare had it played the default, from a counterfactual re-run of the mechanism
//! on the round input as played.
//!
//! - The allocation part is exact: a mechanism without state across rounds (MTF, the
//!   auctions) is a pure function of its round input, which the environment records as played
//!   (budgets, turn and random draws included).
//! - Service is accounted for at the mean rates, not the round's draws. In the demand form
//!   (central queues), `G = sum_j w_j min(demand_j, sum over j's accelerators of rate_jc) /
//!   sum_j w_j`: expected jobs served, capped by the backlog. In the utilities form
//!   (per-accelerator queues, the valuation world), G is the weighted utility won. Later
//!   rounds are not re-run: the counterfactual is one round deep.
//!
//! It wraps any learner that learns from the rewards it is given (the actor-critic, PPO);
//! Hedge computes its own counterfactual rewards for every level and is refused.

use super::base::{Learner, Losses, Transition};
use super::wrap::{LayeredLearner, LearnerLayer};
use env::config::{ActionKind, Scenario};
use env::world::play;
use scheduler::{Allocation, Form, Mechanism, RoundInput};

/// The round's welfare under `alloc` (see the module documentation).
pub fn welfare(input: &RoundInput, alloc: &Allocation) -> f64 {
    let (n, m) = (input.n, input.m);
    let mut value = vec![0.0; n];
    for (c, owner) in alloc.owners.iter().enumerate() {
        if let Some(j) = *owner {
            value[j] += match input.form {
                Form::Demand => input.rates[j * m + c],
                Form::Utilities => input.utilities[j * m + c],
            };
        }
    }
    let total_w: f64 = input.weights.iter().sum();
    let served = |j: usize| match input.form {
        Form::Demand => value[j].min(input.demands[j]),
        Form::Utilities => value[j],
    };
    (0..n).map(|j| input.weights[j] * served(j)).sum::<f64>() / total_w
}

/// Every agent's difference reward for one round, into `out`.
pub struct Counterfactual {
    mechanism: Box<dyn Mechanism>,
    kind: ActionKind,
    /// The default level's value (a threshold or a bid factor).
    default: f64,
    input: RoundInput,
    alloc: Allocation,
}

impl Counterfactual {
    /// For `sc`'s mechanism, with `default` the level every agent is compared against.
    pub fn new(sc: &Scenario, default: f64) -> Self {
        let mech = &sc.file.mechanism;
        Self {
            mechanism: scheduler::registry::build(&mech.name, &mech.params()).expect("validated mechanism name"),
            kind: sc.action_kind(),
            default,
            input: RoundInput::from_utilities(&[vec![0.0]]),
            alloc: Allocation::default(),
        }
    }

    /// `D_i` for every agent of the round `input` -> `alloc` (`bid_values`: the bids at factor
    /// 1, auctions only).
    pub fn rewards(&mut self, input: &RoundInput, alloc: &Allocation, bid_values: &[f64], out: &mut Vec<f64>) {
        let g = welfare(input, alloc);
        out.clear();
        for i in 0..input.n {
            self.input.clone_from(input);
            play(&mut self.input, self.kind, i, self.default, bid_values);
            self.mechanism.allocate(&self.input, &mut self.alloc);
            out.push(g - welfare(&self.input, &self.alloc));
        }
    }
}

/// A learner trained on difference rewards instead of the environment's: a layer that
/// replaces each round's rewards before the wrapped learner learns from them.
pub struct DifferenceRewards {
    counterfactual: Counterfactual,
    rewards: Vec<Vec<f64>>,
}

/// `inner` paid difference rewards.
pub type Difference = LayeredLearner<DifferenceRewards, Box<dyn Learner>>;

impl Difference {
    /// Wrap `inner`: difference rewards against level `default` under `sc`'s mechanism.
    pub fn paying(inner: Box<dyn Learner>, sc: &Scenario, default: f64) -> Self {
        LayeredLearner::new(
            inner,
            DifferenceRewards {
                counterfactual: Counterfactual::new(sc, default),
                rewards: Vec::new(),
            },
        )
    }
}

impl LearnerLayer for DifferenceRewards {
    fn learn(&mut self, inner: &mut dyn Learner, t: &Transition<'_>) -> Losses {
        self.learn_many(inner, std::slice::from_ref(t))
    }

    fn learn_many(&mut self, inner: &mut dyn Learner, ts: &[Transition<'_>]) -> Losses {
        self.rewards.resize_with(ts.len(), Vec::new);
        for (t, r) in ts.iter().zip(self.rewards.iter_mut()) {
            let round = t.round("difference rewards");
            self.counterfactual.rewards(round.input, round.allocation, round.bid_values, r);
        }
        let replaced: Vec<Transition<'_>> = ts.iter().zip(&self.rewards).map(|(t, r)| Transition { rewards: r, ..*t }).collect();
        inner.learn_many(&replaced)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One accelerator, two agents of weight 1; agent 0 values it 0.9 and is richer, agent 1
    /// values it 0.6. Agent 0 reports 0.95 (does not want it), agent 1 reports 0: agent 1
    /// buys it, G = (0 + 0.6) / 2 = 0.3. Had agent 0 reported the default 0, it would have
    /// bought it (richest first): G = 0.45, so D_0 = -0.15. Agent 1 played the default: D_1 = 0.
    #[test]
    fn difference_rewards_of_a_hand_computed_round() {
        let mut input = RoundInput::from_utilities(&[vec![0.9], vec![0.6]]);
        input.thresholds = vec![0.95, 0.0];
        input.budgets = vec![2.0, 1.0];
        input.weights = vec![1.0, 1.0];
        input.draws = vec![0.5];
        let mut mtf = scheduler::registry::build("mtf", &Default::default()).unwrap();
        let mut alloc = Allocation::default();
        mtf.allocate(&input, &mut alloc);
        assert_eq!(alloc.owners, vec![Some(1)]);
        assert!((welfare(&input, &alloc) - 0.3).abs() < 1e-12);
        let mut cf = Counterfactual {
            mechanism: mtf,
            kind: ActionKind::Threshold,
            default: 0.0,
            input: RoundInput::from_utilities(&[vec![0.0]]),
            alloc: Allocation::default(),
        };
        let mut d = Vec::new();
        cf.rewards(&input, &alloc, &[], &mut d);
        assert!((d[0] + 0.15).abs() < 1e-12, "{d:?}");
        assert_eq!(d[1], 0.0);
        // Everyone at the default already: every difference is exactly 0.
        input.thresholds = vec![0.0, 0.0];
        mtf = scheduler::registry::build("mtf", &Default::default()).unwrap();
        mtf.allocate(&input, &mut alloc);
        cf.mechanism = mtf;
        cf.rewards(&input, &alloc, &[], &mut d);
        assert_eq!(d, vec![0.0, 0.0]);
    }

    /// In the demand form the value is the expected jobs served, capped by the backlog.
    #[test]
    fn demand_form_welfare_is_capped_by_the_backlog() {
        let mut input = RoundInput::from_utilities(&[vec![0.5, 0.5], vec![0.5, 0.5]]);
        input.form = Form::Demand;
        input.demands = vec![3.0, 10.0];
        input.rates = vec![2.0, 2.0, 4.0, 4.0];
        input.weights = vec![1.0, 3.0];
        let alloc = Allocation {
            owners: vec![Some(0), Some(0)],
            ..Allocation::default()
        };
        // Agent 0 could serve 4 but holds 3 jobs: (1 * 3 + 3 * 0) / 4.
        assert!((welfare(&input, &alloc) - 0.75).abs() < 1e-12);
        let alloc = Allocation {
            owners: vec![Some(0), Some(1)],
            ..Allocation::default()
        };
        assert!((welfare(&input, &alloc) - (2.0 + 3.0 * 4.0) / 4.0).abs() < 1e-12);
    }
}

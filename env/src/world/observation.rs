//! What an agent observes: the layout (SPEC 2.4's state, then the backlog over the arrival rate
//! and the optional extras) and the round's observation buffer.

use super::*;

/// Length of the SPEC 2.4 state an agent observes first: its budget share, then its m
/// utilities. Learners that read only this, the exported-agent protocol and its runtime all
/// size their input with this function (the environment's observation continues with the
/// backlog over the arrival rate and the optional extras).
pub const fn spec_features(m: usize) -> usize {
    1 + m
}

/// Length of an agent's observation in `sc`: SPEC 4's state, the backlog over the arrival
/// rate, then the optional burst state, weight class and everyone's budget shares.
pub fn observation_dim(sc: &Scenario) -> usize {
    spec_features(sc.m()) + observation_extras(sc).iter().map(|(_, len)| len).sum::<usize>()
}

/// Every feature an observation may carry after SPEC 4's state, in the observation's order:
/// the exported-agent protocol's keys.
pub const OBSERVATION_EXTRAS: [&str; 4] = ["backlog", "burst", "weight", "budgets"];

/// The observation's features after SPEC 4's state, in order, as (name, length): `backlog`
/// (over the arrival rate), then as configured `burst`, `weight` (over the largest) and
/// `budgets` (every agent's share); names from [`OBSERVATION_EXTRAS`].
pub fn observation_extras(sc: &Scenario) -> Vec<(&'static str, usize)> {
    let e = &sc.file.env;
    let [backlog, burst, weight, budgets] = OBSERVATION_EXTRAS;
    let mut extras = vec![(backlog, 1)];
    if e.observe_burst {
        extras.push((burst, 1));
    }
    if e.observe_weight {
        extras.push((weight, 1));
    }
    if e.observe_budgets {
        extras.push((budgets, sc.n()));
    }
    extras
}

impl ClusterEnv {
    /// Fill the observation buffer and the mechanism's round input.
    pub(super) fn observe(&mut self) {
        let (n, m, dim) = (self.n, self.m, self.dim);
        let e = &self.sc.file.env;
        let t = self.sc.file.mechanism.total_tokens;
        for i in 0..n {
            let o = &mut self.obs[i * dim..(i + 1) * dim];
            o[0] = (self.budgets[i] / t) as f32;
            let max = self.max_mu[i];
            let queued: u64 = match &self.backlogs {
                _ if self.valuations => {
                    for c in 0..m {
                        o[1 + c] = self.pending.utilities[i * m + c] as f32;
                    }
                    0
                }
                Backlogs::Central(q) => {
                    let q = q[i].len();
                    self.pending.demands[i] = q as f64;
                    for c in 0..m {
                        o[1 + c] = demand_utility(q as f64, self.mu[i * m + c], max) as f32;
                    }
                    q
                }
                Backlogs::PerAccelerator { queues, .. } => {
                    let mut total = 0;
                    for c in 0..m {
                        let q = queues[i * m + c].len();
                        total += q;
                        let u = demand_utility(q as f64, self.mu[i * m + c], max);
                        self.pending.utilities[i * m + c] = u;
                        o[1 + c] = u as f32;
                    }
                    total
                }
            };
            if self.kind == ActionKind::Bid {
                for c in 0..m {
                    let u = match self.pending.form {
                        Form::Utilities => self.pending.utilities[i * m + c],
                        Form::Demand => demand_utility(self.pending.demands[i], self.mu[i * m + c], max),
                    };
                    self.pending_bid_values[i * m + c] = self.value_scale * u;
                }
            }
            o[1 + m] = if self.lambda[i] > 0.0 {
                (queued as f64 / self.lambda[i]) as f32
            } else {
                0.0
            };
            let mut k = 2 + m;
            if e.observe_burst {
                o[k] = if self.high[i] { 1.0 } else { 0.0 };
                k += 1;
            }
            if e.observe_weight {
                o[k] = (self.weights[i] / self.max_weight) as f32;
                k += 1;
            }
            if e.observe_budgets {
                for j in 0..n {
                    o[k + j] = (self.budgets[j] / t) as f32;
                }
            }
        }
    }
}

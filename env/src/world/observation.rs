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
pub const OBSERVATION_EXTRAS: [&str; 5] = ["backlog", "burst", "weight", "budgets", "by_type"];

/// Length of the `by_type` block in `sc`: the budget over an equal share, three numbers per
/// catalog type, the backlog over the arrival rate, and the burst state and weight class when
/// observed. It depends on the catalog and the switches, never on n or m.
pub fn by_type_features(sc: &Scenario) -> usize {
    let e = &sc.file.env;
    2 + 3 * e.catalog.types.len() + usize::from(e.observe_burst) + usize::from(e.observe_weight)
}

/// The observation's features after SPEC 4's state, in order, as (name, length): `backlog`
/// (over the arrival rate), then as configured `burst`, `weight` (over the largest),
/// `budgets` (every agent's share) and `by_type`; names from [`OBSERVATION_EXTRAS`].
///
/// `by_type` is a self-contained state of fixed length ([`by_type_features`]) for policies
/// that move between cluster sizes: `B n / T` (the budget over an equal share: `B / T` alone
/// shrinks as 1/n), then per catalog type t (catalog order) the type's share of the cluster's
/// accelerators, the agent's mean rate on it over its largest rate, and the mean utility of the
/// type's accelerators (what its backlog would fill there; 0 for a type the cluster lacks),
/// then the backlog over the arrival rate and, when observed, the burst state and the weight
/// over the largest. Everyone's budgets (n of them) are not in it.
pub fn observation_extras(sc: &Scenario) -> Vec<(&'static str, usize)> {
    let e = &sc.file.env;
    let [backlog, burst, weight, budgets, by_type] = OBSERVATION_EXTRAS;
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
    if e.observe_by_type {
        extras.push((by_type, by_type_features(sc)));
    }
    extras
}

/// The name of every feature of an observation in `sc`, in order (the world seam's layout):
/// `budget_share`, `utility:<accelerator index>:<type>`, `backlog_over_rate`, then as
/// configured `burst`, `weight`, `budget_share:<agent>` and the `by_type:` block.
pub fn observation_names(sc: &Scenario) -> Vec<String> {
    let e = &sc.file.env;
    let mut v = vec!["budget_share".to_string()];
    v.extend(
        sc.accelerators
            .iter()
            .enumerate()
            .map(|(c, &t)| format!("utility:{c}:{}", e.catalog.types[t])),
    );
    v.push("backlog_over_rate".into());
    if e.observe_burst {
        v.push("burst".into());
    }
    if e.observe_weight {
        v.push("weight".into());
    }
    if e.observe_budgets {
        v.extend((0..sc.n()).map(|j| format!("budget_share:agent_{j}")));
    }
    if e.observe_by_type {
        v.push("by_type:budget_over_equal_share".into());
        for t in &e.catalog.types {
            v.extend([
                format!("by_type:share:{t}"),
                format!("by_type:rate:{t}"),
                format!("by_type:utility:{t}"),
            ]);
        }
        v.push("by_type:backlog_over_rate".into());
        if e.observe_burst {
            v.push("by_type:burst".into());
        }
        if e.observe_weight {
            v.push("by_type:weight".into());
        }
    }
    debug_assert_eq!(v.len(), observation_dim(sc));
    v
}

impl ClusterEnv {
    /// Fill the observation buffer and the mechanism's round input.
    pub(super) fn observe(&mut self) {
        let (n, m, dim) = (self.n, self.m, self.dim);
        let e = &self.sc.file.env;
        let (observe_burst, observe_weight, observe_budgets, observe_by_type) =
            (e.observe_burst, e.observe_weight, e.observe_budgets, e.observe_by_type);
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
                    // Unobserved, they are skipped unless the by_type block sums them.
                    let types = self.type_sum.len();
                    if self.utilities_observed || (observe_by_type && !common_rates(&self.type_mu[i * types..(i + 1) * types])) {
                        for c in 0..m {
                            o[1 + c] = demand_utility(q as f64, self.mu[i * m + c], max) as f32;
                        }
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
            if observe_burst {
                o[k] = if self.high[i] { 1.0 } else { 0.0 };
                k += 1;
            }
            if observe_weight {
                o[k] = (self.weights[i] / self.max_weight) as f32;
                k += 1;
            }
            if observe_budgets {
                for j in 0..n {
                    o[k + j] = (self.budgets[j] / t) as f32;
                }
                k += n;
            }
            if observe_by_type {
                self.by_type(i, k);
            }
        }
    }

    /// Agent i's `by_type` block at offset `k` of its observation (after the utilities and
    /// extras it summarises are written): see [`observation_extras`]. O(m).
    fn by_type(&mut self, i: usize, mut k: usize) {
        let (n, m, dim) = (self.n, self.m, self.dim);
        let e = &self.sc.file.env;
        let types = self.type_sum.len();
        let o = &mut self.obs[i * dim..(i + 1) * dim];
        let common = &self.type_mu[i * types..(i + 1) * types];
        // Central queues with one rate per type (the catalog's rates): the type's utility is
        // one division. Otherwise the mean of the type's utilities, O(m).
        let demand = match self.backlogs {
            Backlogs::Central(_) if !self.valuations && common_rates(common) => Some(self.pending.demands[i]),
            _ => None,
        };
        self.type_sum.fill(0.0);
        if let Some(q) = demand {
            for (t, (s, &mu)) in self.type_sum.iter_mut().zip(common).enumerate() {
                // A type the cluster lacks (rate INFINITY: no accelerator seen) reads 0 below.
                if self.type_share[t] > 0.0 {
                    *s = f64::from(demand_utility(q, mu, self.max_mu[i]) as f32) * self.type_share[t] * m as f64;
                }
            }
        } else {
            for (c, &t) in self.sc.accelerators.iter().enumerate() {
                self.type_sum[t] += f64::from(o[1 + c]);
            }
        }
        o[k] = (self.budgets[i] * n as f64 / self.sc.file.mechanism.total_tokens) as f32;
        k += 1;
        for t in 0..types {
            let share = self.type_share[t];
            o[k] = share as f32;
            o[k + 1] = self.type_rate[i * types + t] as f32;
            o[k + 2] = if share > 0.0 {
                (self.type_sum[t] / (share * m as f64)) as f32
            } else {
                0.0
            };
            k += 3;
        }
        // The backlog, burst state and weight class, as written after the utilities.
        let tail = 1 + usize::from(e.observe_burst) + usize::from(e.observe_weight);
        o.copy_within(1 + m..1 + m + tail, k);
    }
}

/// Whether an agent's per-type rates are one rate per type (`type_mu`: NaN marks a type whose
/// accelerators differ), so its `by_type` utilities follow from its backlog alone.
fn common_rates(type_mu: &[f64]) -> bool {
    type_mu.iter().all(|r| r.is_finite() || *r == f64::INFINITY)
}

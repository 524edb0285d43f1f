//! Agents' current utilities and preferences during one round, for both input forms.
//!
//! In the utilities form the matrix is static. In the demand form (SPEC 3.3) agent i's utility
//! for c is `min(R_i, rate[i][c]) / max_c rate[i][c]` under its remaining demand `R_i`, which
//! falls by `rate[i][c]` (floored at 0) whenever it is given c; its row is then recomputed.
//! Every mechanism reads utilities and preferences through this one type, so "agent i wants c"
//! means the same thing everywhere.

use crate::input::{Form, RoundInput};

/// Current utilities of one round; reused across rounds (no allocation after the first).
#[derive(Clone, Debug, Default)]
pub struct Valuation {
    n: usize,
    m: usize,
    demand: bool,
    u: Vec<f64>,
    remaining: Vec<f64>,
    max_rate: Vec<f64>,
}

impl Valuation {
    /// Load the round's starting utilities.
    pub fn reset(&mut self, input: &RoundInput) {
        let (n, m) = (input.n, input.m);
        self.n = n;
        self.m = m;
        self.demand = input.form == Form::Demand;
        self.u.clear();
        self.max_rate.clear();
        if input.has_rates() {
            for i in 0..n {
                let row = &input.rates[i * m..(i + 1) * m];
                self.max_rate.push(row.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            }
        }
        if self.demand {
            self.remaining.clear();
            self.remaining.extend_from_slice(&input.demands);
            self.u.resize(n * m, 0.0);
            for i in 0..n {
                let row = &input.rates[i * m..(i + 1) * m];
                let max = self.max_rate[i];
                let r = input.demands[i];
                for (u, &rate) in self.u[i * m..(i + 1) * m].iter_mut().zip(row) {
                    *u = r.min(rate) / max;
                }
            }
        } else {
            self.u.extend_from_slice(&input.utilities);
        }
    }

    /// Whether this is the demand form.
    #[inline]
    pub fn is_demand(&self) -> bool {
        self.demand
    }

    /// Agent i's current utility for accelerator c.
    #[inline]
    pub fn u(&self, i: usize, c: usize) -> f64 {
        self.u[i * self.m + c]
    }

    /// Agent i's remaining demand (demand form; 0 otherwise).
    #[inline]
    pub fn remaining(&self, i: usize) -> f64 {
        if self.demand {
            self.remaining[i]
        } else {
            0.0
        }
    }

    /// Whether agent i strictly prefers accelerator `a` (utility `ua`) to `b` (utility `ub`):
    /// decreasing utility; in the demand form ties by increasing rate ("best fit"); then by
    /// lower index.
    #[inline]
    pub fn prefers(&self, input: &RoundInput, i: usize, a: usize, ua: f64, b: usize, ub: f64) -> bool {
        if ua != ub {
            return ua > ub;
        }
        if self.demand {
            let (ra, rb) = (input.rate(i, a), input.rate(i, b));
            if ra != rb {
                return ra < rb;
            }
        }
        a < b
    }

    /// Agent i's most preferred accelerator among those with `avail[c]` and `accept(u)`.
    ///
    /// One pass over the row: with at most m picks per round this costs less than keeping
    /// sorted per-agent lists (measured in `benches/mechanisms.rs`), and it needs no re-sort
    /// when the demand form changes the row.
    #[inline]
    pub fn first_pref(&self, input: &RoundInput, i: usize, avail: &[bool], accept: impl Fn(f64) -> bool) -> Option<usize> {
        let row = &self.u[i * self.m..(i + 1) * self.m];
        let mut best: Option<(usize, f64)> = None;
        for (c, (&u, &free)) in row.iter().zip(avail).enumerate() {
            if !free || !accept(u) {
                continue;
            }
            match best {
                None => best = Some((c, u)),
                Some((b, ub)) => {
                    // Scanning in index order, so equal keys keep the lower index.
                    if u > ub || (u == ub && self.demand && input.rate(i, c) < input.rate(i, b)) {
                        best = Some((c, u));
                    }
                }
            }
        }
        best.map(|(c, _)| c)
    }

    /// Record that agent i was given accelerator c. In the demand form its remaining demand
    /// falls and its row is recomputed; `changed(c', old, new)` is called for each entry whose
    /// utility changed, so callers can keep their counters exact.
    #[inline]
    pub fn win(&mut self, input: &RoundInput, i: usize, c: usize, mut changed: impl FnMut(usize, f64, f64)) {
        if !self.demand {
            return;
        }
        let m = self.m;
        let r = (self.remaining[i] - input.rates[i * m + c]).max(0.0);
        self.remaining[i] = r;
        // min(r, rate) / max is r / max wherever rate >= r, and unchanged (rate / max, as
        // rate < r <= the old remainder) elsewhere: one division per win, bit for bit the same.
        let v = r / self.max_rate[i];
        let rates = &input.rates[i * m..(i + 1) * m];
        for (k, (u, &rate)) in self.u[i * m..(i + 1) * m].iter_mut().zip(rates).enumerate() {
            if rate >= r && *u != v {
                let old = *u;
                *u = v;
                changed(k, old, v);
            }
        }
    }

    /// Marginal jobs agent i would get from c now: `min(R_i, rate)` in the demand form,
    /// `u * max rate` (= `min(q, mu)` for per-accelerator queues) with utilities and rates,
    /// and plain utility when no rates are known.
    #[inline]
    pub fn marginal_jobs(&self, input: &RoundInput, i: usize, c: usize) -> f64 {
        if self.demand {
            self.remaining[i].min(input.rate(i, c))
        } else if input.has_rates() {
            self.u(i, c) * self.max_rate[i]
        } else {
            self.u(i, c)
        }
    }

    /// Whether agent i wants any accelerator with `avail[c]`.
    pub fn wants_any(&self, i: usize, avail: &[bool]) -> bool {
        self.u[i * self.m..(i + 1) * self.m].iter().zip(avail).any(|(&u, &a)| a && u > 0.0)
    }
}

/// The "best rate" order of accelerators used by stride, gandiva_fair and max_throughput:
/// fastest first by the largest rate any agent has on it, ties by lower index. Without rates
/// (utilities form) it falls back to the largest utility.
pub fn fastest_first(input: &RoundInput, order: &mut Vec<usize>, key: &mut Vec<f64>) {
    let (n, m) = (input.n, input.m);
    let src = if input.has_rates() { &input.rates } else { &input.utilities };
    key.clear();
    key.resize(m, f64::NEG_INFINITY);
    for i in 0..n {
        for (k, &v) in key.iter_mut().zip(&src[i * m..(i + 1) * m]) {
            *k = k.max(v);
        }
    }
    order.clear();
    order.extend(0..m);
    order.sort_by(|&a, &b| key[b].total_cmp(&key[a]).then(a.cmp(&b)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demand_form_utilities_follow_remaining_demand() {
        // Agent with demand 5 on rates [4, 8]: u = [4/8, 5/8]; after winning c1 (rate 8),
        // R = 0 and the row is all zero.
        let input = RoundInput::from_demands(&[5.0], &[vec![4.0, 8.0]]);
        let mut v = Valuation::default();
        v.reset(&input);
        assert_eq!((v.u(0, 0), v.u(0, 1)), (0.5, 0.625));
        let mut changes = Vec::new();
        v.win(&input, 0, 1, |c, old, new| changes.push((c, old, new)));
        assert_eq!(v.remaining(0), 0.0);
        assert_eq!(changes, vec![(0, 0.5, 0.0), (1, 0.625, 0.0)]);
    }

    #[test]
    fn best_fit_prefers_the_slowest_accelerator_that_covers_the_demand() {
        // Demand 3 fits on rates 4, 6 and 8 alike (u = 3/8 for all): best fit takes rate 4.
        let input = RoundInput::from_demands(&[3.0], &[vec![8.0, 6.0, 4.0, 2.0]]);
        let mut v = Valuation::default();
        v.reset(&input);
        assert_eq!(v.first_pref(&input, 0, &[true; 4], |u| u > 0.0), Some(2));
        assert_eq!(v.first_pref(&input, 0, &[true, true, false, true], |u| u > 0.0), Some(1));
        // Demand 10 exceeds every rate: fastest first.
        let input = RoundInput::from_demands(&[10.0], &[vec![6.0, 8.0, 8.0, 2.0]]);
        v.reset(&input);
        assert_eq!(v.first_pref(&input, 0, &[true; 4], |u| u > 0.0), Some(1));
    }

    #[test]
    fn utilities_form_ties_go_to_the_lower_index() {
        let input = RoundInput::from_utilities(&[vec![0.2, 0.7, 0.7, 0.1]]);
        let mut v = Valuation::default();
        v.reset(&input);
        assert_eq!(v.first_pref(&input, 0, &[true; 4], |u| u > 0.0), Some(1));
        assert_eq!(v.first_pref(&input, 0, &[true; 4], |u| u >= 0.75), None);
    }
}

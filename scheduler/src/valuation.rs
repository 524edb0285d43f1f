//! Agents' current utilities and preferences during one round, for both input forms.
//!
//! In the utilities form the matrix is static. In the demand form (SPEC 3.3) agent i's utility
//! for c is `min(R_i, rate[i][c]) / max_c rate[i][c]` under its remaining demand `R_i`, which
//! falls by `rate[i][c]` (floored at 0) whenever it is given c. Every mechanism reads utilities
//! and preferences through this one type, so "agent i wants c" means the same thing everywhere.
//!
//! Demand form representation: an agent's utility depends on c only through its rate, so each
//! agent's accelerators are grouped into *rate classes* (distinct rates, ascending; members by
//! index). A win recomputes one utility per class (K divisions, K = 2 on the default cluster)
//! instead of m, and the most preferred available accelerator is found by walking classes with
//! a per-class cursor instead of scanning the row. The classes are rebuilt only when the rates
//! change, which in an episode they never do.

use crate::input::{Form, RoundInput};

pub use crate::input::demand_utility;

/// Current utilities of one round; reused across rounds (no allocation after the first).
#[derive(Clone, Debug, Default)]
pub struct Valuation {
    n: usize,
    m: usize,
    demand: bool,
    /// Utilities form: the n x m matrix.
    u: Vec<f64>,
    /// Per agent: largest rate (when rates are given).
    max_rate: Vec<f64>,
    /// Demand form: remaining demand per agent.
    remaining: Vec<f64>,
    classes: Classes,
    /// Demand form, per class: current utility, available members, cursor into `members`.
    cls_u: Vec<f64>,
    /// Demand form, per group of identical columns: its available members (a class's are
    /// the sum over its groups: taking an accelerator is one decrement, not one per agent).
    grp_avail: Vec<u32>,
    cls_cursor: Vec<usize>,
    /// Utilities form, per agent: picks asked for this round (a scan each, until sorting pays).
    picks: Vec<u32>,
    /// Utilities form, per agent: whether `order[i * m..]` holds its sorted preferences.
    sorted: Vec<bool>,
    /// Utilities form: per agent, its accelerators by decreasing utility (ties lower index),
    /// filled for an agent once it has picked `sort_after()` times this round.
    order: Vec<usize>,
    /// Utilities form, per agent: position in its `order` before which nothing is available.
    cursor: Vec<usize>,
    /// Demand form with gangs: accelerators each agent has won this round.
    wins: Vec<u32>,
}

/// Rate classes of every agent, built for one rate matrix.
///
/// Accelerators with identical rate columns (the same type, for every agent) form a *group*;
/// an agent's class is a set of groups on which it has equal rates (usually one). Classes are
/// looked up per group (`group_class`, G x n, column-major so that taking an accelerator walks
/// one contiguous column) and share their member lists between agents, so memory is O(n G + m)
/// rather than O(n m), and [`Valuation::take`] reads n consecutive entries instead of n entries
/// one row apart (at 4,000 x 4,000 that stride was a cache miss per agent and most of MTF's
/// round).
#[derive(Clone, Debug, Default)]
struct Classes {
    /// The rate matrix these classes describe (rebuild when the input's differs).
    key: Vec<f64>,
    shape: (usize, usize),
    /// The input's `rates_stamp` when built (0: none).
    stamp: u64,
    /// Per agent: its largest rate.
    max_rate: Vec<f64>,
    /// Per agent: its classes are `start[i]..start[i + 1]`, ascending rate.
    start: Vec<usize>,
    /// Per class: the rate.
    rate: Vec<f64>,
    /// Per class: its members are `members[lo[k]..hi[k]]`, by increasing rate then index
    /// (within a class the rates are equal, so by index but for -0.0 before 0.0).
    lo: Vec<usize>,
    hi: Vec<usize>,
    /// Member lists: every group's (ascending index), then the merged lists classes of several
    /// groups need (one per distinct set, shared).
    members: Vec<usize>,
    /// Per accelerator: its group.
    col_group: Vec<usize>,
    /// Per class: its groups are `cls_groups[glo[k]..ghi[k]]` (usually one).
    glo: Vec<usize>,
    ghi: Vec<usize>,
    cls_groups: Vec<usize>,
    /// Per group: its size.
    group_size: Vec<u32>,
    /// Per (group, agent), at `g * n + i`: the agent's class (u32: n x m would need 32 GB of
    /// rates before it overflowed).
    group_class: Vec<u32>,
}

impl Classes {
    /// Whether these classes describe `input`'s rates: the same shape (the same numbers read
    /// as 2 x 3 and as 3 x 2 differ), and the same nonzero stamp or, without one, the same
    /// numbers.
    fn describe(&self, input: &RoundInput) -> bool {
        self.shape == (input.n, input.m)
            && match input.rates_stamp.0 {
                0 => self.key == input.rates,
                s => s == self.stamp && self.key.len() == input.rates.len(),
            }
    }

    fn build(&mut self, input: &RoundInput) {
        if self.describe(input) {
            debug_assert!(self.key == input.rates, "a rates stamp was reused for other rates");
            return;
        }
        let (n, m) = (input.n, input.m);
        self.key.clone_from(&input.rates);
        self.shape = (n, m);
        self.stamp = input.rates_stamp.0;
        self.max_rate.clear();
        self.max_rate.extend(
            input
                .rates
                .chunks_exact(m.max(1))
                .take(n)
                .map(|row| row.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        );
        let groups = input.distinct_rate_columns(&mut self.col_group);
        // Groups' member lists by counting sort (ascending index within a group).
        let mut glo = vec![0usize; groups + 1];
        for &g in &self.col_group {
            glo[g + 1] += 1;
        }
        for g in 0..groups {
            glo[g + 1] += glo[g];
        }
        self.members.clear();
        self.members.resize(m, 0);
        let mut fill = glo.clone();
        for (c, &g) in self.col_group.iter().enumerate() {
            self.members[fill[g]] = c;
            fill[g] += 1;
        }
        let rep: Vec<usize> = (0..groups).map(|g| self.members[glo[g]]).collect();
        self.start.clear();
        self.rate.clear();
        self.lo.clear();
        self.hi.clear();
        self.glo.clear();
        self.ghi.clear();
        self.cls_groups.clear();
        self.group_size.clear();
        self.group_size.extend((0..groups).map(|g| (glo[g + 1] - glo[g]) as u32));
        self.group_class.clear();
        self.group_class.resize(groups * n, 0);
        let mut merged: std::collections::HashMap<Vec<(usize, bool)>, (usize, usize)> = std::collections::HashMap::new();
        let mut order: Vec<usize> = Vec::with_capacity(groups);
        for i in 0..n {
            self.start.push(self.rate.len());
            let row = &input.rates[i * m..(i + 1) * m];
            let rate_of = |g: usize| row[rep[g]];
            order.clear();
            order.extend(0..groups);
            order.sort_by(|&a, &b| rate_of(a).total_cmp(&rate_of(b)).then(rep[a].cmp(&rep[b])));
            let mut p = 0;
            while p < order.len() {
                let r = rate_of(order[p]);
                let q = p + 1 + order[p + 1..].iter().take_while(|&&g| rate_of(g) == r).count();
                let (lo, hi) = if q == p + 1 {
                    (glo[order[p]], glo[order[p] + 1])
                } else {
                    // Equal rates differ only in the sign of a zero, which orders -0.0 first.
                    let key: Vec<(usize, bool)> = order[p..q].iter().map(|&g| (g, rate_of(g).is_sign_negative())).collect();
                    let members = &mut self.members;
                    *merged.entry(key).or_insert_with(|| {
                        let lo = members.len();
                        for &g in &order[p..q] {
                            members.extend_from_slice(&members[glo[g]..glo[g + 1]].to_vec());
                        }
                        members[lo..].sort_by(|&a, &b| row[a].total_cmp(&row[b]).then(a.cmp(&b)));
                        (lo, members.len())
                    })
                };
                let k = self.rate.len() as u32;
                for &g in &order[p..q] {
                    self.group_class[g * n + i] = k;
                }
                self.rate.push(r);
                self.lo.push(lo);
                self.hi.push(hi);
                self.glo.push(self.cls_groups.len());
                self.cls_groups.extend_from_slice(&order[p..q]);
                self.ghi.push(self.cls_groups.len());
                p = q;
            }
        }
        self.start.push(self.rate.len());
    }

    /// Agent i's class for accelerator c.
    #[inline]
    fn of(&self, n: usize, i: usize, c: usize) -> usize {
        self.group_class[self.col_group[c] * n + i] as usize
    }
}

impl Valuation {
    /// Load the round's starting utilities.
    pub fn reset(&mut self, input: &RoundInput) {
        let (n, m) = (input.n, input.m);
        self.n = n;
        self.m = m;
        self.demand = input.form == Form::Demand;
        self.max_rate.clear();
        if self.demand {
            // With the classes (rebuilt only when the rates change): no pass over the rates.
            self.classes.build(input);
            if input.fastest.is_empty() {
                self.max_rate.extend_from_slice(&self.classes.max_rate);
            } else {
                self.max_rate.extend_from_slice(&input.fastest);
            }
        } else if input.has_rates() {
            for i in 0..n {
                let row = &input.rates[i * m..(i + 1) * m];
                self.max_rate.push(row.iter().copied().fold(f64::NEG_INFINITY, f64::max));
            }
        }
        if self.demand {
            self.remaining.clear();
            self.remaining.extend_from_slice(&input.demands);
            let k = self.classes.rate.len();
            self.cls_u.clear();
            self.grp_avail.clone_from(&self.classes.group_size);
            self.cls_cursor.clear();
            for i in 0..n {
                let (r, max) = (input.demands[i], self.max_rate[i]);
                for cl in self.classes.start[i]..self.classes.start[i + 1] {
                    self.cls_u.push(demand_utility(r, self.classes.rate[cl], max));
                    self.cls_cursor.push(self.classes.lo[cl]);
                }
            }
            debug_assert_eq!(self.cls_u.len(), k);
            self.wins.clear();
            if !input.jobs.gangs.is_empty() {
                self.wins.resize(n, 0);
            }
        } else {
            self.u.clear();
            self.u.extend_from_slice(&input.utilities);
            self.picks.clear();
            self.picks.resize(n, 0);
            self.sorted.clear();
            self.sorted.resize(n, false);
            self.cursor.clear();
            self.cursor.resize(n, 0);
        }
    }

    /// Picks after which an agent's row is sorted once for the round (about log2 m, at least
    /// 2): a scan costs O(m) per pick, a sort O(m log m) once, so an agent that keeps picking
    /// (one agent and 100,000 accelerators) stops rescanning, while agents that pick once or
    /// twice (the common case) never sort.
    fn sort_after(&self) -> u32 {
        (usize::BITS - self.m.leading_zeros()).max(2)
    }

    /// Sort agent i's row into `order` (decreasing utility, ties lower index).
    fn sort_row(&mut self, i: usize) {
        let m = self.m;
        if self.order.len() < self.n * m {
            self.order.resize(self.n * m, 0);
        }
        let row = &self.u[i * m..(i + 1) * m];
        let order = &mut self.order[i * m..(i + 1) * m];
        for (k, o) in order.iter_mut().enumerate() {
            *o = k;
        }
        order.sort_unstable_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
        self.sorted[i] = true;
        self.cursor[i] = 0;
    }

    /// Whether this is the demand form.
    #[inline]
    pub fn is_demand(&self) -> bool {
        self.demand
    }

    /// Agent i's current utility for accelerator c.
    #[inline]
    pub fn u(&self, i: usize, c: usize) -> f64 {
        if self.demand {
            self.cls_u[self.classes.of(self.n, i, c)]
        } else {
            self.u[i * self.m + c]
        }
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

    /// Agent i's most preferred accelerator among the available ones (`avail`) if its utility
    /// passes `accept`, which must be monotone (accepting u accepts any larger u). Preference:
    /// decreasing utility; in the demand form ties by increasing rate ("best fit"); then lower
    /// index.
    ///
    /// Utilities form: a pass over the row for an agent's first few picks of the round, then
    /// its row sorted once and walked with a cursor (O(m log m) per round for an agent that
    /// takes many, instead of O(m) per pick). Demand form: utility is non-decreasing in rate,
    /// so the best class is the lowest-rate one among the available classes of the top utility.
    ///
    /// `avail` may be any mask whose entries only ever turn false within the round for agent
    /// i (the round's availability, or that intersected with a fixed partition): the cursors
    /// skip unavailable entries for good.
    #[inline]
    pub fn first_pref(&mut self, i: usize, avail: &[bool], accept: impl Fn(f64) -> bool) -> Option<usize> {
        if !self.demand {
            self.picks[i] += 1;
            if !self.sorted[i] {
                if self.picks[i] < self.sort_after() {
                    return self.first_pref_scan(i, avail, accept);
                }
                self.sort_row(i);
            }
            let m = self.m;
            let order = &self.order[i * m..(i + 1) * m];
            let mut p = self.cursor[i];
            while p < m && !avail[order[p]] {
                p += 1;
            }
            self.cursor[i] = p;
            let c = *order.get(p)?;
            return accept(self.u[i * m + c]).then_some(c);
        }
        let (lo, hi) = (self.classes.start[i], self.classes.start[i + 1]);
        // A class is a candidate while the round has members of it left and i's cursor has not
        // run past its last member under `avail` (with a partition mask, a class can have
        // members left in the round but none in i's share: its cursor then reaches the end).
        let open = |v: &Self, k: usize| v.cls_avail(k) > 0 && v.cls_cursor[k] < v.classes.hi[k];
        loop {
            let top = (lo..hi).rev().find(|&k| open(self, k))?;
            let u = self.cls_u[top];
            if !accept(u) {
                return None;
            }
            let mut best = top;
            for k in (lo..top).rev() {
                if self.cls_u[k] != u {
                    break;
                }
                if open(self, k) {
                    best = k;
                }
            }
            // Advance the class cursor past members no longer available (they never come back).
            let end = self.classes.hi[best];
            let mut p = self.cls_cursor[best];
            while p < end && !avail[self.classes.members[p]] {
                p += 1;
            }
            self.cls_cursor[best] = p;
            if p < end {
                return Some(self.classes.members[p]);
            }
        }
    }

    fn first_pref_scan(&self, i: usize, avail: &[bool], accept: impl Fn(f64) -> bool) -> Option<usize> {
        let row = &self.u[i * self.m..(i + 1) * self.m];
        let mut best: Option<(usize, f64)> = None;
        for (c, (&u, &free)) in row.iter().zip(avail).enumerate() {
            // Scanning in index order with a strict comparison keeps the lower index on ties.
            if free && accept(u) && best.is_none_or(|(_, ub)| u > ub) {
                best = Some((c, u));
            }
        }
        best.map(|(c, _)| c)
    }

    /// Agent i's most preferred accelerator among those in `mask` with `accept(u)`, by a scan
    /// of the row (for callers whose mask is not the round's availability, e.g. a partition).
    pub fn first_pref_in(&self, input: &RoundInput, i: usize, mask: &[bool], accept: impl Fn(f64) -> bool) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (c, &ok) in mask.iter().enumerate() {
            let u = self.u(i, c);
            if !ok || !accept(u) {
                continue;
            }
            let better = match best {
                None => true,
                Some((b, ub)) => u > ub || (u == ub && self.demand && input.rate(i, c) < input.rate(i, b)),
            };
            if better {
                best = Some((c, u));
            }
        }
        best.map(|(c, _)| c)
    }

    /// Available members of class k (demand form): the sum over its groups.
    #[inline]
    fn cls_avail(&self, k: usize) -> u32 {
        let c = &self.classes;
        c.cls_groups[c.glo[k]..c.ghi[k]].iter().map(|&g| self.grp_avail[g]).sum()
    }

    /// Accelerator c's group of identical rate columns (demand form).
    #[inline]
    pub fn group_of(&self, c: usize) -> usize {
        self.classes.col_group[c]
    }

    /// Number of groups of identical rate columns (demand form), and each one's size.
    pub fn group_sizes(&self) -> &[u32] {
        &self.classes.group_size
    }

    /// Whether agent i has an available accelerator whose utility passes `ok`, in O(K) (demand
    /// form; `None` in the utilities form, where the caller keeps counts).
    #[inline]
    pub fn any_available(&self, i: usize, ok: impl Fn(f64) -> bool) -> Option<bool> {
        self.demand
            .then(|| (self.classes.start[i]..self.classes.start[i + 1]).any(|k| ok(self.cls_u[k]) && self.cls_avail(k) > 0))
    }

    /// Accelerator c is no longer available. Demand form: its group's count falls, O(1), and
    /// `seen` is not called (what each agent can still have follows from the groups);
    /// utilities form: `seen(j, u)` with every agent's utility for it, O(n).
    #[inline]
    pub fn take(&mut self, c: usize, mut seen: impl FnMut(usize, f64)) {
        let (n, m) = (self.n, self.m);
        if self.demand {
            self.grp_avail[self.classes.col_group[c]] -= 1;
        } else {
            for j in 0..n {
                seen(j, self.u[j * m + c]);
            }
        }
    }

    /// Record that agent i won accelerator c (after [`Valuation::take`]). Demand form: its
    /// remaining demand falls (to 0 once it holds its gang's count, `RoundInput::jobs`) and
    /// its class utilities are recomputed; `zeroed(g, left)` is
    /// called for every group of identical columns whose utility for i fell to 0, with its
    /// available members. Returns whether any of i's utilities changed (never in the
    /// utilities form).
    #[inline]
    pub fn win(&mut self, input: &RoundInput, i: usize, c: usize, mut zeroed: impl FnMut(usize, u32)) -> bool {
        if !self.demand {
            return false;
        }
        let mut r = (self.remaining[i] - input.rate(i, c)).max(0.0);
        // A job runs on at most its gang's count of accelerators: once it holds them, it
        // wants nothing more, whatever work is left.
        if let Some(w) = self.wins.get_mut(i) {
            *w += 1;
            if *w >= input.jobs.gang(i) {
                r = 0.0;
            }
        }
        self.remaining[i] = r;
        let max = self.max_rate[i];
        let mut changed = false;
        for k in self.classes.start[i]..self.classes.start[i + 1] {
            let new = demand_utility(r, self.classes.rate[k], max);
            let old = self.cls_u[k];
            if new != old {
                changed = true;
                self.cls_u[k] = new;
                if old > 0.0 && new <= 0.0 {
                    for &g in &self.classes.cls_groups[self.classes.glo[k]..self.classes.ghi[k]] {
                        zeroed(g, self.grp_avail[g]);
                    }
                }
            }
        }
        changed
    }

    /// The number of agents whose utility is above 0: per group of identical columns in the
    /// demand form (O(n G)), per accelerator otherwise (O(n m)), into `out`.
    pub fn count_wanting(&self, out: &mut Vec<u32>) {
        let (n, m) = (self.n, self.m);
        out.clear();
        if self.demand {
            out.extend(
                self.classes
                    .group_class
                    .chunks_exact(n.max(1))
                    .map(|col| col.iter().filter(|&&k| self.cls_u[k as usize] > 0.0).count() as u32),
            );
        } else {
            out.resize(m, 0);
            for row in self.u.chunks_exact(m.max(1)).take(n) {
                for (w, &u) in out.iter_mut().zip(row) {
                    *w += u32::from(u > 0.0);
                }
            }
        }
    }

    /// Number of available accelerators agent i values above 0 and (if `tau` is given) at or
    /// above `tau`, recounted from scratch: O(K) in the demand form, O(m) otherwise.
    pub fn count_available(&self, i: usize, avail: &[bool], tau: Option<f64>) -> u32 {
        let ok = |u: f64| u > 0.0 && tau.is_none_or(|t| u >= t);
        if self.demand {
            (self.classes.start[i]..self.classes.start[i + 1])
                .filter(|&k| ok(self.cls_u[k]))
                .map(|k| self.cls_avail(k))
                .sum()
        } else {
            self.u[i * self.m..(i + 1) * self.m]
                .iter()
                .zip(avail)
                .filter(|(&u, &a)| a && ok(u))
                .count() as u32
        }
    }

    /// Marginal jobs agent i would get from c now: `min(R_i, rate)` in the demand form,
    /// `u * max rate` (= `min(q, mu)` for per-accelerator queues) with utilities and rates,
    /// and plain utility when no rates are known.
    #[inline]
    pub fn marginal_jobs(&self, input: &RoundInput, i: usize, c: usize) -> f64 {
        if self.demand {
            // The class's rate is input.rate(i, c), read down one contiguous group column.
            self.remaining[i].min(self.classes.rate[self.classes.of(self.n, i, c)])
        } else if input.has_rates() {
            self.u(i, c) * self.max_rate[i]
        } else {
            self.u(i, c)
        }
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
        // R = 0 and both utilities are 0.
        let input = RoundInput::from_demands(&[5.0], &[vec![4.0, 8.0]]);
        let mut v = Valuation::default();
        v.reset(&input);
        assert_eq!((v.u(0, 0), v.u(0, 1)), (0.5, 0.625));
        v.take(1, |_, _| {});
        let mut zeroed = Vec::new();
        assert!(v.win(&input, 0, 1, |g, left| zeroed.push((g, left))));
        assert_eq!(v.remaining(0), 0.0);
        assert_eq!((v.u(0, 0), v.u(0, 1)), (0.0, 0.0));
        zeroed.sort_unstable();
        // Both groups (one accelerator each) fell to 0; c0's is still available.
        assert_eq!(zeroed, vec![(0, 1), (1, 0)]);
    }

    #[test]
    fn best_fit_prefers_the_slowest_accelerator_that_covers_the_demand() {
        // Demand 3 fits on rates 4, 6 and 8 alike (u = 3/8 for all): best fit takes rate 4.
        let input = RoundInput::from_demands(&[3.0], &[vec![8.0, 6.0, 4.0, 2.0]]);
        let mut v = Valuation::default();
        v.reset(&input);
        assert_eq!(v.first_pref(0, &[true; 4], |u| u > 0.0), Some(2));
        v.take(2, |_, _| {});
        assert_eq!(v.first_pref(0, &[true, true, false, true], |u| u > 0.0), Some(1));
        // Demand 10 exceeds every rate: fastest first, lower index among equals.
        let input = RoundInput::from_demands(&[10.0], &[vec![6.0, 8.0, 8.0, 2.0]]);
        v.reset(&input);
        assert_eq!(v.first_pref(0, &[true; 4], |u| u > 0.0), Some(1));
        assert_eq!(v.first_pref(0, &[true; 4], |u| u >= 0.9), Some(1));
        assert_eq!(v.first_pref(0, &[true; 4], |u| u > 1.0), None);
    }

    #[test]
    fn sorted_cursor_agrees_with_the_scan_pick_by_pick() {
        // One agent taking a whole row: the first picks scan, later ones walk the sorted row.
        let mut x = 0x1234_5678u64;
        let row: Vec<f64> = (0..200)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % 11) as f64 / 10.0
            })
            .collect();
        let input = RoundInput::from_utilities(&[row.clone()]);
        let mut v = Valuation::default();
        v.reset(&input);
        let mut avail = vec![true; 200];
        for k in 0..200 {
            let scan = v.first_pref_scan(0, &avail, |u| u >= 0.3);
            assert_eq!(v.first_pref(0, &avail, |u| u >= 0.3), scan, "pick {k}");
            match scan {
                Some(c) => avail[c] = false,
                None => break,
            }
        }
        assert!(v.sorted[0], "the row was sorted after a few picks");
        assert!(avail.iter().zip(&row).all(|(&a, &u)| a == (u < 0.3)));
    }

    #[test]
    fn utilities_form_ties_go_to_the_lower_index() {
        let input = RoundInput::from_utilities(&[vec![0.2, 0.7, 0.7, 0.1]]);
        let mut v = Valuation::default();
        v.reset(&input);
        assert_eq!(v.first_pref(0, &[true; 4], |u| u > 0.0), Some(1));
        assert_eq!(v.first_pref(0, &[true; 4], |u| u >= 0.75), None);
    }

    #[test]
    fn classes_are_rebuilt_when_the_shape_changes_under_the_same_numbers() {
        let mut v = Valuation::default();
        v.reset(&RoundInput::from_demands(&[8.0, 8.0], &[vec![4.0, 6.0, 4.0], vec![6.0, 4.0, 6.0]]));
        assert_eq!(v.first_pref(0, &[true; 3], |u| u > 0.0), Some(1));
        let r = RoundInput::from_demands(&[8.0, 8.0, 8.0], &[vec![4.0, 6.0], vec![4.0, 6.0], vec![4.0, 6.0]]);
        v.reset(&r);
        assert_eq!(v.first_pref(2, &[true; 2], |u| u > 0.0), Some(1));
        assert_eq!(v.u(2, 0), 4.0 / 6.0);
    }

    #[test]
    fn agents_with_equal_rates_on_two_types_share_one_merged_class() {
        // Types (columns) A = {0, 3}, B = {1, 4}, C = {2}: agent 0 has A = B, agent 1 all
        // distinct, agent 2 A = B too (its merged list is agent 0's, not a copy).
        let rates = [
            vec![4.0, 4.0, 6.0, 4.0, 4.0],
            vec![3.0, 5.0, 6.0, 3.0, 5.0],
            vec![2.0, 2.0, 1.0, 2.0, 2.0],
        ];
        let r = RoundInput::from_demands(&[20.0; 3], &rates);
        let mut v = Valuation::default();
        v.reset(&r);
        let c = &v.classes;
        assert_eq!(c.col_group, vec![0, 1, 2, 0, 1]);
        let class_members = |k: usize| c.members[c.lo[k]..c.hi[k]].to_vec();
        assert_eq!(
            (c.start[0]..c.start[1]).map(class_members).collect::<Vec<_>>(),
            vec![vec![0, 1, 3, 4], vec![2]]
        );
        assert_eq!(
            (c.start[1]..c.start[2]).map(class_members).collect::<Vec<_>>(),
            vec![vec![0, 3], vec![1, 4], vec![2]]
        );
        assert_eq!(
            (c.start[2]..c.start[3]).map(class_members).collect::<Vec<_>>(),
            vec![vec![2], vec![0, 1, 3, 4]]
        );
        assert_eq!(c.lo[c.start[0]], c.lo[c.start[2] + 1], "one merged list for the same groups");
        // Taking c = 3 (group A) lowers every agent's class holding A, and agent 2 then picks 0.
        let mut avail = vec![true; 5];
        avail[3] = false;
        // One decrement of group A, which every class holding it sees.
        v.take(3, |_, _| unreachable!("the demand form calls no one"));
        assert_eq!(v.count_available(0, &avail, None), 4);
        assert_eq!(v.count_available(1, &avail, None), 4);
        assert_eq!(v.count_available(2, &avail, None), 4);
        assert_eq!(v.cls_avail(v.classes.start[1]), 1, "agent 1's class A has c0 left");
        assert_eq!(v.first_pref(2, &avail, |u| u > 0.0), Some(0));
    }

    #[test]
    fn a_stamp_stands_for_the_rates_and_zero_promises_nothing() {
        let mut v = Valuation::default();
        let mut r = RoundInput::from_demands(&[1.0], &[vec![4.0, 6.0]]);
        r.rates_stamp = crate::RatesStamp(7);
        v.reset(&r);
        assert_eq!(v.classes.rate, vec![4.0, 6.0]);
        // The same stamp is taken at its word: the rates are not reread...
        r.rates[0] = 5.0;
        v.reset(&r);
        assert_eq!(v.classes.rate, vec![4.0, 6.0]);
        // ...a new stamp, or none, rebuilds.
        r.rates_stamp = crate::RatesStamp::fresh();
        v.reset(&r);
        assert_eq!(v.classes.rate, vec![5.0, 6.0]);
        r.rates_stamp = crate::RatesStamp::default();
        r.rates[0] = 3.0;
        v.reset(&r);
        assert_eq!((v.classes.rate.clone(), v.max_rate.clone()), (vec![3.0, 6.0], vec![6.0]));
    }

    #[test]
    fn classes_group_equal_rates_and_are_rebuilt_when_rates_change() {
        let mut v = Valuation::default();
        v.reset(&RoundInput::from_demands(&[1.0], &[vec![4.0, 6.0, 4.0]]));
        assert_eq!(v.classes.rate, vec![4.0, 6.0]);
        assert_eq!(v.classes.members, vec![0, 2, 1]);
        v.reset(&RoundInput::from_demands(&[1.0], &[vec![5.0, 6.0, 4.0]]));
        assert_eq!(v.classes.rate, vec![4.0, 5.0, 6.0]);
    }
}

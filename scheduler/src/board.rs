//! Availability and "who still wants what" counters for one round, shared by the mechanisms.
//!
//! Every pick updates O(n + K) counters (the column of the taken accelerator, and in the demand
//! form the winner's K rate classes), so a mechanism can ask "does anyone still want an
//! available accelerator" or "is agent i a candidate" in O(1) instead of rescanning.

use crate::input::RoundInput;
use crate::valuation::Valuation;
use crate::Allocation;

/// The round's board: the valuation plus counters kept exact under every pick.
///
/// Demand form: what an agent can still have follows from the valuation's groups of identical
/// rate columns (available members per group, the agent's utility per class), so a pick
/// updates O(K) numbers and "does i want something" is O(K). Utilities form: per-agent and
/// per-accelerator counters, O(n) per pick.
#[derive(Clone, Debug, Default)]
pub struct Board {
    /// Current utilities.
    pub val: Valuation,
    /// Whether accelerator c is still unassigned.
    pub avail: Vec<bool>,
    /// Utilities form, per agent: available accelerators it values above 0.
    count_pos: Vec<u32>,
    /// Utilities form, per agent: available accelerators in `D_i` (u >= tau and u > 0); only
    /// with thresholds.
    count_d: Vec<u32>,
    /// Per accelerator (utilities form) or per group (demand form): agents valuing it above 0.
    wanted_by: Vec<u32>,
    /// Available accelerators with `wanted_by > 0`.
    n_wanted: usize,
    track_d: bool,
    /// The round's thresholds (demand form, with thresholds).
    tau: Vec<f64>,
}

impl Board {
    /// Start a round. With `track_thresholds`, also count each agent's available wishes at or
    /// above its threshold (MTF's paid phase).
    pub fn reset(&mut self, input: &RoundInput, track_thresholds: bool) {
        let (n, m) = (input.n, input.m);
        self.val.reset(input);
        self.track_d = track_thresholds;
        self.avail.clear();
        self.avail.resize(m, true);
        self.count_pos.clear();
        self.count_d.clear();
        self.val.count_wanting(&mut self.wanted_by);
        if self.val.is_demand() {
            self.tau.clear();
            if track_thresholds {
                self.tau.extend_from_slice(&input.thresholds);
            }
            let sizes = self.val.group_sizes();
            self.n_wanted = self
                .wanted_by
                .iter()
                .zip(sizes)
                .filter(|(&w, _)| w > 0)
                .map(|(_, &s)| s as usize)
                .sum();
            return;
        }
        for i in 0..n {
            self.count_pos.push(self.val.count_available(i, &self.avail, None));
            let d = if track_thresholds {
                self.val.count_available(i, &self.avail, Some(input.thresholds[i]))
            } else {
                0
            };
            self.count_d.push(d);
        }
        self.n_wanted = self.wanted_by.iter().filter(|&&k| k > 0).count();
    }

    /// Whether some available accelerator has positive utility for someone.
    #[inline]
    pub fn anything_wanted(&self) -> bool {
        self.n_wanted > 0
    }

    /// Whether agent i wants some available accelerator.
    #[inline]
    pub fn wants(&self, i: usize) -> bool {
        self.val.any_available(i, |u| u > 0.0).unwrap_or_else(|| self.count_pos[i] > 0)
    }

    /// Whether agent i has an available accelerator in `D_i` (needs threshold tracking).
    #[inline]
    pub fn wants_paid(&self, i: usize) -> bool {
        if self.val.is_demand() {
            // Without threshold tracking nobody has a paid wish (as the zero counts said).
            return self
                .tau
                .get(i)
                .is_some_and(|&tau| self.val.any_available(i, |u| u > 0.0 && u >= tau) == Some(true));
        }
        self.count_d.get(i).is_some_and(|&k| k > 0)
    }

    /// Agent i's most preferred available accelerator whose utility passes `accept` (monotone).
    #[inline]
    pub fn first_pref(&mut self, i: usize, accept: impl Fn(f64) -> bool) -> Option<usize> {
        self.val.first_pref(i, &self.avail, accept)
    }

    /// Give accelerator c to agent i: record it in `out`, update the counters, and (demand form)
    /// lower i's remaining demand. O(K) in the demand form, O(n + m) in the utilities form.
    pub fn give(&mut self, input: &RoundInput, i: usize, c: usize, out: &mut Allocation) {
        debug_assert!(self.avail[c]);
        out.owners[c] = Some(i);
        out.won_utility[c] = self.val.u(i, c);
        self.avail[c] = false;
        let Self {
            val,
            count_pos,
            count_d,
            wanted_by,
            n_wanted,
            track_d,
            ..
        } = self;
        if val.is_demand() {
            let g = val.group_of(c);
            if wanted_by[g] > 0 {
                *n_wanted -= 1;
            }
            val.take(c, |_, _| {});
            // i no longer wants a group: its available members leave the wanted count when
            // nobody else wants them either.
            val.win(input, i, c, |g, left| {
                wanted_by[g] -= 1;
                if wanted_by[g] == 0 {
                    *n_wanted -= left as usize;
                }
            });
            return;
        }
        if wanted_by[c] > 0 {
            *n_wanted -= 1;
        }
        let track_d = *track_d;
        val.take(c, |j, u| {
            if u > 0.0 {
                count_pos[j] -= 1;
                if track_d && u >= input.thresholds[j] {
                    count_d[j] -= 1;
                }
            }
        });
        // In the utilities form a win changes no utility (`win` is the demand form's).
    }

    /// The free phase (SPEC 3.1 step 3): visit agents cyclically from `start`; a visited agent
    /// for which `eligible(i)` holds takes its most preferred remaining accelerator with positive
    /// utility, or is passed over. Stops when no eligible agent wants anything that remains.
    pub fn free_phase(&mut self, input: &RoundInput, out: &mut Allocation, start: usize, eligible: impl Fn(usize) -> bool) {
        let n = input.n;
        let mut i = start;
        let mut idle = 0;
        while self.n_wanted > 0 && idle < n {
            if eligible(i) && self.wants(i) {
                let c = self
                    .first_pref(i, |u| u > 0.0)
                    .expect("count_pos > 0 means a wanted accelerator is available");
                self.give(input, i, c, out);
                idle = 0;
            } else {
                idle += 1;
            }
            i += 1;
            if i == n {
                i = 0;
            }
        }
    }
}

//! Gandiva_fair (Chaudhary et al., EuroSys 2020): stride scheduling plus heterogeneity trading.
//!
//! Every agent holds `w_i` tickets on every accelerator type. Each round, among the agents that
//! want something, for each (slower type, faster type) pair (types ordered by mean rate), the
//! agent with the highest speed-up (its fast-type rate over its slow-type rate) buys fast-type
//! tickets from the agent with the lowest speed-up, paying in slow-type tickets at the
//! second-highest speed-up as price (clamped between the two parties' speed-ups so neither
//! loses), until the buyer's slow tickets or the seller's fast tickets run out; then the next
//! pair trades, until no buyer's speed-up exceeds a seller's. Accelerators then go out fastest
//! first, each by stride on its type: the wanting agent with the smallest per-type pass, which
//! advances by `L / tickets`. An agent without tickets on a type gets that type only when no
//! ticket holder wants it.
//!
//! Types come from the input's `types` field, or else group accelerators whose rate columns are
//! identical (the default cluster: two types).
//!
//! Cost per round: O(n·m) to find the types (rate columns are hashed) and to hand out the
//! accelerators, plus O(K² · n log n) for the trading over K types (each pair trades with two
//! pointers over the agents sorted by speed-up; every trade exhausts a buyer or a seller).
//! Gandiva_fair trades between GPU generations, a handful of types; a rate matrix in which every
//! column differs would make each accelerator its own type and the trading O(m² · n log n), so
//! with more than [`MAX_TYPES`] distinct types the accelerators are grouped into [`MAX_TYPES`]
//! types of nearly equal size by their mean rate over agents (the method that runs at scale;
//! the exact per-column types are used whenever there are at most [`MAX_TYPES`]).

use crate::board::Board;
use crate::input::{InputError, Need, RoundInput};
use crate::stride::{rejoin, STRIDE_L};
use crate::valuation::fastest_first;
use crate::{Allocation, Mechanism};
use serde::{Deserialize, Serialize};

const EPS: f64 = 1e-12;

/// Most accelerator types traded between (see the module docs).
pub const MAX_TYPES: usize = 32;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct GandivaState {
    /// Number of types the passes are for.
    types: usize,
    /// Pass per (agent, type), agent-major.
    passes: Vec<f64>,
    /// Whether each agent wanted something last round.
    active: Vec<bool>,
}

/// Gandiva_fair with heterogeneity trading.
#[derive(Clone, Debug, Default)]
pub struct GandivaFair {
    state: GandivaState,
    board: Board,
    order: Vec<usize>,
    key: Vec<f64>,
    type_of: Vec<usize>,
    tickets: Vec<f64>,
    speed: Vec<f64>,
    now_active: Vec<bool>,
}

/// Accelerator types: the input's, or indices of distinct rate columns in order of appearance;
/// then, past [`MAX_TYPES`], grouped by mean rate (see the module docs).
fn types_of(input: &RoundInput, out: &mut Vec<usize>) -> usize {
    out.clear();
    let k = if !input.types.is_empty() {
        // Renumber densely in order of appearance so any labels work.
        let mut labels: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
        for &t in &input.types {
            let next = labels.len();
            out.push(*labels.entry(t).or_insert(next));
        }
        labels.len()
    } else {
        input.distinct_rate_columns(out)
    };
    if k <= MAX_TYPES {
        return k;
    }
    // Group: types by mean rate (ties by first appearance), split into MAX_TYPES runs.
    let (n, m) = (input.n, input.m);
    let mut mean = vec![0.0; k];
    let mut count = vec![0usize; k];
    for c in 0..m {
        let t = out[c];
        count[t] += 1;
        if input.has_rates() {
            mean[t] += (0..n).map(|i| input.rate(i, c)).sum::<f64>();
        }
    }
    let mut by_speed: Vec<usize> = (0..k).collect();
    by_speed.sort_by(|&a, &b| (mean[a] / count[a] as f64).total_cmp(&(mean[b] / count[b] as f64)).then(a.cmp(&b)));
    let mut group = vec![0usize; k];
    for (rank, &t) in by_speed.iter().enumerate() {
        group[t] = rank * MAX_TYPES / k;
    }
    for t in out.iter_mut() {
        *t = group[*t];
    }
    MAX_TYPES
}

/// Trade fast-type tickets for slow-type tickets (see the module docs). `speed[i * k + t]` is
/// agent i's mean rate on type t; `tickets` likewise; only `active` agents trade.
///
/// For each (slow, fast) pair: the buyer is the active agent with the highest speed-up that
/// still has slow tickets (ties: lower index), the seller the other active agent with the
/// lowest speed-up that still has fast tickets (ties: lower index); they trade until one side
/// runs out, then the next buyer or seller steps in, until the buyer's speed-up no longer
/// exceeds the seller's. An agent that ran out never becomes a buyer (or seller) again in the
/// pair (it could only refill by taking the other role, which the stopping rule prevents), so
/// two pointers over the agents sorted by speed-up find the same trades as a rescan per trade.
fn trade(speed: &[f64], tickets: &mut [f64], active: &[bool], k: usize) {
    let n = active.len();
    let mut type_order: Vec<usize> = (0..k).collect();
    let mean = |t: usize| (0..n).map(|i| speed[i * k + t]).sum::<f64>();
    type_order.sort_by(|&a, &b| mean(a).total_cmp(&mean(b)).then(a.cmp(&b)));
    let mut buyers: Vec<usize> = Vec::with_capacity(n);
    let mut sellers: Vec<usize> = Vec::with_capacity(n);
    let mut up = vec![0.0; n];
    for (x, &slow) in type_order.iter().enumerate() {
        for &fast in &type_order[x + 1..] {
            for i in 0..n {
                up[i] = speed[i * k + fast] / speed[i * k + slow];
            }
            buyers.clear();
            buyers.extend((0..n).filter(|&i| active[i]));
            sellers.clone_from(&buyers);
            buyers.sort_by(|&a, &b| up[b].total_cmp(&up[a]).then(a.cmp(&b)));
            sellers.sort_by(|&a, &b| up[a].total_cmp(&up[b]).then(a.cmp(&b)));
            // The two highest speed-ups among active agents: the price is the highest other
            // than the buyer's own.
            let (top1, top2) = (buyers.first().copied(), buyers.get(1).copied());
            let (mut bp, mut sp) = (0, 0);
            for _ in 0..4 * n + 4 {
                while bp < buyers.len() && tickets[buyers[bp] * k + slow] <= EPS {
                    bp += 1;
                }
                let Some(&b) = buyers.get(bp) else { break };
                // Skipping the current buyer for good is safe too: were it ever the lowest
                // seller left, its speed-up would not be below the buyer's, and the pair ends.
                while sp < sellers.len() && (sellers[sp] == b || tickets[sellers[sp] * k + fast] <= EPS) {
                    sp += 1;
                }
                let Some(&s) = sellers.get(sp) else { break };
                if up[b] <= up[s] {
                    break;
                }
                let second = match (top1, top2) {
                    (Some(t), Some(u)) if t == b => up[u],
                    (Some(t), _) if t != b => up[t],
                    _ => f64::NEG_INFINITY,
                };
                let price = second.clamp(up[s], up[b]);
                let bought = tickets[s * k + fast].min(tickets[b * k + slow] / price);
                tickets[b * k + fast] += bought;
                tickets[b * k + slow] -= bought * price;
                tickets[s * k + fast] -= bought;
                tickets[s * k + slow] += bought * price;
                // Whichever side ran out is zero now, not a rounding residue.
                for t in [b * k + slow, s * k + fast] {
                    if tickets[t] < EPS {
                        tickets[t] = 0.0;
                    }
                }
            }
        }
    }
}

impl Mechanism for GandivaFair {
    fn name(&self) -> &'static str {
        "gandiva_fair"
    }

    fn needs(&self) -> &'static [Need] {
        &[Need::Rates]
    }

    fn reset(&mut self) {
        self.state = GandivaState::default();
    }

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        let (n, m) = (input.n, input.m);
        let k = types_of(input, &mut self.type_of);
        if self.state.types != k || self.state.passes.len() != n * k {
            self.state = GandivaState {
                types: k,
                passes: vec![0.0; n * k],
                active: vec![false; n],
            };
        }
        out.reset(input);
        let board = &mut self.board;
        board.reset(input, false);
        self.now_active.clear();
        self.now_active.extend((0..n).map(|i| board.wants(i)));
        rejoin(&mut self.state.passes, k, &self.state.active, &self.now_active, |i, t| i * k + t);
        self.state.active.copy_from_slice(&self.now_active);

        // Mean rate per (agent, type), and everyone's starting tickets.
        self.speed.clear();
        self.speed.resize(n * k, 0.0);
        let mut count = vec![0usize; k];
        for c in 0..m {
            count[self.type_of[c]] += 1;
        }
        for i in 0..n {
            for c in 0..m {
                self.speed[i * k + self.type_of[c]] += input.rate(i, c);
            }
            for t in 0..k {
                self.speed[i * k + t] /= count[t] as f64;
            }
        }
        self.tickets.clear();
        self.tickets.extend((0..n).flat_map(|i| std::iter::repeat_n(input.weights[i], k)));
        trade(&self.speed, &mut self.tickets, &self.now_active, k);

        fastest_first(input, &mut self.order, &mut self.key);
        for &c in &self.order {
            if !board.anything_wanted() {
                break;
            }
            let t = self.type_of[c];
            // (no tickets, pass, index): ticket holders first, then smallest pass.
            let mut best: Option<(bool, f64, usize)> = None;
            for i in 0..n {
                if board.val.u(i, c) > 0.0 {
                    let cand = (self.tickets[i * k + t] <= 0.0, self.state.passes[i * k + t], i);
                    if best.is_none_or(|b| (cand.0, cand.1) < (b.0, b.1)) {
                        best = Some(cand);
                    }
                }
            }
            if let Some((broke, _, i)) = best {
                if !broke {
                    self.state.passes[i * k + t] += STRIDE_L / self.tickets[i * k + t];
                }
                board.give(input, i, c, out);
            }
        }
    }

    fn state(&self) -> Option<serde_json::Value> {
        Some(serde_json::to_value(&self.state).expect("serialisable"))
    }

    fn set_state(&mut self, state: &serde_json::Value, input: &RoundInput) -> Result<(), InputError> {
        let s: GandivaState = crate::parse_state(self.name(), state)?;
        let mut types = Vec::new();
        let k = types_of(input, &mut types);
        crate::check_state_len(self.name(), "passes", s.passes.len(), input.n * k)?;
        crate::check_state_len(self.name(), "active", s.active.len(), input.n)?;
        if s.types != k {
            return Err(InputError::Other(format!(
                "field `state.types` is {}, but this round has {k} accelerator types",
                s.types
            )));
        }
        self.state = s;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trading rule as first written: a rescan of all agents for every trade.
    fn trade_by_rescan(speed: &[f64], tickets: &mut [f64], active: &[bool], k: usize) {
        let n = active.len();
        let mut type_order: Vec<usize> = (0..k).collect();
        let mean = |t: usize| (0..n).map(|i| speed[i * k + t]).sum::<f64>();
        type_order.sort_by(|&a, &b| mean(a).total_cmp(&mean(b)).then(a.cmp(&b)));
        for (x, &slow) in type_order.iter().enumerate() {
            for &fast in &type_order[x + 1..] {
                let up = |i: usize| speed[i * k + fast] / speed[i * k + slow];
                for _ in 0..4 * n + 4 {
                    let buyer = (0..n)
                        .filter(|&i| active[i] && tickets[i * k + slow] > EPS)
                        .max_by(|&a, &b| up(a).total_cmp(&up(b)).then(b.cmp(&a)));
                    let Some(b) = buyer else { break };
                    let seller = (0..n)
                        .filter(|&i| i != b && active[i] && tickets[i * k + fast] > EPS)
                        .min_by(|&a, &c| up(a).total_cmp(&up(c)).then(a.cmp(&c)));
                    let Some(s) = seller else { break };
                    if up(b) <= up(s) {
                        break;
                    }
                    let second = (0..n).filter(|&i| i != b && active[i]).map(up).fold(f64::NEG_INFINITY, f64::max);
                    let price = second.clamp(up(s), up(b));
                    let bought = tickets[s * k + fast].min(tickets[b * k + slow] / price);
                    tickets[b * k + fast] += bought;
                    tickets[b * k + slow] -= bought * price;
                    tickets[s * k + fast] -= bought;
                    tickets[s * k + slow] += bought * price;
                    for t in [b * k + slow, s * k + fast] {
                        if tickets[t] < EPS {
                            tickets[t] = 0.0;
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn two_pointer_trading_matches_a_rescan_per_trade() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut trades = 0;
        for case in 0..3000 {
            let n = 1 + (next() * 7.0) as usize;
            let k = 1 + (next() * 4.0) as usize;
            // Coarse values so ties in speed-up and weight happen often.
            let speed: Vec<f64> = (0..n * k).map(|_| 1.0 + (next() * 4.0).floor()).collect();
            let weights: Vec<f64> = (0..n).map(|_| [1.0, 2.0, 4.0][(next() * 3.0) as usize]).collect();
            let active: Vec<bool> = (0..n).map(|_| next() < 0.8).collect();
            let start: Vec<f64> = (0..n).flat_map(|i| std::iter::repeat_n(weights[i], k)).collect();
            let (mut a, mut b) = (start.clone(), start.clone());
            trade(&speed, &mut a, &active, k);
            trade_by_rescan(&speed, &mut b, &active, k);
            let bits = |v: &[f64]| v.iter().map(|t| t.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a), bits(&b), "case {case}: n {n} k {k} speed {speed:?} active {active:?}");
            trades += usize::from(a != start);
        }
        assert!(trades > 500, "the cases traded ({trades} of 3000)");
    }

    #[test]
    fn more_than_max_types_are_grouped_by_mean_rate() {
        let m = 100;
        let rates = vec![(0..m).map(|c| 10.0 + c as f64).collect::<Vec<_>>(); 2];
        let input = RoundInput::from_demands(&[5.0, 5.0], &rates);
        let mut types = Vec::new();
        assert_eq!(types_of(&input, &mut types), MAX_TYPES);
        // Columns are in increasing rate: groups are contiguous and non-decreasing.
        assert!(types.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!((types[0], types[m - 1]), (0, MAX_TYPES - 1));
        // At most MAX_TYPES distinct columns keep their exact types.
        let rates = vec![(0..m).map(|c| 10.0 + (c % 3) as f64).collect::<Vec<_>>(); 2];
        assert_eq!(types_of(&RoundInput::from_demands(&[5.0, 5.0], &rates), &mut types), 3);
        assert_eq!(&types[..4], &[0, 1, 2, 0]);
    }

    #[test]
    fn types_are_derived_from_equal_rate_columns() {
        let r = RoundInput::from_demands(&[1.0, 1.0], &[vec![1.0, 2.0, 1.0], vec![3.0, 4.0, 3.0]]);
        let mut t = Vec::new();
        assert_eq!(types_of(&r, &mut t), 2);
        assert_eq!(t, vec![0, 1, 0]);
    }

    #[test]
    fn the_agent_that_gains_most_from_fast_accelerators_buys_them() {
        // Agent 0 runs 3x faster on type 1, agent 1 only 1.1x: agent 0 buys agent 1's type-1
        // tickets with its type-0 tickets at price 1.1 (the second-highest speed-up).
        let speed = [1.0, 3.0, 1.0, 1.1];
        let mut tickets = [1.0, 1.0, 1.0, 1.0];
        trade(&speed, &mut tickets, &[true, true], 2);
        // The buyer runs out of slow tickets first: 1 slow buys 1/1.1 fast.
        assert_eq!(tickets[0], 0.0);
        assert!((tickets[1] - (1.0 + 1.0 / 1.1)).abs() < 1e-12);
        assert!((tickets[2] - 2.0).abs() < 1e-12);
        assert!((tickets[3] - (1.0 - 1.0 / 1.1)).abs() < 1e-12);
    }

    #[test]
    fn with_trading_the_fast_type_goes_to_the_agent_with_the_highest_speed_up() {
        // Two slow and two fast accelerators; both agents want everything.
        let rates = vec![vec![1.0, 1.0, 3.0, 3.0], vec![1.0, 1.0, 1.1, 1.1]];
        let mut r = RoundInput::from_demands(&[100.0, 100.0], &rates);
        r.weights = vec![1.0, 1.0];
        let mut g = GandivaFair::default();
        let (mut fast_to_0, mut slow_to_1) = (0, 0);
        for _ in 0..20 {
            let out = crate::run(&mut g, &r);
            fast_to_0 += [2, 3].iter().filter(|&&c| out.owners[c] == Some(0)).count();
            slow_to_1 += [0, 1].iter().filter(|&&c| out.owners[c] == Some(1)).count();
        }
        // Agent 0 holds 1.909 of the 2 fast tickets (95%) and no slow ones.
        assert!(fast_to_0 >= 36, "agent 0 got {fast_to_0} of 40 fast slots");
        assert_eq!(slow_to_1, 40);
    }
}

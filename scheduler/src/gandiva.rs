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

use crate::board::Board;
use crate::input::{InputError, Need, RoundInput};
use crate::stride::{rejoin, STRIDE_L};
use crate::valuation::fastest_first;
use crate::{Allocation, Mechanism};
use serde::{Deserialize, Serialize};

const EPS: f64 = 1e-12;

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

/// Accelerator types: the input's, or indices of distinct rate columns in order of appearance.
fn types_of(input: &RoundInput, out: &mut Vec<usize>) -> usize {
    out.clear();
    if !input.types.is_empty() {
        // Renumber densely in order of appearance so any labels work.
        let mut labels: Vec<usize> = Vec::new();
        for &t in &input.types {
            let k = labels.iter().position(|&l| l == t).unwrap_or_else(|| {
                labels.push(t);
                labels.len() - 1
            });
            out.push(k);
        }
        return labels.len();
    }
    let (n, m) = (input.n, input.m);
    let mut reps: Vec<usize> = Vec::new();
    for c in 0..m {
        let same = |r: usize| (0..n).all(|i| input.rate(i, r) == input.rate(i, c));
        let k = reps.iter().position(|&r| same(r)).unwrap_or_else(|| {
            reps.push(c);
            reps.len() - 1
        });
        out.push(k);
    }
    reps.len()
}

/// Trade fast-type tickets for slow-type tickets (see the module docs). `speed[i * k + t]` is
/// agent i's mean rate on type t; `tickets` likewise; only `active` agents trade.
fn trade(speed: &[f64], tickets: &mut [f64], active: &[bool], k: usize) {
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
        rejoin(&mut self.state.passes, k, &self.state.active, &self.now_active);
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

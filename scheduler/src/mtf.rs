//! Most-Token-First (SPEC 3.1), exactly as written, for both input forms.

use crate::board::Board;
use crate::input::Leftovers;
use crate::input::{Need, RoundInput};
use crate::{Allocation, Mechanism};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Most-Token-First. Holds only scratch space: its state across rounds (budgets, turn) travels
/// in the round input and the allocation, so the caller owns it.
#[derive(Clone, Debug, Default)]
pub struct Mtf {
    board: Board,
    leftovers: Leftovers,
    /// The paid phase's candidates by (budget, earliest in cyclic order from `turn`).
    heap: BinaryHeap<(Budget, Reverse<usize>, usize)>,
}

/// A budget ordered by `total_cmp` (budgets are finite and >= 0, where it is the usual order).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Budget(f64);

impl Eq for Budget {}

impl PartialOrd for Budget {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Budget {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl Mtf {
    /// MTF exactly as SPEC 3.1 (round-robin free phase).
    pub fn new() -> Self {
        Self::default()
    }

    /// The thesis code's variant (SPEC 7): leftovers go one by one to an agent drawn with
    /// probability proportional to weight among those that still want something, using the
    /// input's `draws` (one per leftover).
    pub fn with_weighted_leftovers() -> Self {
        Self::with_leftovers(Leftovers::WeightedRandom)
    }

    /// MTF with the given free phase.
    pub fn with_leftovers(leftovers: Leftovers) -> Self {
        Self {
            board: Board::default(),
            leftovers,
            heap: BinaryHeap::new(),
        }
    }
}

impl Mechanism for Mtf {
    fn name(&self) -> &'static str {
        "mtf"
    }

    fn needs(&self) -> &'static [Need] {
        if self.leftovers == Leftovers::WeightedRandom {
            &[Need::Thresholds, Need::Budgets, Need::Draws]
        } else {
            &[Need::Thresholds, Need::Budgets]
        }
    }

    fn reset(&mut self) {}

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        let (n, turn) = (input.n, input.turn);
        out.reset(input);
        let board = &mut self.board;
        board.reset(input, true);

        // 1. Paid phase: the richest candidate (ties: first in cyclic order from `turn`) buys
        //    its most preferred available accelerator in D_i for one token.
        // The richest candidate (ties: first in cyclic order from `turn`), from a heap: O(log n)
        // per pick instead of a pass over every agent. Only the winner's budget changes (it is
        // pushed again), and an agent that stops wanting something in D_i or drops below one
        // token never comes back within the phase (availability and its utilities only fall),
        // so candidates popped in that state are dropped for good.
        let heap = &mut self.heap;
        heap.clear();
        for k in 0..n {
            let i = if turn + k < n { turn + k } else { turn + k - n };
            if out.budgets[i] >= 1.0 && board.wants_paid(i) {
                heap.push((Budget(out.budgets[i]), Reverse(k), i));
            }
        }
        while let Some((_, Reverse(k), best)) = heap.pop() {
            if !board.wants_paid(best) {
                continue;
            }
            let tau = input.thresholds[best];
            let c = board
                .first_pref(best, |u| u >= tau && u > 0.0)
                .expect("a candidate has an available accelerator in D_i");
            out.budgets[best] -= 1.0;
            out.spent[best] += 1.0;
            out.paid[c] = true;
            out.prices[c] = 1.0;
            board.give(input, best, c, out);
            if out.budgets[best] >= 1.0 {
                heap.push((Budget(out.budgets[best]), Reverse(k), best));
            }
        }

        // 2. Redistribution of the spent tokens by weight.
        redistribute(input, out);

        // 3. Free phase, round robin from `turn` (or the thesis code's weighted draw).
        free_phase(board, input, out, self.leftovers);

        // 4. Next turn.
        out.turn = (turn + 1) % n;
    }
}

/// SPEC 3.1 step 2: the tokens spent this round go back to every agent by weight.
pub(crate) fn redistribute(input: &RoundInput, out: &mut Allocation) {
    let spent: f64 = out.spent.iter().sum();
    let total_weight: f64 = input.weights.iter().sum();
    for (b, &w) in out.budgets.iter_mut().zip(&input.weights) {
        *b += spent * w / total_weight;
    }
}

/// SPEC 3.1 step 3: what nobody bought goes round robin from `turn`, or (SPEC 7) one by one to
/// an agent drawn by weight with the input's `draws`, or stays idle.
pub(crate) fn free_phase(board: &mut Board, input: &RoundInput, out: &mut Allocation, rule: Leftovers) {
    let n = input.n;
    match rule {
        Leftovers::RoundRobin => board.free_phase(input, out, input.turn, |_| true),
        Leftovers::Idle => {}
        Leftovers::WeightedRandom => {
            let mut k = 0;
            while board.anything_wanted() && k < input.draws.len() {
                let total: f64 = (0..n).filter(|&i| board.wants(i)).map(|i| input.weights[i]).sum();
                let mut x = input.draws[k] * total;
                k += 1;
                let mut pick = usize::MAX;
                for i in (0..n).filter(|&i| board.wants(i)) {
                    pick = i;
                    if x < input.weights[i] {
                        break;
                    }
                    x -= input.weights[i];
                }
                let c = board
                    .first_pref(pick, |u| u > 0.0)
                    .expect("a wanting agent has a wanted accelerator");
                board.give(input, pick, c, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_example() -> RoundInput {
        let mut r = RoundInput::from_utilities(&[vec![0.1, 0.9, 0.1, 0.2], vec![0.5, 0.6, 0.5, 0.7]]);
        r.thresholds = vec![0.5, 0.5];
        r.budgets = vec![50.0, 50.0];
        r
    }

    #[test]
    fn spec_section_3_worked_example() {
        // Agent 0 wins the budget tie (turn 0) and buys c1; agent 1 (50 > 49) buys c3, c0, c2
        // in preference order. 4 tokens spent, 2 back to each.
        let out = crate::run(&mut Mtf::new(), &spec_example());
        assert_eq!(out.owners, vec![Some(1), Some(0), Some(1), Some(1)]);
        assert_eq!(out.spent, vec![1.0, 3.0]);
        assert_eq!(out.budgets, vec![51.0, 49.0]);
        assert_eq!(out.turn, 1);
    }

    #[test]
    fn utilities_are_shares_of_the_fastest_accelerator_the_input_names() {
        // One agent of 4 jobs on rates [2, 1]: utilities 1 and 0.5 of the row's fastest, 0.5
        // and 0.25 of a faster one (4) it knows elsewhere. Threshold 0.6: it buys c0 in the
        // first case; in the second nothing passes, and c0 comes free in the leftovers.
        let mut r = RoundInput::from_demands(&[4.0], &[vec![2.0, 1.0]]);
        r.thresholds = vec![0.6];
        r.budgets = vec![3.0];
        r.jobs.gangs = vec![1];
        let out = crate::run(&mut Mtf::new(), &r);
        assert_eq!(
            (out.owners.clone(), out.paid.clone(), out.spent.clone()),
            (vec![Some(0), None], vec![true, false], vec![1.0])
        );
        assert_eq!(out.won_utility[0], 1.0);
        r.fastest = vec![4.0];
        r.validate().unwrap();
        assert_eq!(r.start_utility(0, 1), 0.25);
        let out = crate::run(&mut Mtf::new(), &r);
        assert_eq!(
            (out.owners, out.paid, out.spent),
            (vec![Some(0), None], vec![false, false], vec![0.0])
        );
        assert_eq!(out.won_utility[0], 0.5);
        // Below a rate of the row, or beside utilities: refused, naming the field.
        r.fastest = vec![1.5];
        assert!(r.validate().unwrap_err().to_string().contains("`fastest`[0]"));
        let mut u = RoundInput::from_utilities(&[vec![0.5]]);
        u.fastest = vec![1.0];
        assert!(u.validate().unwrap_err().to_string().contains("only with demands and rates"));
    }

    #[test]
    fn budget_ties_go_to_the_first_agent_in_cyclic_order_from_turn() {
        let mut r = RoundInput::from_utilities(&[vec![0.9], vec![0.9], vec![0.9]]);
        r.thresholds = vec![0.5; 3];
        r.budgets = vec![5.0; 3];
        for turn in 0..3 {
            r.turn = turn;
            let out = crate::run(&mut Mtf::new(), &r);
            assert_eq!(out.owners, vec![Some(turn)]);
            assert_eq!(out.turn, (turn + 1) % 3);
        }
    }

    #[test]
    fn agents_below_one_token_get_only_free_leftovers() {
        let mut r = spec_example();
        r.budgets = vec![0.5, 0.99];
        let out = crate::run(&mut Mtf::new(), &r);
        assert_eq!(out.spent, vec![0.0, 0.0]);
        // Free phase from turn 0: agent 0 takes c1 (0.9), agent 1 c3 (0.7), agent 0 c0 (0.1,
        // tied with c2 and lower), agent 1 c2.
        assert_eq!(out.owners, vec![Some(0), Some(0), Some(1), Some(1)]);
        assert_eq!(out.budgets, vec![0.5, 0.99]);
    }

    #[test]
    fn weighted_leftovers_follow_the_draws() {
        // No paid phase (thresholds 1.0 unmet); weights 1 and 3: a draw below 0.25 picks agent 0.
        let mut r = RoundInput::from_utilities(&[vec![0.5, 0.4], vec![0.5, 0.4]]);
        r.thresholds = vec![1.0, 1.0];
        r.budgets = vec![5.0, 5.0];
        r.weights = vec![1.0, 3.0];
        r.draws = vec![0.2, 0.9];
        let out = crate::run(&mut Mtf::with_weighted_leftovers(), &r);
        assert_eq!(out.owners, vec![Some(0), Some(1)]);
        r.draws = vec![0.3, 0.1];
        // 0.3 * 4 = 1.2 >= 1: agent 1 takes c0; then only... both still want c1: 0.1 * 4 < 1.
        let out = crate::run(&mut Mtf::with_weighted_leftovers(), &r);
        assert_eq!(out.owners, vec![Some(1), Some(0)]);
    }

    #[test]
    fn demand_form_lowers_the_winner_remaining_demand() {
        // Agent 0 has 3 jobs, agent 1 has 20; rates 4 (slow) and 8 (fast) for both.
        // Paid phase, thresholds 0: agent 0 (tie, turn 0) takes the slow c0 (best fit for 3
        // jobs) and its demand drops to 0; agent 1 (10 > 9) buys c1, then c2.
        let mut r = RoundInput::from_demands(&[3.0, 20.0], &[vec![4.0, 8.0, 8.0], vec![4.0, 8.0, 8.0]]);
        r.thresholds = vec![0.0, 0.0];
        r.budgets = vec![10.0, 10.0];
        let out = crate::run(&mut Mtf::new(), &r);
        assert_eq!(out.owners, vec![Some(0), Some(1), Some(1)]);
        assert_eq!(out.won_utility, vec![3.0 / 8.0, 1.0, 1.0]);
    }
}

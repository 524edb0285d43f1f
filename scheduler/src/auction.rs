//! Token auctions (SPEC 8, exact): `second_price` and `first_price`. MTF's token economy with
//! the price set by sealed bids instead of one token: accelerators are sold one at a time in
//! increasing index, each to the highest effective bid, then the payments go back by weight and
//! what is unsold goes through the free phase (or stays idle).

use crate::board::Board;
use crate::input::Leftovers;
use crate::input::{Need, RoundInput};
use crate::mtf::{free_phase, redistribute};
use crate::{Allocation, Mechanism};

/// What the winner of an accelerator pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pricing {
    /// The highest competing effective bid, or the reserve if higher (or if it bid alone).
    SecondPrice,
    /// Its own effective bid.
    FirstPrice,
}

/// A sealed-bid token auction, one accelerator at a time. Holds only scratch space: budgets and
/// the turn travel in the round input and the allocation.
#[derive(Clone, Debug)]
pub struct Auction {
    pricing: Pricing,
    leftovers: Leftovers,
    board: Board,
    /// Agents tied at the highest effective bid of the current accelerator, in index order.
    tied: Vec<usize>,
    /// The round's bids, column-major (scratch).
    bids_by_column: Vec<f64>,
}

impl Auction {
    /// An auction with this pricing and free phase.
    pub fn new(pricing: Pricing, leftovers: Leftovers) -> Self {
        Self {
            pricing,
            leftovers,
            board: Board::default(),
            tied: Vec::new(),
            bids_by_column: Vec::new(),
        }
    }
}

impl Mechanism for Auction {
    fn name(&self) -> &'static str {
        match self.pricing {
            Pricing::SecondPrice => "second_price",
            Pricing::FirstPrice => "first_price",
        }
    }

    fn needs(&self) -> &'static [Need] {
        if self.leftovers == Leftovers::WeightedRandom {
            &[Need::Bids, Need::Budgets, Need::Draws]
        } else {
            &[Need::Bids, Need::Budgets]
        }
    }

    fn reset(&mut self) {}

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        let (n, m, turn) = (input.n, input.m, input.turn);
        out.reset(input);
        let board = &mut self.board;
        board.reset(input, false);
        // Bids column by column: read from a transposed copy (one blocked pass) rather than one
        // row apart per bidder, which at 4,000 x 4,000 cost a cache miss per bid.
        transpose(&input.bids, n, m, &mut self.bids_by_column);
        for c in 0..m {
            // The highest and second-highest effective bids among the bidders: agents with
            // e_i = min(bid, budget now) > 0, e_i >= reserve, and a use for c.
            let (mut best, mut second) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
            self.tied.clear();
            for i in 0..n {
                let e = self.bids_by_column[c * n + i].min(out.budgets[i]);
                if !(e > 0.0 && e >= input.reserve && board.val.u(i, c) > 0.0) {
                    continue;
                }
                if e > best {
                    second = best;
                    best = e;
                    self.tied.clear();
                    self.tied.push(i);
                } else if e == best {
                    second = best;
                    self.tied.push(i);
                } else if e > second {
                    second = e;
                }
            }
            if self.tied.is_empty() {
                continue;
            }
            let k = self.tied.len();
            let winner = match input.draws.get(c) {
                Some(&u) => self.tied[((u * k as f64) as usize).min(k - 1)],
                // The first tied agent in cyclic order from `turn`.
                None => *self.tied.iter().find(|&&i| i >= turn).unwrap_or(&self.tied[0]),
            };
            let price = match self.pricing {
                Pricing::SecondPrice => second.max(input.reserve),
                Pricing::FirstPrice => best,
            };
            out.budgets[winner] -= price;
            out.spent[winner] += price;
            out.paid[c] = true;
            out.prices[c] = price;
            board.give(input, winner, c, out);
        }
        if input.redistribute {
            redistribute(input, out);
        }
        free_phase(board, input, out, self.leftovers);
        out.turn = (turn + 1) % n;
    }
}

/// `out[c * n + i] = a[i * m + c]`, in 32 x 32 tiles so both sides stay in cache.
fn transpose(a: &[f64], n: usize, m: usize, out: &mut Vec<f64>) {
    const TILE: usize = 32;
    // Every entry is overwritten: resizing (no clear) skips zeroing 8 n m bytes per round.
    out.resize(n * m, 0.0);
    for i0 in (0..n).step_by(TILE) {
        for c0 in (0..m).step_by(TILE) {
            for i in i0..(i0 + TILE).min(n) {
                for c in c0..(c0 + TILE).min(m) {
                    out[c * n + i] = a[i * m + c];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_example() -> RoundInput {
        let mut r = RoundInput::from_utilities(&[vec![0.5, 0.5], vec![0.5, 0.5], vec![0.5, 0.5]]);
        r.budgets = vec![10.0; 3];
        r.bids = vec![5.0, 1.0, 3.0, 4.0, 2.0, 4.5];
        r
    }

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
    }

    #[test]
    fn spec_section_8_worked_example() {
        let r = spec_example();
        let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::RoundRobin), &r);
        assert_eq!(out.owners, vec![Some(0), Some(2)]);
        assert_eq!(out.spent, vec![3.0, 0.0, 4.0]);
        let back = 7.0 / 3.0;
        assert!(close(&out.budgets, &[7.0 + back, 10.0 + back, 6.0 + back]), "{:?}", out.budgets);
        assert_eq!(out.turn, 1);

        let out = crate::run(&mut Auction::new(Pricing::FirstPrice, Leftovers::RoundRobin), &r);
        assert_eq!(out.owners, vec![Some(0), Some(2)]);
        assert_eq!(out.spent, vec![5.0, 0.0, 4.5]);
        let back = 9.5 / 3.0;
        assert!(close(&out.budgets, &[5.0 + back, 10.0 + back, 5.5 + back]), "{:?}", out.budgets);
        // 8.1666.., 13.1666.., 8.6666.. as SPEC 8 prints them.
        assert!((out.budgets[0] - 8.1666666666666).abs() < 1e-9);
    }

    #[test]
    fn budgets_cap_bids_as_they_stand_and_the_reserve_sets_the_floor() {
        // Agent 0 bids 5 on both but has 6 tokens: after paying 5 for c0 (first price) its
        // effective bid on c1 is 1, below agent 1's 2.
        let mut r = RoundInput::from_utilities(&[vec![0.5, 0.5], vec![0.5, 0.5]]);
        r.budgets = vec![6.0, 10.0];
        r.bids = vec![5.0, 5.0, 0.0, 2.0];
        r.redistribute = false;
        let out = crate::run(&mut Auction::new(Pricing::FirstPrice, Leftovers::Idle), &r);
        assert_eq!(out.owners, vec![Some(0), Some(1)]);
        assert_eq!(out.budgets, vec![1.0, 8.0]);
        // Second price with reserve 3: agent 0 alone on c0 pays the reserve; agent 1's 2 on c1
        // is below the reserve, agent 0 now has 3 > 0 left and bids min(5, 3) = 3: it wins at 3.
        r.reserve = 3.0;
        let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::Idle), &r);
        assert_eq!(out.owners, vec![Some(0), Some(0)]);
        assert_eq!(out.spent, vec![6.0, 0.0]);
        // Reserve 4: agent 0 pays 4 for c0 and cannot reach the reserve for c1 (2 left), nor can
        // agent 1: c1 is unsold. It stays idle with no free phase; with the round-robin free
        // phase it goes to agent 0, first from turn 0.
        r.reserve = 4.0;
        let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::Idle), &r);
        assert_eq!(out.owners, vec![Some(0), None]);
        let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::RoundRobin), &r);
        assert_eq!(out.owners, vec![Some(0), Some(0)]);
        assert!(!out.paid[1], "a free-phase accelerator is not paid for");
    }

    #[test]
    fn ties_go_by_draw_among_the_tied_in_index_order_else_cyclically_from_turn() {
        let mut r = RoundInput::from_utilities(&[vec![0.5], vec![0.5], vec![0.5]]);
        r.budgets = vec![10.0; 3];
        r.bids = vec![2.0, 1.0, 2.0];
        for (draw, winner) in [(0.0, 0), (0.49, 0), (0.5, 2), (0.99, 2)] {
            r.draws = vec![draw];
            let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::Idle), &r);
            assert_eq!(out.owners, vec![Some(winner)], "draw {draw}");
            // A tie at the top: the second price is the tied bid.
            assert_eq!(out.spent[winner], 2.0);
        }
        r.draws.clear();
        for (turn, winner) in [(0, 0), (1, 2), (2, 2)] {
            r.turn = turn;
            let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::Idle), &r);
            assert_eq!(out.owners, vec![Some(winner)], "turn {turn}");
        }
    }

    #[test]
    fn agents_without_a_use_for_an_accelerator_do_not_bid_on_it() {
        let mut r = RoundInput::from_utilities(&[vec![0.0, 0.5], vec![0.5, 0.5]]);
        r.budgets = vec![10.0; 2];
        r.bids = vec![9.0, 1.0, 1.0, 1.0];
        let out = crate::run(&mut Auction::new(Pricing::SecondPrice, Leftovers::Idle), &r);
        // c0: agent 0 has no use for it; agent 1 alone pays the reserve 0.
        assert_eq!(out.owners, vec![Some(1), Some(0)]);
        assert_eq!(out.spent, vec![1.0, 0.0]);
    }
}

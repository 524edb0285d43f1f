//! Max-throughput (SPEC 3.2): greedy for jobs served this round, the unfair efficiency
//! reference. Accelerators fastest first; each to the agent with the largest marginal jobs
//! (`min(R_i, rate)`, or `min(q, mu)` with per-accelerator utilities), ties lower index; idle
//! when every marginal is 0.

use crate::board::Board;
use crate::input::{Need, RoundInput};
use crate::valuation::fastest_first;
use crate::{Allocation, Mechanism};

/// Greedy max-throughput.
#[derive(Clone, Debug, Default)]
pub struct MaxThroughput {
    board: Board,
    order: Vec<usize>,
    key: Vec<f64>,
}

impl Mechanism for MaxThroughput {
    fn name(&self) -> &'static str {
        "max_throughput"
    }

    fn needs(&self) -> &'static [Need] {
        &[Need::Rates]
    }

    fn reset(&mut self) {}

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        out.reset(input);
        let board = &mut self.board;
        board.reset(input, false);
        fastest_first(input, &mut self.order, &mut self.key);
        for &c in &self.order {
            if !board.anything_wanted() {
                break;
            }
            let mut best: Option<(usize, f64)> = None;
            for i in 0..input.n {
                if board.val.u(i, c) > 0.0 {
                    let gain = board.val.marginal_jobs(input, i, c);
                    if gain > 0.0 && best.is_none_or(|(_, g)| gain > g) {
                        best = Some((i, gain));
                    }
                }
            }
            if let Some((i, _)) = best {
                board.give(input, i, c, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastest_accelerator_goes_to_the_largest_backlog() {
        let r = RoundInput::from_demands(&[2.0, 9.0], &[vec![4.0, 8.0], vec![4.0, 8.0]]);
        let out = crate::run(&mut MaxThroughput::default(), &r);
        // c1 (8) first: marginals 2 vs 8 -> agent 1 (left 1); c0: 2 vs 1 -> agent 0.
        assert_eq!(out.owners, vec![Some(0), Some(1)]);
    }
}

//! Round robin (the thesis's dynamic fair partition, M0): MTF's free phase alone, every round.

use crate::board::Board;
use crate::input::RoundInput;
use crate::{Allocation, Mechanism};

/// Round robin from `turn`; ignores thresholds and budgets.
#[derive(Clone, Debug, Default)]
pub struct RoundRobin {
    board: Board,
}

impl Mechanism for RoundRobin {
    fn name(&self) -> &'static str {
        "round_robin"
    }

    fn reset(&mut self) {}

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        out.reset(input);
        self.board.reset(input, false);
        self.board.free_phase(input, out, input.turn, |_| true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deals_one_accelerator_per_visit_from_turn() {
        let mut r = RoundInput::from_utilities(&[vec![1.0, 0.5, 0.2], vec![1.0, 0.5, 0.2]]);
        r.turn = 1;
        let out = crate::run(&mut RoundRobin::default(), &r);
        assert_eq!(out.owners, vec![Some(1), Some(0), Some(1)]);
        assert_eq!(out.turn, 0);
    }
}

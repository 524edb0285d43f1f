//! Stride scheduling (Gandiva_fair's fair share; Waldspurger's stride), SPEC 3.2.
//!
//! `stride`: one pass per agent. Accelerators go out one at a time, fastest first; each to the
//! agent with the smallest pass among those that want it (ties lower index), whose pass then
//! advances by `L / w_i`. An agent that becomes active (wants something at the start of a round
//! after a round in which it wanted nothing) starts at the smallest pass among the agents that
//! stay active, so idling earns no credit. When no agent stays active, the newly active ones
//! start level, at the smallest of their passes.
//!
//! `stride_per_accelerator`: the thesis code's variant, one pass per (agent, accelerator), the
//! same rule per accelerator column. Kept only for the per-accelerator queues: when every agent
//! wants every accelerator, all columns move in lockstep and one agent takes the whole cluster.

use crate::board::Board;
use crate::input::{InputError, Need, RoundInput};
use crate::valuation::fastest_first;
use crate::{Allocation, Mechanism};
use serde::{Deserialize, Serialize};

/// The stride constant L.
pub const STRIDE_L: f64 = 1e6;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct StrideState {
    /// Pass per agent (`stride`) or per (agent, accelerator) (`stride_per_accelerator`):
    /// agent-major in the saved state, accelerator-major in memory (see `Stride::state`).
    passes: Vec<f64>,
    /// Whether each agent wanted something last round.
    active: Vec<bool>,
}

/// Stride scheduling with one pass per agent (or per agent and accelerator).
#[derive(Clone, Debug)]
pub struct Stride {
    per_accelerator: bool,
    state: StrideState,
    board: Board,
    order: Vec<usize>,
    key: Vec<f64>,
    now_active: Vec<bool>,
}

impl Stride {
    /// `stride` (one pass per agent).
    pub fn per_agent() -> Self {
        Self::new(false)
    }

    /// `stride_per_accelerator` (one pass per agent and accelerator).
    pub fn per_accelerator() -> Self {
        Self::new(true)
    }

    fn new(per_accelerator: bool) -> Self {
        Self {
            per_accelerator,
            state: StrideState::default(),
            board: Board::default(),
            order: Vec::new(),
            key: Vec::new(),
            now_active: Vec::new(),
        }
    }

    fn columns(&self, m: usize) -> usize {
        if self.per_accelerator {
            m
        } else {
            1
        }
    }
}

/// Bring newly active agents' passes up to the smallest pass among agents that stay active, per
/// pass column (`cols` columns; agent i's pass in column k is `passes[at(i, k)]`). Shared with
/// gandiva_fair's per-type passes (agent-major); stride keeps its passes column-major.
pub(crate) fn rejoin(passes: &mut [f64], cols: usize, was: &[bool], now: &[bool], at: impl Fn(usize, usize) -> usize) {
    for k in 0..cols {
        let staying = (0..now.len())
            .filter(|&i| was[i] && now[i])
            .map(|i| passes[at(i, k)])
            .reduce(f64::min);
        let floor = staying.or_else(|| {
            (0..now.len())
                .filter(|&i| !was[i] && now[i])
                .map(|i| passes[at(i, k)])
                .reduce(f64::min)
        });
        if let Some(floor) = floor {
            for i in 0..now.len() {
                if now[i] && !was[i] {
                    passes[at(i, k)] = floor;
                }
            }
        }
    }
}

/// `out[c * rows + r] = a[r * cols + c]`: between the saved state's agent-major passes and the
/// column-major ones stride walks (an accelerator's passes for every agent, contiguous).
fn transpose(a: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = vec![0.0; a.len()];
    for r in 0..rows {
        for c in 0..cols {
            out[c * rows + r] = a[r * cols + c];
        }
    }
    out
}

impl Mechanism for Stride {
    fn name(&self) -> &'static str {
        if self.per_accelerator {
            "stride_per_accelerator"
        } else {
            "stride"
        }
    }

    fn needs(&self) -> &'static [Need] {
        &[Need::Rates]
    }

    fn reset(&mut self) {
        self.state = StrideState::default();
    }

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        let (n, m) = (input.n, input.m);
        let cols = self.columns(m);
        if self.state.passes.len() != n * cols {
            self.state = StrideState {
                passes: vec![0.0; n * cols],
                active: vec![false; n],
            };
        }
        out.reset(input);
        let board = &mut self.board;
        board.reset(input, false);
        self.now_active.clear();
        self.now_active.extend((0..n).map(|i| board.wants(i)));
        rejoin(&mut self.state.passes, cols, &self.state.active, &self.now_active, |i, k| k * n + i);
        self.state.active.copy_from_slice(&self.now_active);

        fastest_first(input, &mut self.order, &mut self.key);
        for &c in &self.order {
            if !board.anything_wanted() {
                break;
            }
            let col = if self.per_accelerator { c } else { 0 };
            let mut best: Option<(usize, f64)> = None;
            for i in 0..n {
                if board.val.u(i, c) > 0.0 {
                    let p = self.state.passes[col * n + i];
                    if best.is_none_or(|(_, bp)| p < bp) {
                        best = Some((i, p));
                    }
                }
            }
            if let Some((i, _)) = best {
                self.state.passes[col * n + i] += STRIDE_L / input.weights[i];
                board.give(input, i, c, out);
            }
        }
    }

    fn state(&self) -> Option<serde_json::Value> {
        let n = self.state.active.len();
        let cols = if n == 0 { 0 } else { self.state.passes.len() / n };
        let saved = StrideState {
            passes: transpose(&self.state.passes, cols, n),
            active: self.state.active.clone(),
        };
        Some(serde_json::to_value(&saved).expect("serialisable"))
    }

    fn set_state(&mut self, state: &serde_json::Value, input: &RoundInput) -> Result<(), InputError> {
        let s: StrideState = crate::parse_state(self.name(), state)?;
        crate::check_state_len(self.name(), "passes", s.passes.len(), input.n * self.columns(input.m))?;
        crate::check_state_len(self.name(), "active", s.active.len(), input.n)?;
        if s.passes.iter().any(|p| !p.is_finite()) {
            return Err(InputError::Other("field `state.passes` has a value that is not finite".into()));
        }
        let cols = self.columns(input.m);
        self.state = StrideState {
            passes: transpose(&s.passes, input.n, cols),
            active: s.active,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everyone_wants_everything(weights: &[f64], m: usize) -> RoundInput {
        let mut r = RoundInput::from_utilities(&vec![vec![1.0; m]; weights.len()]);
        r.rates = vec![1.0; weights.len() * m];
        r.weights = weights.to_vec();
        r
    }

    #[test]
    fn long_run_shares_converge_to_the_weights() {
        let weights = [1.0, 2.0, 4.0, 1.0];
        let r = everyone_wants_everything(&weights, 3);
        let mut s = Stride::per_agent();
        let mut got = [0usize; 4];
        let rounds = 2000;
        for _ in 0..rounds {
            for (k, c) in crate::run(&mut s, &r).counts(4).into_iter().zip(got.iter_mut()) {
                *c += k;
            }
        }
        let total: f64 = weights.iter().sum();
        for i in 0..4 {
            let share = got[i] as f64 / (3 * rounds) as f64;
            assert!((share - weights[i] / total).abs() < 1e-3, "agent {i}: share {share}");
        }
    }

    #[test]
    fn per_accelerator_passes_move_in_lockstep() {
        // The flaw SPEC 3.2 describes: with every agent wanting every accelerator, each round
        // one agent takes all of them.
        let r = everyone_wants_everything(&[1.0, 1.0], 4);
        let mut s = Stride::per_accelerator();
        assert_eq!(crate::run(&mut s, &r).counts(2), vec![4, 0]);
        assert_eq!(crate::run(&mut s, &r).counts(2), vec![0, 4]);
    }

    #[test]
    fn saved_passes_are_agent_major_whatever_the_layout_in_memory() {
        // Agent 1 alone wants accelerator 2 of 3: its pass there is L, every other pass 0, and
        // the saved state lists agent 0's three passes, then agent 1's.
        let mut r = everyone_wants_everything(&[1.0, 1.0], 3);
        r.utilities = vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
        let mut s = Stride::per_accelerator();
        crate::run(&mut s, &r);
        let state = s.state().unwrap();
        assert_eq!(state["passes"], serde_json::json!([0.0, 0.0, 0.0, 0.0, 0.0, STRIDE_L]));
        let mut back = Stride::per_accelerator();
        back.set_state(&state, &r).unwrap();
        assert_eq!(back.state().unwrap(), state);
        assert_eq!(crate::run(&mut back, &r), crate::run(&mut s, &r));
    }

    #[test]
    fn an_idle_agent_earns_no_credit() {
        let mut s = Stride::per_agent();
        let busy = everyone_wants_everything(&[1.0, 1.0], 1);
        let mut alone = busy.clone();
        alone.utilities = vec![1.0, 0.0];
        for _ in 0..10 {
            assert_eq!(crate::run(&mut s, &alone).owners, vec![Some(0)]);
        }
        // Agent 1 returns at agent 0's pass, not 10 allocations behind: they alternate.
        let a = crate::run(&mut s, &busy).owners[0];
        let b = crate::run(&mut s, &busy).owners[0];
        assert_ne!(a, b);
    }
}

//! Static partition (the thesis's M1): accelerators dealt to agents once, in proportion to
//! weight, fixed for the episode.
//!
//! Quotas: largest remainder (Hamilton) on `m * w_i / sum w`, remainder ties to the lower index.
//! Dealing: accelerators in index order, each to the agent with the smallest
//! `(dealt_i + 0.5) / quota_i` among those under quota (ties lower index), so every agent gets a
//! mix of the cluster's types rather than a contiguous block of one type. Each round an agent
//! uses only its own accelerators, most preferred first, while it still wants one (demand form:
//! until its remaining demand is covered); the rest of its share stays idle.

use crate::board::Board;
use crate::input::{InputError, RoundInput};
use crate::{Allocation, Mechanism};
use serde::{Deserialize, Serialize};

/// The partition, computed on the first round of an episode.
#[derive(Clone, Debug, Default)]
pub struct StaticPartition {
    state: PartitionState,
    board: Board,
    mine: Vec<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct PartitionState {
    /// Owner of each accelerator; empty until the first round.
    partition: Vec<usize>,
}

/// Largest-remainder quotas of `m` seats for `weights` (ties to the lower index).
pub fn quotas(weights: &[f64], m: usize) -> Vec<usize> {
    let total: f64 = weights.iter().sum();
    let exact: Vec<f64> = weights.iter().map(|w| m as f64 * w / total).collect();
    let mut q: Vec<usize> = exact.iter().map(|e| e.floor() as usize).collect();
    let mut left = m.saturating_sub(q.iter().sum());
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        (exact[b] - exact[b].floor())
            .total_cmp(&(exact[a] - exact[a].floor()))
            .then(a.cmp(&b))
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        q[i] += 1;
        left -= 1;
    }
    q
}

/// Deal `m` accelerators to agents per [`quotas`], interleaved.
pub fn deal(weights: &[f64], m: usize) -> Vec<usize> {
    let q = quotas(weights, m);
    let mut dealt = vec![0usize; weights.len()];
    (0..m)
        .map(|_| {
            let i = (0..weights.len())
                .filter(|&i| dealt[i] < q[i])
                .min_by(|&a, &b| {
                    ((dealt[a] as f64 + 0.5) / q[a] as f64)
                        .total_cmp(&((dealt[b] as f64 + 0.5) / q[b] as f64))
                        .then(a.cmp(&b))
                })
                .expect("quotas sum to m");
            dealt[i] += 1;
            i
        })
        .collect()
}

impl Mechanism for StaticPartition {
    fn name(&self) -> &'static str {
        "static_partition"
    }

    fn reset(&mut self) {
        self.state.partition.clear();
    }

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        if self.state.partition.len() != input.m || self.state.partition.iter().any(|&i| i >= input.n) {
            self.state.partition = deal(&input.weights, input.m);
        }
        out.reset(input);
        self.board.reset(input, false);
        for i in 0..input.n {
            // Agent i's share, as an availability mask that only loses entries while i picks:
            // the valuation's cursors then never rescan (O(m) per agent, not per pick).
            self.mine.clear();
            self.mine.extend(self.state.partition.iter().map(|&o| o == i));
            while let Some(c) = self.board.val.first_pref(i, &self.mine, |u| u > 0.0) {
                self.mine[c] = false;
                self.board.give(input, i, c, out);
            }
        }
    }

    fn state(&self) -> Option<serde_json::Value> {
        Some(serde_json::to_value(&self.state).expect("serialisable"))
    }

    fn set_state(&mut self, state: &serde_json::Value, input: &RoundInput) -> Result<(), InputError> {
        let s: PartitionState = crate::parse_state(self.name(), state)?;
        crate::check_state_len(self.name(), "partition", s.partition.len(), input.m)?;
        if let Some(&bad) = s.partition.iter().find(|&&i| i >= input.n) {
            return Err(InputError::Other(format!(
                "field `state.partition` names agent {bad}, but there are {} agents",
                input.n
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
    fn quotas_follow_weights_by_largest_remainder() {
        assert_eq!(quotas(&[1.0, 1.0, 1.0], 4), vec![2, 1, 1]);
        assert_eq!(quotas(&[1.0, 2.0, 4.0], 40), vec![6, 11, 23]);
        assert_eq!(quotas(&[1.0], 7), vec![7]);
        assert_eq!(quotas(&[1.0, 1.0, 1.0, 1.0], 2), vec![1, 1, 0, 0]);
    }

    #[test]
    fn dealing_interleaves_agents_over_the_cluster() {
        assert_eq!(deal(&[1.0, 1.0], 4), vec![0, 1, 0, 1]);
        assert_eq!(deal(&[1.0, 3.0], 4), vec![1, 0, 1, 1]);
    }

    #[test]
    fn an_agent_uses_only_its_share_and_idles_the_rest() {
        // Agent 0 wants nothing; its half of the cluster idles even though agent 1 wants it all.
        let r = RoundInput::from_utilities(&[vec![0.0; 4], vec![1.0; 4]]);
        let mut sp = StaticPartition::default();
        let out = crate::run(&mut sp, &r);
        assert_eq!(out.owners, vec![None, Some(1), None, Some(1)]);
        let state = sp.state().unwrap();
        let mut again = StaticPartition::default();
        again.set_state(&state, &r).unwrap();
        assert_eq!(crate::run(&mut again, &r), out);
    }
}

//! One round of a mechanism, JSON in and out: what `mtf schedule` prints and
//! `mtf_env.schedule` returns, in one place so the two cannot drift apart.

use crate::{registry, Allocation, RoundInput};
use serde::Serialize;

#[derive(Serialize)]
struct Output<'a> {
    owners: &'a [Option<usize>],
    #[serde(skip_serializing_if = "<[f64]>::is_empty")]
    budgets: &'a [f64],
    turn: usize,
    spent: &'a [f64],
    paid: &'a [bool],
    /// The auctions' price per accelerator.
    #[serde(skip_serializing_if = "Option::is_none")]
    prices: Option<&'a [f64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<serde_json::Value>,
}

/// Run one round of `mechanism` on the SPEC 3 JSON `text` (`fairness` overrides the input's
/// Themis knob); returns the output JSON, or one line naming what is wrong with the input.
pub fn schedule_json(mechanism: &str, text: &str, fairness: Option<f64>) -> Result<String, String> {
    let (input, extras) = RoundInput::from_json(text).map_err(|e| format!("input: {e}"))?;
    let fairness = fairness.or(extras.fairness).unwrap_or(registry::Params::default().fairness);
    if !(0.0..=1.0).contains(&fairness) {
        return Err(format!("fairness is {fairness}, expected a number in [0, 1]"));
    }
    let mut mech = registry::build(
        mechanism,
        &registry::Params {
            fairness,
            leftovers: extras.leftovers,
            ..registry::Params::default()
        },
    )
    .map_err(|e| e.to_string())?;
    input.check_needs(mechanism, mech.needs()).map_err(|e| format!("input: {e}"))?;
    if let Some(state) = &extras.state {
        mech.set_state(state, &input).map_err(|e| format!("input: {e}"))?;
    }
    let mut out = Allocation::default();
    mech.allocate(&input, &mut out);
    let json = Output {
        owners: &out.owners,
        budgets: &out.budgets,
        turn: out.turn,
        spent: &out.spent,
        paid: &out.paid,
        prices: mech.needs().contains(&crate::Need::Bids).then_some(&out.prices[..]),
        state: mech.state(),
    };
    serde_json::to_string(&json).map_err(|e| format!("output: {e}"))
}

//! `mtf schedule`: one round of a mechanism, JSON in and out.

use crate::error::user;
use scheduler::{registry, Allocation, RoundInput};
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

/// Run one round of `mechanism` on the JSON `text`; returns the output JSON. Errors are user
/// errors (exit status 2) naming the problem.
pub fn schedule_json(mechanism: &str, text: &str, fairness: Option<f64>) -> crate::Result<String> {
    let (input, extras) = RoundInput::from_json(text).map_err(|e| user(format!("input: {e}")))?;
    let fairness = fairness.or(extras.fairness).unwrap_or(registry::Params::default().fairness);
    if !(0.0..=1.0).contains(&fairness) {
        return Err(user(format!("--fairness is {fairness}, expected a number in [0, 1]")));
    }
    let mut mech = registry::build(
        mechanism,
        &registry::Params {
            fairness,
            leftovers: extras.leftovers,
        },
    )
    .map_err(|e| user(e.to_string()))?;
    input
        .check_needs(mechanism, mech.needs())
        .map_err(|e| user(format!("input: {e}")))?;
    if let Some(state) = &extras.state {
        mech.set_state(state, &input).map_err(|e| user(format!("input: {e}")))?;
    }
    let mut out = Allocation::default();
    mech.allocate(&input, &mut out);
    let json = Output {
        owners: &out.owners,
        budgets: &out.budgets,
        turn: out.turn,
        spent: &out.spent,
        paid: &out.paid,
        prices: mech.needs().contains(&scheduler::Need::Bids).then_some(&out.prices[..]),
        state: mech.state(),
    };
    Ok(serde_json::to_string(&json)?)
}

//! `mtf schedule`: one round of a mechanism, JSON in and out.

use crate::error::user;
use scheduler::{registry, Allocation, RoundInput};
use serde::Serialize;
use std::io::{Read, Write};
use std::path::Path;
use std::process::ExitCode;

#[derive(Serialize)]
struct Output<'a> {
    owners: &'a [Option<usize>],
    #[serde(skip_serializing_if = "<[f64]>::is_empty")]
    budgets: &'a [f64],
    turn: usize,
    spent: &'a [f64],
    paid: &'a [bool],
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<serde_json::Value>,
}

/// Run one round of `mechanism` on the JSON `text`; returns the output JSON. Errors are user
/// errors (exit status 2) naming the problem.
pub fn schedule_json(mechanism: &str, text: &str, fairness: Option<f64>) -> anyhow::Result<String> {
    let (input, extras) = RoundInput::from_json(text).map_err(|e| user(format!("input: {e}")))?;
    let fairness = fairness.or(extras.fairness).unwrap_or(registry::Params::default().fairness);
    if !(0.0..=1.0).contains(&fairness) {
        return Err(user(format!("--fairness is {fairness}, expected a number in [0, 1]")));
    }
    let mut mech = registry::build(
        mechanism,
        &registry::Params {
            fairness,
            weighted_leftovers: extras.weighted_leftovers,
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
        state: mech.state(),
    };
    Ok(serde_json::to_string(&json)?)
}

/// The `schedule` command.
pub fn run(mechanism: &str, input: Option<&Path>, fairness: Option<f64>) -> anyhow::Result<ExitCode> {
    let text = match input {
        Some(path) => std::fs::read_to_string(path).map_err(|e| user(format!("{}: {e}", path.display())))?,
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| user(format!("stdin: {e}")))?;
            s
        }
    };
    let out = schedule_json(mechanism, &text, fairness).map_err(|e| match input {
        Some(path) if crate::error::exit_code(&e) == 2 => user(format!("{}: {e}", path.display())),
        _ => e,
    })?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{out}")?;
    Ok(ExitCode::SUCCESS)
}

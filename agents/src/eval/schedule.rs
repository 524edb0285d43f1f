//! `mtf schedule`: one round of a mechanism, JSON in and out ([`scheduler::json`] does the
//! work, shared with the Python bindings).

use crate::error::user;

/// Run one round of `mechanism` on the JSON `text`; returns the output JSON. Errors are user
/// errors (exit status 2) naming the problem.
pub fn schedule_json(mechanism: &str, text: &str, fairness: Option<f64>) -> crate::error::Result<String> {
    scheduler::json::schedule_json(mechanism, text, fairness).map_err(user)
}

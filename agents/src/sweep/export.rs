//! `mtf sweep export`: a study as an Optuna JournalStorage file, so `optuna.load_study` and
//! optuna-dashboard read mtf studies.
//!
//! The journal is JSON lines of operations; Optuna replays them. One `CREATE_STUDY`, then one
//! `CREATE_TRIAL` per trial carrying everything at once (state, parameters in Optuna's internal
//! representation with their distributions, value, intermediate values, times), in trial-number
//! order, so Optuna numbers the trials as mtf did. States map as Optuna's own storages would
//! record them: complete, pruned, failed as themselves, running as running, interrupted as
//! failed (Optuna's fail-stale-trials). mtf's own state, run directory, error and retry link
//! are user attributes.

use super::file::{Direction, Objective};
use super::space::{Dist, Value};
use super::storage::db::Location;
use super::storage::{Storage, Trial, TrialState};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Optuna's `TrialState` numbers.
fn optuna_state(s: TrialState) -> u8 {
    match s {
        TrialState::Running => 0,
        TrialState::Complete => 1,
        TrialState::Pruned => 2,
        TrialState::Failed | TrialState::Interrupted => 3,
    }
}

/// An ISO 8601 time with its offset, as Optuna's journal writes it.
fn iso(epoch: f64) -> String {
    let ts = jiff::Timestamp::from_microsecond((epoch * 1e6).round() as i64).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    ts.strftime("%Y-%m-%dT%H:%M:%S%.6f+00:00").to_string()
}

/// A choice as Optuna stores categorical choices (None, bool, int, float, str).
fn choice_json(v: &Value) -> Json {
    match v {
        Value::Boolean(b) => json!(b),
        Value::Integer(i) => json!(i),
        Value::Float(x) => json!(x),
        Value::String(s) => json!(s),
        other => json!(other.to_string()),
    }
}

/// Optuna's JSON of a distribution (`distribution_to_json`) and a value's internal
/// representation in it.
fn distribution(d: &Dist) -> Json {
    match d {
        Dist::Float { low, high, log } => {
            json!({"name": "FloatDistribution", "attributes": {"low": low, "high": high, "log": log, "step": null}})
        }
        Dist::Int { low, high, step } => {
            json!({"name": "IntDistribution", "attributes": {"low": low, "high": high, "log": false, "step": step}})
        }
        Dist::Categorical { choices } => json!({"name": "CategoricalDistribution", "attributes": {
            "choices": choices.iter().map(choice_json).collect::<Vec<_>>()}}),
    }
}

fn internal(d: &Dist, v: &Value) -> Option<f64> {
    match d {
        Dist::Categorical { choices } => choices.iter().position(|c| c == v).map(|k| k as f64),
        _ => v.as_float().or_else(|| v.as_integer().map(|i| i as f64)),
    }
}

fn trial_line(t: &Trial, space: &BTreeMap<String, Dist>, steps: &[(u64, u64, f64)]) -> Json {
    let mut params = serde_json::Map::new();
    let mut dists = serde_json::Map::new();
    for (name, v) in &t.params {
        if let Some((d, x)) = space.get(name).and_then(|d| Some((d, internal(d, v)?))) {
            params.insert(name.clone(), json!(x));
            dists.insert(name.clone(), json!(distribution(d).to_string()));
        }
    }
    let intermediate: serde_json::Map<String, Json> = steps
        .iter()
        .filter(|s| s.0 == t.number)
        .map(|s| (s.1.to_string(), json!(s.2)))
        .collect();
    let mut line = json!({
        "op_code": 4,
        "worker_id": "mtf-export",
        "study_id": 0,
        "datetime_start": iso(t.started),
        "state": optuna_state(t.state),
        "params": params,
        "distributions": dists,
        "intermediate_values": intermediate,
        "user_attrs": {
            "mtf_state": t.state.as_str(),
            "mtf_number": t.number,
            "run_dir": t.run_dir,
            "error": t.error,
            "retry_of": t.retry_of,
        },
    });
    if let Some(f) = t.finished.filter(|_| t.state != TrialState::Running) {
        line["datetime_complete"] = json!(iso(f));
    }
    if let (TrialState::Complete, Some(v)) = (t.state, t.value) {
        line["values"] = json!([v]);
    }
    line
}

/// Write study `study` at `storage` to `out` as an Optuna journal; returns the trial count.
pub fn export_optuna(storage: &str, study: &str, out: &Path) -> crate::error::Result<usize> {
    let loc = Location::parse(storage)?;
    // --force replaced the study's own database with its journal (the study was gone).
    if let Location::Sqlite(db) = &loc {
        let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y);
        let sidecars = ["", "-wal", "-shm", "-journal"].map(|s| PathBuf::from(format!("{}{s}", db.display())));
        if sidecars.iter().any(|d| same(d, out)) {
            return Err(crate::error::user(format!(
                "--out {}: is the study's own database ({}); write the journal elsewhere",
                out.display(),
                loc.name()
            )));
        }
    }
    let (mut st, fingerprint) = Storage::open_existing(&loc, study)?;
    #[derive(serde::Deserialize)]
    struct Fingerprint {
        params: BTreeMap<String, Dist>,
        objective: Objective,
    }
    let fp: Fingerprint = serde_json::from_str(&fingerprint)
        .map_err(|e| crate::error::user(format!("{}: study `{study}` has an unreadable search space ({e})", loc.name())))?;
    let trials = st.trials()?;
    let steps = st.steps()?;
    let direction = match fp.objective.direction {
        Direction::Minimize => 1,
        Direction::Maximize => 2,
    };
    let mut text = json!({"op_code": 0, "worker_id": "mtf-export", "study_name": study, "directions": [direction]}).to_string();
    text.push('\n');
    let attr = json!({"op_code": 2, "worker_id": "mtf-export", "study_id": 0,
        "user_attr": {"mtf_objective": fp.objective.metric}});
    text.push_str(&attr.to_string());
    text.push('\n');
    for t in &trials {
        text.push_str(&trial_line(t, &fp.params, &steps).to_string());
        text.push('\n');
    }
    crate::run::write_atomic(out, text.as_bytes())?;
    Ok(trials.len())
}

/// `mtf sweep status`: study `study`'s trials, one line each (number, state, value, what it
/// re-runs), running trials silent for more than `grace` seconds marked stale (the next claim
/// re-queues them), then the count per state.
pub fn status(storage: &str, study: &str, grace: f64) -> crate::error::Result<String> {
    let loc = Location::parse(storage)?;
    let (mut st, _) = Storage::open_existing(&loc, study)?;
    let trials = st.trials()?;
    let silent: BTreeMap<u64, f64> = st.running()?.into_iter().collect();
    let mut out = format!("study `{study}` in {}: {} trials\n", loc.name(), trials.len());
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut stale = 0;
    for t in &trials {
        *counts.entry(t.state.as_str()).or_default() += 1;
        let mut line = format!("  {:>5}  {:<11}", t.number, t.state.as_str());
        if let Some(v) = t.value {
            line += &format!("  {v:.4}");
        }
        if let Some(r) = t.retry_of {
            line += &format!("  (re-runs {r})");
        }
        if let Some(&age) = silent.get(&t.number) {
            if age > grace {
                stale += 1;
                line += &format!("  STALE: no heartbeat for {age:.0} s (its worker is gone; the next claim re-queues it)");
            } else {
                line += &format!("  heartbeat {age:.0} s ago");
            }
        }
        if let Some(e) = &t.error {
            line += &format!("  {}", e.lines().next().unwrap_or(""));
        }
        out += &line;
        out.push('\n');
    }
    let summary: Vec<String> = counts.iter().map(|(s, n)| format!("{s} {n}")).collect();
    out += &format!(
        "{}{}\n",
        summary.join(", "),
        if stale > 0 { format!(" ({stale} stale)") } else { String::new() }
    );
    Ok(out)
}

//! The data-driven suite: every case in `testdata/*.toml` runs against every mechanism for the
//! invariants, and against MTF for its exact answer.

use scheduler::registry::{self, Params, NAMES};
use scheduler::RoundInput;
use serde::Deserialize;

#[derive(Deserialize)]
struct File {
    case: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    input: toml::Value,
    mtf: Option<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    /// Owner per accelerator, -1 for idle.
    owners: Vec<i64>,
    budgets: Vec<f64>,
    spent: Vec<f64>,
    turn: usize,
}

fn cases() -> Vec<Case> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/testdata");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        let file: File = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.extend(file.case);
    }
    assert!(out.len() >= 6, "the suite lost its cases");
    out
}

fn input(case: &Case) -> RoundInput {
    let json = serde_json::to_string(&case.input).unwrap();
    RoundInput::from_json(&json).unwrap_or_else(|e| panic!("{}: {e}", case.name)).0
}

#[test]
fn mtf_gives_the_worked_answers() {
    for case in cases() {
        let Some(want) = &case.mtf else { continue };
        let r = input(&case);
        let out = scheduler::run(registry::build("mtf", &Params::default()).unwrap().as_mut(), &r);
        let owners: Vec<i64> = out.owners.iter().map(|o| o.map_or(-1, |i| i as i64)).collect();
        assert_eq!(owners, want.owners, "{}: owners", case.name);
        assert_eq!(out.spent, want.spent, "{}: spent", case.name);
        assert_eq!(out.turn, want.turn, "{}: turn", case.name);
        for (got, want) in out.budgets.iter().zip(&want.budgets) {
            assert!((got - want).abs() < 1e-12, "{}: budgets {:?} vs {:?}", case.name, out.budgets, want);
        }
    }
}

#[test]
fn every_mechanism_keeps_the_invariants_on_every_case() {
    for case in cases() {
        let mut r = input(&case);
        if r.rates.is_empty() {
            // Give rate-aware mechanisms a cluster of two types.
            r.rates = (0..r.n * r.m).map(|k| if k % r.m < r.m / 2 { 4.0 } else { 6.0 }).collect();
        }
        if r.budgets.is_empty() {
            r.budgets = vec![10.0; r.n];
        }
        if r.bids.is_empty() {
            // Give the auctions bids: agent i bids i + 1 tokens on everything.
            r.bids = (0..r.n * r.m).map(|k| (k / r.m + 1) as f64).collect();
        }
        for &name in NAMES {
            let mut mech = registry::build(name, &Params::default()).unwrap();
            let out = scheduler::run(mech.as_mut(), &r);
            for (c, o) in out.owners.iter().enumerate() {
                if let Some(i) = *o {
                    assert!(i < r.n, "{} / {name}: owner {i}", case.name);
                    assert!(out.won_utility[c] > 0.0, "{} / {name}: c{c} given without utility", case.name);
                }
            }
        }
    }
}

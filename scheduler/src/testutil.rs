//! Shared test helpers: random round strategies and a literal reference MTF.

use crate::input::{Form, RoundInput};
use proptest::prelude::*;

/// A value from a small set (to force ties) or anywhere in `lo..hi`.
fn tie_prone(set: &'static [f64], lo: f64, hi: f64) -> impl Strategy<Value = f64> {
    prop_oneof![3 => proptest::sample::select(set), 1 => lo..hi]
}

/// A random valid round, either form, with ties, fractional budgets, optional rates.
pub fn round(max_n: usize, max_m: usize) -> impl Strategy<Value = RoundInput> {
    (1..=max_n, 1..=max_m, any::<bool>(), any::<bool>()).prop_flat_map(|(n, m, demand, with_rates)| {
        let utilities = prop::collection::vec(tie_prone(&[0.0, 0.0, 0.1, 0.25, 0.5, 0.7, 1.0], 0.0, 1.0), n * m);
        let demands = prop::collection::vec(tie_prone(&[0.0, 1.5, 3.0, 4.0, 8.0, 20.0], 0.0, 30.0), n);
        let rates = prop::collection::vec(tie_prone(&[4.0, 6.0, 8.0], 0.5, 10.0), n * m);
        let thresholds = prop::collection::vec(tie_prone(&[0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0], 0.0, 1.0), n);
        let budgets = prop::collection::vec(tie_prone(&[0.0, 0.5, 1.0, 2.0, 2.5, 5.0, 50.0], 0.0, 10.0), n);
        let weights = prop::collection::vec(tie_prone(&[1.0, 2.0, 4.0], 0.1, 5.0), n);
        let bids = prop::collection::vec(tie_prone(&[0.0, 0.5, 1.0, 2.0, 5.0], 0.0, 8.0), n * m);
        let draws = prop::option::of(prop::collection::vec(0.0..1.0f64, m));
        let reserve = tie_prone(&[0.0, 0.0, 0.5, 1.0], 0.0, 3.0);
        let auction = (bids, draws, reserve, any::<bool>());
        (utilities, demands, rates, thresholds, budgets, weights, 0..n, auction).prop_map(
            move |(u, d, r, t, b, w, turn, (bids, draws, reserve, redistribute))| RoundInput {
                n,
                m,
                form: if demand { Form::Demand } else { Form::Utilities },
                utilities: if demand { Vec::new() } else { u },
                demands: if demand { d } else { Vec::new() },
                rates: if demand || with_rates { r } else { Vec::new() },
                thresholds: t,
                budgets: b,
                weights: w,
                turn,
                types: Vec::new(),
                draws: draws.unwrap_or_default(),
                bids,
                reserve,
                redistribute,
                fastest: Vec::new(),
                rates_stamp: Default::default(),
                jobs: Default::default(),
            },
        )
    })
}

/// Output of the reference MTF, as it should be.
#[derive(Debug)]
pub struct RefOut {
    pub owners: Vec<Option<usize>>,
    pub budgets: Vec<f64>,
    pub spent: Vec<f64>,
    pub turn: usize,
}

/// SPEC 3.1 / 3.3 transcribed as literally as possible: full sorted preference lists,
/// recomputed after every win, and a full rescan of all agents per pick. Slow on purpose.
pub fn reference_mtf(r: &RoundInput) -> RefOut {
    let (n, m) = (r.n, r.m);
    let demand = r.form == Form::Demand;
    let mut remaining: Vec<f64> = if demand { r.demands.clone() } else { vec![0.0; n] };
    let util = |i: usize, c: usize, remaining: &[f64]| -> f64 {
        if demand {
            let max = (0..m).map(|k| r.rates[i * m + k]).fold(f64::NEG_INFINITY, f64::max);
            remaining[i].min(r.rates[i * m + c]) / max
        } else {
            r.utilities[i * m + c]
        }
    };
    let prefs = |i: usize, remaining: &[f64]| -> Vec<usize> {
        let mut p: Vec<usize> = (0..m).collect();
        p.sort_by(|&a, &b| {
            let (ua, ub) = (util(i, a, remaining), util(i, b, remaining));
            ub.partial_cmp(&ua)
                .unwrap()
                .then_with(|| {
                    if demand {
                        r.rates[i * m + a].partial_cmp(&r.rates[i * m + b]).unwrap()
                    } else {
                        std::cmp::Ordering::Equal
                    }
                })
                .then(a.cmp(&b))
        });
        p
    };
    let mut owners: Vec<Option<usize>> = vec![None; m];
    let mut budgets = r.budgets.clone();
    let mut spent = vec![0.0; n];
    let give = |i: usize, c: usize, owners: &mut Vec<Option<usize>>, remaining: &mut Vec<f64>| {
        owners[c] = Some(i);
        if demand {
            remaining[i] = (remaining[i] - r.rates[i * m + c]).max(0.0);
        }
    };
    // 1. Paid phase.
    loop {
        let mut cands = Vec::new();
        for i in 0..n {
            let wants = (0..m).any(|c| owners[c].is_none() && util(i, c, &remaining) >= r.thresholds[i] && util(i, c, &remaining) > 0.0);
            if budgets[i] >= 1.0 && wants {
                cands.push(i);
            }
        }
        if cands.is_empty() {
            break;
        }
        let max = cands.iter().map(|&i| budgets[i]).fold(f64::NEG_INFINITY, f64::max);
        let pick = (0..n)
            .map(|k| (r.turn + k) % n)
            .find(|i| cands.contains(i) && budgets[*i] == max)
            .unwrap();
        let c = prefs(pick, &remaining)
            .into_iter()
            .find(|&c| owners[c].is_none() && util(pick, c, &remaining) >= r.thresholds[pick] && util(pick, c, &remaining) > 0.0)
            .unwrap();
        give(pick, c, &mut owners, &mut remaining);
        budgets[pick] -= 1.0;
        spent[pick] += 1.0;
    }
    // 2. Redistribution.
    let s: f64 = spent.iter().sum();
    let w: f64 = r.weights.iter().sum();
    for j in 0..n {
        budgets[j] += s * r.weights[j] / w;
    }
    // 3. Free phase.
    let mut i = r.turn;
    while (0..m).any(|c| owners[c].is_none() && (0..n).any(|j| util(j, c, &remaining) > 0.0)) {
        if let Some(c) = prefs(i, &remaining)
            .into_iter()
            .find(|&c| owners[c].is_none() && util(i, c, &remaining) > 0.0)
        {
            give(i, c, &mut owners, &mut remaining);
        }
        i = (i + 1) % n;
    }
    RefOut {
        owners,
        budgets,
        spent,
        turn: (r.turn + 1) % n,
    }
}

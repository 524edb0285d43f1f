//! Property tests: invariants of every mechanism, and MTF against a literal reference.

use crate::input::{Form, RoundInput};
use crate::registry::{self, Params, NAMES};
use crate::testutil::{reference_mtf, round};
use crate::{run, Mechanism};
use proptest::prelude::*;

fn build(name: &str) -> Box<dyn Mechanism> {
    registry::build(name, &Params::default()).unwrap()
}

/// Whether agent i still wants accelerator c under remaining demand `rem` (demand form) or at
/// all (utilities form).
fn still_wants(r: &RoundInput, i: usize, c: usize, rem: f64) -> bool {
    match r.form {
        Form::Utilities => r.utilities[i * r.m + c] > 0.0,
        Form::Demand => rem > 0.0,
    }
}

/// Remaining demand of each agent after its allocation, in the order MTF's board applies it
/// (only used for the work-conservation check, where the order cannot matter for "> 0").
fn remaining_after(r: &RoundInput, owners: &[Option<usize>]) -> Vec<f64> {
    let mut rem = if r.form == Form::Demand {
        r.demands.clone()
    } else {
        vec![0.0; r.n]
    };
    for (c, o) in owners.iter().enumerate() {
        if let (Some(i), Form::Demand) = (*o, r.form) {
            rem[i] = (rem[i] - r.rate(i, c)).max(0.0);
        }
    }
    rem
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn mtf_matches_the_literal_reference_bit_for_bit(r in round(7, 9)) {
        let out = run(&mut crate::mtf::Mtf::new(), &r);
        let want = reference_mtf(&r);
        prop_assert_eq!(&out.owners, &want.owners);
        prop_assert_eq!(out.turn, want.turn);
        prop_assert_eq!(&out.spent, &want.spent);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&out.budgets), bits(&want.budgets));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn mtf_invariants(r in round(8, 10)) {
        let out = run(&mut crate::mtf::Mtf::new(), &r);
        // Token total conserved.
        let before: f64 = r.budgets.iter().sum();
        let after: f64 = out.budgets.iter().sum();
        prop_assert!((after - before).abs() <= 1e-9 * before.max(1.0), "{} -> {}", before, after);
        // Budgets never below zero.
        prop_assert!(out.budgets.iter().all(|&b| b >= 0.0));
        // Nobody pays for an accelerator below its threshold or with zero utility, and each
        // token spent is one paid accelerator.
        for c in 0..r.m {
            if out.paid[c] {
                let i = out.owners[c].unwrap();
                prop_assert!(out.won_utility[c] >= r.thresholds[i] && out.won_utility[c] > 0.0);
            }
        }
        for i in 0..r.n {
            let paid = (0..r.m).filter(|&c| out.paid[c] && out.owners[c] == Some(i)).count();
            prop_assert_eq!(paid as f64, out.spent[i]);
        }
        // Same input, same output, with a fresh or a reused mechanism.
        let mut reused = crate::mtf::Mtf::new();
        let _ = run(&mut reused, &r);
        prop_assert_eq!(run(&mut reused, &r), out);
    }

    #[test]
    fn every_mechanism_invariants(r in round(8, 10)) {
        for &name in NAMES {
            let mut mech = build(name);
            if r.check_needs(name, mech.needs()).is_err() {
                continue;
            }
            let out = run(mech.as_mut(), &r);
            prop_assert_eq!(out.owners.len(), r.m);
            prop_assert_eq!(out.turn, (r.turn + 1) % r.n);
            for (c, o) in out.owners.iter().enumerate() {
                if let Some(i) = *o {
                    // A valid owner that wanted what it got.
                    prop_assert!(i < r.n, "{}: owner {} of {}", name, i, r.n);
                    prop_assert!(out.won_utility[c] > 0.0, "{}: c{} given to agent {} with utility 0", name, c, i);
                }
            }
            // Every mechanism but the static partition is work-conserving: an idle
            // accelerator is wanted by nobody at the end of the round.
            if name != "static_partition" {
                let rem = remaining_after(&r, &out.owners);
                for c in 0..r.m {
                    if out.owners[c].is_none() {
                        for i in 0..r.n {
                            prop_assert!(!still_wants(&r, i, c, rem[i]), "{}: c{} idle but agent {} wants it", name, c, i);
                        }
                    }
                }
            }
            if !["mtf", "second_price", "first_price"].contains(&name) {
                prop_assert_eq!(&out.budgets, &r.budgets);
                prop_assert!(out.spent.iter().all(|&s| s == 0.0));
            }
            // Determinism: a fresh mechanism gives the same answer.
            prop_assert_eq!(&run(build(name).as_mut(), &r), &out, "{} not deterministic", name);
        }
    }

    #[test]
    fn stateful_mechanisms_round_trip_their_state(r in round(5, 6), rounds in 1usize..5) {
        for &name in NAMES {
            let mut a = build(name);
            if r.check_needs(name, a.needs()).is_err() {
                continue;
            }
            for _ in 0..rounds {
                let _ = run(a.as_mut(), &r);
            }
            if let Some(state) = a.state() {
                let mut b = build(name);
                b.set_state(&state, &r).unwrap();
                prop_assert_eq!(run(a.as_mut(), &r), run(b.as_mut(), &r), "{}", name);
            }
            a.reset();
            prop_assert_eq!(run(a.as_mut(), &r), run(build(name).as_mut(), &r), "{} reset", name);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// SPEC 8: with the budgets as they stand when each accelerator is sold (replayed from the
    /// prices), the winner had the highest effective bid, at least the reserve; it paid at most
    /// that bid (second price: exactly the highest competing bid or the reserve; first price:
    /// exactly its bid); tokens are conserved with redistribution, and leave the agents without.
    #[test]
    fn auctions_sell_to_the_highest_effective_bid_at_the_right_price(r in round(6, 8)) {
        for (name, first) in [("second_price", false), ("first_price", true)] {
            let out = run(build(name).as_mut(), &r);
            let mut budgets = r.budgets.clone();
            for c in 0..r.m {
                let effective = |i: usize, b: &[f64]| r.bids[i * r.m + c].min(b[i]);
                if !out.paid[c] {
                    prop_assert_eq!(out.prices[c], 0.0);
                    continue;
                }
                let w = out.owners[c].unwrap();
                let e = effective(w, &budgets);
                prop_assert!(e > 0.0 && e >= r.reserve, "{}: c{} sold at bid {}", name, c, e);
                if r.form == Form::Utilities {
                    // Every competitor with a use for c bid at most the winner's bid.
                    for i in (0..r.n).filter(|&i| i != w && r.utilities[i * r.m + c] > 0.0) {
                        let x = effective(i, &budgets);
                        prop_assert!(!(x > e && x >= r.reserve), "{}: c{} agent {} bid {} above the winner's {}", name, c, i, x, e);
                    }
                }
                let price = out.prices[c];
                prop_assert!(price <= e, "{}: paid {} above the effective bid {}", name, price, e);
                if first {
                    prop_assert_eq!(price, e);
                } else if r.form == Form::Utilities {
                    let competing = (0..r.n)
                        .filter(|&i| i != w && r.utilities[i * r.m + c] > 0.0)
                        .map(|i| effective(i, &budgets))
                        .filter(|&x| x > 0.0 && x >= r.reserve)
                        .fold(r.reserve, f64::max);
                    prop_assert_eq!(price, competing, "{}: c{}", name, c);
                }
                budgets[w] -= price;
            }
            let spent: f64 = out.spent.iter().sum();
            prop_assert!((spent - out.prices.iter().sum::<f64>()).abs() <= 1e-9 * spent.max(1.0));
            let (before, after): (f64, f64) = (r.budgets.iter().sum(), out.budgets.iter().sum());
            let expected = if r.redistribute { before } else { before - spent };
            prop_assert!((after - expected).abs() <= 1e-9 * before.max(1.0), "{}: {} -> {}", name, before, after);
            prop_assert!(out.budgets.iter().all(|&b| b >= -1e-9 * before.max(1.0)));
        }
    }

    /// The static partition walks each agent's share with the valuation's cursors; a plain
    /// scan of the share per pick (the rule as written, O(m) per pick) must agree.
    #[test]
    fn static_partition_agrees_with_a_scan_per_pick(r in round(4, 14)) {
        use crate::board::Board;
        let out = run(&mut crate::static_partition::StaticPartition::default(), &r);
        let part = crate::static_partition::deal(&r.weights, r.m);
        let mut board = Board::default();
        board.reset(&r, false);
        let mut want = crate::Allocation::default();
        want.reset(&r);
        for i in 0..r.n {
            let mut mine: Vec<bool> = part.iter().map(|&o| o == i).collect();
            while let Some(c) = board.val.first_pref_in(&r, i, &mine, |u| u > 0.0) {
                mine[c] = false;
                board.give(&r, i, c, &mut want);
            }
        }
        prop_assert_eq!(&out.owners, &want.owners);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A mechanism that `registry::reads_actions` says ignores the agents' actions allocates the
    /// same whatever the thresholds and bids (so `mtf compare` shows it one row for every
    /// policy); one that reads them is not claimed blind.
    #[test]
    fn policy_blind_mechanisms_ignore_thresholds_and_bids(
        r in round(6, 8),
        t in prop::collection::vec(0.0..1.0f64, 6),
        b in prop::collection::vec(0.0..8.0f64, 48),
    ) {
        let mut other = r.clone();
        other.thresholds = t[..r.n].to_vec();
        other.bids = b[..r.n * r.m].to_vec();
        for &name in NAMES.iter().filter(|n| !registry::reads_actions(n)) {
            if build(name).needs().contains(&crate::Need::Rates) && r.rates.is_empty() {
                continue;
            }
            let (a, z) = (run(build(name).as_mut(), &r), run(build(name).as_mut(), &other));
            prop_assert_eq!(&a.owners, &z.owners, "{}", name);
        }
    }
}

#[test]
fn mtf_and_the_auctions_read_the_agents_actions() {
    assert!(["mtf", "second_price", "first_price"].iter().all(|n| registry::reads_actions(n)));
    assert!(!registry::reads_actions("stride") && !registry::reads_actions("themis"));
}

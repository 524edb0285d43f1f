//! Learners against auction theory (SPEC 8), in the valuation world with 4 bidders and 8
//! accelerators, 4 training episodes of 3000 rounds: Hedge's best response to fixed opponents,
//! Hedge in self-play, a stale round record that must spoil the best response, and the
//! actor-critic's and PPO's best responses.

use agents::eval::theory::{
    evaluate, first_price_equilibria, first_price_surplus, pinned as pinned_policy, surplus_per_item, train_against, Record,
};
use agents::learners::hedge::{Hedge, HedgeConfig};
use agents::learners::Policy;
use env::config::{Scenario, ScenarioFile};
use std::path::Path;

fn scenario(kind: &str) -> Scenario {
    bidders(kind, 4)
}

/// The auction config with `n` bidders.
fn bidders(kind: &str, n: usize) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../configs/auctions/{kind}-price.toml"));
    ScenarioFile::load(&path, &[format!("env.agents.0.count={n}")]).unwrap()
}

fn level(sc: &Scenario, alpha: f64) -> usize {
    sc.action_levels().iter().position(|&a| (a - alpha).abs() < 1e-9).unwrap()
}

const HELD_OUT: [u64; 4] = [101, 102, 103, 104];

/// Hedge for agent 0 against three opponents pinned at `opponents`: its greedy bid factor (one
/// budget state in the valuation world) and the surplus per item it earns with it.
fn best_response(sc: &Scenario, opponents: f64, record: Record) -> (f64, f64) {
    let mut hedge = Hedge::for_scenario(sc, &HedgeConfig::default());
    let pinned: Vec<(usize, usize)> = (1..4).map(|i| (i, level(sc, opponents))).collect();
    train_against(sc, &mut hedge, 4, &pinned, 7, record);
    let chosen = agents::learners::argmax(hedge.probabilities(0, 0));
    (
        sc.action_levels()[chosen],
        surplus_per_item(sc, chosen, level(sc, opponents), &HELD_OUT),
    )
}

#[test]
fn hedge_best_responds_as_theory_says() {
    // Second price against three truthful bidders: bidding one's value is optimal, U(1) = 0.05.
    // First price against three bidders at alpha* = 0.75: alpha* is the best response, U = 0.05.
    for (kind, opponents, best, closed) in [("second", 1.0, 1.0, 0.05), ("first", 0.75, 0.75, 0.05)] {
        let sc = scenario(kind);
        let (chosen, got) = best_response(&sc, opponents, Record::True);
        eprintln!("{kind} price best response: greedy {chosen}, surplus {got:.4} per item (theory {best}, {closed})");
        assert!((chosen - best).abs() <= 0.05 + 1e-9, "{kind}: greedy {chosen}, theory {best}");
        assert!((got - closed).abs() < 0.002, "{kind}: surplus {got} at {chosen}, theory {closed}");
    }
}

#[test]
fn the_closed_form_first_price_surplus_is_the_simulated_one() {
    // Agent 0 at alpha, three others at beta, on the held-out seeds (96,000 items): below,
    // at and above the others' factor.
    let sc = scenario("first");
    for (alpha, beta) in [(0.7, 0.75), (0.75, 0.75), (0.9, 0.75), (0.5, 0.3)] {
        let got = surplus_per_item(&sc, level(&sc, alpha), level(&sc, beta), &HELD_OUT);
        let closed = first_price_surplus(alpha, beta, 4);
        assert!(
            (got - closed).abs() < 0.002,
            "alpha {alpha} vs {beta}: simulated {got}, closed form {closed}"
        );
    }
}

#[test]
fn hedge_self_play_lands_on_the_grid_equilibria() {
    // Default Hedge (rewards on a fixed scale, the anytime learning rate), 4 episodes of 3,000
    // rounds, on SPEC 8's 0.05 grid. First price: every bidder's last iterate on a symmetric
    // equilibrium of the discretised game (closed form: 3 bidders {0.65}, 4 {0.70, 0.75},
    // 6 {0.80, 0.85}), its time-averaged play within one step of one, and the revenue what
    // the bids it plays make (factor x n / (n + 1)). Second price: truthful (1.0), exactly.
    // (scripts/hedge-report.sh has the 0.01 grid and 40 episodes.)
    for n in [3, 4, 6] {
        let sc = bidders("first", n);
        let levels = sc.action_levels().to_vec();
        let eq = first_price_equilibria(&levels, n);
        let mut hedge = Hedge::for_scenario(&sc, &HedgeConfig::default());
        train_against(&sc, &mut hedge, 4, &[], 7, Record::True);
        let last: Vec<f64> = (0..n)
            .map(|i| levels[agents::learners::argmax(hedge.probabilities(i, 0))])
            .collect();
        let averaged: f64 = (0..n)
            .map(|i| hedge.time_averaged(i, 0).iter().zip(&levels).map(|(p, l)| p * l).sum::<f64>())
            .sum::<f64>()
            / n as f64;
        let (summary, _) = evaluate(&sc, hedge.fork().as_ref(), &HELD_OUT[..2]);
        let revenue = summary.stat("revenue_per_item").unwrap().mean;
        let played = summary.bid_factor.as_ref().unwrap().iter().map(|s| s.mean).sum::<f64>() / n as f64;
        eprintln!(
            "first price, {n} bidders: last iterate {last:?}, time-averaged mean {averaged:.3}, equilibria {eq:?}; revenue {revenue:.4}"
        );
        assert!(
            last.iter().all(|l| eq.iter().any(|e| (e - l).abs() < 1e-9)),
            "{n} bidders: {last:?} not in {eq:?}"
        );
        let (lo, hi) = (eq[0] - 0.05 - 1e-9, eq[eq.len() - 1] + 0.05 + 1e-9);
        assert!(
            (lo..=hi).contains(&averaged),
            "{n} bidders: time-averaged {averaged} outside [{lo}, {hi}]"
        );
        let theory = played * n as f64 / (n + 1) as f64;
        assert!(
            (revenue - theory).abs() <= 0.03 * theory,
            "{n} bidders: revenue {revenue}, {theory} at factor {played}"
        );
    }
    for n in [3, 4, 6] {
        let sc = bidders("second", n);
        let mut hedge = Hedge::for_scenario(&sc, &HedgeConfig::default());
        train_against(&sc, &mut hedge, 4, &[], 7, Record::True);
        let last: Vec<f64> = (0..n)
            .map(|i| sc.action_levels()[agents::learners::argmax(hedge.probabilities(i, 0))])
            .collect();
        assert!(last.iter().all(|&l| (l - 1.0).abs() < 1e-9), "second price, {n} bidders: {last:?}");
    }
}

#[test]
fn a_stale_round_record_makes_the_best_response_noise() {
    // The counterfactuals replay bids formed from the previous round's values against this
    // round's: a bid is then unrelated to the value it would win, and Hedge no longer finds the
    // truthful best response (with the true record it does, above).
    let sc = scenario("second");
    let (chosen, got) = best_response(&sc, 1.0, Record::Stale);
    eprintln!("stale record, second price: greedy {chosen}, surplus {got:.4} (true record: 1.0, 0.05)");
    assert!(
        (chosen - 1.0).abs() > 0.05 + 1e-9 || got < 0.05 - 0.002,
        "with a stale record Hedge still chose {chosen} (surplus {got}): the test cannot tell the bug"
    );
}

#[test]
fn pinned_agents_keep_their_level() {
    let sc = scenario("first");
    let policy = pinned_policy(
        Box::new(agents::learners::Fixed { level: level(&sc, 0.5) }),
        vec![(2, level(&sc, 1.0))],
    );
    let (summary, _) = evaluate(&sc, &policy, &HELD_OUT[..1]);
    let factors: Vec<f64> = summary.bid_factor.unwrap().iter().map(|s| s.mean).collect();
    assert_eq!(factors, [0.5, 0.5, 1.0, 0.5]);
}

#[test]
fn the_actor_critic_best_responds_within_one_grid_step() {
    // The actor-critic with its defaults, 2 episodes of 3000 rounds (the run it plans: its
    // entropy bonus anneals to 0 over the first), its greedy policy on held-out seeds
    // (state-dependent, so its mean bid factor is what it chose). Without the bonus the
    // first-price best response settles at 0.80 (surplus 0.0473).
    for (kind, opponents, best) in [("second", 1.0, 1.0), ("first", 0.75, 0.75)] {
        let sc = scenario(kind);
        let exp = agents::config::Experiment {
            scenario: sc.clone(),
            learner: agents::config::LearnerSection {
                kind: agents::config::LearnerKind::ActorCritic,
                ..Default::default()
            },
            train: agents::config::TrainSection {
                episodes: 2,
                ..Default::default()
            },
        };
        let mut ac = exp.build_learner();
        let pinned: Vec<(usize, usize)> = (1..4).map(|i| (i, level(&sc, opponents))).collect();
        train_against(&sc, ac.as_mut(), 2, &pinned, 7, Record::True);
        let (summary, per_item) = evaluate(&sc, &pinned_policy(ac.fork(), pinned), &HELD_OUT);
        let chosen = summary.bid_factor.unwrap()[0].mean;
        eprintln!(
            "{kind} price, actor-critic best response: mean bid factor {chosen:.3}, surplus {:.4} (theory {best}, 0.05)",
            per_item[0]
        );
        assert!(
            (chosen - best).abs() <= 0.05 + 1e-9,
            "{kind}: actor-critic bids {chosen}, theory {best}"
        );
        assert!((per_item[0] - 0.05).abs() < 0.002, "{kind}: surplus {}", per_item[0]);
    }
}

#[test]
fn ppo_best_responds_within_one_grid_step() {
    // PPO (one copy, a rollout of 100 rounds: 30 updates per 3000-round episode), 2 episodes,
    // its greedy policy on held-out seeds, checked like the actor-critic's.
    for (kind, opponents, best) in [("second", 1.0, 1.0), ("first", 0.75, 0.75)] {
        let sc = scenario(kind);
        let exp = agents::config::Experiment {
            scenario: sc.clone(),
            learner: agents::config::LearnerSection {
                kind: agents::config::LearnerKind::Ppo,
                ppo: agents::learners::ppo::PpoConfig {
                    rollout: 100,
                    lr: 3e-3,
                    anneal_lr: false,
                    // This test's budget was set with SPEC 4's 4 epochs (the default before
                    // the PPO sweep): at lr 3e-3, 10 epochs overshoot on 30 updates.
                    epochs: 4,
                    ..Default::default()
                },
                ..Default::default()
            },
            train: Default::default(),
        };
        let mut ppo = exp.build_learner();
        let pinned: Vec<(usize, usize)> = (1..4).map(|i| (i, level(&sc, opponents))).collect();
        train_against(&sc, ppo.as_mut(), 2, &pinned, 7, Record::True);
        let (summary, per_item) = evaluate(&sc, &pinned_policy(ppo.fork(), pinned), &HELD_OUT);
        let chosen = summary.bid_factor.unwrap()[0].mean;
        eprintln!(
            "{kind} price, PPO best response: mean bid factor {chosen:.3}, surplus {:.4} (theory {best}, 0.05)",
            per_item[0]
        );
        assert!((chosen - best).abs() <= 0.05 + 1e-9, "{kind}: PPO bids {chosen}, theory {best}");
        assert!((per_item[0] - 0.05).abs() < 0.002, "{kind}: surplus {}", per_item[0]);
    }
}

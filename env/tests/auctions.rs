//! SPEC 8's known answers: in the valuation world, fixed bid factors earn what auction theory
//! says, within sampling error (4 bidders, 8 accelerators, 3,000 rounds, 4 seeds: 96,000 items).

use env::config::{Scenario, ScenarioFile};
use env::eval::{evaluate, Summary};
use env::policy::Policy;
use env::world::Observations;
use std::path::Path;

fn scenario(kind: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../configs/auctions/{kind}-price.toml"));
    ScenarioFile::load(&path, &[]).unwrap()
}

/// Agent 0 bids with factor `own`, everyone else with `others`.
#[derive(Clone)]
struct Deviation {
    own: usize,
    others: usize,
}

impl Policy for Deviation {
    fn begin_episode(&mut self, _seed: u64) {}
    fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        actions.fill(self.others);
        actions[0] = self.own;
    }
    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
}

fn level(sc: &Scenario, alpha: f64) -> usize {
    sc.action_levels().iter().position(|&a| (a - alpha).abs() < 1e-9).unwrap()
}

const SEEDS: [u64; 4] = [1, 2, 3, 4];

/// Agent 0's surplus per item, and the run's summary.
fn run(sc: &Scenario, own: f64, others: f64) -> (f64, Summary) {
    let policy = Deviation {
        own: level(sc, own),
        others: level(sc, others),
    };
    let eps = evaluate(sc, &SEEDS, &policy, false, 2);
    let m = sc.m() as f64;
    let own_surplus = eps.iter().map(|e| e.reward[0]).sum::<f64>() / eps.len() as f64 / m;
    (own_surplus, Summary::of(sc, &eps))
}

#[test]
fn truthful_second_price_and_equilibrium_first_price_earn_the_revenue_equivalent_figures() {
    for (kind, alpha) in [("second", 1.0), ("first", 0.75)] {
        let sc = scenario(kind);
        let (_, s) = run(&sc, alpha, alpha);
        let revenue = s.stat("revenue_per_item").unwrap().mean;
        let surplus = s.stat("surplus_per_bidder_item").unwrap().mean;
        // (n - 1)/(n + 1) = 0.6 and 1/(n (n + 1)) = 0.05; standard errors about 0.0007 and 0.0002.
        assert!((revenue - 0.6).abs() < 0.004, "{kind}: revenue {revenue}");
        assert!((surplus - 0.05).abs() < 0.0015, "{kind}: surplus {surplus}");
        assert_eq!(s.stat("sold_share").unwrap().mean, 1.0, "{kind}: every item has a bidder");
        assert!(s.bid_factor.unwrap().iter().all(|b| b.mean == alpha));
    }
}

#[test]
fn a_deviating_bidder_earns_the_closed_form_surplus() {
    // Second price against 3 truthful bidders: U(a) = (a^3 - 0.75 a^4) / 5.
    let sc = scenario("second");
    for a in [1.0, 0.9, 0.7, 0.5] {
        let want: f64 = (a * a * a - 0.75 * a * a * a * a) / 5.0;
        let (got, _) = run(&sc, a, 1.0);
        assert!((got - want).abs() < 0.0015, "second price, alpha {a}: {got} vs {want}");
    }
    // First price against 3 bidders at alpha* = 0.75: U(a) = (1 - a) (a / 0.75)^3 / 5.
    let sc = scenario("first");
    for a in [0.75, 0.7, 0.6, 0.5] {
        let want: f64 = (1.0 - a) * (a / 0.75f64).powi(3) / 5.0;
        let (got, _) = run(&sc, a, 0.75);
        assert!((got - want).abs() < 0.0015, "first price, alpha {a}: {got} vs {want}");
    }
}

#[test]
fn bid_actions_index_the_bid_levels_and_bids_are_factor_times_value() {
    let sc = scenario("second");
    let mut env = env::world::ClusterEnv::new(sc.clone());
    assert_eq!(env.action_kind(), env::config::ActionKind::Bid);
    assert_eq!(env.action_space(0).n, 31, "SPEC 8's default bid levels 0.0, 0.05, ..., 1.5");
    assert_eq!(env.levels()[30], 1.5);
    env.reset(5);
    let values: Vec<f64> = (0..4)
        .flat_map(|i| env.observations().get(i)[1..9].to_vec())
        .map(f64::from)
        .collect();
    let actions = [20, 10, 0, 30];
    env.step(&actions).unwrap();
    let input = env.last_input();
    for i in 0..4 {
        for c in 0..8 {
            let want = env.levels()[actions[i]] * input.utilities[i * 8 + c];
            assert_eq!(input.bids[i * 8 + c], want);
            assert!(
                (input.utilities[i * 8 + c] - values[i * 8 + c]).abs() < 1e-6,
                "the observation shows the values"
            );
        }
    }
    // Quasi-linear rewards: values won minus prices.
    let alloc = env.last_allocation();
    for i in 0..4 {
        let won: f64 = (0..8)
            .filter(|&c| alloc.owners[c] == Some(i))
            .map(|c| input.utilities[i * 8 + c])
            .sum();
        assert!((env.last_rewards()[i] - (won - alloc.spent[i])).abs() < 1e-12);
    }
    // Agent 2 bids nothing and, with no free phase, wins nothing.
    assert!(alloc.owners.iter().all(|&o| o != Some(2)));
}

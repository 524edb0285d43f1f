//! Every learner against auction theory (SPEC 8), printed: best response to three fixed
//! opponents and self-play, in both auctions of the valuation world (4 bidders, 8 items).
//! `cargo run --release -p agents --example auction_learners -- [EPISODES]`

use agents::config::{Experiment, LearnerKind, LearnerSection};
use agents::eval::theory::{evaluate, pinned as pinned_policy, train_against, Record};
use agents::learners::Learner;
use env::config::ScenarioFile;
use std::path::Path;

fn main() {
    let episodes: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let held_out = [101, 102, 103, 104];
    println!("| auction | learner | episodes | best response: bid factor (theory) | surplus per item (theory) | self-play: mean bid factor (theory) | revenue per item (0.6) |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (kind, opponents, best) in [("second", 1.0, 1.0), ("first", 0.75, 0.75)] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../configs/auctions/{kind}-price.toml"));
        let sc = ScenarioFile::load(&path, &[]).unwrap();
        let opp = sc.action_levels().iter().position(|&a| (a - opponents).abs() < 1e-9).unwrap();
        for kind_l in [LearnerKind::Hedge, LearnerKind::ActorCritic] {
            let exp = Experiment {
                scenario: sc.clone(),
                learner: LearnerSection {
                    kind: kind_l,
                    ..Default::default()
                },
                train: Default::default(),
            };
            let build = || -> Box<dyn Learner> { exp.build_learner() };
            let pinned: Vec<(usize, usize)> = (1..4).map(|i| (i, opp)).collect();
            let t0 = std::time::Instant::now();
            let mut br = build();
            train_against(&sc, br.as_mut(), episodes, &pinned, 7, Record::True);
            let (s, per) = evaluate(&sc, &pinned_policy(br.fork(), pinned), &held_out);
            let own = s.bid_factor.as_ref().unwrap()[0].mean;
            let mut sp = build();
            train_against(&sc, sp.as_mut(), episodes, &[], 7, Record::True);
            let (s2, _) = evaluate(&sc, sp.fork().as_ref(), &held_out);
            let f: Vec<f64> = s2.bid_factor.as_ref().unwrap().iter().map(|x| x.mean).collect();
            println!(
                "| {kind} price | {kind_l:?} | {episodes} | {own:.3} ({best}) | {:.4} (0.05) | {:.3} ({best}) | {:.4} | ({:.1} s)",
                per[0],
                f.iter().sum::<f64>() / 4.0,
                s2.stat("revenue_per_item").unwrap().mean,
                t0.elapsed().as_secs_f64()
            );
        }
    }
}

//! Hedge in first-price self-play against the discretised game's symmetric equilibria
//! (closed form, `agents::eval::theory::first_price_equilibria`): for several bidder counts and
//! grids, where its last iterate and its time-averaged play land, in grid steps from the
//! nearest equilibrium, with the fixed reward scale and the anytime learning rate (the
//! default) and with each round's rewards min-max scaled (`scale = "round"`, the behaviour
//! before issue 41). One JSON line per case; `scripts/hedge-report.sh` makes the table.
//! `cargo run --release -p agents --example hedge_equilibria -- [EPISODES] [BIDDERS,..] [STEPS,..]`

use agents::eval::theory::{first_price_equilibria, first_price_surplus, train_against, Record};
use agents::learners::hedge::{Hedge, HedgeConfig, HedgeScale};
use env::config::ScenarioFile;
use std::path::Path;

fn main() {
    let arg = |k: usize| std::env::args().nth(k);
    let episodes: u64 = arg(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let list = |k: usize, default: &str| -> Vec<String> { arg(k).unwrap_or_else(|| default.into()).split(',').map(String::from).collect() };
    let bidders: Vec<usize> = list(2, "3,4,6").iter().map(|b| b.parse().expect("bidders")).collect();
    let steps: Vec<f64> = list(3, "0.05,0.01").iter().map(|s| s.parse().expect("a grid step")).collect();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/auctions/first-price.toml");
    for &n in &bidders {
        for &step in &steps {
            let count = (1.5 / step).round() as usize;
            let grid: Vec<f64> = (0..=count).map(|k| (k as f64 * step * 1e6).round() / 1e6).collect();
            let levels = format!("env.bid_levels=[{}]", grid.iter().map(f64::to_string).collect::<Vec<_>>().join(","));
            let sc = ScenarioFile::load(&path, &[format!("env.agents.0.count={n}"), levels]).expect("the auction config");
            let eq = first_price_equilibria(&grid, n);
            for (name, scale) in [("fixed", HedgeScale::Fixed), ("round", HedgeScale::Round)] {
                let t0 = std::time::Instant::now();
                let cfg = HedgeConfig {
                    scale,
                    ..HedgeConfig::default()
                };
                let mut h = Hedge::for_scenario(&sc, &cfg);
                train_against(&sc, &mut h, episodes, &[], 7, Record::True);
                // Per agent: the last iterate's most likely level and mean, the time average's.
                let mean = |p: &[f64]| p.iter().zip(&grid).map(|(q, l)| q * l).sum::<f64>();
                let mode = |p: &[f64]| grid[agents::learners::argmax(p.iter().copied())];
                let last: Vec<Vec<f64>> = (0..n).map(|i| h.probabilities(i, 0)).collect();
                let avg: Vec<Vec<f64>> = (0..n).map(|i| h.time_averaged(i, 0)).collect();
                // Steps from the nearest equilibrium, signed (+ above it).
                let off = |x: f64| -> f64 {
                    let e = eq
                        .iter()
                        .copied()
                        .min_by(|a, b| (a - x).abs().total_cmp(&(b - x).abs()))
                        .expect("an equilibrium");
                    if x >= eq[0] && x <= eq[eq.len() - 1] {
                        0.0
                    } else {
                        (x - e) / step
                    }
                };
                let avg_of = |xs: Vec<f64>| xs.iter().sum::<f64>() / xs.len() as f64;
                // Where everyone sits (bidder 0's last mode): what the best reply on the grid
                // would gain there, relative to staying (0 on an equilibrium).
                let at = mode(&last[0]);
                let stay = first_price_surplus(at, at, n);
                let reply = grid.iter().map(|&a| first_price_surplus(a, at, n)).fold(f64::MIN, f64::max);
                let line = serde_json::json!({
                    "bidders": n,
                    "step": step,
                    "scale": name,
                    "episodes": episodes,
                    "rounds": sc.file.env.rounds,
                    "equilibria": eq,
                    "last_mode": last.iter().map(|p| mode(p)).collect::<Vec<_>>(),
                    "last_mean": avg_of(last.iter().map(|p| mean(p)).collect()),
                    "last_mode_steps": avg_of(last.iter().map(|p| off(mode(p))).collect()),
                    "avg_mode": avg.iter().map(|p| mode(p)).collect::<Vec<_>>(),
                    "avg_mean": avg_of(avg.iter().map(|p| mean(p)).collect()),
                    "avg_mean_steps": off(avg_of(avg.iter().map(|p| mean(p)).collect())),
                    "best_reply_gain": (reply - stay) / stay,
                    "seconds": t0.elapsed().as_secs_f64(),
                });
                println!("{line}");
            }
        }
    }
}

//! How each mechanism's time per round grows with the problem: n = m from 20 to 4000 (demand
//! form, environment-like rounds as in `mechanisms.rs`, rates stamped as the environment does), MTF also in the utilities form, and
//! one agent with 100,000 accelerators (utilities form, every utility positive: the free phase
//! hands all of them to the one agent). Prints a markdown table of milliseconds per round (the
//! median of a few rounds; a mechanism that passes `LIMIT_MS` at some size is not run at
//! larger ones).
//!
//! `cargo bench -p scheduler --bench scaling` (also run by `scripts/bench-scheduler.sh`).

use scheduler::{registry, Allocation, RoundInput};
use std::time::Instant;

/// A mechanism slower than this at one size is not timed at larger sizes.
const LIMIT_MS: f64 = 20_000.0;

mod common;
use common::Rng;

/// n agents x m accelerators: half gemmini_2ghz, half gemmini_3ghz (per-application speed-ups of
/// SPEC 1), weights 1/1/2/4, demands around 0.8 of the fair share, thresholds 0.0-0.9.
fn demand_round(n: usize, m: usize, seed: u64) -> RoundInput {
    const SPEEDUP: [f64; 4] = [86.332 / 70.262, 4.139 / 3.001, 111.995 / 81.644, 2.101 / 1.480];
    let mut rng = Rng(seed);
    let rates: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..m).map(|c| if c < m / 2 { 40.0 } else { 40.0 * SPEEDUP[i % 4] }).collect())
        .collect();
    let weights: Vec<f64> = (0..n).map(|i| [1.0, 1.0, 2.0, 4.0][i % 4]).collect();
    let total_w: f64 = weights.iter().sum();
    let demands: Vec<f64> = (0..n)
        .map(|i| (0.8 * rates[i].iter().sum::<f64>() * weights[i] / total_w * (0.25 + 1.5 * rng.next())).round())
        .collect();
    let mut r = RoundInput::from_demands(&demands, &rates);
    r.weights = weights.clone();
    r.thresholds = (0..n).map(|_| (rng.next() * 10.0).floor() / 10.0).collect();
    r.budgets = weights.iter().map(|w| w * 100.0 / total_w).collect();
    // The auctions' bids: up to 3 tokens per accelerator.
    r.bids = (0..n * m).map(|_| (rng.next() * 30.0).floor() / 10.0).collect();
    r.turn = n / 3;
    // As the environment feeds it: rates stamped once for the episode, so a round does not
    // reread n m rates to learn they are the ones its classes describe.
    r.rates_stamp = scheduler::RatesStamp::fresh();
    r
}

/// The demand round with every accelerator's rate column distinct (each its own type: what
/// gandiva_fair sees on a random rate matrix).
fn many_types_round(n: usize, m: usize, seed: u64) -> RoundInput {
    let mut r = demand_round(n, m, seed);
    for i in 0..n {
        for c in 0..m {
            r.rates[i * m + c] *= 1.0 + 0.5 * c as f64 / m as f64;
        }
    }
    // New rates, a new stamp.
    r.rates_stamp = scheduler::RatesStamp::fresh();
    r
}

/// The same round in the utilities form (per-accelerator queues), rates kept.
fn utilities_round(n: usize, m: usize, seed: u64) -> RoundInput {
    let mut r = demand_round(n, m, seed);
    let mut rng = Rng(seed ^ 0xabc);
    r.form = scheduler::Form::Utilities;
    r.utilities = (0..n * m).map(|_| (rng.next() * 10.0).round() / 10.0).collect();
    r.demands.clear();
    r
}

fn time_ms(name: &str, input: &RoundInput) -> f64 {
    let mut mech = registry::build(name, &registry::Params::default()).unwrap();
    let mut out = Allocation::default();
    let mut times = Vec::new();
    let start = Instant::now();
    // At least 3 rounds, more while under 0.3 s in all (the first one warms buffers up).
    while times.len() < 3 || (start.elapsed().as_secs_f64() < 0.3 && times.len() < 200) {
        let t = Instant::now();
        mech.allocate(std::hint::black_box(input), &mut out);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        if times.len() == 1 && times[0] > LIMIT_MS / 4.0 {
            break;
        }
    }
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; anything else after `--` is a size filter (e.g. `2000`).
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let sizes = [20usize, 50, 100, 200, 400, 1000, 2000, 4000];
    let mut rows: Vec<(String, &str, u8)> = vec![("mtf-utilities".into(), "mtf", 1)];
    // Gavel's policies need a round of jobs: env's gavel example times them on Gavel's traces.
    rows.extend(
        registry::NAMES
            .iter()
            .filter(|n| !registry::GAVEL.contains(n))
            .map(|&n| (n.to_string(), n, 0)),
    );
    rows.push(("gandiva_fair-m-types".into(), "gandiva_fair", 2));
    print!("| mechanism (n = m) |");
    for s in sizes {
        print!(" {s} |");
    }
    println!(" 1 x 100000 |");
    println!("|---|{}---:|", "---:|".repeat(sizes.len()));
    for (label, name, kind) in rows {
        print!("| {label} |");
        let mut slow = false;
        for &s in &sizes {
            if slow || (!filter.is_empty() && !filter.contains(&s.to_string())) {
                print!(" - |");
                continue;
            }
            let input = match kind {
                1 => utilities_round(s, s, 7),
                2 => many_types_round(s, s, 7),
                _ => demand_round(s, s, 7),
            };
            let ms = time_ms(name, &input);
            slow = ms > LIMIT_MS / 4.0;
            print!(" {ms:.3} |");
        }
        // One agent, 100k accelerators, every utility positive.
        let mut big = utilities_round(1, 100_000, 3);
        big.utilities.iter_mut().for_each(|u| *u = u.max(0.1));
        big.thresholds = vec![0.0];
        print!(" {:.1} |", time_ms(name, &big));
        println!();
    }
}

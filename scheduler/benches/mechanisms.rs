//! Time per round of every mechanism at n in {20, 40, 60} agents x m in {20, 40, 60}
//! accelerators (the thesis's Fig. 5.16/5.17 sweep), on environment-like rounds: half
//! gemmini_2ghz and half gemmini_3ghz accelerators (SPEC 1 rates, base 40), weights 1/2/4,
//! demands around 0.8 of each agent's fair share, thresholds from the levels 0.0..0.9, and
//! budgets after some MTF rounds (fractional). MTF is timed in both input forms.
//!
//! `scripts/bench-scheduler.sh` runs this and prints the median table for `scheduler/README.md`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use scheduler::{registry, Allocation, Form, RoundInput};
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::Rng;

/// Speed-up of gemmini_3ghz over gemmini_2ghz per application (SPEC 1 table).
const SPEEDUP: [f64; 4] = [86.332 / 70.262, 4.139 / 3.001, 111.995 / 81.644, 2.101 / 1.480];

fn round(n: usize, m: usize, form: Form, seed: u64) -> RoundInput {
    let mut rng = Rng(seed);
    let rates: Vec<f64> = (0..n)
        .flat_map(|i| (0..m).map(move |c| if c < m / 2 { 40.0 } else { 40.0 * SPEEDUP[i % 4] }))
        .collect();
    let weights: Vec<f64> = (0..n).map(|i| [1.0, 1.0, 2.0, 4.0][i % 4]).collect();
    let total_w: f64 = weights.iter().sum();
    let demands: Vec<f64> = (0..n)
        .map(|i| {
            let share: f64 = rates[i * m..(i + 1) * m].iter().sum::<f64>() * weights[i] / total_w;
            if rng.next() < 0.2 {
                0.0
            } else {
                (0.8 * share * (0.25 + 1.5 * rng.next())).round()
            }
        })
        .collect();
    let mut r = RoundInput::from_demands(&demands, &rates.chunks(m).map(<[f64]>::to_vec).collect::<Vec<_>>());
    r.weights = weights.clone();
    r.thresholds = (0..n).map(|_| (rng.next() * 10.0).floor() / 10.0).collect();
    r.budgets = weights.iter().map(|w| w * 100.0 / total_w).collect();
    // The auctions' bids: up to 3 tokens per accelerator.
    r.bids = (0..n * m).map(|_| (rng.next() * 30.0).floor() / 10.0).collect();
    if form == Form::Utilities {
        // Per-accelerator queues: u = min(q, mu) / max mu with q spread over the agent's queues.
        r.form = Form::Utilities;
        r.utilities = (0..n * m)
            .map(|k| (demands[k / m] / m as f64 * 2.0 * rng.next()).min(rates[k]) / rates[(k / m) * m + m - 1].max(rates[(k / m) * m]))
            .map(|u| u.min(1.0))
            .collect();
        r.demands.clear();
    }
    // Let budgets drift to realistic fractional values.
    let mut mtf = registry::build("mtf", &registry::Params::default()).unwrap();
    let mut out = Allocation::default();
    for t in 0..10 {
        r.turn = t % n;
        mtf.allocate(&r, &mut out);
        r.budgets.clone_from(&out.budgets);
    }
    r.validate().unwrap();
    r
}

fn bench(c: &mut Criterion) {
    let sizes = [
        (20, 20),
        (20, 40),
        (20, 60),
        (40, 20),
        (40, 40),
        (40, 60),
        (60, 20),
        (60, 40),
        (60, 60),
    ];
    let mut group = c.benchmark_group("round");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200));
    for &(n, m) in &sizes {
        let demand = round(n, m, Form::Demand, 42 + n as u64 * 1000 + m as u64);
        let util = round(n, m, Form::Utilities, 7 + n as u64 * 1000 + m as u64);
        let mut cases: Vec<(String, &RoundInput, &str)> = vec![("mtf-utilities".into(), &util, "mtf")];
        // Gavel's policies need a round of jobs (env's gavel examples time them).
        cases.extend(
            registry::NAMES
                .iter()
                .filter(|n| !registry::GAVEL.contains(n))
                .map(|&name| (name.to_string(), &demand, name)),
        );
        for (label, input, name) in cases {
            let mut mech = registry::build(name, &registry::Params::default()).unwrap();
            let mut out = Allocation::default();
            group.bench_with_input(BenchmarkId::new(label, format!("{n}x{m}")), input, |b, input| {
                b.iter(|| {
                    mech.allocate(black_box(input), &mut out);
                    black_box(&out);
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

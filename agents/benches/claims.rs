//! Trials claimed per second, and claim latency, with 8 workers on one study: trials of zero
//! length (claim, then finish at once), so the figure is the storage's own. Each worker is a
//! thread with its own connection, as each `mtf sweep` worker has.
//!
//!     scripts/bench-claims.sh       (SQLite, and PostgreSQL in a throwaway server)
//!     cargo bench -p agents --bench claims -- STORAGE_URL [TRIALS]

use agents::sweep::space::Value;
use agents::sweep::storage::db::Location;
use agents::sweep::storage::{Liveness, Storage, TrialState};
use std::collections::BTreeMap;
use std::time::Instant;

const WORKERS: usize = 8;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let Some(url) = args.first() else {
        eprintln!("usage: claims STORAGE_URL [TRIALS]");
        std::process::exit(2);
    };
    let trials: usize = args.get(1).and_then(|t| t.parse().ok()).unwrap_or(2000);
    let loc = Location::parse(url).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2)
    });
    let study = format!("claims-{}", std::process::id());
    let live = Liveness::default();
    Storage::open(&loc, &study, "bench", live).unwrap();
    let start = Instant::now();
    let latencies: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|_| {
                s.spawn(|| {
                    let mut st = Storage::open(&loc, &study, "bench", live).unwrap();
                    let mut mine = Vec::new();
                    loop {
                        let t = Instant::now();
                        let claimed = st
                            .claim(
                                trials,
                                |n| format!("t{n}"),
                                |c| Some(BTreeMap::from([("x".to_string(), Value::Integer(c.number as i64))])),
                            )
                            .unwrap();
                        mine.push(t.elapsed().as_secs_f64());
                        let Some(c) = claimed else { break };
                        st.finish(c.number, TrialState::Complete, Some(0.0), None).unwrap();
                    }
                    mine.pop(); // the final claim that found nothing left
                    mine
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let mut sorted = latencies.clone();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize] * 1e3;
    let got = Storage::open(&loc, &study, "bench", live).unwrap().trials().unwrap();
    assert_eq!(got.len(), trials, "every claim counted once");
    println!(
        "{}: {WORKERS} workers, {trials} trials: {:.0} claims/s; claim latency median {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
        loc.name(),
        trials as f64 / secs,
        q(0.5),
        q(0.9),
        q(0.99)
    );
}

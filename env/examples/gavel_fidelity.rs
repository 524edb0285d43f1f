//! Every Gavel policy on Gavel's two reference traces next to Gavel's own numbers
//! (`../shared/gavel/reference/`), one JSON line per policy and trace (scripts/gavel-report.sh
//! makes docs/gavel.md's table of them):
//! `cargo run --release -p env --example gavel_fidelity [-- POLICY]` (with a policy: its jobs
//! more than 2% off Gavel's).
use env::worlds::gavel::{self, GavelWorld};
use env::worlds::World;
use std::path::Path;

fn world(config: &str, policy: &str) -> GavelWorld {
    let path = Path::new(config);
    let table = env::config::read_table(path, &[format!("mechanism.name=\"{policy}\"")]).unwrap();
    GavelWorld::new(gavel::load(table, path).unwrap())
}

/// This process's CPU seconds (`clock_gettime(CLOCK_PROCESS_CPUTIME_ID)`).
fn cpu_seconds() -> f64 {
    #[repr(C)]
    struct Timespec {
        sec: i64,
        nsec: i64,
    }
    extern "C" {
        fn clock_gettime(clock: i32, t: *mut Timespec) -> i32;
    }
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    let mut t = Timespec { sec: 0, nsec: 0 };
    // SAFETY: a valid pointer to a timespec-shaped struct.
    unsafe { clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.sec as f64 + t.nsec as f64 * 1e-9
}

fn main() {
    if let Some(p) = std::env::args().nth(1) {
        detail("configs/gavel/small.toml", "small_n100_r0.4_s0", &p);
        return;
    }
    for (config, trace) in [
        ("configs/gavel/small.toml", "small_n100_r0.4_s0"),
        ("configs/gavel/static.toml", "static_n50_s0"),
    ] {
        let reference = std::fs::read_to_string(format!("../shared/gavel/reference/{trace}.summary.csv")).unwrap();
        let jcts = std::fs::read_to_string(format!("../shared/gavel/reference/{trace}.jcts.csv")).unwrap();
        let header: Vec<&str> = jcts.lines().next().unwrap().split(',').collect();
        let cols: Vec<&str> = reference.lines().next().unwrap().split(',').collect();
        for line in reference.lines().skip(1) {
            let cells: Vec<&str> = line.split(',').collect();
            let policy = cells[0];
            if !scheduler::gavel::is_gavel(policy) {
                continue;
            }
            let mut w = world(config, policy);
            let t0 = cpu_seconds();
            w.run(0);
            let secs = cpu_seconds() - t0;
            let f = w.figures();
            let g = |name: &str| cells[cols.iter().position(|c| *c == name).unwrap()].parse::<f64>().unwrap();
            let col = header.iter().position(|h| *h == format!("jct_s_{policy}")).unwrap();
            let (mut within, mut total) = (0, 0);
            for l in jcts.lines().skip(1) {
                let c: Vec<&str> = l.split(',').collect();
                let id: usize = c[0].parse().unwrap();
                let theirs: f64 = c[col].parse().unwrap();
                total += 1;
                within += usize::from((w.jcts()[id] - theirs).abs() <= 0.1 * theirs);
            }
            println!(
                "{}",
                serde_json::json!({
                    "trace": trace, "policy": policy,
                    "avg_jct_h": [f[0], g("avg_jct_h")], "p95_jct_h": [f[2], g("p95_jct_h")],
                    "makespan_h": [f[3], g("makespan_h")], "utilization": [f[4], g("utilization")],
                    "rho_mean": [f[7], g("rho_mean")], "rounds": [f[6], g("rounds")],
                    "jobs_within_10pct": [within, total], "cpu_s": [secs, g("cpu_s")],
                })
            );
        }
    }
}

fn detail(config: &str, trace: &str, policy: &str) {
    let jcts = std::fs::read_to_string(format!("../shared/gavel/reference/{trace}.jcts.csv")).unwrap();
    let header: Vec<&str> = jcts.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == format!("jct_s_{policy}")).unwrap();
    let mut w = world(config, policy);
    w.run(0);
    for l in jcts.lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        let id: usize = c[0].parse().unwrap();
        let theirs: f64 = c[col].parse().unwrap();
        let r = w.jcts()[id] / theirs;
        if (r - 1.0).abs() > 0.02 {
            println!("job {id}: ours {:.0} theirs {theirs:.0} ratio {r:.3}", w.jcts()[id]);
        }
    }
}

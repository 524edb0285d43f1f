//! One episode of the quickstart's mix scaled to n agents x m accelerators (half of the agents
//! weight 1, a quarter each weights 2 and 4; half the accelerators of each Gemmini type; 12.5
//! tokens per agent, so MTF's paid phase stays busy at any size), every agent at threshold 0.5:
//! per round, the mechanism, the rest of the environment's round (arrivals, placement,
//! observation, service, rewards) and the episode's metrics (fairness included, sampled envy
//! above 1,000 agents), and the process's peak memory. One size per run, so the peak is that
//! size's.
//!
//! `cargo bench -p env --bench scale -- N M [ROUNDS]` prints one JSON line (what
//! `scripts/bench-scale.sh` collects).

use env::config::ScenarioFile;
use env::metrics::EpisodeMetrics;
use env::world::ClusterEnv;
use std::path::Path;
use std::time::Instant;

/// The scaled quickstart at n agents (divisible by 4) and m accelerators (even), `rounds`
/// rounds.
fn scenario(n: usize, m: usize, rounds: u32) -> env::config::Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    let sets = [
        format!("env.rounds={rounds}"),
        format!("env.agents.0.count={}", n / 2),
        format!("env.agents.1.count={}", n / 4),
        format!("env.agents.2.count={}", n / 4),
        format!("env.cluster.0.count={}", m / 2),
        format!("env.cluster.1.count={}", m / 2),
        format!("mechanism.total_tokens={}", 12.5 * n as f64),
    ];
    ScenarioFile::load(&path, &sets).expect("the scaled quickstart")
}

/// Peak resident memory of this process so far, in MiB (Linux; 0 elsewhere).
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let m: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4 * n);
    let rounds: u32 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(300);
    assert!(n >= 4 && n % 4 == 0 && m % 2 == 0, "n must be a multiple of 4 and m even");
    let t0 = Instant::now();
    let mut world = ClusterEnv::new(scenario(n, m, rounds));
    world.reset(1);
    let setup = t0.elapsed().as_secs_f64();
    let level = world.levels().iter().position(|&l| l == 0.5).expect("level 0.5");
    let actions = vec![level; n];
    let t = Instant::now();
    while !world.agents().is_empty() {
        world.step(&actions).expect("valid actions");
    }
    let stepping = t.elapsed().as_secs_f64();
    let mechanism = world.totals().sched_ns as f64 / 1e9;
    let t = Instant::now();
    let metrics = EpisodeMetrics::compute(&world, true);
    let measuring = t.elapsed().as_secs_f64();
    let r = f64::from(rounds);
    println!(
        "{}",
        serde_json::json!({
            "n": n,
            "m": m,
            "rounds": rounds,
            "setup_s": setup,
            "mechanism_ms_per_round": 1e3 * mechanism / r,
            "environment_ms_per_round": 1e3 * (stepping - mechanism) / r,
            "metrics_ms_per_round": 1e3 * measuring / r,
            "episode_s": setup + stepping + measuring,
            "peak_mib": peak_mib(),
            "welfare": metrics.welfare,
            "envy_sampled": metrics.fairness.as_ref().is_some_and(|f| f.envy_sample.is_some()),
        })
    );
}

//! Metrics on tiny cases computed by hand.

use env::config::ScenarioFile;
use env::eval::run_episode;
use env::metrics::EpisodeMetrics;
use env::policy::Fixed;
use env::world::ClusterEnv;
use std::path::Path;

fn scenario(text: &str) -> env::config::Scenario {
    let file: ScenarioFile = toml::from_str(text).unwrap();
    file.resolve(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/scenario.toml")))
        .unwrap()
}

/// Two agents (weights 1 and 3), four rate-40 accelerators, static partition (agent 0 owns c1,
/// agent 1 owns c0, c2, c3), deterministic service, fluid dispatch, no deadline; arrivals
/// (100, 10) then (0, 0).
///
/// Round 0: agent 0 (100 jobs) uses c1 and serves 40; agent 1 (10 jobs) uses c0 and serves 10;
/// c2 and c3 idle. Round 1: agent 0 (60 left) uses c1, serves 40; agent 1 has nothing.
/// Throughput: 80 / 2 = 40 and 10 / 2 = 5.
/// Envy: U[0][0] = 80/2 = 40; U[0][1] (agent 0's jobs on c0 then nothing) = 40/2 = 20;
/// U[1][1] = U[1][0] = 10/2 = 5. EF (eq. 3.5): w_1 U[0][0] = 120 >= w_0 U[0][1] = 20 holds;
/// w_0 U[1][1] = 5 < w_1 U[1][0] = 15 fails: one violation.
/// phi: agent 0 alone on 1/4 of 160 = 40 per round serves 80: phi = 1; agent 1 on 120 per
/// round serves 10: phi = 1. Pareto: idle accelerators while agent 0 has work, both rounds: 1.
const TWO_AGENTS: &str = r#"
[env]
rounds = 2
arrivals = "trace"
trace = "two-rounds.csv"
service = "deterministic"
dispatch = "fluid"
deadline = "none"
cluster = [{ type = "gemmini_2ghz", count = 4 }]
agents = [{ weight = 1.0, load = 0.5 }, { weight = 3.0, load = 0.5 }]
[mechanism]
name = "static_partition"
"#;

#[test]
fn two_agent_two_round_envy_phi_and_pareto_by_hand() {
    let m = run_episode(&scenario(TWO_AGENTS), 3, &mut Fixed { level: 0 }, true);
    assert_eq!(m.throughput, vec![40.0, 5.0]);
    assert_eq!(m.welfare, (1.0 * 40.0 + 3.0 * 5.0) / 4.0);
    let f = m.fairness.unwrap();
    assert_eq!(f.envy, vec![vec![40.0, 20.0], vec![5.0, 5.0]]);
    assert_eq!(f.ef_violations, 1);
    assert_eq!(f.phi, vec![1.0, 1.0]);
    assert_eq!(f.pareto, 1.0);
    // Mean wait: agent 0's 80 served jobs waited 0 (40 in round 0) and 1 (40 in round 1).
    assert_eq!(m.mean_wait, vec![0.5, 0.0]);
    assert_eq!(m.backlog, vec![(60.0 + 20.0) / 2.0, 0.0]);
}

#[test]
fn a_lone_agent_under_static_partition_owns_its_whole_share() {
    // One agent, two rate-40 accelerators, deterministic service, fluid dispatch: its
    // exclusive share is the whole cluster, so the replay serves exactly what it served.
    let m = run_episode(
        &scenario(
            r#"
[env]
rounds = 200
service = "deterministic"
dispatch = "fluid"
cluster = [{ type = "gemmini_2ghz", count = 2 }]
agents = [{ load = 0.9 }]
[mechanism]
name = "static_partition"
"#,
        ),
        11,
        &mut Fixed { level: 0 },
        true,
    );
    let f = m.fairness.unwrap();
    assert_eq!(f.phi, vec![1.0]);
    assert_eq!(f.ef_violations, 0);
    assert!(m.throughput[0] > 60.0, "{:?}", m.throughput);
}

#[test]
fn jain_and_welfare_follow_their_definitions() {
    let mut w = ClusterEnv::new(scenario("[env]\nrounds = 30\nagents = [{ count = 3, load = 0.7 }, { count = 1, weight = 2.0, load = 0.7 }]\ncluster = [{ type = \"gemmini_2ghz\", count = 6 }]"));
    w.reset(5);
    let mut left = vec![0u64; 4];
    while !w.agents().is_empty() {
        let step = w.step(&[3, 3, 3, 3]).unwrap();
        for i in 0..4 {
            left[i] = step.infos[i].backlog;
        }
    }
    let m = EpisodeMetrics::compute(&w, false);
    let x: Vec<f64> = (0..4).map(|i| m.throughput[i] / [1.0, 1.0, 1.0, 2.0][i]).collect();
    let jain = x.iter().sum::<f64>().powi(2) / (4.0 * x.iter().map(|v| v * v).sum::<f64>());
    assert!((m.jain - jain).abs() < 1e-12);
    let welfare = (m.throughput[0] + m.throughput[1] + m.throughput[2] + 2.0 * m.throughput[3]) / 5.0;
    assert!((m.welfare - welfare).abs() < 1e-12);
    let t = w.totals();
    for i in 0..4 {
        // Every job is accounted for: arrived = served + rejected + dropped + still queued.
        assert_eq!(t.arrived[i], t.served[i] + t.rejected[i] + t.dropped[i] + left[i], "agent {i}");
        assert!(t.served[i] > 0);
    }
}

//! The environment's record of a round: after `step`, `last_input()` is exactly what the
//! mechanism saw in the round just played, and the infos `step` returns describe that round.
//!
//! Regression tests: `last_input()` used to hold the next round's demands (re-running MTF on
//! it reproduced the allocation in 20 of 240 quickstart rounds), and `Step.infos` described the
//! next round with served, won and spent zeroed.

use env::config::{Queues, ScenarioFile};
use env::world::ClusterEnv;
use std::path::Path;

fn world(mechanism: &str, queues: Queues, leftovers: &str) -> ClusterEnv {
    let queues = match queues {
        Queues::Central => "central",
        Queues::PerAccelerator => "per_accelerator",
    };
    let overrides = [
        format!("env.queues=\"{queues}\""),
        format!("mechanism.name=\"{mechanism}\""),
        format!("mechanism.leftovers=\"{leftovers}\""),
        "env.rounds=40".to_string(),
        "env.deadline=20".to_string(),
        "env.arrivals=\"mmpp\"".to_string(),
        "env.agents.*.load=0.9".to_string(),
    ];
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    ClusterEnv::new(ScenarioFile::load(&path, &overrides).expect("quickstart config"))
}

#[test]
fn last_input_held_the_next_rounds_demands() {
    // Gavel's policies schedule jobs (env::worlds::gavel), not this world's agents.
    for &name in scheduler::registry::NAMES
        .iter()
        .filter(|n| !scheduler::registry::GAVEL.contains(n))
    {
        for queues in [Queues::Central, Queues::PerAccelerator] {
            let leftovers: &[&str] = if name == "mtf" {
                &["round_robin", "weighted_random"]
            } else {
                &["round_robin"]
            };
            for &left in leftovers {
                let mut env = world(name, queues, left);
                let params = env.scenario().file.mechanism.params();
                let mut rng = env::rng::stream(11, "test-actions", 0);
                env.reset(3);
                let (mut rounds, mut allocated) = (0, 0);
                while !env.agents().is_empty() {
                    let before = env.mechanism_state();
                    let actions: Vec<usize> = (0..env.n()).map(|i| env.action_space(i).sample(&mut rng)).collect();
                    env.step(&actions).unwrap();
                    let input = env.last_input();
                    input.validate().unwrap();
                    let mut again = scheduler::registry::build(name, &params).unwrap();
                    // A fresh mechanism is already in the state of an episode's start.
                    if let Some(state) = before.as_ref().filter(|s| Some(*s) != again.state().as_ref()) {
                        again.set_state(state, input).unwrap();
                    }
                    let rerun = scheduler::run(again.as_mut(), input);
                    assert_eq!(
                        &rerun,
                        env.last_allocation(),
                        "{name} ({queues:?}, leftovers {left}): round {rounds} is not reproduced from last_input()"
                    );
                    let m = env.m();
                    for i in 0..env.n() {
                        let level = env.levels()[actions[i]];
                        match env.action_kind() {
                            env::config::ActionKind::Threshold => assert_eq!(input.thresholds[i], level),
                            env::config::ActionKind::Bid => {
                                for c in 0..m {
                                    assert_eq!(input.bids[i * m + c], level * env.last_bid_values()[i * m + c], "{name}");
                                }
                            }
                        }
                    }
                    allocated += rerun.owners.iter().flatten().count();
                    rounds += 1;
                }
                assert_eq!(rounds, 40);
                assert!(allocated > 0, "{name}: nothing was ever allocated; the test would prove nothing");
            }
        }
    }
}

#[test]
fn step_infos_described_the_next_round() {
    for queues in [Queues::Central, Queues::PerAccelerator] {
        let mut env = world("mtf", queues, "round_robin");
        let n = env.n();
        let (_, first) = env.reset(5);
        let mut pending: Vec<env::world::Info> = first.to_vec();
        let mut backlog = vec![0u64; n];
        let (mut any_served, mut any_spent) = (false, false);
        let actions = vec![0; n];
        for round in 0..40 {
            let step = env.step(&actions).unwrap();
            let infos = step.infos.to_vec();
            let alloc = env.last_allocation().clone();
            let totals_dropped = env.totals().dropped.clone();
            for i in 0..n {
                let x = infos[i];
                // Arrivals, rejections and drops are those observed before the round was played.
                assert_eq!(x.arrived, pending[i].arrived, "round {round} agent {i}: arrived");
                assert_eq!(x.rejected, pending[i].rejected, "round {round} agent {i}: rejected");
                assert_eq!(x.dropped, pending[i].dropped, "round {round} agent {i}: dropped");
                assert_eq!(x.won as usize, alloc.owners.iter().filter(|o| **o == Some(i)).count());
                assert_eq!(x.spent, alloc.spent[i]);
                assert_eq!(x.budget, alloc.budgets[i]);
                assert_eq!(x.budget, env.budgets()[i]);
                assert_eq!(x.threshold, env.levels()[0]);
                // Conservation: what was queued, plus what came in, minus what left.
                let expect = backlog[i] + x.arrived - x.rejected - x.dropped - x.served;
                assert_eq!(x.backlog, expect, "round {round} agent {i}: backlog");
                assert!(x.won > 0 || x.served == 0);
                backlog[i] = x.backlog;
                any_served |= x.served > 0;
                any_spent |= x.spent > 0.0;
            }
            assert!(totals_dropped.iter().zip(&infos).all(|(t, x)| *t >= x.dropped));
            if !env.agents().is_empty() {
                // The next round's pending record is what the next step will report.
                pending = env.pending_infos().to_vec();
            }
        }
        assert!(any_served && any_spent, "{queues:?}: the episode never served or spent");
    }
}

/// The `net` reward is the `utility` reward minus the agent's mean start utility times the
/// tokens it spent, round by round, on the same seed and actions (the two worlds play the same
/// rounds: the reward changes nothing else).
#[test]
fn the_net_reward_charges_each_token_at_the_agents_mean_start_utility() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    let load = |reward: &str| ClusterEnv::new(ScenarioFile::load(&path, &[format!("env.reward=\"{reward}\"")]).unwrap());
    let (mut utility, mut net) = (load("utility"), load("net"));
    let mut rng = env::rng::stream(5, "test-actions", 0);
    utility.reset(9);
    net.reset(9);
    let (mut charged, mut rounds) = (0.0, 0);
    while !utility.agents().is_empty() {
        let actions: Vec<usize> = (0..utility.n()).map(|i| utility.action_space(i).sample(&mut rng)).collect();
        let spent = utility.step(&actions).unwrap().infos.iter().map(|x| x.spent).collect::<Vec<_>>();
        net.step(&actions).unwrap();
        for i in 0..utility.n() {
            let price = utility.last_input().mean_start_utility(i);
            let expected = utility.last_rewards()[i] - price * spent[i];
            assert!((net.last_rewards()[i] - expected).abs() < 1e-12, "round {rounds}, agent {i}");
            charged += price * spent[i];
        }
        rounds += 1;
    }
    assert!(rounds > 0 && charged > 1.0, "tokens were spent: {charged}");
}

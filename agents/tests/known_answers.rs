//! Known answers for every learner in a world built to have one
//! (`configs/designed/dominant-level.toml`): threshold 0.5 is every agent's dominant level,
//! with the gap stated in the config and recomputed here, and every learner trained on its own
//! reward with the config's default budget must find it in 5 of 5 training replicates.

use crate::common::mtf;
use agents::train::load_run;
use env::config::{Scenario, ScenarioFile};
use env::eval::{episode_seeds, evaluate};
use env::policy::Policy;
use env::world::Observations;
use std::path::{Path, PathBuf};

fn designed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/designed/dominant-level.toml")
}

fn scenario() -> Scenario {
    ScenarioFile::load(&designed(), &[]).unwrap()
}

/// Agent 0 plays level `me`, every other agent level `rest`.
#[derive(Clone)]
struct OneVsRest {
    me: usize,
    rest: usize,
}

impl Policy for OneVsRest {
    fn begin_episode(&mut self, _seed: u64) {}

    fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        actions.fill(self.rest);
        actions[0] = self.me;
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
}

/// Agent 0's mean own reward per round (held-out seeds).
fn own_reward(sc: &Scenario, me: usize, rest: usize) -> f64 {
    let eps = evaluate(sc, &episode_seeds(sc.file.seed, 16), &OneVsRest { me, rest }, false, 2);
    eps.iter().map(|e| e.reward[0]).sum::<f64>() / eps.len() as f64
}

#[test]
fn the_designed_level_is_dominant_by_the_stated_gap() {
    let sc = scenario();
    let levels = sc.action_levels().to_vec();
    let best = levels.iter().position(|&l| l == 0.5).unwrap();
    for rest in 0..levels.len() {
        let at_best = own_reward(&sc, best, rest);
        let other = (0..levels.len())
            .filter(|&l| l != best)
            .map(|l| own_reward(&sc, l, rest))
            .fold(f64::NEG_INFINITY, f64::max);
        let gap = at_best - other;
        assert!(
            gap >= 0.6,
            "others at {}: 0.5 earns {at_best:.3}, the best other level {other:.3}",
            levels[rest]
        );
    }
    // Everyone at 0.5 against everyone at 0, as the config states.
    let (all_best, all_zero) = (own_reward(&sc, best, best), own_reward(&sc, 0, 0));
    assert!(
        (all_best - 0.862).abs() < 0.005 && (all_zero - 0.200).abs() < 0.005,
        "{all_best} {all_zero}"
    );
}

/// Train `kind` with the designed world's defaults over 5 replicates; every replicate's
/// greedy policy must play 0.5 in at least 90% of every agent's held-out rounds.
fn finds_the_dominant_level(kind: &str) {
    let out = crate::common::tmp("known", kind);
    let cfg = designed();
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        cfg.to_str().unwrap(),
        "--set",
        &format!("learner.kind={kind}"),
        "--replicates",
        "5",
        "--threads",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let sc = scenario();
    let seeds = episode_seeds(sc.file.seed, 8);
    for k in 0..5 {
        let (_, learner, _) = load_run(&out.join(format!("replicate-{k}")), false).unwrap();
        let eps = evaluate(&sc, &seeds, learner.fork().as_ref(), false, 2);
        for agent in 0..sc.n() {
            // Mean threshold >= 0.45: level 0.5 in at least 90% of the rounds.
            let mean = eps.iter().map(|e| e.threshold[agent]).sum::<f64>() / eps.len() as f64;
            assert!(
                mean >= 0.45,
                "{kind}, replicate {k}, agent {agent}: mean greedy threshold {mean:.3}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn hedge_finds_the_dominant_level() {
    finds_the_dominant_level("hedge");
}

#[test]
fn the_actor_critic_finds_the_dominant_level() {
    finds_the_dominant_level("actor_critic");
}

#[test]
fn ppo_finds_the_dominant_level() {
    finds_the_dominant_level("ppo");
}

#[test]
fn es_finds_the_dominant_level() {
    finds_the_dominant_level("es");
}

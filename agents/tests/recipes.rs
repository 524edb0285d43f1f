//! The recipes of `agents/README.md`, exercised: the learner added by the recipe (`uniform`:
//! one file and one registry line) trains, resumes from its checkpoint, is evaluated greedy and
//! sampled, and exports, with nothing else changed; every registered kind has its config
//! section and its name.

use crate::common;
use agents::learners::{LearnerKind, LearnerSection};
use common::{mtf, quickstart};

#[test]
fn every_registered_learner_has_a_name_and_a_section_in_the_resolved_config() {
    let section = toml::to_string(&LearnerSection::default()).unwrap();
    for &kind in LearnerKind::ALL {
        let name = kind.name();
        assert_eq!(serde_json::to_string(&kind).unwrap(), format!("\"{name}\""));
        assert!(section.contains(&format!("[{name}]")), "no [learner.{name}] in {section}");
    }
    assert!(LearnerKind::ALL.contains(&LearnerKind::Uniform));
}

#[test]
fn the_learner_the_recipe_added_trains_evaluates_and_exports_end_to_end() {
    let dir = common::tmp("recipes", "uniform");
    common::train_quickstart(
        &dir,
        &[
            "learner.kind=uniform",
            "train.episodes=2",
            "env.rounds=30",
            "train.checkpoint_every=1",
        ],
    );
    // Resumed from its first episode's checkpoint, it trains the second again, the same.
    let log = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    std::fs::copy(dir.join("checkpoints/episode-000001.ckpt"), dir.join("checkpoints/latest.ckpt")).unwrap();
    let (code, _, err) = mtf(&["train", "--resume", dir.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0, "{err}");
    let again = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
    let untimed = |s: &str| -> Vec<serde_json::Value> {
        s.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().remove("wall_time");
                v
            })
            .collect()
    };
    assert_eq!(untimed(&again), untimed(&log));
    let q = quickstart();
    let sim = |policy: &str, name: &str| -> serde_json::Value {
        let out = dir.join(name);
        let (code, stdout, err) = mtf(&[
            "simulate",
            "--config",
            &q,
            "--set",
            "env.rounds=30",
            "--policy",
            policy,
            "--seeds",
            "4",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&stdout).unwrap()
    };
    let run = format!("run:{}", dir.display());
    // Greedy: the argmax of a flat distribution, level 0, for everyone (its welfare is
    // fixed:0's, seed by seed).
    let greedy = sim(&run, "greedy");
    let fixed0 = sim("fixed:0.0", "fixed0");
    assert_eq!(greedy["welfare"], fixed0["welfare"]);
    // Sampled: every level about as often (mean threshold 0.45, the levels' mean).
    let episodes = dir.join("sampled").join("metrics.jsonl");
    sim(&format!("sampled:{run}"), "sampled");
    let text = std::fs::read_to_string(episodes).unwrap();
    let mean: f64 = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let t: Vec<f64> = v["threshold"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
            t.iter().sum::<f64>() / t.len() as f64
        })
        .sum::<f64>()
        / 4.0;
    assert!((mean - 0.45).abs() < 0.05, "mean threshold {mean}");
    // It exports, and the exported agent's probabilities are uniform.
    let agent = dir.join("agent");
    let (code, _, err) = mtf(&["export", "--run", dir.to_str().unwrap(), "--out", agent.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let line = format!("{{\"budget\": 0.1, \"utilities\": [{}]}}\n", vec!["0.5"; 16].join(", "));
    let out = common::run_piped(&agent, &["--agent", "2"], line.as_bytes());
    let reply: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let p: Vec<f64> = reply["probabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    assert_eq!(p.len(), 10);
    assert!(p.iter().all(|&x| (x - 0.1).abs() < 1e-6), "{reply}");
    let _ = std::fs::remove_dir_all(&dir);
}

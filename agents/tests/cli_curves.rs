//! `mtf curves`: runs that differ only in their seeds are one series (CI over runs), others
//! their own; held-out levels and reference policies; CSV and figures; bad input.

use crate::common;
use common::mtf;

#[test]
fn curves_overlay_runs_and_pool_seeds_into_one_series() {
    let dir = common::tmp("curves", "runs");
    let (a, b, hedge, out) = (dir.join("a"), dir.join("b"), dir.join("hedge"), dir.join("out"));
    // Two runs of one config with different seeds, one of another learner.
    common::train_quickstart(&a, &["learner.kind=hedge", "train.episodes=4", "seed=5"]);
    common::train_quickstart(&b, &["learner.kind=hedge", "train.episodes=4", "seed=6"]);
    common::train_quickstart(&hedge, &["learner.kind=uniform", "train.episodes=4"]);
    let (code, json, err) = mtf(&[
        "curves",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        hedge.to_str().unwrap(),
        "--against",
        "fixed:0.0,fixed:w1=0.2,w2=0.4,w4=0.7",
        "--blocks",
        "2",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let series = v["series"].as_array().unwrap();
    assert_eq!(series.len(), 2, "{v}");
    assert_eq!(series[0]["label"], "a + b (2 runs)");
    assert_eq!(series[0]["runs"].as_array().unwrap().len(), 2);
    // Two blocks of two episodes; the pooled series' points are over the two runs' block means.
    let first = |dir: &std::path::Path| -> f64 {
        let text = std::fs::read_to_string(dir.join("metrics.jsonl")).unwrap();
        let w: Vec<f64> = text
            .lines()
            .take(2)
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["welfare"].as_f64().unwrap())
            .collect();
        (w[0] + w[1]) / 2.0
    };
    let pooled = series[0]["points"][0][1]["mean"].as_f64().unwrap();
    assert!((pooled - (first(&a) + first(&b)) / 2.0).abs() < 1e-9, "{pooled}");
    assert_eq!(series[0]["points"][0][0], 2);
    assert!(series[1]["held_out"]["mean"].is_number());
    assert_eq!(v["references"].as_array().unwrap().len(), 2);
    assert_eq!(v["references"][1]["policy"], "fixed:w1=0.2,w2=0.4,w4=0.7");
    let csv = std::fs::read_to_string(out.join("curves.csv")).unwrap();
    assert!(
        csv.starts_with("series,kind,episodes,mean,ci95,n\n") && csv.contains("a + b (2 runs),training,2,"),
        "{csv}"
    );
    assert!(csv.contains(",held_out_greedy,") && csv.contains("fixed:0.0,reference,"), "{csv}");
    for f in ["curves.png", "curves.svg"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // Bad input: one line, status 2.
    for (args, says) in [
        (
            vec!["curves", a.to_str().unwrap(), "--metric", "welfar"],
            "not a per-episode figure",
        ),
        (vec!["curves", dir.to_str().unwrap()], "not a run directory or run group"),
    ] {
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(says) && err.trim().lines().count() == 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

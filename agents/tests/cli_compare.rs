//! `mtf compare` on a tiny config: files, plots, and consistency with `mtf simulate`.

mod common;
use common::mtf;
use std::path::{Path, PathBuf};

fn tmp(name: &str) -> PathBuf {
    common::tmp("compare", name)
}

#[test]
fn compare_writes_tables_and_plots_consistent_with_simulate() {
    let q = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/thesis/envy.toml");
    let q = q.to_str().unwrap();
    let out = tmp("tiny");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        q,
        "--policies",
        "fixed:all",
        "--mechanisms",
        "mtf,round_robin",
        "--seeds",
        "3",
        "--set",
        "env.rounds=40",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.starts_with("| policy | mechanism | welfare |"), "{stdout}");
    for f in [
        "comparison.md",
        "comparison.csv",
        "config.toml",
        "summary.json",
        "metrics.jsonl",
        "welfare.png",
        "welfare.svg",
        "throughput_by_weight.png",
        "phi.png",
        "phi.svg",
        "envy-00.png",
        "envy-19.svg",
    ] {
        assert!(out.join(f).exists(), "missing {f}");
    }
    let png = std::fs::read(out.join("welfare.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(std::fs::read_to_string(out.join("welfare.svg"))
        .unwrap()
        .contains("welfare (jobs per round)"));
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 10 * 2, "fixed:all = 10 levels, x 2 mechanisms");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    // Every row's welfare equals `mtf simulate --json` on the same seeds.
    for (policy, mechanism) in [("fixed:0.3", "mtf"), ("fixed:0.9", "round_robin")] {
        let row: Vec<&str> = lines
            .iter()
            .find(|l| l.starts_with(&format!("{policy},{mechanism},")))
            .unwrap()
            .split(',')
            .collect();
        let sim = tmp(&format!("sim-{mechanism}"));
        let (code, json, err) = mtf(&[
            "simulate",
            "--config",
            q,
            "--policy",
            policy,
            "--mechanism",
            mechanism,
            "--seeds",
            "3",
            "--set",
            "env.rounds=40",
            "--json",
            "--out",
            sim.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            row[col("welfare_mean")].parse::<f64>().unwrap(),
            v["welfare"]["mean"].as_f64().unwrap(),
            "{policy} {mechanism}"
        );
        assert_eq!(
            row[col("ef_violations_mean")].parse::<f64>().unwrap(),
            v["ef_violations"]["mean"].as_f64().unwrap()
        );
        assert_eq!(
            row[col("phi_min_mean")].parse::<f64>().unwrap(),
            v["phi_min"]["mean"].as_f64().unwrap()
        );
        let _ = std::fs::remove_dir_all(&sim);
    }
    // Thresholds do not matter to round robin: its rows are all equal.
    let rr: Vec<&str> = lines
        .iter()
        .filter(|l| l.contains(",round_robin,"))
        .map(|l| l.split_once(",round_robin,").unwrap().1)
        .collect();
    assert!(rr.iter().all(|r| r.split(',').next() == rr[0].split(',').next()));
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_compare_invocations_are_user_errors() {
    let q = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    for (args, want) in [
        (vec!["--policies", "fixed:0.33"], "not one of the threshold levels"),
        (
            vec!["--policies", "fixed:0.0", "--mechanisms", "lottery"],
            "unknown mechanism `lottery`",
        ),
        (vec!["--policies", "run:/no/such/run"], "not a run directory"),
    ] {
        let mut all = vec!["compare", "--config", q.to_str().unwrap()];
        all.extend(args.iter());
        let (code, _, err) = mtf(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

//! `mtf compare` on a tiny config: files, plots, and consistency with `mtf simulate`.

use crate::common;
use common::mtf;
use std::path::Path;

fn tmp(name: &str) -> common::Tmp {
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
        "envy-00-fixed_0.0_mtf.png",
        "envy-10-any_round_robin.svg",
    ] {
        assert!(out.join(f).exists(), "missing {f}");
    }
    // comparison.md links every figure, marks the best row and explains its columns.
    let md = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    assert!(
        md.contains("- [envy-10-any_round_robin.png](envy-10-any_round_robin.png)") && md.contains("any: the mechanism ignores"),
        "{md}"
    );
    assert!(md.contains("- [welfare_paired.png](welfare_paired.png)"), "{md}");
    assert_eq!(md.matches("| **").count(), 1, "one best row in bold: {md}");
    let png = std::fs::read(out.join("welfare.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(std::fs::read_to_string(out.join("welfare.svg"))
        .unwrap()
        .contains("welfare (jobs per round)"));
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    // fixed:all = 10 levels under MTF, and one row for every policy under round robin (it
    // ignores thresholds).
    assert_eq!(lines.len(), 1 + 10 + 1, "{csv}");
    let header: Vec<&str> = lines[0].split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    // Every row's welfare equals `mtf simulate --json` on the same seeds.
    for (policy, mechanism, simulated) in [("fixed:0.3", "mtf", "fixed:0.3"), ("any", "round_robin", "fixed:0.9")] {
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
            simulated,
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

#[test]
fn paired_differences_match_a_hand_computation() {
    let q = common::quickstart();
    let out = tmp("paired");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        "fixed:0.0,fixed:0.9",
        "--mechanisms",
        "mtf,stride",
        "--seeds",
        "4",
        "--set",
        "env.rounds=60",
        "--baseline",
        "fixed:0.0/stride",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // Each row's per-seed welfare from metrics.jsonl, in seed order.
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let welfare = |policy: &str, mech: &str| -> Vec<f64> {
        lines
            .iter()
            .filter(|l| l["policy"] == policy && l["mechanism"] == mech)
            .map(|l| l["welfare"].as_f64().unwrap())
            .collect()
    };
    // Stride ignores thresholds: fixed:0.0/stride names its one row, any/stride.
    let base = welfare("any", "stride");
    assert_eq!(base.len(), 4);
    for row in v["rows"].as_array().unwrap() {
        let (p, m) = (row["policy"].as_str().unwrap(), row["mechanism"].as_str().unwrap());
        let d: Vec<f64> = welfare(p, m).iter().zip(&base).map(|(a, b)| a - b).collect();
        let mean = d.iter().sum::<f64>() / 4.0;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 3.0).sqrt();
        // Student's t, 3 degrees of freedom, 0.975: 3.182.
        let ci = 3.182 * sd / 2.0;
        let paired = &row["paired"];
        assert_eq!(paired["baseline"], "any/stride");
        let (got_mean, got_ci) = (
            paired["welfare_diff"]["mean"].as_f64().unwrap(),
            paired["welfare_diff"]["ci95"].as_f64().unwrap(),
        );
        assert!(
            (got_mean - mean).abs() < 1e-9 && (got_ci - ci).abs() < 1e-9,
            "{p}/{m}: {got_mean} +- {got_ci} vs {mean} +- {ci}"
        );
        assert_eq!(paired["significant"], mean.abs() > ci, "{p}/{m}");
    }
    let md = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    assert!(
        md.contains("| baseline |") && md.contains("Δ welfare: each row's weighted welfare minus the baseline's (any/stride)"),
        "{md}"
    );
    assert!(out.join("welfare_paired.png").exists());
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .ends_with("baseline,welfare_diff_mean,welfare_diff_ci95,welfare_diff_significant"));
    // A baseline that is not a row is a usage error naming the rows.
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        "fixed:0.0",
        "--seeds",
        "2",
        "--set",
        "env.rounds=20",
        "--baseline",
        "fixed:0.5/mtf",
        "--out",
        out.join("bad").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--baseline fixed:0.5/mtf: no such row (rows: fixed:0.0/mtf)"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// One seed says nothing about the spread: no CI, no significance star, and a note saying so
/// (it printed `-1.642 +- 0.000 *`).
#[test]
fn one_seed_gave_zero_width_cis_and_stars() {
    let q = common::quickstart();
    let out = tmp("one-seed");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        "fixed:0.0,fixed:0.5",
        "--seeds",
        "1",
        "--set",
        "env.rounds=40",
        "--quiet",
        "--baseline",
        "fixed:0/mtf",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| fixed:")).collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(rows.iter().all(|r| !r.contains("+- ") && !r.contains(" * |")), "{stdout}");
    assert!(stdout.contains("One seed: no confidence intervals"), "{stdout}");
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let ci = header.iter().position(|h| *h == "welfare_ci95").unwrap();
    assert!(csv.lines().skip(1).all(|l| l.split(',').nth(ci) == Some("")), "{csv}");
    let _ = std::fs::remove_dir_all(&out);
}

/// The valuation world's comparison shows its own figures: surplus per bidder per item as the
/// headline (paired), revenue and the share sold, no welfare or queue columns. Known answer:
/// truthful bids (factor 1) in a second-price auction among 4 bidders with U[0, 1) values earn
/// the expected second-highest value, 3/5 per item.
#[test]
fn the_valuation_world_compared_welfare_it_does_not_have() {
    let auction = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/auctions/second-price.toml");
    let out = tmp("valuations");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        auction.to_str().unwrap(),
        "--policies",
        "fixed:0.5,fixed:1.0",
        "--seeds",
        "4",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let head = stdout.lines().next().unwrap();
    assert!(
        head.starts_with("| policy | mechanism | surplus/bidder-item | Δ surplus/bidder-item (paired) | revenue/item | sold share"),
        "{head}"
    );
    assert!(
        !head.contains("welfare") && !head.contains("dropped") && !head.contains("Jain"),
        "{head}"
    );
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name}: {header:?}"))
    };
    let truthful: Vec<&str> = csv.lines().find(|l| l.starts_with("fixed:1.0,")).unwrap().split(',').collect();
    let revenue: f64 = truthful[col("revenue_per_item_mean")].parse().unwrap();
    assert!((revenue - 0.6).abs() < 0.02, "revenue {revenue}, theory 3/5");
    assert!(header.contains(&"surplus_per_bidder_item_diff_mean"));
    assert!(!out.join("throughput_by_weight.png").exists());
    let _ = std::fs::remove_dir_all(&out);
}

/// The comparison table headed each weight class's per-agent throughput "thr w=1", read as a
/// threshold (issue 40.8).
#[test]
fn thr_w_1_read_as_a_threshold() {
    let dir = common::tmp("compare", "thr");
    let q = common::quickstart();
    let (code, _, err) = common::mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        "fixed:0.2",
        "--seeds",
        "1",
        "--set",
        "env.rounds=20",
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(dir.join("comparison.md")).unwrap();
    assert!(md.contains("jobs/round per agent, w=1") && !md.contains("thr w="), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Rows were labelled by their spec, a run's with its timestamped directory (issue 40.5: no way
/// to name rows). `--label NAME=SPEC` names them in the table, the CSV and the figures; the JSON
/// keeps the spec beside the name; a label that matches no row is one error line. In every
/// world.
#[test]
fn rows_could_not_be_named() {
    let dir = common::tmp("compare", "labels");
    let q = common::quickstart();
    let out = dir.join("cmp");
    let (code, stdout, err) = common::mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        "fixed:0.2,fixed:w1=0.2,w2=0.4,w4=0.7",
        "--label",
        "by class=fixed:w1=0.2,w2=0.4,w4=0.7",
        "--label",
        "best fixed=fixed:0.2",
        "--baseline",
        "by class/mtf",
        "--seeds",
        "2",
        "--set",
        "env.rounds=20",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows: Vec<(String, String)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["policy"].as_str().unwrap().to_string(), r["spec"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(
        rows,
        vec![
            ("best fixed".into(), "fixed:0.2".into()),
            ("by class".into(), "fixed:w1=0.2,w2=0.4,w4=0.7".into())
        ]
    );
    // `--baseline` took a renamed row by its name (it took a spec only before 2026-12-02): the
    // by-class row is the baseline, the other row is paired against it.
    // The rows name the baseline by its name too, and its own row says `baseline` (it kept the
    // spec and showed +0.000 before).
    assert_eq!(v["rows"][0]["paired"]["baseline"], "by class/mtf", "{v}");
    assert_eq!(v["rows"][1]["paired"]["welfare_diff"]["mean"], 0.0, "{v}");
    let md = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    let csv = std::fs::read_to_string(out.join("comparison.csv")).unwrap();
    assert!(md.contains("| best fixed | mtf |") && md.contains("| by class | mtf |"), "{md}");
    let line = md.lines().find(|l| l.starts_with("| by class | mtf |")).unwrap();
    assert!(line.contains("| baseline |") && md.contains("baseline's (by class/mtf)"), "{md}");
    assert!(csv.contains("best fixed,mtf") && csv.contains("by class,mtf"), "{csv}");
    // Names that would not tell rows apart (the review of this change found each accepted).
    for (labels, says) in [
        (vec!["x=fixed:0.3"], "no row has the policy `fixed:0.3`"),
        (vec!["fixed:0.2"], "expected NAME=SPEC"),
        (vec!["low=fixed:0.2", "low=fixed:0.5"], "`low` names two policies"),
        (vec!["fixed:0.5=fixed:0.2"], "another row's policy"),
        (vec!["low=fixed:0.2", "other=fixed:0.2"], "is labelled twice"),
        (vec!["a|b=fixed:0.2"], "without `|`"),
    ] {
        let base = [
            "compare",
            "--config",
            &q,
            "--policies",
            "fixed:0.2,fixed:0.5",
            "--set",
            "env.rounds=5",
        ];
        refused_labels(&base, &labels, says, &dir.join("bad"));
    }
    // A label's own form is checked before any row is played: with an agent that closes its
    // output at once, the label's error comes first (the agent's did before 2026-12-02).
    let (code, _, err) = common::mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        "agent:/bin/true",
        "--label",
        "a|b=agent:/bin/true",
        "--seeds",
        "1",
        "--set",
        "env.rounds=5",
        "--out",
        dir.join("bad-early").to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("without `|`") && !dir.join("bad-early").exists(), "{err}");
    // Every world's comparison takes them (the queue world's alone before 2026-12-02): the
    // market's duel, a spec of one row and one of several (fixed:all).
    let duel = format!("{}/../configs/market/duel.toml", env!("CARGO_MANIFEST_DIR"));
    let out = dir.join("duel");
    let (code, stdout, err) = common::mtf(&[
        "compare",
        "--config",
        &duel,
        "--policies",
        "own,fixed:0.90,fixed:all",
        "--label",
        "own factor=own",
        "--label",
        "best bid=fixed:0.90",
        "--label",
        "grid=fixed:all",
        "--baseline",
        "own factor",
        "--seeds",
        "1",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows: Vec<(&str, &str)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["policy"].as_str().unwrap(), r["spec"].as_str().unwrap()))
        .collect();
    assert_eq!(
        &rows[..3],
        &[("own factor", "own"), ("best bid", "fixed:0.9"), ("grid, fixed:0.5", "fixed:0.5")]
    );
    assert_eq!(rows.len(), 2 + 11 + 1, "the duel's 11 factors and its named action `own`");
    // Under first price the learner's best bid 0.9 earns 11 to its own factor's 10, against
    // the renamed baseline.
    let gain = v["rows"][1]["improvement"]["mean"].as_f64().unwrap();
    assert!((gain - 1.0).abs() < 1e-9, "{gain}");
    let md = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    assert!(md.contains("| best bid |") && md.contains("vs own factor/"), "{md}");
    for (labels, says) in [
        (vec!["x=fixed:0.7"], "no row has the policy `fixed:0.7`"),
        (vec!["fixed:0.9=own"], "another row's policy"),
        (vec!["a=own", "a=fixed:0.9"], "`a` names two policies"),
    ] {
        refused_labels(
            &["compare", "--config", &duel, "--policies", "own,fixed:0.9"],
            &labels,
            says,
            &dir.join("duel-bad"),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `base` with `labels` on one seed is refused in one line saying `says`, leaving no `out`.
fn refused_labels(base: &[&str], labels: &[&str], says: &str, out: &std::path::Path) {
    let mut args = base.to_vec();
    args.extend(["--seeds", "1", "--out", out.to_str().unwrap()]);
    for l in labels {
        args.extend(["--label", l]);
    }
    let (code, _, err) = common::mtf(&args);
    assert_eq!(code, 2, "{labels:?}: {err}");
    assert!(err.contains(says) && err.trim().lines().count() == 1, "{labels:?}: {err}");
    assert!(!out.exists(), "{labels:?}: a refused label leaves no run directory");
}

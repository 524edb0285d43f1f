//! Training replicates as a run group (`mtf train --replicates R`): replicate 0 is the plain
//! run, the group does not depend on `--threads`, a killed group resumes to the same summary,
//! and `mtf compare` reports a group's replicates and their statistics.

use crate::common;
use common::{mtf, quickstart};
use serde_json::Value;
use std::path::Path;

const SETS: [&str; 4] = ["--set", "train.episodes=2", "--set", "env.rounds=40"];

fn train(out: &Path, extra: &[&str]) -> Value {
    let q = quickstart();
    let mut args = vec![
        "train",
        "--config",
        &q,
        "--quiet",
        "--json",
        "--set",
        "learner.kind=ppo",
        "--set",
        "train.eval_seeds=3",
    ];
    args.extend(SETS);
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(extra);
    let (code, stdout, err) = mtf(&args);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&stdout).unwrap()
}

/// A summary without its wall-clock figures.
fn untimed(mut v: Value) -> Value {
    if let Some(o) = v.as_object_mut() {
        for k in ["seconds", "train_seconds", "agent_updates_per_second", "runs"] {
            o.remove(k);
        }
        for (_, x) in o.iter_mut() {
            *x = untimed(x.take());
        }
    }
    v
}

/// The policy (or label) of each row of a comparison's JSON, in order.
fn row_policies(v: &Value) -> Vec<&str> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect()
}

#[test]
fn replicate_0_is_the_plain_run_and_the_group_is_the_same_on_any_thread_count() {
    let dir = common::tmp("groups", "threads");
    let plain = train(&dir.join("plain"), &[]);
    let one = train(&dir.join("one"), &["--replicates", "3", "--threads", "1"]);
    let two = train(&dir.join("two"), &["--replicates", "3", "--threads", "2"]);
    assert_eq!(common::logged(&dir.join("plain")), common::logged(&dir.join("one/replicate-0")));
    assert_eq!(
        plain["summary"]["eval_welfare"],
        serde_json::from_str::<Value>(&std::fs::read_to_string(dir.join("one/replicate-0/summary.json")).unwrap()).unwrap()["eval_welfare"]
    );
    assert_ne!(
        common::logged(&dir.join("one/replicate-0")),
        common::logged(&dir.join("one/replicate-1"))
    );
    assert_eq!(untimed(one["summary"].clone()), untimed(two["summary"].clone()));
    let s = &one["summary"];
    assert_eq!(s["replicates"], 3);
    assert_eq!(s["vs_baseline"]["greedy"]["scores"].as_array().unwrap().len(), 3);
    // The scores are each replicate's held-out welfare minus the baseline's, on the same seeds.
    let welfare = |k: usize| -> f64 {
        let v: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(format!("one/replicate-{k}/summary.json"))).unwrap()).unwrap();
        v["eval_welfare"]["mean"].as_f64().unwrap()
    };
    let base = s["baseline"]["eval_welfare"]["mean"].as_f64().unwrap();
    for k in 0..3 {
        let score = s["vs_baseline"]["greedy"]["scores"][k].as_f64().unwrap();
        assert!(
            (score - (welfare(k) - base)).abs() < 1e-9,
            "replicate {k}: {score} vs {}",
            welfare(k) - base
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn behind_the_seam_a_groups_replicates_train_side_by_side_to_the_same_results() {
    // --threads 2 trains two replicates at once (one thread each), --threads 5 three (two,
    // two and one threads), --threads 1 one after another: the same lines, summaries and
    // group statistics (bench-replicates.sh times it).
    let dir = common::tmp("groups", "seam-threads");
    let seam = ["--set", "env.stack=\"seam\"", "--replicates", "3"];
    let one = train(&dir.join("one"), &[&seam[..], &["--threads", "1"]].concat());
    let two = train(&dir.join("two"), &[&seam[..], &["--threads", "2"]].concat());
    let five = train(&dir.join("five"), &[&seam[..], &["--threads", "5"]].concat());
    for (k, other) in (0..3).flat_map(|k| [(k, "two"), (k, "five")]) {
        let (a, b) = (dir.join(format!("one/replicate-{k}")), dir.join(format!("{other}/replicate-{k}")));
        assert_eq!(common::logged(&a), common::logged(&b), "replicate {k}");
        let summary = |d: &Path| untimed(serde_json::from_str(&std::fs::read_to_string(d.join("summary.json")).unwrap()).unwrap());
        let (mut x, mut y) = (summary(&a), summary(&b));
        for v in [&mut x, &mut y] {
            v.as_object_mut().unwrap().remove("agent_steps_per_second");
            v["last_episode"].as_object_mut().unwrap().remove("wall_time");
        }
        assert_eq!(x, y, "replicate {k}");
    }
    assert_ne!(
        common::logged(&dir.join("one/replicate-0")),
        common::logged(&dir.join("one/replicate-1"))
    );
    let group = |v: &Value| {
        let mut s = untimed(v["summary"].clone());
        s.as_object_mut().unwrap().remove("replicates");
        s
    };
    assert_eq!(group(&one), group(&two));
    assert_eq!(group(&one), group(&five));
    assert_eq!(
        one["summary"]["vs_best_fixed_per_replicate"].as_array().map(Vec::len),
        Some(3),
        "{one}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_group_killed_before_its_summary_resumes_to_the_same_summary() {
    let dir = common::tmp("groups", "resume");
    let whole = train(&dir, &["--replicates", "2"]);
    // As if killed mid-way: replicate 1 back at its first episode, no summaries.
    let r1 = dir.join("replicate-1");
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    std::fs::remove_file(r1.join("summary.json")).unwrap();
    std::fs::remove_file(r1.join("checkpoints/latest.ckpt")).unwrap();
    let kept: Vec<_> = std::fs::read_dir(r1.join("checkpoints")).unwrap().flatten().collect();
    for k in kept {
        std::fs::remove_file(k.path()).unwrap();
    }
    let (code, stdout, err) = mtf(&["train", "--resume", dir.to_str().unwrap(), "--quiet", "--json"]);
    assert_eq!(code, 0, "{err}");
    let resumed: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(untimed(resumed["summary"].clone()), untimed(whole["summary"].clone()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_reports_every_replicate_greedy_and_sampled_and_the_group_across_them() {
    let dir = common::tmp("groups", "compare");
    train(&dir.join("g"), &["--replicates", "2"]);
    let q = quickstart();
    let group = format!("run:{}", dir.join("g").display());
    let out = dir.join("cmp");
    // The group beside fixed:0.2 on 3 seeds, with `extra` flags: the JSON report.
    let compare = |out: &Path, extra: &[&str]| -> Value {
        let policies = format!("fixed:0.2,{group}");
        let mut args = vec!["compare", "--config", &q, "--set", "env.rounds=40", "--policies", &policies];
        args.extend(extra);
        args.extend(["--seeds", "3", "--json", "--out", out.to_str().unwrap()]);
        let (code, stdout, err) = mtf(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&stdout).unwrap()
    };
    let v = compare(&out, &[]);
    let policies = row_policies(&v);
    assert_eq!(policies.len(), 5, "{policies:?}");
    assert!(
        policies[1].ends_with("replicate-0") && policies[3].starts_with("sampled:run:"),
        "{policies:?}"
    );
    let groups = v["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["policy"], group.as_str());
    // The group's scores are its replicates' paired differences.
    let diff = |k: usize| v["rows"][k]["paired"]["welfare_diff"]["mean"].as_f64().unwrap();
    assert_eq!(groups[0]["vs_baseline"]["scores"], serde_json::json!([diff(1), diff(2)]));
    let md = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    assert!(md.contains("## Across training replicates"), "{md}");
    // The figure with each group as one row (issue 40.5: replicates were separate rows only),
    // listed with its caption; its rows: fixed:0.2, then the greedy and sampled groups.
    assert!(out.join("welfare_paired_groups.pdf").is_file());
    assert!(
        md.contains("- [welfare_paired_groups.png](welfare_paired_groups.png) (welfare_paired_groups.svg, welfare_paired_groups.pdf): Welfare minus"),
        "{md}"
    );
    let svg = std::fs::read_to_string(out.join("welfare_paired_groups.svg")).unwrap();
    assert!(svg.contains("(2 replicates)") && !svg.contains("replicate-0"), "{svg}");
    // `--label NAME=run:GROUP` names the group's row, its sampled twin and its replicates'
    // rows (issue 40.5: a group's row kept its path whatever the label).
    let named = dir.join("cmp-named");
    let w = compare(&named, &["--label", &format!("learned={group}")]);
    let names = row_policies(&w);
    assert_eq!(
        names,
        [
            "fixed:0.2",
            "learned, replicate 0",
            "learned, replicate 1",
            "learned (sampled), replicate 0",
            "learned (sampled), replicate 1"
        ]
    );
    assert_eq!(w["rows"][1]["spec"], policies[1]);
    assert_eq!(w["groups"][0]["policy"], "learned");
    assert_eq!(w["groups"][0]["spec"], group.as_str());
    assert_eq!(w["groups"][1]["policy"], "learned (sampled)");
    // The same numbers as without the label; the figure's rows read the names.
    assert_eq!(w["groups"][0]["vs_baseline"], v["groups"][0]["vs_baseline"]);
    let svg = std::fs::read_to_string(named.join("welfare_paired_groups.svg")).unwrap();
    assert!(
        svg.contains("learned (2 replicates)") && !svg.contains(&dir.join("g").display().to_string()),
        "{svg}"
    );
    // A group is not one policy: simulate says what to name instead.
    let (code, _, err) = mtf(&["simulate", "--config", &q, "--policy", &group, "--seeds", "1"]);
    assert_eq!(code, 2);
    assert!(err.contains("is a run group"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A group's config.toml edited before `--resume` was silently ignored by its replicates
/// (exit 0) while the group's references were recomputed on the edit: a changed `env.rounds`
/// gave a summary mixing two experiments (issue 40.8). Now a change is refused naming the key,
/// and an allowed one (`--allow-config-change train.episodes`) reaches every replicate.
#[test]
fn editing_a_groups_config_before_resume_was_ignored() {
    let dir = common::tmp("groups", "edited");
    train(&dir, &["--replicates", "2"]);
    let config = dir.join("config.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let edit = |from: &str, to: &str| std::fs::write(&config, text.replace(from, to)).unwrap();
    let r = dir.to_str().unwrap();
    edit("rounds = 40\n", "rounds = 45\n");
    let (code, _, err) = mtf(&["train", "--resume", r, "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("config.toml") && err.contains("env.rounds") && err.contains("--allow-config-change"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    edit("episodes = 2\n", "episodes = 3\n");
    let (code, _, err) = mtf(&["train", "--resume", r, "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("train.episodes"), "{err}");
    let (code, _, err) = mtf(&["train", "--resume", r, "--quiet", "--allow-config-change", "train.episodes"]);
    assert_eq!(code, 0, "{err}");
    for k in 0..2 {
        let s: Value = serde_json::from_str(&std::fs::read_to_string(dir.join(format!("replicate-{k}/summary.json"))).unwrap()).unwrap();
        assert_eq!(s["episodes"], 3, "replicate {k} trained the allowed episodes");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

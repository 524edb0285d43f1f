//! Per-class and per-agent fixed policies through every door that takes a policy: simulate,
//! compare, analyze `--baselines`, a trained fixed run, its export, and a sweep over a level per
//! class. The same levels give the same episodes whichever door plays them.

use crate::common;
use common::mtf;
use std::path::PathBuf;

fn tmp(name: &str) -> common::Tmp {
    common::tmp("policies", name)
}

fn welfare(json: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["welfare"]["mean"].as_f64().unwrap()
}

fn simulate(policy: &str, out: &PathBuf) -> f64 {
    let (code, json, err) = common::simulate_quickstart(policy, 2, out);
    assert_eq!(code, 0, "{policy}: {err}");
    welfare(&json)
}

#[test]
fn a_level_per_class_plays_the_same_through_every_door() {
    let by_class = "fixed:w1=0.2,w2=0.4,w4=0.7";
    let sim = simulate(by_class, &tmp("sim"));
    // The quickstart's agents by weight: a per-agent list with each class's level is the same
    // policy.
    let q = common::quickstart();
    let sc = env::config::ScenarioFile::load(q.as_ref(), &[]).unwrap();
    let each: Vec<&str> = sc
        .agents
        .iter()
        .map(|a| match a.weight as u32 {
            1 => "0.2",
            2 => "0.4",
            _ => "0.7",
        })
        .collect();
    let per_agent = format!("fixed:[{}]", each.join(","));
    assert_eq!(simulate(&per_agent, &tmp("sim-agents")), sim);
    // Different from any one level for everyone.
    assert_ne!(simulate("fixed:0.4", &tmp("sim-one")), sim);

    // A fixed run with the same levels, its export, and compare (one comma-separated list).
    let run = tmp("run");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &q,
        "--set",
        "learner.kind=fixed",
        "--set",
        "learner.fixed.by_weight={w1=0.2,w2=0.4,w4=0.7}",
        "--set",
        "train.episodes=1",
        "--set",
        "env.rounds=60",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let agent = tmp("agent");
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--out",
        agent.to_str().unwrap(),
        "--force",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(simulate(&format!("agent:{}", agent.display()), &tmp("sim-exported")), sim);
    let cmp = tmp("compare");
    let policies = format!("{by_class},fixed:0,run:{}", run.display());
    let (code, json, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        &policies,
        "--seeds",
        "2",
        "--set",
        "env.rounds=60",
        "--json",
        "--quiet",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let labels: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(labels[..2], [by_class, "fixed:0.0"], "one spelling per level: {labels:?}");
    for r in rows.iter().filter(|r| r["policy"] != "fixed:0.0") {
        assert_eq!(r["summary"]["welfare"]["mean"].as_f64().unwrap(), sim, "{}", r["policy"]);
    }

    // analyze --baselines takes it as a row under the config's mechanism.
    let an = tmp("analyze");
    let (code, json, err) = mtf(&[
        "analyze",
        "--config",
        &q,
        "--baselines",
        &format!("stride,{by_class}"),
        "--tokens",
        "100",
        "--seeds",
        "2",
        "--select-seeds",
        "1",
        "--set",
        "env.rounds=60",
        "--set",
        "env.agents.*.count=1",
        "--json",
        "--quiet",
        "--out",
        an.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["policy"] == by_class && r["mechanism"] == "mtf"), "{rows:?}");
    // ... and prints every policy it found as a spec that plays it.
    let md = std::fs::read_to_string(an.join("analysis.md")).unwrap();
    let spec = v["headroom"][0]["spec"].as_str().unwrap();
    assert!(spec.starts_with("fixed:w1=") && md.contains(spec), "{spec}");
    assert!(md.contains(v["equilibrium"]["spec"].as_str().unwrap()));
}

#[test]
fn levels_that_do_not_fit_are_one_line_naming_the_spec() {
    let q = common::quickstart();
    for (policy, says) in [
        ("fixed:w1=0.2,w2=0.4", "no level for weight class w4"),
        ("fixed:[0.1,0.2]", "gives 2 levels for the scenario's"),
        ("fixed:w1=0.2,w2=0.4,w4=0.75", "0.75 is not one of the threshold levels"),
    ] {
        let (code, _, err) = mtf(&["simulate", "--config", &q, "--policy", policy, "--seeds", "1", "--quiet"]);
        assert_eq!(code, 2, "{policy}: {err}");
        assert!(
            err.contains(policy) && err.contains(says) && err.trim().lines().count() == 1,
            "{err}"
        );
    }
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &q,
        "--set",
        "learner.kind=fixed",
        "--set",
        "learner.fixed.by_weight={w1=0.2}",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("learner.fixed.by_weight") && err.contains("no level for weight class w2"),
        "{err}"
    );
}

/// docs/AGENTS.md's example, verbatim: any executable speaking the agent protocol is a policy
/// (`agent:PATH` took only binaries `mtf export` wrote: issue 40). It decides as the per-agent
/// fixed policy it implements, seed by seed; one that answers a level the scenario lacks, or
/// garbage, stops the evaluation in one line naming the agent.
#[cfg(unix)]
#[test]
fn an_executable_that_speaks_the_protocol_is_a_policy() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp("external");
    std::fs::create_dir_all(&dir).unwrap();
    let doc = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/AGENTS.md")).unwrap();
    let script = doc.split("```python\n").nth(1).unwrap().split("```").next().unwrap();
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!("agent:{}", p.display())
    };
    let alt = write("alt.py", script);
    let q = common::quickstart();
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        &format!("{alt},fixed:[0.1,0.5,0.1,0.5,0.1,0.5,0.1,0.5]"),
        "--seeds",
        "2",
        "--set",
        "env.rounds=50",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    assert_eq!(rows[0]["summary"]["welfare"], rows[1]["summary"]["welfare"], "{v}");
    // Seed by seed: the paired difference to the fixed row is 0 with a CI of 0.
    let diff = &rows[0]["paired"]["welfare_diff"];
    assert!(rows[0]["paired"]["baseline"].as_str().unwrap().starts_with("fixed:"), "{v}");
    assert_eq!((diff["mean"].as_f64(), diff["ci95"].as_f64()), (Some(0.0), Some(0.0)), "{v}");
    for (name, body, says) in [
        (
            "off.py",
            "import sys\nfor l in sys.stdin:\n    print('{\"threshold\": 0.33}', flush=True)\n",
            "not one of the levels",
        ),
        (
            "junk.py",
            "import sys\nfor l in sys.stdin:\n    print('hello', flush=True)\n",
            "bad JSON",
        ),
        // An untrusted distribution: [2, -1] was reported as an entropy of -0.60.
        (
            "probs.py",
            "import sys\nfor l in sys.stdin:\n    print('{\"threshold\": 0.1, \"probabilities\": [2, -1]}', flush=True)\n",
            "not a distribution over the 10 levels",
        ),
    ] {
        let spec = write(name, &format!("#!/usr/bin/env python3\n{body}"));
        let (code, _, err) = mtf(&[
            "simulate",
            "--config",
            &q,
            "--policy",
            &spec,
            "--seeds",
            "1",
            "--set",
            "env.rounds=5",
            "--quiet",
            "--out",
            dir.join(name).with_extension("run").to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("agent 0") && err.contains(says) && err.contains(name), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

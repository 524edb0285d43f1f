//! `mtf export`: exported agents decide as the harness does, and drive simulations.

mod common;
use common::mtf;
use env::world::MtfEnv;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn tmp(name: &str) -> PathBuf {
    common::tmp("export", name)
}

fn train(dir: &Path, learner: &str) {
    let q = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
    let kind = format!("learner.kind={learner}");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        q.to_str().unwrap(),
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
        "--set",
        "train.episodes=3",
        "--set",
        "env.rounds=60",
        "--set",
        "train.eval_seeds=1",
        "--set",
        &kind,
    ]);
    assert_eq!(code, 0, "{err}");
}

/// Feed lines to an exported agent and collect its replies.
fn ask(agent: &Path, args: &[&str], lines: &[String]) -> Vec<serde_json::Value> {
    let mut child = Command::new(agent)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = lines.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn exported_actor_critic_decides_as_the_harness_on_recorded_observations() {
    let run = tmp("ac");
    train(&run, "actor_critic");
    let exe = run.join("agent");
    let (code, stdout, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("exported 8 agent(s)"));
    // (Its size is a release-build figure: scripts/bench-export.sh measures it.)

    // Record observations and the harness's greedy thresholds over two episodes.
    let (exp, learner, _) = agents::train::load_run(&run, false).unwrap();
    let mut policy = learner.fork();
    let mut env = MtfEnv::new(exp.scenario.clone());
    let (n, m) = (env.n(), env.m());
    let levels = env.levels().to_vec();
    let mut lines = vec![Vec::new(); n];
    let mut want = vec![Vec::new(); n];
    let mut actions = vec![0; n];
    for seed in [11, 12, 13] {
        env.reset(seed);
        while !env.agents().is_empty() {
            let obs = env.observations();
            let budgets = env.budgets().to_vec();
            policy.act(obs, &budgets, true, &mut actions);
            for i in 0..n {
                let o = obs.get(i);
                let u: Vec<f64> = o[1..1 + m].iter().map(|&x| f64::from(x)).collect();
                lines[i].push(serde_json::json!({ "budget": f64::from(o[0]), "utilities": u }).to_string());
                want[i].push(levels[actions[i]]);
            }
            env.step(&actions).unwrap();
        }
    }
    let total: usize = lines.iter().map(Vec::len).sum();
    assert!(total >= 1000, "{total} observations");
    for i in 0..n {
        let replies = ask(&exe, &["--agent", &i.to_string()], &lines[i]);
        assert_eq!(replies.len(), lines[i].len());
        for (k, (r, w)) in replies.iter().zip(&want[i]).enumerate() {
            assert_eq!(r["threshold"].as_f64(), Some(*w), "agent {i}, observation {k}: {r}");
        }
    }
    // Sampling is reproducible by seed.
    let s1 = ask(&exe, &["--agent", "0", "--sample", "--seed", "5"], &lines[0][..50]);
    let s2 = ask(&exe, &["--agent", "0", "--sample", "--seed", "5"], &lines[0][..50]);
    assert_eq!(s1, s2);

    // Closing the loop: the exported agents give the run's metrics on the same seeds.
    let q = run.join("config.toml");
    let mut welfare = Vec::new();
    for policy in [format!("run:{}", run.display()), format!("agent:{}", exe.display())] {
        let (code, out, err) = mtf(&[
            "simulate",
            "--config",
            q.to_str().unwrap(),
            "--policy",
            &policy,
            "--seeds",
            "2",
            "--json",
            "--out",
            run.join(format!("sim-{}", welfare.len())).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        welfare.push((v["welfare"].clone(), v["ef_violations"].clone(), v["throughput_by_weight"].clone()));
    }
    assert_eq!(welfare[0], welfare[1]);
    // And side by side in `mtf compare`: the two rows agree on every figure but the
    // scheduling time (a wall-clock measurement).
    let cmp = run.join("compare");
    let policies = format!("run:{},agent:{}", run.display(), exe.display());
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        q.to_str().unwrap(),
        "--policies",
        &policies,
        "--seeds",
        "2",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(cmp.join("comparison.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').skip(2).collect()).collect();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').skip(2).collect();
    let keep = |r: &Vec<&str>| {
        r.iter()
            .zip(&header)
            .filter(|(_, h)| !h.starts_with("sched_us"))
            .map(|(v, _)| v.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(keep(&rows[0]), keep(&rows[1]));
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn hedge_and_fixed_runs_export_and_serve_the_protocol() {
    for learner in ["hedge", "fixed"] {
        let run = tmp(learner);
        train(&run, learner);
        let exe = run.join("agent");
        let (code, _, err) = mtf(&[
            "export",
            "--run",
            run.to_str().unwrap(),
            "--out",
            exe.to_str().unwrap(),
            "--agent",
            "2",
        ]);
        assert_eq!(code, 0, "{err}");
        let describe = Command::new(&exe).arg("--describe").output().unwrap();
        let d: serde_json::Value = serde_json::from_slice(&describe.stdout).unwrap();
        assert_eq!(d["kind"], learner);
        assert_eq!(d["agents"], serde_json::json!([2]));
        assert_eq!(d["observation_size"], 17);
        let ok = serde_json::json!({ "budget": 0.12, "utilities": vec![0.5; 16] }).to_string();
        let replies = ask(
            &exe,
            &[],
            &[ok.clone(), "{nope".into(), r#"{"budget": 0.1, "utilities": [0.2]}"#.into(), ok],
        );
        assert_eq!(replies.len(), 4, "one reply per line, errors included");
        assert!(replies[0]["threshold"].is_f64());
        let p: f64 = replies[0]["probabilities"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .sum();
        assert!((p - 1.0).abs() < 1e-9);
        assert!(replies[1]["error"].as_str().unwrap().contains("bad JSON"));
        assert!(replies[2]["error"].as_str().unwrap().contains("expected 16"));
        assert_eq!(replies[3], replies[0], "the agent kept serving after errors");
        if learner == "fixed" {
            assert_eq!(replies[0]["threshold"], 0.5);
        }
        let _ = std::fs::remove_dir_all(&run);
    }
    // The bare runtime carries no policy; an exported single agent refuses --agent of another.
    let bare = Command::new(env!("CARGO_BIN_EXE_mtf-agent")).output().unwrap();
    assert_eq!(bare.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("carries no policy"));
}

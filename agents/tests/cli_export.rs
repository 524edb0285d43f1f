//! `mtf export`: exported agents decide as the harness does, and drive simulations.

use crate::common;
use common::mtf;
use env::world::ClusterEnv;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn tmp(name: &str) -> common::Tmp {
    common::tmp("export", name)
}

fn train(dir: &Path, learner: &str) {
    train_with(dir, learner, &[]);
}

fn train_with(dir: &Path, learner: &str, sets: &[&str]) {
    let kind = format!("learner.kind={learner}");
    let mut all = vec!["train.episodes=3", "env.rounds=60", kind.as_str()];
    all.extend_from_slice(sets);
    common::train_quickstart(dir, &all);
}

/// Export agent `agent` of `run` to `run/agent`; returns its path.
fn export_one(run: &Path, agent: &str) -> PathBuf {
    let exe = run.join("agent");
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--out",
        exe.to_str().unwrap(),
        "--agent",
        agent,
    ]);
    assert_eq!(code, 0, "{err}");
    exe
}

/// Feed lines to an exported agent and collect its replies.
fn ask(agent: &Path, args: &[&str], lines: &[String]) -> Vec<serde_json::Value> {
    let out = ask_raw(agent, args, (lines.join("\n") + "\n").as_bytes());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The exported agents' greedy thresholds equal the harness's on recorded observations of three
/// episodes (each observation sent as `line(observation, m)`), and sampling is reproducible.
fn decides_as_the_harness(run: &Path, exe: &Path, line: impl Fn(&[f64], usize) -> serde_json::Value) {
    let (exp, learner, _) = agents::train::load_run(run, false).unwrap();
    let mut policy = learner.fork();
    let mut env = ClusterEnv::new(exp.scenario.clone());
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
                let o: Vec<f64> = obs.get(i).iter().map(|&x| f64::from(x)).collect();
                lines[i].push(line(&o, m).to_string());
                want[i].push(levels[actions[i]]);
            }
            env.step(&actions).unwrap();
        }
    }
    let total: usize = lines.iter().map(Vec::len).sum();
    assert!(total >= 1000, "{total} observations");
    for i in 0..n {
        let replies = ask(exe, &["--agent", &i.to_string()], &lines[i]);
        assert_eq!(replies.len(), lines[i].len());
        for (k, (r, w)) in replies.iter().zip(&want[i]).enumerate() {
            assert_eq!(r["threshold"].as_f64(), Some(*w), "agent {i}, observation {k}: {r}");
        }
    }
    // Sampling is reproducible by seed.
    let s1 = ask(exe, &["--agent", "0", "--sample", "--seed", "5"], &lines[0][..50]);
    let s2 = ask(exe, &["--agent", "0", "--sample", "--seed", "5"], &lines[0][..50]);
    assert_eq!(s1, s2);
}

/// The exported agents give the run's metrics on the same seeds, in `simulate` and side by side
/// in `compare`, on the run's config with `sets` applied.
fn closes_the_loop(run: &Path, exe: &Path, sets: &[&str]) {
    for out in ["sim-0", "sim-1", "compare"] {
        let _ = std::fs::remove_dir_all(run.join(out));
    }
    let q = run.join("config.toml");
    let sets: Vec<String> = sets.iter().flat_map(|s| ["--set".to_string(), s.to_string()]).collect();
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
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
        ]
        .iter()
        .chain(&sets)
        .copied()
        .collect::<Vec<_>>());
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        welfare.push((v["welfare"].clone(), v["ef_violations"].clone(), v["throughput_by_weight"].clone()));
    }
    assert_eq!(welfare[0], welfare[1]);
    // And side by side in `mtf compare`: the two rows agree on every figure but the
    // scheduling time (a wall-clock measurement) and the policy's entropy (the exported agent
    // reports it from its own f64 probabilities, the harness from burn's f32 ones).
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
    ]
    .iter()
    .chain(&sets)
    .copied()
    .collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(cmp.join("comparison.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv.lines().skip(1).map(|l| l.split(',').skip(2).collect()).collect();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').skip(2).collect();
    let keep = |r: &Vec<&str>| {
        r.iter()
            .zip(&header)
            .filter(|(_, h)| !h.starts_with("sched_us") && !h.starts_with("entropy_share"))
            .map(|(v, _)| v.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(keep(&rows[0]), keep(&rows[1]));
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

    decides_as_the_harness(&run, &exe, |o, m| serde_json::json!({ "budget": o[0], "utilities": &o[1..1 + m] }));
    closes_the_loop(&run, &exe, &[]);
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn a_ppo_run_reading_its_whole_observation_exports_with_those_inputs() {
    // PPO reads the whole observation by default; every extra is switched on.
    let run = tmp("ppo-all");
    let extras = ["env.observe_burst=true", "env.observe_weight=true", "env.observe_budgets=true"];
    train_with(&run, "ppo", &extras);
    let exe = run.join("agent");
    let (code, _, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let describe = Command::new(&exe).arg("--describe").output().unwrap();
    let d: serde_json::Value = serde_json::from_slice(&describe.stdout).unwrap();
    assert_eq!(d["inputs"], serde_json::json!(["backlog", "burst", "weight", "budgets"]));
    assert_eq!(d["observation_size"], 1 + 16 + 3 + 8);
    let line = |o: &[f64], m: usize| {
        serde_json::json!({ "budget": o[0], "utilities": &o[1..1 + m], "backlog": o[1 + m], "burst": o[2 + m],
            "weight": o[3 + m], "budgets": &o[4 + m..] })
    };
    decides_as_the_harness(&run, &exe, line);
    // A line without an input the policy reads gets an error naming it.
    let mut partial = line(&[0.5; 28], 16);
    partial.as_object_mut().unwrap().remove("burst");
    partial["budgets"] = serde_json::json!(vec![0.1; 7]);
    let replies = ask(&exe, &["--agent", "1"], &[partial.to_string()]);
    assert!(
        replies[0]["error"].as_str().unwrap().contains("`burst` is missing"),
        "{}",
        replies[0]
    );
    partial["burst"] = 1.into();
    let replies = ask(&exe, &["--agent", "1"], &[partial.to_string()]);
    assert!(
        replies[0]["error"]
            .as_str()
            .unwrap()
            .contains("`budgets` has 7 entries, expected 8"),
        "{}",
        replies[0]
    );
    // On a scenario that observes none of the extras (they change no dynamics), the run and its
    // export are given what they read and act as trained: this panicked on the run's
    // observation length before.
    closes_the_loop(
        &run,
        &exe,
        &["env.observe_burst=false", "env.observe_weight=false", "env.observe_budgets=false"],
    );
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn a_by_type_policy_moves_to_a_larger_cluster_through_its_run_and_its_export() {
    // PPO reading the by_type block (with the weight class in it) on the quickstart (8 x 16).
    let run = tmp("ppo-by-type");
    train_with(&run, "ppo", &["learner.ppo.features=\"by_type\"", "env.observe_weight=true"]);
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(config.contains("observe_by_type = true"), "the learner turned the block on");
    let exe = run.join("agent");
    let (code, _, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let describe = Command::new(&exe).arg("--describe").output().unwrap();
    let d: serde_json::Value = serde_json::from_slice(&describe.stdout).unwrap();
    assert_eq!(d["inputs"], serde_json::json!(["weight", "by_type"]));
    // B n / T, (share, rate, fill) for the catalog's two types, backlog, weight.
    let width = 2 + 3 * 2 + 1;
    assert_eq!(d["observation_size"], width);
    decides_as_the_harness(
        &run,
        &exe,
        |o, _| serde_json::json!({ "budget": o[0], "weight": o[o.len() - 1], "by_type": &o[o.len() - width..] }),
    );
    // Where it was trained, and on the same types 3x larger (24 x 48; the agents of each
    // weight act as the trained agents of that weight in turn): the run and its export agree.
    closes_the_loop(&run, &exe, &[]);
    let larger = [
        "env.agents.0.count=12",
        "env.agents.1.count=6",
        "env.agents.2.count=6",
        "env.cluster.0.count=24",
        "env.cluster.1.count=24",
    ];
    closes_the_loop(&run, &exe, &larger);
    // Not on other accelerator types, nor with a weight no trained agent had.
    let q = run.join("config.toml");
    let spec = format!("run:{}", run.display());
    let renamed: &[&str] = &[
        "env.catalog.types=[\"a\",\"b\"]",
        "env.cluster.0.type=\"a\"",
        "env.cluster.1.type=\"b\"",
    ];
    // (Renamed types at the training size too: the block's meaning changed, not its length.)
    for (sets, problem, count) in [
        (renamed, "types", "env.agents.0.count=12"),
        (renamed, "types", "env.agents.0.count=4"),
        (
            &["env.agents.2.weight=3.0"][..],
            "no trained agent has weight 3",
            "env.agents.0.count=12",
        ),
    ] {
        for policy in [spec.clone(), format!("agent:{}", exe.display())] {
            let mut args = vec!["simulate", "--config", q.to_str().unwrap(), "--policy", &policy, "--seeds", "1"];
            args.extend(["--set", count]);
            sets.iter().for_each(|s| args.extend(["--set", s]));
            let (code, _, err) = mtf(&args);
            assert_eq!(code, 2, "{policy} with {sets:?}: {err}");
            assert!(err.contains(problem), "{policy} with {sets:?}: {err}");
        }
    }
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn an_exported_hedge_run_acted_one_budget_state_low() {
    // The budget share went to the agents as an f32, so floor(share * T) landed one budget
    // state low for half the whole-token budgets (welfare 115.928 against the run's 116.197).
    // Now every figure of simulate and compare matches the run's.
    let run = tmp("hedge-loop");
    train(&run, "hedge");
    let exe = run.join("agent");
    let (code, _, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    closes_the_loop(&run, &exe, &[]);
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn hedge_and_fixed_runs_export_and_serve_the_protocol() {
    for learner in ["hedge", "fixed"] {
        let run = tmp(learner);
        train(&run, learner);
        let exe = export_one(&run, "2");
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

/// Run an exported agent on raw input bytes (not necessarily UTF-8).
fn ask_raw(agent: &Path, args: &[&str], input: &[u8]) -> std::process::Output {
    common::run_piped(agent, args, input)
}

#[test]
fn invalid_utf8_line_made_the_agent_exit_0_dropping_the_rest() {
    let run = tmp("utf8");
    train(&run, "fixed");
    let exe = export_one(&run, "0");
    let ok = serde_json::json!({ "budget": 0.12, "utilities": vec![0.5; 16] }).to_string();
    let mut input = b"\xff\xfe not utf-8\n".to_vec();
    input.extend_from_slice(ok.as_bytes());
    input.push(b'\n');
    let out = ask_raw(&exe, &[], &input);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "an error object, then the answer to the next line");
    assert!(lines[0]["error"].as_str().unwrap().contains("not UTF-8"));
    assert_eq!(lines[1]["threshold"], 0.5);
    // A full disk is an error, not exit 0.
    let full = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut full = full;
    full.stdin.take().unwrap().write_all(format!("{ok}\n").as_bytes()).unwrap();
    let out = full.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No space left on device"));
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn export_overwrote_files_and_shipped_untrained_policies() {
    let run = tmp("refusals");
    train(&run, "hedge");
    let r = run.to_str().unwrap();
    let exe = run.join("agent");
    std::fs::write(&exe, b"precious").unwrap();
    let (code, _, err) = mtf(&["export", "--run", r, "--out", exe.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exists; pass --force"), "{err}");
    assert_eq!(std::fs::read(&exe).unwrap(), b"precious");
    let (code, _, err) = mtf(&["export", "--run", r, "--out", exe.to_str().unwrap(), "--force"]);
    assert_eq!(code, 0, "{err}");
    // Never rename over what is not a regular file, --force or not.
    let (code, _, err) = mtf(&["export", "--run", r, "--out", "/dev/full", "--force"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/dev/full: exists and is not a regular file"), "{err}");
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    // A run with no checkpoint has learned nothing: refused.
    std::fs::remove_dir_all(run.join("checkpoints")).unwrap();
    let (code, _, err) = mtf(&["export", "--run", r, "--out", run.join("untrained").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no checkpoint"), "{err}");
    let _ = std::fs::remove_dir_all(&run);
}

/// A shell script carrying a valid fixed-policy payload (the shell never reaches its bytes).
fn scripted_agent(dir: &Path, name: &str, script: &str) -> PathBuf {
    let manifest = agents::export::runtime::Manifest {
        version: agents::export::runtime::VERSION,
        kind: "fixed".into(),
        action: "threshold".into(),
        value_scale: 1.0,
        agents: vec![0],
        m: 16,
        levels: (0..10).map(|k| k as f64 / 10.0).collect(),
        hidden: 0,
        inputs: Vec::new(),
        agents_total: 8,
        by_type: 0,
        types: Vec::new(),
        world: None,
        weights: Vec::new(),
        total_tokens: 100.0,
        states: 0,
        fixed_level: 0,
        model_bytes: 0,
        training_run: "test".into(),
        config_hash: "0".into(),
    };
    let path = dir.join(name);
    std::fs::write(
        &path,
        agents::export::runtime::append_payload(format!("#!/bin/sh\n{script}\n").as_bytes(), &manifest, &[0.0]),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn an_agent_flooding_replies_or_one_endless_line_grew_mtf_without_bound() {
    let dir = tmp("flood");
    std::fs::create_dir_all(&dir).unwrap();
    let q = common::quickstart();
    for (name, script, needle) in [
        // Replies nobody asked for, as fast as it can (5.9 GB in 11 s before).
        ("flood", "exec yes '{\"threshold\": 0.5}'", "sent a reply nobody asked for"),
        // One line that never ends (2.8 GB in 3 s before).
        ("endless", "exec yes x | tr -d '\\n'", "longer than 1048576 bytes"),
        // Two replies to every line: out of step from the second round.
        (
            "twice",
            "while read -r line; do echo '{\"threshold\": 0.5}'; echo '{\"threshold\": 0.5}'; done",
            "sent a reply nobody asked for",
        ),
    ] {
        let agent = scripted_agent(&dir, name, script);
        let start = std::time::Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_mtf"))
            .env("MTF_AGENT_TIMEOUT", "20")
            .args([
                "simulate",
                "--config",
                &q,
                "--policy",
                &format!("agent:{}", agent.display()),
                "--seeds",
                "1",
            ])
            .args([
                "--set",
                "env.rounds=5",
                "--quiet",
                "--out",
                dir.join(format!("sim-{name}")).to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle) && err.contains(name), "{name}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{name}: {err}");
        assert!(start.elapsed().as_secs() < 15, "{name}: found at once, not at the timeout");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_agent_held_a_whole_endless_input_line() {
    let run = tmp("agent-line");
    train(&run, "fixed");
    let exe = export_one(&run, "0");
    let ok = serde_json::json!({ "budget": 0.12, "utilities": vec![0.5; 16] }).to_string();
    // 8 MiB on one line, then a good line: an error object for the first, the answer after.
    let mut input = vec![b' '; 8 << 20];
    input.push(b'\n');
    input.extend_from_slice(ok.as_bytes());
    input.push(b'\n');
    let out = ask_raw(&exe, &[], &input);
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(
        lines[0]["error"].as_str().unwrap().contains("longer than 1048576 bytes"),
        "{}",
        lines[0]
    );
    assert_eq!(lines[1]["threshold"], 0.5);
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn simulate_hung_forever_on_an_agent_that_never_answers() {
    let dir = tmp("silent");
    std::fs::create_dir_all(&dir).unwrap();
    // A script carrying a valid payload that never answers.
    scripted_agent(&dir, "silent", "exec sleep 60");
    let q = std::path::PathBuf::from(common::quickstart());
    let start = std::time::Instant::now();
    // A bare name is a file in the current directory, not a $PATH lookup.
    // The silent agent driven under a given MTF_AGENT_TIMEOUT.
    let simulate = |timeout: &str| {
        Command::new(env!("CARGO_BIN_EXE_mtf"))
            .current_dir(&dir)
            .env("MTF_AGENT_TIMEOUT", timeout)
            .args([
                "simulate",
                "--config",
                q.to_str().unwrap(),
                "--policy",
                "agent:silent",
                "--seeds",
                "1",
            ])
            .args(["--set", "env.rounds=5", "--out", dir.join("sim").to_str().unwrap()])
            .output()
            .unwrap()
    };
    let out = simulate("1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("agent 0 did not answer within 1.0 s"), "{err}");
    assert!(start.elapsed().as_secs() < 30, "the timeout bounds the wait");
    let out = simulate("soon");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("MTF_AGENT_TIMEOUT=\"soon\": expected a number of seconds"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bid_policy_exports_answers_with_bids_and_drives_simulate_as_its_run() {
    // Hedge bid factors learned in the first-price valuation world (SPEC 8).
    let run = tmp("bids");
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/auctions/first-price.toml");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        config,
        "--quiet",
        "--out",
        run.to_str().unwrap(),
        "--set",
        "train.episodes=2",
        "--set",
        "env.rounds=300",
        "--set",
        "train.eval_seeds=1",
    ]);
    assert_eq!(code, 0, "{err}");
    let exe = run.join("agents");
    let (code, _, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", exe.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let line = serde_json::json!({ "budget": 0.25, "utilities": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0] }).to_string();
    let reply = &ask(&exe, &["--agent", "1"], &[line])[0];
    let a = reply["bid_factor"].as_f64().unwrap_or_else(|| panic!("no bid_factor: {reply}"));
    assert!(reply.get("threshold").is_none());
    let bids: Vec<f64> = serde_json::from_value(reply["bids"].clone()).unwrap();
    let want: Vec<f64> = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0].iter().map(|u| a * u).collect();
    assert_eq!(bids, want, "bids = factor x value_scale (1) x utility");
    // The exported agents play as the run does, on the same seeds.
    let mut figures = Vec::new();
    for policy in [format!("run:{}", run.display()), format!("agent:{}", exe.display())] {
        let (code, out, err) = mtf(&[
            "simulate",
            "--config",
            config,
            "--policy",
            &policy,
            "--seeds",
            "2",
            "--json",
            "--set",
            "env.rounds=200",
            "--out",
            run.join(format!("sim-{}", figures.len())).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        figures.push((
            v["revenue_per_item"].clone(),
            v["surplus_per_bidder_item"].clone(),
            v["bid_factor"].clone(),
        ));
    }
    assert!(figures[0].0.is_object(), "the valuation world reports revenue");
    assert_eq!(figures[0], figures[1]);
    // A bid policy cannot drive a threshold mechanism.
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        config,
        "-m",
        "mtf",
        "--policy",
        &format!("agent:{}", exe.display()),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("a bid policy; this scenario's mechanism takes a threshold"), "{err}");
    let _ = std::fs::remove_dir_all(&run);
}

fn market_config(name: &str) -> String {
    format!("{}/../configs/market/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_market_runs_hedge_policy_exports_its_hand_computed_bid() {
    // Hedge on the first-price duel learns L's best bid factor, 0.9 (configs/market/duel.toml):
    // the exported tenant answers it, whatever the market line says.
    let dir = tmp("market-hedge");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &market_config("duel.toml"),
        "--out",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    let exe = export_one(&dir, "0");
    let described = Command::new(&exe).arg("--describe").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    let d = v["observation_size"].as_u64().unwrap() as usize;
    assert_eq!(d, env::market::Market::obs_dim(2));
    assert_eq!(v["world"]["groups"], serde_json::json!(["L"]));
    let lines: Vec<String> = [0.0, 1.0]
        .iter()
        .map(|&x| serde_json::json!({ "world": vec![x; d] }).to_string())
        .collect();
    for reply in ask(&exe, &[], &lines) {
        assert_eq!(reply["bid_factor"].as_f64(), Some(0.9), "{reply}");
    }
    // The protocol names what it misses.
    let bad = ask(
        &exe,
        &[],
        &["{\"budget\": 0.5, \"utilities\": [1.0]}".into(), "{\"world\": [0.0]}".into()],
    );
    assert!(bad[0]["error"].as_str().unwrap().contains("`world`"), "{}", bad[0]);
    assert!(bad[1]["error"].as_str().unwrap().contains(&format!("{d}")), "{}", bad[1]);
    // The learners' market has one agent (L, tenant 1 of the file); a run group has 3
    // replicates.
    for (flag, value) in [("--agent", "1"), ("--replicate", "7")] {
        let (code, _, err) = mtf(&[
            "export",
            "--run",
            dir.to_str().unwrap(),
            "--out",
            dir.join("e").to_str().unwrap(),
            flag,
            value,
        ]);
        assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
        assert!(err.contains(flag), "{err}");
    }
}

#[test]
fn an_exported_market_actor_decides_as_the_run_on_its_evaluation_episodes() {
    // ES on three-types (first price): the exported actors of replicate 1, driven by mtf
    // compare as agent:FILE on the run's held-out seeds, play the episodes the run's summary
    // scored (ES plays its greedy level: the same utility to the last bit).
    let dir = tmp("market-es");
    let config = market_config("three-types.toml");
    let first_price = "mechanism.kind=\"first_price\"";
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &config,
        "--out",
        dir.to_str().unwrap(),
        "--quiet",
        "--set",
        "learner.kind=\"es\"",
        "--set",
        first_price,
        "--set",
        "train.episodes=3",
        "--set",
        "train.replicates=2",
        "--set",
        "train.eval_seeds=2",
        "--set",
        "learner.es.pairs=1",
    ]);
    assert_eq!(code, 0, "{err}");
    let exe = dir.join("agent");
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        dir.to_str().unwrap(),
        "--out",
        exe.to_str().unwrap(),
        "--replicate",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("replicate-1/summary.json")).unwrap()).unwrap();
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--set",
        first_price,
        "--policies",
        &format!("agent:{}", exe.display()),
        "--seeds",
        "2",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["rows"][0]["eval"]["utility"], summary["eval"]["utility"], "{stdout}");
    // ... and not replicate 0's (-4.44 against replicate 1's -8.24 on these seeds).
    let first: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("replicate-0/summary.json")).unwrap()).unwrap();
    assert_ne!(v["rows"][0]["eval"]["utility"], first["eval"]["utility"], "{stdout}");
    let described = Command::new(&exe).arg("--describe").output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(v["observation"][6], "price_over_base:A10");
    assert_eq!(v["world"]["groups"], serde_json::json!(["infer"]));
}

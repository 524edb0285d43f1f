//! End-to-end tests of `mtf simulate`.

use crate::common;
use common::mtf;
use std::path::Path;

fn config(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../configs")
        .join(name)
        .display()
        .to_string()
}

fn tmp(name: &str) -> common::Tmp {
    common::tmp("sim", name)
}

#[test]
fn json_and_run_directory_agree() {
    let out = tmp("json");
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        &config("quickstart.toml"),
        "--set",
        "env.rounds=40",
        "--seeds",
        "3",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let printed: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(printed["welfare"], summary["welfare"]);
    assert_eq!(printed["seeds"], 3);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    // The summary's welfare is the mean of the episodes'.
    let mean = lines.iter().map(|l| l["welfare"].as_f64().unwrap()).sum::<f64>() / 3.0;
    assert!((mean - summary["welfare"]["mean"].as_f64().unwrap()).abs() < 1e-9);
    // The resolved config reruns to the same figures.
    let again = tmp("again");
    let (code, stdout2, err) = mtf(&[
        "simulate",
        "--config",
        out.join("config.toml").to_str().unwrap(),
        "--seeds",
        "3",
        "--json",
        "--out",
        again.to_str().unwrap(),
        "--threads",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let reprinted: serde_json::Value = serde_json::from_str(&stdout2).unwrap();
    assert_eq!(reprinted["welfare"], printed["welfare"]);
    assert_eq!(reprinted["ef_violations"], printed["ef_violations"]);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&again);
}

#[test]
fn table_names_every_figure() {
    let out = tmp("table");
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        &config("thesis/envy.toml"),
        "--set",
        "env.rounds=30",
        "--seeds",
        "2",
        "--mechanism",
        "round_robin",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    for row in [
        "welfare",
        "per agent, weight 1",
        "dropped",
        "mean wait",
        "Jain",
        "phi min",
        "EF violations",
        "Pareto",
        "scheduling time",
        "run directory",
    ] {
        assert!(stdout.contains(row), "missing {row}:\n{stdout}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_configs_are_one_line_naming_file_and_key() {
    let dir = tmp("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "unknown-key.toml",
            "[env]\nroundz = 3\n",
            "unknown-key.toml: env.roundz: unknown field `roundz`",
        ),
        (
            "wrong-type.toml",
            "[env]\nrounds = \"x\"\n",
            "wrong-type.toml: env.rounds: invalid type",
        ),
        (
            "weight.toml",
            "[[env.agents]]\nweight = -1.0\nload = 0.5\n",
            "weight.toml: env.agents[0].weight: must be a finite number > 0, got -1",
        ),
        (
            "load.toml",
            "[[env.agents]]\nload = 1.5\n",
            "load.toml: env.agents[0].load: must be in (0, 1], got 1.5",
        ),
        (
            "zero-agents.toml",
            "[env]\nagents = []\n",
            "zero-agents.toml: env.agents: needs at least one agent group",
        ),
        (
            "zero-accels.toml",
            "[[env.cluster]]\ntype = \"gemmini_2ghz\"\ncount = 0\n",
            "zero-accels.toml: env.cluster[0].count: must be at least 1",
        ),
        (
            "app.toml",
            "[[env.agents]]\nload = 0.5\napplication = \"bert\"\n",
            "app.toml: env.agents[0].application: `bert` is not in the catalog",
        ),
        ("syntax.toml", "[env\n", "syntax.toml: (syntax)"),
    ];
    for (name, text, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let (code, stdout, err) = mtf(&[
            "simulate",
            "--config",
            p.to_str().unwrap(),
            "--out",
            dir.join("run").to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(stdout.is_empty());
        assert_eq!(err.lines().count(), 1, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err:?} lacks {want:?}");
    }
    let q = config("quickstart.toml");
    for (args, want) in [
        (vec!["--set", "env.agents.9.load=0.5"], "has 3 elements"),
        (vec!["--set", "env.rounds=0"], "env.rounds: must be in [1, 10000000], got 0"),
        (vec!["--policy", "fixed:0.33"], "not one of the threshold levels"),
        (vec!["--policy", "greedy"], "expected fixed:X"),
        (vec!["--mechanism", "fifa"], "unknown mechanism `fifa`"),
        // Gavel's policies schedule jobs: in the queue world one panicked on its round.
        (vec!["--mechanism", "fifo"], "`fifo` is one of Gavel's policies"),
        (vec!["--seeds", "0"], "seeds in [1, 100000], got `0`"),
    ] {
        let mut all = vec!["simulate", "--config", q.as_str(), "--out", dir.to_str().unwrap()];
        all.extend(args.iter());
        let (code, _, err) = mtf(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{args:?}: {err:?}");
    }
    let (code, _, err) = mtf(&["simulate", "--config", "/no/such.toml"]);
    assert_eq!(code, 2);
    assert!(err.contains("/no/such.toml"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sampled_run_draws_its_actions_reproducibly() {
    let run = tmp("sampled-run");
    common::train_quickstart(&run, &["learner.kind=ppo", "env.rounds=40", "train.episodes=2"]);
    let welfare = |policy: &str, name: &str| {
        let (code, stdout, err) = mtf(&[
            "simulate",
            "--config",
            run.join("config.toml").to_str().unwrap(),
            "--policy",
            policy,
            "--seeds",
            "3",
            "--json",
            "--out",
            run.join(name).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        v["welfare"].clone()
    };
    let greedy = welfare(&format!("run:{}", run.display()), "g");
    let sampled = welfare(&format!("sampled:run:{}", run.display()), "s1");
    // A barely trained policy is near uniform: its draws are not its argmax.
    assert_ne!(sampled, greedy);
    assert_eq!(
        welfare(&format!("sampled:run:{}", run.display()), "s2"),
        sampled,
        "draws come from the seed"
    );
    let (code, _, err) = mtf(&["simulate", "--config", &config("quickstart.toml"), "--policy", "sampled:fixed:0.5"]);
    assert_eq!(code, 2);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("sampled:run:RUN_DIR"), "{err}");
    let _ = std::fs::remove_dir_all(&run);
}

#[test]
fn a_market_file_runs_the_papers_example_and_writes_its_rounds_and_prices() {
    let out = tmp("market");
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        &config("market/laissezcloud-example.toml"),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // Round 1: B on the A10 at A's bid; round 3: A waits on the Trainium for its reserved A10.
    assert!(
        stdout.contains("| 1 | 0.6870 | 0.3912 | 0.8040 | L4 at 0.3912 | Trainium at 0.8040 | A10 at 0.6870 |"),
        "{stdout}"
    );
    assert!(
        stdout.contains("| 3 | 0.6520 | 0.3912 | 0.8040 | done | Trainium at 0.8040 (A10 reserved) | L4 at 0.3912 |"),
        "{stdout}"
    );
    assert!(stdout.contains("; 2 migrations, 0.0000 work units lost"), "{stdout}");
    let rounds = std::fs::read_to_string(out.join("rounds.jsonl")).unwrap();
    assert_eq!(rounds.lines().count(), 10);
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["metrics"]["finished"], 2);
    assert!(out.join("prices.png").is_file() && out.join("config.toml").is_file());
    // First price through --mechanism: B pays its own 0.762 in round 1.
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        &config("market/laissezcloud-example.toml"),
        "--mechanism",
        "first_price",
        "--out",
        tmp("market-fp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("A10 at 0.7620"), "{stdout}");
    // MTF with tokens on the same arrivals: at round 1 A (first in the turn among the richest)
    // takes the A10, B the L4, and C, at its checkpoint with a token less, runs on demand.
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        &config("market/laissezcloud-example.toml"),
        "--mechanism",
        "mtf",
        "--out",
        tmp("market-mtf").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("| 1 | 0.6060 | 0.3912 | 0.8040 | Trainium at 0.8040 | A10 at 0.6060 | L4 at 0.3912 |"),
        "{stdout}"
    );
    // A policy the market cannot play, and a bad key: one line, exit 2.
    // mtf compare: each mechanism under each policy on the same arrivals, one row each.
    let cmp = tmp("market-compare");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &config("market/laissezcloud-example.toml"),
        "--mechanisms",
        "second_price,mtf",
        "--policies",
        "own,fixed:0.5",
        "--json",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let cells: Vec<(&str, &str)> = rows
        .iter()
        .map(|r| (r["mechanism"].as_str().unwrap(), r["policy"].as_str().unwrap()))
        .collect();
    assert_eq!(
        cells,
        [
            ("second_price", "own"),
            ("second_price", "fixed:0.5"),
            ("mtf", "own"),
            ("mtf", "fixed:0.5")
        ]
    );
    // The paper's episode is the first row (its arrivals are given: one episode a row): 2
    // migrations, revenue and welfare as simulate reports them.
    assert_eq!(v["seeds"], 1);
    let stat = |r: &serde_json::Value, k: &str| r["eval"][k]["mean"].as_f64().unwrap();
    assert_eq!(stat(&rows[0], "migrations"), 2.0);
    for k in ["revenue", "welfare", "on_demand_spend"] {
        assert_eq!(Some(stat(&rows[0], k)), summary["metrics"][k].as_f64(), "{k}");
    }
    for f in ["summary.json", "comparison.md", "comparison.csv", "config.toml"] {
        assert!(cmp.join(f).is_file(), "{f}");
    }
    let file = config("market/laissezcloud-example.toml");
    let o = tmp("market-bad");
    for (args, names) in [
        (vec!["--policy", "hedge"], "policy hedge"),
        (vec!["--set", "market.tenants.0.speeds=[1.0]"], "market.tenants[0].speeds"),
        (vec!["--mechanism", "mtf", "--policy", "fixed:1.5"], "fixed:1.5"),
        (vec!["--set", "market.tenants.0.value=1e300"], "market.tenants[0].value"),
    ] {
        let mut a = vec!["simulate", "--config", file.as_str()];
        a.extend(args.iter().copied());
        a.extend(["--out", o.to_str().unwrap()]);
        let (code, _, err) = mtf(&a);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(names), "{err}");
    }
}

/// The headline row read "welfare (jobs/round)" beside "throughput (jobs/round)", hiding that
/// welfare is the weighted mean of the agents' throughputs, not a total (issue 40.8).
#[test]
fn jobs_per_round_hid_a_weighted_mean() {
    let dir = common::tmp("simulate", "label");
    let q = common::quickstart();
    let (code, out, err) = common::mtf(&[
        "simulate",
        "--config",
        &q,
        "--seeds",
        "2",
        "--set",
        "env.rounds=20",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.starts_with("welfare")).unwrap();
    assert!(line.starts_with("welfare (weighted mean of agents' jobs/round)"), "{out}");
    // The columns stay aligned under the longer label.
    let header = out.lines().find(|l| l.starts_with("metric")).unwrap();
    let value = line.split_whitespace().nth(6).unwrap();
    assert_eq!(header.find("mean").unwrap() + 4, line.find(value).unwrap() + value.len(), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Traces as researchers have them (issue 40.4): a job log (submit times in seconds, an agent
/// per job) read by header name and scaled into rounds; every seed replaying the one trace is
/// said where the CIs are printed, and `env.trace_start = "seeded"` gives each seed its own
/// window; a job log read as counts says how to read it.
#[test]
fn a_job_log_was_refused_and_one_trace_per_seed_went_unsaid() {
    let dir = common::tmp("simulate", "joblog");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("log.csv");
    // 8 agents, 360-second rounds: 1,000 jobs over 10 hours, and a burst of 1,000 more in
    // its first hour.
    let mut text = String::from("agent,submit\n");
    for j in 0..2000u64 {
        let span = if j < 1000 { 36_000 } else { 3_600 };
        text.push_str(&format!("{},{}\n", j % 8, (j * 7919) % span));
    }
    std::fs::write(&log, text).unwrap();
    let q = common::quickstart();
    let trace = format!("env.trace=\"{}\"", log.display());
    let run = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let mut args = vec![
            "simulate",
            "--config",
            &q,
            "--seeds",
            "3",
            "--set",
            "env.rounds=40",
            "--set",
            "env.arrivals=\"trace\"",
            "--set",
            &trace,
        ];
        args.extend(["--out", out.to_str().unwrap()]);
        args.extend(extra);
        let (code, stdout, err) = mtf(&args);
        let served: Vec<f64> = std::fs::read_to_string(out.join("metrics.jsonl"))
            .unwrap_or_default()
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["throughput"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .sum()
            })
            .collect();
        (code, stdout, err, served)
    };
    let (code, _, err, _) = run("counts", &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("env.trace_format = \"jobs\""), "{err}");
    let jobs = [
        "--set",
        "env.trace_format=\"jobs\"",
        "--set",
        "env.trace_time_scale=0.0027777777777777779",
    ];
    let (code, stdout, err, a) = run("first", &jobs);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("Every seed replays the trace from its first round"), "{stdout}");
    assert_eq!(a.len(), 3);
    assert!(a.iter().all(|&x| x == a[0]) && a[0] > 0.0, "the same arrivals on every seed: {a:?}");
    let mut seeded = jobs.to_vec();
    seeded.extend(["--set", "env.trace_start=\"seeded\""]);
    let (code, stdout, err, b) = run("seeded", &seeded);
    assert_eq!(code, 0, "{err}");
    assert!(
        !stdout.contains("Every seed replays") && stdout.contains("env.agents' load is not used"),
        "{stdout}"
    );
    assert!(b.iter().any(|&x| x != b[0]), "each seed its own window: {b:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

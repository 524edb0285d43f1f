//! `mtf train` on a market file (issues 29 and 38): learners against the economic agent, on a
//! duel whose best bids are known by hand (configs/market/duel.toml's header), through the
//! commands every world behind the seam shares (`agents::worlds`): a run group of replicates,
//! each scored on held-out seeds as it plays, next to the best fixed level, the tenants' own
//! factors and uniform play.

use crate::common::{logged, mtf, spawn_quiet, tmp, Tmp};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn duel() -> String {
    format!("{}/../configs/market/duel.toml", env!("CARGO_MANIFEST_DIR"))
}

fn three_types() -> String {
    format!("{}/../configs/market/three-types.toml", env!("CARGO_MANIFEST_DIR"))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

/// A trained run group: its directory (removed when the guard is dropped), the group's
/// summary and each replicate's.
struct Trained {
    dir: Tmp,
    group: Value,
    replicates: Vec<Value>,
}

/// `mtf train --json` on `config` with `sets` (each a `--set`).
fn train_on(config: &str, name: &str, sets: &[&str]) -> Trained {
    let dir = tmp("market-train", name);
    let out_s = dir.display().to_string();
    let mut args = vec!["train", "--config", config, "--out", &out_s, "--json", "--quiet"];
    for s in sets {
        args.extend(["--set", s]);
    }
    let (code, stdout, stderr) = mtf(&args);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["run_dir"], out_s.as_str());
    let group = json(&dir.join("summary.json"));
    // One replicate trains a lone run, its summary the run's own.
    let dirs: Vec<PathBuf> = match group["replicates"].as_array() {
        Some(rs) => rs.iter().map(|r| PathBuf::from(r.as_str().unwrap())).collect(),
        None => vec![dir.to_path_buf()],
    };
    let replicates = dirs
        .into_iter()
        .map(|r| {
            for f in ["summary.json", "metrics.jsonl", "config.toml", "checkpoints/latest.ckpt"] {
                assert!(r.join(f).exists(), "{f} missing in {}", r.display());
            }
            json(&r.join("summary.json"))
        })
        .collect();
    Trained { dir, group, replicates }
}

fn train(name: &str, sets: &[&str]) -> Trained {
    train_on(&duel(), name, sets)
}

fn f(v: &Value, path: &[&str]) -> f64 {
    path.iter()
        .fold(v, |v, k| &v[k])
        .as_f64()
        .unwrap_or_else(|| panic!("{path:?} in {v}"))
}

/// A replicate's utility on its held-out seeds, and its references'.
fn utility(r: &Value) -> f64 {
    f(r, &["eval", "utility", "mean"])
}

fn reference(r: &Value, which: &str) -> f64 {
    f(r, &["references", which, "eval", "utility", "mean"])
}

/// L's utility with its bid factor at `x` (the duel's header): winning the A10 (x > 0.8, E's
/// factor) it pays 10 x; losing, it runs on demand for 10.
fn by_hand(x: f64) -> f64 {
    if x > 0.85 {
        20.0 - 10.0 * x
    } else {
        10.0
    }
}

#[test]
fn hedge_finds_the_hand_computed_best_bid_under_first_price_and_truthful_is_a_best_response_under_second_price() {
    let t = train("hedge-fp", &[]);
    assert_eq!(t.replicates.len(), 3);
    // First price: bid just above E's 0.8: 0.9, utility 20 - 10 x 0.9 = 11; own factor 1: 10.
    for r in &t.replicates {
        assert_eq!(r["learner"], "hedge");
        assert_eq!(f(r, &["references", "best_fixed", "level"]), 0.9);
        assert!((reference(r, "best_fixed") - 11.0).abs() < 1e-9, "{r}");
        assert!((reference(r, "own") - 10.0).abs() < 1e-9);
        // Hedge's level is the best bid, and scored as it plays (drawing its level each
        // episode; the market's rate, 5, puts 0.997 on it by 30 episodes) it earns it.
        let g = &r["hedge"]["groups"][0];
        assert_eq!((g["name"].as_str(), g["level"].as_f64()), (Some("L"), Some(0.9)), "{r}");
        assert!(g["probability"].as_f64().unwrap() > 0.99, "{g}");
        assert!((utility(r) - 11.0).abs() < 1e-9, "{r}");
    }
    for (key, want) in [("vs_best_fixed_per_replicate", 0.0), ("vs_own_per_replicate", 1.0)] {
        let got = t.group[key].as_array().unwrap();
        assert!(
            got.len() == 3 && got.iter().all(|x| (x.as_f64().unwrap() - want).abs() < 1e-9),
            "{key}: {got:?}"
        );
    }

    // Second price: the winner pays E's 0.8 at any f >= 0.9: 12, and so does truthful bidding.
    let t = train("hedge-sp", &["mechanism.kind=\"second_price\""]);
    for r in &t.replicates {
        assert!((reference(r, "best_fixed") - 12.0).abs() < 1e-9);
        assert!((reference(r, "own") - 12.0).abs() < 1e-9, "truthful is a best response");
        assert!(r["hedge"]["groups"][0]["level"].as_f64().unwrap() >= 0.9, "{r}");
        assert!((utility(r) - 12.0).abs() < 1e-9, "{r}");
    }
}

#[test]
fn ppo_and_es_learn_the_first_price_best_bid_against_the_economic_agent() {
    for (name, sets) in [
        ("ppo", vec!["learner.kind=\"ppo\"", "train.episodes=300"]),
        ("es", vec!["learner.kind=\"es\"", "train.episodes=100"]),
    ] {
        // Every one of the file's 3 replicates (with the market's defaults: PPO's gae_lambda
        // 1, ES's sigma 0.2; at the queue world's 0.95 and 0.05 some replicates stay at a
        // losing level), PPO scored drawing its levels as it trained, ES its greedy level.
        let t = train(name, &sets);
        assert_eq!(t.replicates.len(), 3);
        for r in &t.replicates {
            assert_eq!(r["learner"], name);
            assert!((utility(r) - 11.0).abs() < 1e-9, "{name}: {r}");
        }
    }
}

#[test]
fn a_market_run_is_reproducible_and_its_seed_changes_only_what_it_should() {
    let sets = ["learner.kind=\"ppo\"", "train.episodes=5", "train.replicates=2", "train.envs=2"];
    let (a, b) = (train("rep-a", &sets), train("rep-b", &sets));
    for k in 0..2 {
        let (ea, eb) = (
            logged(&a.dir.join(format!("replicate-{k}"))),
            logged(&b.dir.join(format!("replicate-{k}"))),
        );
        assert_eq!(ea.len(), 5);
        assert_eq!(ea, eb, "replicate {k}");
        assert_eq!(a.replicates[k]["eval"], b.replicates[k]["eval"]);
    }
    // Another root seed trains other replicates (their seeds differ), on the same duel.
    let c = train(
        "rep-c",
        &[
            "learner.kind=\"ppo\"",
            "train.episodes=5",
            "train.replicates=2",
            "train.envs=2",
            "seed=4",
        ],
    );
    assert_ne!(logged(&a.dir.join("replicate-0")), logged(&c.dir.join("replicate-0")));
    // The duel draws nothing from its seed: its fixed references do not depend on it.
    for k in ["best_fixed", "own"] {
        assert_eq!(a.replicates[0]["references"][k], c.replicates[0]["references"][k], "{k}");
    }
}

#[test]
fn hedge_reaches_the_best_common_level_where_job_sizes_and_groups_vary_with_the_seed() {
    // three-types.toml: the 12 inference services (one group, sizes 4-8 drawn per episode
    // seed) learn under first price. Hedge's policy is one level per group, the space of the
    // common levels, so each replicate earns the best common level's utility.
    let t = train_on(
        &three_types(),
        "three",
        &["mechanism.kind=\"first_price\"", "train.episodes=20", "train.replicates=2"],
    );
    for r in &t.replicates {
        let groups = r["hedge"]["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0]["name"], "infer");
        let best = reference(r, "best_fixed");
        assert!(best > reference(r, "own") + 1.0, "shading pays under first price");
        assert_eq!(groups[0]["level"], r["references"]["best_fixed"]["level"], "{r}");
        assert!((utility(r) - best).abs() < 1e-9, "{} != {best}", utility(r));
    }
}

#[test]
fn the_actor_critic_trains_in_the_market_through_the_learner_registry_alone() {
    // The market's [learner] is the registry's section: the thesis's learner trains here with
    // no market code of its own (one actor and critic per group, the whole observation).
    let t = train("ac", &["learner.kind=\"actor_critic\"", "train.episodes=4"]);
    assert_eq!(t.replicates.len(), 3);
    // Scored as it trained: each replicate's actor drawing its level. L decides once (at its
    // arrival), so each episode's utility is one level's, and compare plays the run on the
    // same seeds with the same draws.
    let levels: Vec<f64> = (0..11).map(|k| by_hand(0.5 + 0.1 * k as f64)).collect();
    let dir = t.dir.display().to_string();
    let run = format!("run:{dir}");
    let cmp = t.dir.join("cmp").display().to_string();
    let seeds = t.replicates[0]["eval_seeds"].as_u64().unwrap().to_string();
    let (code, stdout, stderr) = mtf(&[
        "compare",
        "--config",
        &duel(),
        "--policies",
        &run,
        "--seeds",
        &seeds,
        "--out",
        &cmp,
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let c: Value = serde_json::from_str(&stdout).unwrap();
    let rows = c["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for (k, (row, r)) in rows.iter().zip(&t.replicates).enumerate() {
        assert_eq!(r["learner"], "actor_critic");
        assert_eq!(row["policy"], format!("run:{}#{k}", t.dir.file_name().unwrap().to_string_lossy()));
        assert_eq!(row["eval"], r["eval"], "replicate {k} plays as it was scored");
        for u in row["per_seed"].as_array().unwrap() {
            let u = u.as_f64().unwrap();
            assert!(levels.iter().any(|&x| (x - u).abs() < 1e-9), "{u} is no level's utility");
        }
    }
}

#[test]
fn bad_market_training_sections_are_one_line_errors() {
    // The learners' own bounds apply as in every world: the market's copy of them accepted 1024
    // minibatches where PPO's allow 1000 (issue 38).
    let cases: [(&[&str], &str); 10] = [
        (&["learner.ppo.minibatches=1024"], "learner.ppo.minibatches"),
        // What the market's shape cannot give the learner that runs is refused by the
        // learners' own checks (per_class = false was silently one actor per group).
        (&["learner.kind=\"es\"", "learner.es.per_class=false"], "learner.es.per_class"),
        (&["learner.kind=\"es\"", "learner.es.features=\"spec\""], "learner.es.features"),
        (
            &["learner.kind=\"ppo\"", "learner.ppo.features=\"by_type\""],
            "learner.ppo.features",
        ),
        (&["learner.es.weight_decay=1.0"], "learner.es.weight_decay"),
        (&["learner.kind=\"ppo\"", "learner.ppo.share=\"class_id\""], "learner.ppo.share"),
        (&["learner.levels=[1.0, 0.5]"], "learner.levels"),
        (&["learner.levels=[-1.0]"], "learner.levels"),
        (&["train.episodes=0"], "train.episodes"),
        (&["learner.kind=\"sarsa\""], "learner.kind"),
    ];
    for (sets, key) in cases {
        let out = tmp("market-train-bad", key);
        let (config, out_s) = (duel(), out.display().to_string());
        let mut args = vec!["train", "--config", &config, "--out", &out_s];
        for s in sets {
            args.extend(["--set", s]);
        }
        let (code, _, stderr) = mtf(&args);
        assert_eq!(code, 2, "{sets:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(key) && stderr.contains("duel.toml"), "{sets:?}: {stderr}");
        assert!(!out.exists(), "no run directory for a refused config");
    }
    let (code, _, stderr) = mtf(&["train", "--config", &duel(), "--resume", "/nonexistent"]);
    assert_eq!(code, 2, "{stderr}");
}

/// A sweep file over the duel with `params` and `objective` lines.
fn market_sweep(dir: &Path, objective: &str, params: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let text = format!(
        "base = \"{}\"\nsampler = \"grid\"\ntrials = 4\nworkers = 2\ninclude_defaults = false\n\n[objective]\n{objective}\n\n[budget]\neval_seeds = 1\nreplicates = 1\n\n[pruner]\nkind = \"median\"\n\n[params]\n{params}\n",
        duel().replace('\\', "/")
    );
    let p = dir.join("sweep.toml");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

/// `mtf sweep` of the sweep file `p` with its storage and outputs in `dir`: its JSON report
/// (exit status 0 asserted).
fn run_sweep(dir: &Path, p: &str) -> Value {
    let (db, out) = (
        format!("sqlite:{}", dir.join("s.db").display()),
        dir.join("out").display().to_string(),
    );
    let (code, stdout, stderr) = mtf(&["sweep", "--config", p, "--storage", &db, "--out", &out, "--quiet", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).unwrap()
}

#[test]
fn a_sweep_over_the_duel_finds_the_hand_computed_utilities() {
    // Hedge reaches L's best bid under either rule (the duel's header): utility 11 under first
    // price, 12 under second price; the grid's best trial is second price.
    let dir = tmp("market-train", "sweep");
    let p = market_sweep(
        &dir,
        "metric = \"eval.utility.mean\"\ndirection = \"maximize\"\nintermediate = \"utility\"",
        "\"mechanism.kind\" = { type = \"categorical\", choices = [\"first_price\", \"second_price\"] }\n\"learner.hedge.eta\" = { type = \"categorical\", choices = [5.0, 10.0] }",
    );
    let v = run_sweep(&dir, &p);
    let trials = v["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 4);
    for t in trials {
        assert_eq!(t["state"], "complete", "{t}");
        let want = if t["params"]["mechanism.kind"] == "second_price" {
            12.0
        } else {
            11.0
        };
        let got = t["value"].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{t}: {got} != {want}");
        let run = Path::new(t["run_dir"].as_str().unwrap());
        assert!(run.join("summary.json").is_file() && run.join("metrics.jsonl").is_file());
        assert_eq!(json(&run.join("summary.json"))["eval"]["utility"]["mean"].as_f64(), Some(got));
    }
    let best = &trials[v["best"].as_u64().unwrap() as usize];
    assert_eq!(best["params"]["mechanism.kind"], "second_price");
    // best.toml is the market file the best trial trained on.
    let best_toml = std::fs::read_to_string(dir.join("out").join("best.toml")).unwrap();
    assert!(best_toml.contains("kind = \"second_price\"") && best_toml.contains("world = \"market\""));
}

#[test]
fn a_market_sweep_with_another_worlds_objective_is_one_line() {
    let dir = tmp("market-train", "sweep-bad");
    let params = "\"learner.hedge.eta\" = { type = \"float\", low = 0.1, high = 1.0 }";
    for objective in [
        "metric = \"eval_welfare.mean\"",
        "metric = \"eval.utility.mean\"\nintermediate = \"drops\"",
        "metric = \"eval.utility\"",
    ] {
        let p = market_sweep(&dir, objective, params);
        let (code, _, stderr) = mtf(&[
            "sweep",
            "--config",
            &p,
            "--storage",
            &format!("sqlite:{}", dir.join("b.db").display()),
        ]);
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.trim().lines().count() == 1 && stderr.contains("objective"),
            "{objective}: {stderr}"
        );
    }
}

#[test]
fn a_trained_market_run_plays_as_it_was_scored_in_compare_and_analyze() {
    // Every learner's replicates, played by mtf compare (run:DIR) on the run's held-out seeds,
    // give the utility each replicate's summary states, to the last bit: the run's checkpoint
    // holds what it played, and one play function scores both.
    for kind in ["hedge", "ppo", "es"] {
        let t = train_on(
            &three_types(),
            &format!("policy-{kind}"),
            &[
                &format!("learner.kind=\"{kind}\""),
                "mechanism.kind=\"first_price\"",
                "train.episodes=3",
                "train.replicates=2",
                "train.eval_seeds=2",
                "train.envs=2",
                "learner.es.pairs=1",
            ],
        );
        // Each training episode's score was written as it happened.
        for k in 0..2 {
            let e = logged(&t.dir.join(format!("replicate-{k}")));
            assert_eq!(e.len(), 3, "{kind}");
            for (j, l) in e.iter().enumerate() {
                assert_eq!(l["episode"].as_u64(), Some(j as u64), "{kind}");
                assert!(l["utility"].is_number(), "{l}");
            }
        }
        let cmp = t.dir.join("cmp").display().to_string();
        let (code, stdout, stderr) = mtf(&[
            "compare",
            "--config",
            &three_types(),
            "--set",
            "mechanism.kind=\"first_price\"",
            "--policies",
            &format!("run:{}", t.dir.display()),
            "--seeds",
            "2",
            "--out",
            &cmp,
            "--json",
        ]);
        assert_eq!(code, 0, "{stderr}");
        let c: Value = serde_json::from_str(&stdout).unwrap();
        for (k, r) in t.replicates.iter().enumerate() {
            assert_eq!(c["rows"][k]["eval"]["utility"], r["eval"]["utility"], "{kind} replicate {k}");
        }
    }
}

#[test]
fn mtf_compare_plays_a_trained_market_run_per_replicate() {
    // Hedge on the first-price duel learns L's best bid, 0.9: in mtf compare each replicate's
    // row gives L the hand-computed 11 (its own factor, 1: 10).
    let t = train("compare-run", &["train.replicates=2", "train.eval_seeds=1"]);
    let run = t.dir.display().to_string();
    let policy = format!("run:{run}");
    let cmp = t.dir.join("cmp").display().to_string();
    let (code, stdout, stderr) = mtf(&[
        "compare",
        "--config",
        &duel(),
        "--policies",
        &format!("own,{policy}"),
        "--out",
        &cmp,
        "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    let name = t.dir.file_name().unwrap().to_string_lossy().to_string();
    let names: Vec<&str> = rows.iter().map(|r| r["policy"].as_str().unwrap()).collect();
    assert_eq!(names, ["own".to_string(), format!("run:{name}#0"), format!("run:{name}#1")]);
    let l = |r: &Value| f(r, &["eval", "utility", "mean"]);
    assert!((l(&rows[0]) - 10.0).abs() < 1e-9 && (l(&rows[1]) - 11.0).abs() < 1e-9 && (l(&rows[2]) - 11.0).abs() < 1e-9);
    // Bid factors are not thresholds: under MTF the run's levels are not the world's.
    let (code, _, stderr) = mtf(&[
        "compare",
        "--config",
        &duel(),
        "--policies",
        &policy,
        "--mechanisms",
        "mtf",
        "--out",
        &cmp,
    ]);
    assert_eq!((code, stderr.trim().lines().count()), (2, 1), "{stderr}");
    assert!(
        stderr.contains("was trained for other groups, features or levels than this world has"),
        "{stderr}"
    );
    // The policies act for the file's learning tenants, which must be the run's: E learning
    // too would have indexed past the run's groups, L not learning played nobody.
    for learn in ["market.tenants.0.learn=true", "market.tenants.1.learn=false"] {
        let (code, _, stderr) = mtf(&["compare", "--config", &duel(), "--set", learn, "--policies", &policy, "--out", &cmp]);
        assert_eq!((code, stderr.trim().lines().count()), (2, 1), "{learn}: {stderr}");
        assert!(
            stderr.contains("was trained for other groups, features or levels than this world has"),
            "{stderr}"
        );
    }
    // A damaged checkpoint is one line, not a panic.
    let ckpt = t.dir.join("replicate-1/checkpoints/latest.ckpt");
    let good = std::fs::read(&ckpt).unwrap();
    let mut flipped = good.clone();
    flipped[40] ^= 1;
    std::fs::write(&ckpt, &flipped).unwrap();
    let (code, _, stderr) = mtf(&["compare", "--config", &duel(), "--policies", &policy, "--out", &cmp]);
    assert_eq!((code, stderr.trim().lines().count()), (2, 1), "{stderr}");
    assert!(stderr.contains("latest.ckpt"), "{stderr}");
    std::fs::write(&ckpt, &good).unwrap();
    let bogus = format!("run:{}", t.dir.join("cmp").display());
    let (code, _, stderr) = mtf(&[
        "compare",
        "--config",
        &duel(),
        "--policies",
        &bogus,
        "--out",
        &t.dir.join("cmp2").display().to_string(),
    ]);
    assert_eq!((code, stderr.trim().lines().count()), (2, 1), "{stderr}");
}

#[test]
fn the_uniform_random_reference_is_the_mean_over_the_levels() {
    // L decides once (at arrival): drawing a level uniformly, its expected utility is the mean
    // of the duel's per-level table, (4 x 10 + 11 + 10 + 9 + 8 + 7 + 6 + 5) / 11 = 96 / 11;
    // one draw per evaluation seed, sd below 2, so 400 seeds put the mean within 0.4 of it.
    let t = train("uniform", &["train.replicates=1", "train.episodes=2", "train.eval_seeds=400"]);
    let u = reference(&t.replicates[0], "uniform");
    assert!((u - 96.0 / 11.0).abs() < 0.4, "{u}");
}

/// The lines of every replicate's `metrics.jsonl` in the group `cut`.
fn group_lines(cut: &Path) -> usize {
    (0..8)
        .map(|k| std::fs::read_to_string(cut.join(format!("replicate-{k}/metrics.jsonl"))).map_or(0, |t| t.lines().count()))
        .sum()
}

/// `mtf` run with `args` as a child, killed with SIGKILL once the group `cut` has logged `at`
/// episodes (or when it ended by itself): the episodes logged then.
fn killed_at_lines(args: &[String], cut: &Path, at: usize) -> usize {
    use std::time::{Duration, Instant};
    let mut child = spawn_quiet(args);
    let t0 = Instant::now();
    while group_lines(cut) < at && t0.elapsed() < Duration::from_secs(120) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    group_lines(cut)
}

/// A market run group killed with SIGKILL resumes to the group never interrupted (issue 38):
/// each replicate's per-episode log and summary are the same (its learner restored exactly:
/// every later episode agrees), and its TensorBoard events name its training and evaluation.
/// (A checkpoint's bytes are not compared: burn's records carry per-process parameter ids.)
fn killed_and_resumed(name: &str, sets: &[&str], at: usize) {
    let dir = tmp("market-train", name);
    let (full, cut) = (dir.join("full"), dir.join("cut"));
    let args = |out: &Path| {
        let mut a: Vec<String> = vec!["train".into(), "--config".into(), duel(), "--replicates".into(), "2".into()];
        for s in sets {
            a.extend(["--set".into(), s.to_string()]);
        }
        a.extend(["--quiet".into(), "--out".into(), out.display().to_string()]);
        a
    };
    let run = |a: &[String]| mtf(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let (code, _, err) = run(&args(&full));
    assert_eq!(code, 0, "{err}");
    let total = group_lines(&full);
    let before = killed_at_lines(&args(&cut), &cut, at);
    assert!(before < total, "killed before the end ({before} of {total} episodes logged)");
    let (code, _, err) = mtf(&["train", "--resume", cut.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0, "{err}");
    for k in 0..2 {
        let (c, u) = (cut.join(format!("replicate-{k}")), full.join(format!("replicate-{k}")));
        assert_eq!(logged(&c), logged(&u), "replicate {k} after a kill at {before} episodes");
        let (a, b) = (json(&c.join("summary.json")), json(&u.join("summary.json")));
        assert_eq!(a["eval"], b["eval"]);
        assert_eq!(a["references"], b["references"]);
        let events: Vec<u8> = std::fs::read_dir(c.join("tb"))
            .unwrap()
            .flat_map(|e| std::fs::read(e.unwrap().path()).unwrap())
            .collect();
        for tag in ["charts/utility", "summary/vs_best_fixed", "_hparams_/session_start_info"] {
            assert!(events.windows(tag.len()).any(|w| w == tag.as_bytes()), "replicate {k}: no {tag}");
        }
    }
    assert_eq!(
        json(&cut.join("summary.json"))["vs_best_fixed_per_replicate"],
        json(&full.join("summary.json"))["vs_best_fixed_per_replicate"]
    );
    // A resume of a complete group trains nothing: every replicate's log and summary stay.
    let logs = |d: &Path| {
        (0..2)
            .map(|k| std::fs::read(d.join(format!("replicate-{k}/metrics.jsonl"))).unwrap())
            .collect::<Vec<_>>()
    };
    let sums = |d: &Path| {
        (0..2)
            .map(|k| std::fs::read(d.join(format!("replicate-{k}/summary.json"))).unwrap())
            .collect::<Vec<_>>()
    };
    let (l0, s0) = (logs(&cut), sums(&cut));
    let (code, _, err) = mtf(&["train", "--resume", cut.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert!(logs(&cut) == l0 && sums(&cut) == s0);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_market_run_killed_with_sigkill_resumes_to_the_same_run() {
    // PPO on the duel, 2 x 150 episodes, killed in the second replicate.
    killed_and_resumed(
        "killed",
        &["learner.kind=\"ppo\"", "train.episodes=150", "train.checkpoint_every=10"],
        170,
    );
}

#[test]
fn a_market_hedge_run_killed_with_sigkill_resumes_to_the_same_run() {
    // Hedge's weights travel in the checkpoint's learner bytes; its draws come from (replicate
    // seed, episode) streams, so nothing is skipped on resume. 2 x 2,000 duel episodes.
    killed_and_resumed("killed-hedge", &["train.episodes=2000", "train.checkpoint_every=100"], 2200);
}

/// `mtf analyze` on a market file (issue 38): every common level, uniform play, the learners'
/// own factors and the run's replicates on the run's evaluation seeds; the best common level is
/// the duel's hand-computed 0.9 (utility 11), the baseline every row is paired against, and the
/// one common level no tenant leaves alone; `mtf curves` draws the run's replicates.
#[test]
fn analyze_on_a_market_file_restates_a_runs_references_and_finds_the_equilibrium() {
    // Trained on another root seed than the file's.
    let t = train("analyzed", &["train.replicates=2", "train.episodes=60", "seed=5"]);
    let out = tmp("market-train", "analysis");
    // On the run's root seed (5, not the file's 3: before 2026-11-29 analyze took the file's,
    // and dropped --seed too) and its 2 evaluation seeds: the seeds its summary was scored on.
    let (code, stdout, err) = mtf(&[
        "analyze",
        "--config",
        &duel(),
        "--run",
        t.dir.to_str().unwrap(),
        "--seeds",
        "2",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let a: Value = serde_json::from_str(&stdout).unwrap();
    let rows = a["rows"].as_array().unwrap();
    let row = |p: &str| {
        rows.iter()
            .find(|r| r["policy"] == p)
            .unwrap_or_else(|| panic!("no row {p}: {stdout}"))
    };
    let u = |r: &Value| f(r, &["eval", "utility", "mean"]);
    // The common levels' rows first, in the levels' order: the duel's table by hand.
    for (k, r) in rows.iter().take(11).enumerate() {
        let x = 0.5 + 0.1 * k as f64;
        assert!((u(r) - by_hand(x)).abs() < 1e-9, "level {x}: {r}");
    }
    let r0 = &t.replicates[0];
    assert!((u(row("fixed:own")) - reference(r0, "own")).abs() < 1e-9);
    // Uniform play draws a level per episode: each seed's utility is one level's.
    for x in row("uniform")["per_seed"].as_array().unwrap() {
        assert!(
            (0..11).any(|k| (by_hand(0.5 + 0.1 * k as f64) - x.as_f64().unwrap()).abs() < 1e-9),
            "{x}"
        );
    }
    // ... the same draws as the run's own uniform reference.
    assert_eq!(row("uniform")["eval"]["utility"], r0["references"]["uniform"]["eval"]["utility"]);
    // --seed overrides the run's: other seeds.
    let other = tmp("market-train", "analysis-seed");
    let (code, stdout2, err) = mtf(&[
        "analyze",
        "--config",
        &duel(),
        "--run",
        t.dir.to_str().unwrap(),
        "--seed",
        "6",
        "--seeds",
        "2",
        "--json",
        "--out",
        other.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let b: Value = serde_json::from_str(&stdout2).unwrap();
    assert_ne!(a["episode_seeds"], b["episode_seeds"]);
    let name = t.dir.file_name().unwrap().to_string_lossy().to_string();
    for (k, r) in t.replicates.iter().enumerate() {
        assert_eq!(
            row(&format!("run:{name}#{k}"))["eval"]["utility"],
            r["eval"]["utility"],
            "replicate {k}"
        );
    }
    let base = &rows[a["baseline"].as_u64().unwrap() as usize];
    assert_eq!(base["policy"], "fixed:0.9");
    assert!((u(base) - 11.0).abs() < 1e-9);
    assert_eq!(a["equilibria"], serde_json::json!([0.9]));
    assert!(out.join("summary.json").exists());
    // mtf curves on the run: a series over its replicates, each point the mean over replicates
    // of a block of their training episodes.
    let cv = tmp("market-train", "curves");
    let (code, stdout, err) = mtf(&["curves", t.dir.to_str().unwrap(), "--json", "--out", cv.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let c: Value = serde_json::from_str(&stdout).unwrap();
    let series = &c["series"][0];
    let points = series["points"].as_array().unwrap();
    assert_eq!(points.len(), 20, "{stdout}");
    let last: Vec<f64> = (0..2)
        .map(|k| {
            let e = logged(&t.dir.join(format!("replicate-{k}")));
            let xs: Vec<f64> = e[57..].iter().map(|l| l["utility"].as_f64().unwrap()).collect();
            xs.iter().sum::<f64>() / xs.len() as f64
        })
        .collect();
    assert_eq!(points[19][0], 60);
    assert!(
        (points[19][1]["mean"].as_f64().unwrap() - (last[0] + last[1]) / 2.0).abs() < 1e-9,
        "{stdout}"
    );
    // Its references, the first replicate's on the held-out seeds: the duel's best level 0.9
    // at 11, L's own factor at 10.
    let refs = c["references"].as_array().unwrap();
    let level = |p: &str| refs.iter().find(|r| r["policy"] == p).map(|r| r["level"]["mean"].as_f64().unwrap());
    assert!((level("best fixed level 0.9").unwrap() - 11.0).abs() < 1e-9, "{stdout}");
    assert!((level("own").unwrap() - 10.0).abs() < 1e-9, "{stdout}");
    let (code, _, err) = mtf(&[
        "curves",
        t.dir.to_str().unwrap(),
        "--metric",
        "welfare_x",
        "--out",
        cv.to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("welfare_x"), "{err}");
}

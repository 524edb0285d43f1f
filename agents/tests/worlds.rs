//! End-to-end tests of the worlds behind the seam (`env::worlds`): the toy bandit world (one
//! file and one registry line in `env`) through every door — training with replicates, a run
//! killed with SIGKILL resumed exactly, compare, analyze, export and the exported agent
//! driven — and Gavel's world through the
//! commands a researcher types.

use crate::common::{self, mtf};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn tmp(name: &str) -> common::Tmp {
    common::tmp("worlds", name)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A bandit config in `dir`: 4 agents in 2 groups (targets 0.3 and 0.7), `rounds` rounds.
fn bandit(dir: &Path, rounds: u32, extra: &str) -> String {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("bandit.toml");
    std::fs::write(
        &path,
        format!("seed = 3\n[env]\nworld = \"bandit\"\nagents = 4\nrounds = {rounds}\nnoise = 0.05\n[learner.es]\npairs = 4\nsigma = 0.2\n[train]\nepisodes = 6\ncheckpoint_every = 2\neval_seeds = 4\n{extra}"),
    )
    .unwrap();
    path.display().to_string()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_world_without_round_records_simulates_without_a_round_log() {
    // The bandit keeps no round record (`World::keeps_round_records`): its run directory has
    // no rounds.jsonl (since 2026-12-02 none is opened; before, an empty one was removed).
    let dir = tmp("simulate");
    let config = bandit(&dir, 10, "");
    let out = dir.join("sim");
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        &config,
        "--policy",
        "fixed:0.3",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("fixed:0.3"), "{stdout}");
    assert!(out.join("summary.json").is_file() && !out.join("rounds.jsonl").exists());
}

#[test]
fn a_toy_world_trains_replicates_that_judge_themselves() {
    let dir = tmp("replicates");
    let config = bandit(&dir, 10, "");
    let out = dir.join("group");
    let (code, stdout, err) = mtf(&[
        "train",
        "--config",
        &config,
        "--replicates",
        "2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("2 replicates; improvement over the best fixed level"), "{stdout}");
    let group = json(&out.join("summary.json"));
    assert_eq!(group["vs_best_fixed_per_replicate"].as_array().unwrap().len(), 2);
    for k in 0..2 {
        let s = json(&out.join(format!("replicate-{k}/summary.json")));
        // The best fixed level of the bandit's two groups is one level: 0.3 or 0.7 pay the
        // same (1 for one group, 0.84 for the other), the lower wins the tie.
        let level = s["references"]["best_fixed"]["level"].as_f64().unwrap();
        assert!([0.3, 0.4, 0.5, 0.6, 0.7].contains(&level), "{level}");
        assert!(s["vs_uniform"]["mean"].is_number() && s["eval"]["reward"]["mean"].is_number());
        assert_eq!(common::logged(&out.join(format!("replicate-{k}"))).len(), 6);
        // Where selfish learners go: each group's target (its reward depends on its own level
        // only), found from the best fixed level and reached in one pass.
        let selfish = &s["references"]["selfish"];
        assert_eq!(selfish["spec"], "fixed:group_0=0.3,group_1=0.7", "{s}");
        assert!(selfish["converged"] == true && s["vs_selfish"]["mean"].is_number(), "{s}");
    }
    assert!(group["vs_selfish_iqm"].is_number(), "{group}");
    assert!(stdout.contains("improvement over the selfish equilibrium: IQM"), "{stdout}");
    // Replicates train from their own seeds.
    assert_ne!(common::logged(&out.join("replicate-0")), common::logged(&out.join("replicate-1")));
    // analyze scores the group's replicates against the baseline its table names.
    let (code, stdout, err) = mtf(&[
        "analyze",
        "--config",
        &config,
        "--run",
        out.to_str().unwrap(),
        "--seeds",
        "3",
        "--json",
        "--quiet",
        "--out",
        dir.join("an-group").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let an: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let base = &an["rows"][an["baseline"].as_u64().unwrap() as usize];
    let named = format!("{}/{}", base["policy"].as_str().unwrap(), base["mechanism"].as_str().unwrap());
    assert_eq!(an["groups"][0]["baseline"], named, "{an}");
    let scores: Vec<f64> = an["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["group"].is_string())
        .map(|r| r["improvement"]["mean"].as_f64().unwrap())
        .collect();
    assert_eq!(scores.len(), 2, "{an}");
    // The token-scale sweep is the queue world's: asked for here, it is refused in one line
    // (it was accepted and ignored).
    let (code, _, err) = mtf(&["analyze", "--config", &config, "--tokens", "100,1000", "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--tokens") && err.contains("bandit world") && err.lines().count() == 1,
        "{err}"
    );
    // Their curves: one series (the replicates differ only in their seeds), the headline.
    let curves = dir.join("curves");
    let (code, stdout, err) = mtf(&["curves", out.to_str().unwrap(), "--out", curves.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.starts_with("reward over training") && stdout.contains("(2 runs)"),
        "{stdout}"
    );
    assert!(curves.join("curves.png").exists() && curves.join("curves.csv").exists());
    // Reference lines on the held-out seeds, as in the queue world (refused here before
    // 2026-12-02): level 0.3 pays group 0 1 and group 1 1 - 0.16 per round.
    let against = dir.join("curves-against");
    let (code, _, err) = mtf(&[
        "curves",
        out.to_str().unwrap(),
        "--against",
        "fixed:0.3,uniform,fixed:all",
        "--json",
        "--out",
        against.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let csv = std::fs::read_to_string(against.join("curves.csv")).unwrap();
    let line = csv.lines().find(|l| l.starts_with("fixed:0.3,")).unwrap_or_else(|| panic!("{csv}"));
    let level: f64 = line.split(',').nth(3).unwrap().parse().unwrap();
    assert!((level - 0.92).abs() < 0.02, "{line}");
    // The selfish equilibrium (each group at its target) pays about 1 a round.
    let line = csv
        .lines()
        .find(|l| l.starts_with("\"selfish equilibrium fixed:group_0=0.3,group_1=0.7\","))
        .unwrap_or_else(|| panic!("{csv}"));
    let level: f64 = line.split_once("\",").unwrap().1.split(',').nth(2).unwrap().parse().unwrap();
    assert!((level - 1.0).abs() < 0.02, "{line}");
    // Uniform play, a reference of the summary too, is drawn once, as evaluated.
    assert_eq!(csv.lines().filter(|l| l.starts_with("uniform,")).count(), 1, "{csv}");
    // So is the best fixed level, named by fixed:all as fixed:X: every level once.
    assert!(
        !csv.contains("best fixed level") && csv.lines().filter(|l| l.starts_with("fixed:")).count() == 11 + 1,
        "{csv}"
    );
    let (code, _, err) = mtf(&[
        "curves",
        out.to_str().unwrap(),
        "--against",
        "fixed:7",
        "--out",
        dir.join("c-bad").to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("fixed:7") && !dir.join("c-bad").exists(), "{err}");
    // A label names the group's replicates in a comparison.
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--policies",
        &format!("fixed:0.3,run:{}", out.display()),
        "--label",
        &format!("es=run:{}", out.display()),
        "--seeds",
        "2",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["policy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["fixed:0.3", "es, replicate 0", "es, replicate 1"]);
    assert_eq!(v["rows"][2]["spec"], "run:group#1");
    // The group as one row across its replicates (the queue world's alone before 2026-12-02):
    // each replicate's score its paired improvement over the baseline row.
    let g = &v["groups"][0];
    assert_eq!(
        (g["policy"].as_str(), g["baseline"].as_str()),
        (Some("es"), Some("fixed:0.3/-")),
        "{g}"
    );
    let scores: Vec<f64> = g["vs_baseline"]["scores"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let improvements: Vec<f64> = (1..3).map(|k| v["rows"][k]["improvement"]["mean"].as_f64().unwrap()).collect();
    assert_eq!(scores, improvements);
    let md = std::fs::read_to_string(dir.join("cmp/comparison.md")).unwrap();
    assert!(
        md.contains("## Across training replicates") && md.contains("| es | - | 2 |"),
        "{md}"
    );
    // A replicate as the baseline is not scored against itself.
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--policies",
        &format!("run:{}", out.display()),
        "--baseline",
        "run:group#0",
        "--seeds",
        "2",
        "--json",
        "--out",
        dir.join("cmp-base").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["groups"][0]["vs_baseline"]["scores"].as_array().unwrap().len(), 1, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_seam_run_killed_with_sigkill_resumes_to_the_same_run() {
    killed_and_resumed("killed", 40000, "");
}

#[test]
fn a_seam_ppo_run_killed_with_sigkill_resumes_to_the_same_run() {
    killed_and_resumed("killed-ppo", 1500, "[learner]\nkind = \"ppo\"\n");
}

#[test]
fn a_seam_actor_critic_run_killed_with_sigkill_resumes_to_the_same_run() {
    // 1,500-round episodes: the kill lands inside an episode's per-round updates.
    killed_and_resumed("killed-ac", 1500, "[learner]\nkind = \"actor_critic\"\n");
}

#[test]
fn the_actor_critic_finds_each_groups_level_in_the_toy_world() {
    // The thesis's learner, pooled (one actor and critic per group, each agent's life its own
    // N-step returns; agents 1 and 3 arrive a round late): both groups' targets are +0.04
    // above the best fixed level (see the PPO test above).
    let dir = tmp("ac");
    let (config, run, _) = finds_both_targets(&dir, "actor_critic", 600);
    let lines = common::logged(&run);
    assert_eq!(lines[0]["agent_steps"], 8 * (2 + 9 * 4), "8 copies of one seed (group 8)");
    assert!(lines[599]["entropy"].as_f64().unwrap() < 1.0, "{}", lines[599]);
    // The resolved config says what it read: the agent's whole row.
    let resolved = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(resolved.contains("features = \"all\""), "{resolved}");
    plays_as_scored(&dir, &config, &run, &json(&run.join("summary.json")));
    // What this world cannot give is refused in one line: the queue world's features, and
    // difference rewards (no round record to re-run).
    for (set, key) in [
        ("learner.actor_critic.features=\"spec\"", "learner.actor_critic.features"),
        ("learner.reward=\"difference\"", "learner.reward"),
    ] {
        let (code, _, err) = mtf(&[
            "train",
            "--config",
            &config,
            "--set",
            set,
            "--quiet",
            "--out",
            dir.join("no").to_str().unwrap(),
        ]);
        assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
        assert!(err.contains(key), "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn hedge_finds_each_groups_level_in_the_toy_world_and_every_door_takes_it() {
    // Full-information Hedge over a level per group held for the episode: a group's best
    // level is its target whatever the other plays, so Hedge's heaviest levels are 0.3 and
    // 0.7, +0.04 above the best fixed level when played (see the PPO test above).
    let dir = tmp("hedge");
    let (config, run, s) = finds_both_targets(&dir, "hedge", 200);
    let groups = s["hedge"]["groups"].as_array().unwrap();
    assert_eq!(
        (groups[0]["level"].as_f64(), groups[1]["level"].as_f64()),
        (Some(0.3), Some(0.7)),
        "{}",
        s["hedge"]
    );
    let lines = common::logged(&run);
    // One seed (train.envs = 1) played as drawn and replayed for each group at its 10 other
    // levels: 21 episodes of 2 agent-steps in round 0 and 4 in rounds 1-9; every one counts.
    assert_eq!(lines[0]["agent_steps"], 21 * (2 + 9 * 4));
    assert_eq!(lines[0]["episodes_played"], 21);
    assert!(lines[199]["entropy"].as_f64().unwrap() < lines[0]["entropy"].as_f64().unwrap());
    plays_as_scored(&dir, &config, &run, &s);
    // Exported, each group's agent answers its heaviest level whatever it reads.
    for (g, level) in [(0, 0.3), (1, 0.7)] {
        let agent = dir.join(format!("agent-{g}"));
        let (code, _, err) = mtf(&[
            "export",
            "--run",
            run.to_str().unwrap(),
            "--agent",
            &g.to_string(),
            "--out",
            agent.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let mut child = Command::new(&agent).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"{\"world\": [0, 0.1]}\n{\"world\": [1, 0.9]}\n")
            .unwrap();
        let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
        for line in out.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["threshold"].as_f64(), Some(level), "{out}");
        }
        assert_eq!(out.lines().count(), 2, "{out}");
    }
    // The queue world's round-by-round rescaling has no meaning here: refused in one line.
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &config,
        "--set",
        "learner.hedge.scale=\"round\"",
        "--quiet",
        "--out",
        dir.join("no").to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("learner.hedge.scale"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_seam_hedge_run_killed_with_sigkill_resumes_to_the_same_run() {
    // 21 episodes of 15,000 rounds per training episode: the kill lands inside one.
    killed_and_resumed("killed-hedge", 15000, "[learner]\nkind = \"hedge\"\n");
}

/// A `kind` run of `episodes` on the bandit (10 rounds, 8 held-out seeds) in `dir`, checked to
/// find both groups' targets: its config, run directory and summary.
fn finds_both_targets(dir: &Path, kind: &str, episodes: u32) -> (String, PathBuf, serde_json::Value) {
    let config = bandit(dir, 10, &format!("[learner]\nkind = \"{kind}\"\n"));
    let run = dir.join("run");
    let (code, stdout, err) = mtf(&[
        "train",
        "--config",
        &config,
        "--set",
        &format!("train.episodes={episodes}"),
        "--set",
        "train.eval_seeds=8",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains(&format!("trained {episodes} episodes ({kind})")), "{stdout}");
    let s = json(&run.join("summary.json"));
    let gain = s["vs_best_fixed"]["mean"].as_f64().unwrap();
    assert!(
        gain > 0.03,
        "{kind} should find both targets: {gain} over the best fixed level\n{stdout}"
    );
    (config, run, s)
}

/// `run:DIR` plays the run as its summary scored it (sampled, from the same seeds).
fn plays_as_scored(dir: &Path, config: &str, run: &Path, summary: &serde_json::Value) {
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        config,
        "--policies",
        &format!("run:{}", run.display()),
        "--seeds",
        "8",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["rows"][0]["eval"]["reward"]["mean"], summary["eval"]["reward"]["mean"]);
}

/// A run of the bandit of `rounds` rounds (`extra` config lines) killed with SIGKILL after
/// its second checkpoint, resumed: the same metrics and summary as a run never killed.
fn killed_and_resumed(name: &str, rounds: u32, extra: &str) {
    let dir = tmp(name);
    let config = bandit(&dir, rounds, extra);
    killed_and_resumed_at(&dir, &config);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run of `config` (checkpointing by episode 2) killed with SIGKILL after its second
/// checkpoint and resumed, against one never killed, both in `dir`.
fn killed_and_resumed_at(dir: &Path, config: &str) {
    let config = config.to_string();
    let (full, cut) = (dir.join("full"), dir.join("cut"));
    let args = |out: &Path| {
        vec![
            "train".to_string(),
            "--config".into(),
            config.clone(),
            "--quiet".into(),
            "--out".into(),
            out.display().to_string(),
        ]
    };
    let (code, _, err) = mtf(&args(&full).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let mut child = crate::common::spawn_quiet(&args(&cut));
    let t0 = Instant::now();
    while !cut.join("checkpoints/episode-000002.ckpt").exists() && t0.elapsed() < Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = common::logged(&cut).len();
    let (code, _, err) = mtf(&["train", "--resume", cut.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(common::logged(&cut), common::logged(&full), "resumed after {before} generations");
    let (a, b) = (json(&cut.join("summary.json")), json(&full.join("summary.json")));
    assert_eq!(a["eval"], b["eval"]);
    assert_eq!(a["vs_best_fixed"], b["vs_best_fixed"]);
    // A resume of a complete run does nothing.
    let (code, stdout, _) = mtf(&["train", "--resume", cut.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("nothing to resume"), "{stdout}");
}

/// The quickstart, shortened (40 rounds, 6 training episodes checkpointed every 2, 4 held-out
/// seeds), in `dir`, its `[env]` with `more` (as `stack = "seam"`).
fn short_quickstart(dir: &Path, name: &str, more: &[(&str, toml::Value)]) -> String {
    let text = std::fs::read_to_string(root().join("configs/quickstart.toml")).unwrap();
    let mut t: toml::Table = text.parse().unwrap();
    let env = t.get_mut("env").and_then(toml::Value::as_table_mut).unwrap();
    env.insert("rounds".into(), 40.into());
    for (k, v) in more {
        env.insert((*k).into(), v.clone());
    }
    let train = t.entry("train").or_insert(toml::Table::new().into()).as_table_mut().unwrap();
    for (k, v) in [("episodes", 6), ("checkpoint_every", 2), ("eval_seeds", 4)] {
        train.insert(k.into(), v.into());
    }
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, toml::to_string(&t).unwrap()).unwrap();
    path.display().to_string()
}

/// `mtf compare --json` of `policies` on `config` (which must succeed), its output parsed.
fn compare_json(config: &str, policies: &str, seeds: &str, threads: &str, out: &Path) -> serde_json::Value {
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        config,
        "--policies",
        policies,
        "--seeds",
        seeds,
        "--threads",
        threads,
        "--json",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{policies}: {err}");
    serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
}

/// Two runs' `metrics.jsonl` lines (6 episodes each) agree on `keys`, each a number.
fn same_training(a: &[serde_json::Value], b: &[serde_json::Value], keys: &[&str], what: &str) {
    assert_eq!((a.len(), b.len()), (6, 6), "{what}");
    for (s, q) in a.iter().zip(b) {
        for &key in keys {
            assert!(s[key].is_number(), "{what}: {key}: {s}");
            assert_eq!(s[key], q[key], "{what}: {key} of episode {}", s["episode"]);
        }
        // The learner's reward spread and each class's mean threshold, as the queue stack
        // logs them (its `threshold_by_weight`; the seam's `threshold_w<w>`, the same means
        // summed in another order).
        assert_eq!(s["reward_spread"], q["reward_spread"], "{what}: reward_spread");
        let classes = q["threshold_by_weight"].as_array().unwrap();
        assert!(!classes.is_empty());
        for wt in classes {
            let (w, t) = (wt[0].as_f64().unwrap(), wt[1].as_f64().unwrap());
            let seam = s[format!("threshold_w{w}").as_str()]
                .as_f64()
                .unwrap_or_else(|| panic!("{what}: threshold_w{w}: {s}"));
            assert!((seam - t).abs() < 1e-12, "{what}: threshold_w{w} {seam} against {t}");
        }
    }
}

/// A run's references behind the seam pick the best fixed level and search the selfish
/// equilibrium on as many selection seeds as the queue stack's (`train.eval_seeds`, here 10,
/// not clamped to 8), so both stacks' references agree to the bit.
#[test]
fn the_references_pick_on_the_queue_stacks_selection_seeds_behind_the_seam() {
    let dir = tmp("references-seeds");
    let seam = short_quickstart(&dir, "seam.toml", &[("stack", "seam".into())]);
    let own = short_quickstart(&dir, "own.toml", &[]);
    let summary = |config: &str, out: &str| {
        let run = dir.join(out);
        let (code, _, err) = mtf(&[
            "train",
            "--config",
            config,
            "--quiet",
            "--set",
            "learner.kind=\"fixed\"",
            "--set",
            "train.eval_seeds=10",
            "--out",
            run.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        json(&run.join("summary.json"))
    };
    let (s, q) = (summary(&seam, "seam"), summary(&own, "own"));
    let (s, q) = (&s["references"], &q["references"]);
    assert_eq!(s["best_fixed"]["eval"]["welfare"]["mean"], q["best_fixed_eval"]["mean"], "{s}\n{q}");
    assert_eq!(s["selfish"]["eval"]["welfare"]["mean"], q["selfish"]["eval"]["mean"], "{s}\n{q}");
    assert_eq!(s["uniform"]["eval"]["welfare"]["mean"], q["uniform_eval"]["mean"], "{s}\n{q}");
    // The valuation world likewise (its headline the surplus per bidder per item; the queue
    // stack searches no selfish equilibrium there).
    let text = std::fs::read_to_string(root().join("configs/auctions/first-price.toml"))
        .unwrap()
        .replace("rounds = 3000", "rounds = 20");
    let (fp_own, fp_seam) = (dir.join("fp-own.toml"), dir.join("fp-seam.toml"));
    std::fs::write(&fp_own, &text).unwrap();
    std::fs::write(&fp_seam, text.replace("[env]\n", "[env]\nstack = \"seam\"\n")).unwrap();
    let (s, q) = (
        summary(fp_seam.to_str().unwrap(), "fp-seam"),
        summary(fp_own.to_str().unwrap(), "fp-own"),
    );
    let (s, q) = (&s["references"], &q["references"]);
    let head = "surplus_per_bidder_item";
    assert_eq!(s["best_fixed"]["eval"][head]["mean"], q["best_fixed_eval"]["mean"], "{s}\n{q}");
    assert_eq!(s["uniform"]["eval"][head]["mean"], q["uniform_eval"]["mean"], "{s}\n{q}");
}

/// The valuation world's training lines behind the seam hold each weight class's mean bid
/// factor (`bid_factor_w<w>`), as the queue stack's hold `bid_factor_by_weight` (issue 38's
/// metrics.jsonl parity), and the learner's reward spread: Hedge per budget state and PPO, 6
/// episodes of first-price with two weight classes, the same on either stack.
#[test]
fn the_valuation_worlds_training_lines_hold_its_bid_factors_on_either_stack() {
    let dir = tmp("valuation-lines");
    let text = std::fs::read_to_string(root().join("configs/auctions/first-price.toml"))
        .unwrap()
        .replace("rounds = 3000", "rounds = 20")
        .replace(
            "count = 4\nweight = 1.0",
            "count = 2\nweight = 1.0\nload = 0.5\n\n[[env.agents]]\ncount = 2\nweight = 2.0",
        )
        .replace("episodes = 4", "episodes = 6");
    assert!(text.contains("weight = 2.0"), "{text}");
    std::fs::create_dir_all(&dir).unwrap();
    let (own, seam) = (dir.join("own.toml"), dir.join("seam.toml"));
    std::fs::write(&own, &text).unwrap();
    std::fs::write(&seam, text.replace("[env]\n", "[env]\nstack = \"seam\"\n")).unwrap();
    let trained = |config: &Path, out: &str, kind: &str| {
        let run = dir.join(out);
        let set = format!("learner.kind=\"{kind}\"");
        let (code, _, err) = mtf(&[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--quiet",
            "--set",
            &set,
            "--out",
            run.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        common::logged(&run)
    };
    for kind in ["hedge", "ppo"] {
        let (a, b) = (
            trained(&seam, &format!("seam-{kind}"), kind),
            trained(&own, &format!("own-{kind}"), kind),
        );
        assert_eq!((a.len(), b.len()), (6, 6), "{kind}");
        for (s, q) in a.iter().zip(&b) {
            assert_eq!(s["reward_spread"], q["reward_spread"], "{kind}: reward_spread: {s} against {q}");
            // Hedge's is the spread of its counterfactual rewards (PPO scores none).
            assert_eq!(s["reward_spread"].as_f64().unwrap() > 0.0, kind == "hedge", "{kind}: {s}");
            assert!(q.get("threshold_by_weight").is_none(), "{q}");
            let classes = q["bid_factor_by_weight"].as_array().unwrap();
            assert_eq!(classes.len(), 2, "{q}");
            for wt in classes {
                let (w, f) = (wt[0].as_f64().unwrap(), wt[1].as_f64().unwrap());
                let seam = s[format!("bid_factor_w{w}").as_str()]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{kind}: bid_factor_w{w}: {s}"));
                assert!((seam - f).abs() < 1e-12, "{kind}: bid_factor_w{w} {seam} against {f}");
            }
        }
        // The figure is each episode's, not a constant (sampled play moves it whether or not
        // the learner learned).
        let first = &a[0]["bid_factor_w1"];
        assert!(a.iter().any(|l| &l["bid_factor_w1"] != first), "{kind}: {a:?}");
    }
}

/// `env.stack = "seam"` drives a queue-world file through the seam's commands (issue 38's
/// way onto them, the queue world's own still the default): the same episodes as its own
/// commands play, figure for figure; a run trained there judges itself and is played back
/// by `run:`, resumes exactly after SIGKILL, and is refused by the queue world's own
/// commands (and a run of theirs by the seam's) in one line naming `env.stack`.
#[test]
fn the_queue_world_runs_the_seams_commands_when_its_file_says_so() {
    let dir = tmp("queue-on-seam");
    let seam = short_quickstart(&dir, "seam.toml", &[("stack", "seam".into())]);
    let own = short_quickstart(&dir, "own.toml", &[]);
    let compare = |config: &str, policies: &str, out: &str| compare_json(config, policies, "3", "2", &dir.join(out));
    // Fixed levels, and Hedge learning as it plays (from the round record the world gives
    // through the trait): every figure both stacks report, the same to the bit, the
    // per-class columns among them.
    let (a, b) = (
        compare(&seam, "fixed:0.2,fixed:0.7,hedge", "c-seam"),
        compare(&own, "fixed:0.2,fixed:0.7,hedge", "c-own"),
    );
    assert_ne!(a["rows"][2]["eval"]["welfare"], a["rows"][0]["eval"]["welfare"]);
    for k in 0..3 {
        let (s, q) = (&a["rows"][k], &b["rows"][k]);
        assert_eq!(s["policy"], q["policy"]);
        let figures = s["eval"].as_object().unwrap();
        let mut shared = 0;
        for (key, stat) in figures {
            if let Some(theirs) = q["summary"].get(key) {
                assert_eq!(stat["mean"], theirs["mean"], "{key} of {}", s["policy"]);
                shared += 1;
            }
        }
        assert!(shared >= 6, "{shared} figures in common: {figures:?}");
        for (c, w) in [1, 2, 4].iter().enumerate() {
            let theirs = &q["summary"]["throughput_by_weight"][c];
            assert_eq!(theirs[0], f64::from(*w), "{q}");
            assert_eq!(s["eval"][format!("throughput_w{w}")]["mean"], theirs[1]["mean"], "w{w}");
        }
        // The fairness figures among them (the queue world's compare computes them too).
        for key in ["phi_min", "phi_median", "ef_violations", "pareto"] {
            assert!(s["eval"][key]["mean"].as_f64().is_some_and(f64::is_finite), "{key}: {s}");
            assert_eq!(s["eval"][key]["mean"], q["summary"][key]["mean"], "{key}");
        }
    }
    // Without --baseline, rows are compared with the best fixed level (the first row only
    // where no fixed level is played), as the queue world's own compare does.
    let ordered = compare(&seam, "uniform,fixed:0.7,fixed:0.2", "c-ordered");
    // The token-scale sweep is the queue stack's: asked for behind the seam, refused in one
    // line (it was accepted and ignored).
    let (code, _, err) = mtf(&["analyze", "--config", &seam, "--tokens", "100", "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--tokens") && err.contains("queues world") && err.lines().count() == 1,
        "{err}"
    );
    let welfare = |k: usize| ordered["rows"][k]["eval"]["welfare"]["mean"].as_f64().unwrap();
    assert_eq!(ordered["baseline"], if welfare(1) >= welfare(2) { 1 } else { 2 }, "{ordered}");
    // A file naming no learner trains the queue world's default, the actor-critic (the seam's
    // default elsewhere is ES).
    let mut bare: toml::Table = std::fs::read_to_string(&seam).unwrap().parse().unwrap();
    bare.remove("learner");
    let bare_path = dir.join("bare.toml");
    std::fs::write(&bare_path, toml::to_string(&bare).unwrap()).unwrap();
    let (code, stdout, err) = mtf(&[
        "train",
        "--config",
        bare_path.to_str().unwrap(),
        "--set",
        "train.episodes=1",
        "--json",
        "--quiet",
        "--out",
        dir.join("bare-run").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let bare_run = serde_json::from_str::<serde_json::Value>(&stdout).unwrap();
    assert_eq!(bare_run["summary"]["learner"], "actor_critic", "{stdout}");
    // The queue stack's summary key its sweeps optimise by default, the welfare as scored.
    let s = &bare_run["summary"];
    assert!(
        s["eval_welfare"]["mean"].is_number() && s["eval_welfare"] == s["eval"]["welfare"],
        "{s}"
    );
    // Every run here is judged against its references: turning them off is refused.
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &seam,
        "--set",
        "train.references=false",
        "--quiet",
        "--out",
        dir.join("no-refs").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("train.references") && err.lines().count() == 1, "{err}");
    // The seam's own doors on the queue world: its per-group spec by weight class, and a
    // trained run judged against the references and played back as scored.
    let per_class = compare(&seam, "fixed:w1=0.2,w2=0.2,w4=0.2", "c-class");
    assert_eq!(per_class["rows"][0]["eval"]["welfare"], a["rows"][0]["eval"]["welfare"]);
    // A level per agent, by id, plays as the queue world's own `fixed:[...]`, agents of one
    // class apart.
    let list = "fixed:[0.2,0.5,0.2,0.5,0.3,0.3,0.9,0.1]";
    let (s, q) = (compare(&seam, list, "c-list-seam"), compare(&own, list, "c-list-own"));
    assert_eq!(s["rows"][0]["policy"], list);
    assert_eq!(s["rows"][0]["eval"]["welfare"]["mean"], q["rows"][0]["summary"]["welfare"]["mean"]);
    assert_ne!(s["rows"][0]["eval"]["welfare"], a["rows"][0]["eval"]["welfare"]);
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        &seam,
        "--policies",
        "fixed:[0.2,0.3]",
        "--seeds",
        "2",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("fixed:[0.2,0.3]") && err.contains("8 agents") && err.lines().count() == 1,
        "{err}"
    );
    let run = dir.join("es");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &seam,
        "--set",
        "learner.kind=\"es\"",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let summary = json(&run.join("summary.json"));
    for key in ["vs_best_fixed", "vs_uniform", "vs_selfish"] {
        assert!(summary[key]["mean"].as_f64().is_some(), "{key}: {summary}");
    }
    // The trained policy's held-out figures include the fairness replays (the queue stack's
    // `eval` has them); its references' searches and baselines do not pay for them.
    assert!(summary["eval"]["phi_min"]["mean"].is_number(), "{}", summary["eval"]);
    assert!(
        summary["references"]["uniform"]["eval"]["phi_min"]["mean"].is_null(),
        "{}",
        summary["references"]
    );
    // On the run's held-out seeds (train.eval_seeds: 4, the same derivation as compare's).
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &seam,
        "--policies",
        &format!("run:{}", run.display()),
        "--seeds",
        "4",
        "--json",
        "--quiet",
        "--out",
        dir.join("c-run").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let played: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(played["rows"][0]["eval"]["welfare"]["mean"], summary["eval"]["welfare"]["mean"]);
    // Exported, the run plays as itself; a bare name is a file in the current directory.
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--out",
        dir.join("es-agent").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, stdout, err) = common::mtf_in(
        dir.to_str().unwrap(),
        &[
            "compare",
            "--config",
            &seam,
            "--policies",
            "agent:es-agent",
            "--seeds",
            "4",
            "--json",
            "--quiet",
            "--out",
            "c-agent",
        ],
    );
    assert_eq!(code, 0, "{err}");
    let driven: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(driven["rows"][0]["eval"]["welfare"]["mean"], summary["eval"]["welfare"]["mean"]);
    // Each stack refuses the other's runs, naming env.stack.
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        &own,
        "--policies",
        &format!("run:{}", run.display()),
        "--seeds",
        "2",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("env.stack") && err.lines().count() == 1, "{err}");
    let theirs = dir.join("own-run");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &own,
        "--set",
        "learner.kind=\"fixed\"",
        "--quiet",
        "--out",
        theirs.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        &seam,
        "--policies",
        &format!("run:{}", theirs.display()),
        "--seeds",
        "2",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("env.stack") && err.lines().count() == 1, "{err}");
    // A value that is not a stack is named by the queue world's reader.
    let (code, _, err) = mtf(&["simulate", "--config", &own, "--set", "env.stack=\"both\"", "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("env.stack") && err.contains("both"), "{err}");
    // analyze places the queue world's baselines beside the levels: by default the cluster
    // schedulers at the best fixed level (what compare plays under them on the same seeds),
    // or what --baselines names.
    let analyze = |extra: &[&str], out: &str| {
        let mut args = vec!["analyze", "--config", &seam, "--seeds", "3", "--threads", "2", "--json", "--quiet"];
        args.extend_from_slice(extra);
        let out = dir.join(out);
        args.extend(["--out", out.to_str().unwrap()]);
        let (code, stdout, err) = mtf(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let an = analyze(&[], "an-default");
    let rows = an["rows"].as_array().unwrap();
    let best = rows[an["baseline"].as_u64().unwrap() as usize]["policy"]
        .as_str()
        .unwrap()
        .to_string();
    let of = |m: &str| {
        rows.iter()
            .find(|r| r["mechanism"] == m)
            .unwrap_or_else(|| panic!("no {m} row: {an}"))
            .clone()
    };
    for m in ["stride", "gandiva_fair", "themis"] {
        assert_eq!(of(m)["policy"], "any", "{m} ignores the thresholds");
    }
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &seam,
        "--policies",
        &best,
        "--mechanisms",
        "stride",
        "--seeds",
        "3",
        "--json",
        "--quiet",
        "--out",
        dir.join("c-stride").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let stride: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(of("stride")["eval"]["welfare"], stride["rows"][0]["eval"]["welfare"]);
    let named = analyze(&["--baselines", "fixed:w1=0.2,w2=0.5,w4=0.9,themis,uniform,fixed:0.3"], "an-named");
    // Uniform play and the levels are rows of every analysis already: not twice.
    for p in ["uniform", "fixed:0.3"] {
        assert_eq!(
            named["rows"].as_array().unwrap().iter().filter(|r| r["policy"] == p).count(),
            1,
            "{p}: {named}"
        );
    }
    let rows = named["rows"].as_array().unwrap();
    assert!(rows.iter().all(|r| r["mechanism"] != "stride"), "{named}");
    assert!(
        rows.iter()
            .any(|r| r["policy"] == "fixed:w1=0.2,w2=0.5,w4=0.9" && r["mechanism"] == "mtf"),
        "{named}"
    );
    assert!(rows.iter().any(|r| r["mechanism"] == "themis"), "{named}");
    // A mechanism that reads other levels (first price's bid factors) plays the best fixed
    // level's value on its own grid, labelled so: what compare plays there on the same seeds.
    let bids = analyze(&["--baselines", "first_price"], "an-bids");
    let bid_row = bids["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["mechanism"] == "first_price")
        .unwrap()
        .clone();
    let best_bids = bids["rows"][bids["baseline"].as_u64().unwrap() as usize]["policy"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(bid_row["policy"], best_bids.as_str(), "{bids}");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &seam,
        "--policies",
        &best_bids,
        "--mechanisms",
        "first_price",
        "--seeds",
        "3",
        "--json",
        "--quiet",
        "--out",
        dir.join("c-bids").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let first_price: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(bid_row["eval"]["welfare"], first_price["rows"][0]["eval"]["welfare"]);
    let (code, _, err) = mtf(&[
        "analyze",
        "--config",
        &seam,
        "--seeds",
        "3",
        "--baselines",
        "no_such_mechanism",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no_such_mechanism") && err.lines().count() == 1, "{err}");
    // Exact resume after SIGKILL, PPO through the one training rollout.
    let ppo = short_quickstart(&dir, "ppo.toml", &[("stack", "seam".into())]);
    let mut t: toml::Table = std::fs::read_to_string(&ppo).unwrap().parse().unwrap();
    t.get_mut("learner")
        .and_then(toml::Value::as_table_mut)
        .unwrap()
        .insert("kind".into(), "ppo".into());
    std::fs::write(&ppo, toml::to_string(&t).unwrap()).unwrap();
    killed_and_resumed_at(&dir, &ppo);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The queue world's agents stay for the whole episode (`World::agents_stay`), so the seam's
/// PPO there is the queue world's own: under the welfare reward `auto` gives both one actor
/// per weight class and a central critic, and six episodes train to the same losses and
/// welfare, to the bit, on either stack (before, the seam pooled them with a critic per class);
/// the seam's run draws them in TensorBoard. Its actor-critic is the queue world's per class.
#[test]
fn ppo_and_the_actor_critic_train_the_same_on_either_stack_of_the_queue_world() {
    let dir = tmp("ppo-stacks");
    let welfare = ("reward", toml::Value::from("welfare"));
    let seam = short_quickstart(&dir, "seam.toml", &[("stack", "seam".into()), welfare.clone()]);
    let own = short_quickstart(&dir, "own.toml", &[welfare]);
    let trained_with = |config: &str, out: &str, sets: &[&str]| {
        let run = dir.join(out);
        let mut args = vec!["train", "--config", config, "--quiet", "--out", run.to_str().unwrap()];
        for s in sets {
            args.extend(["--set", s]);
        }
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 0, "{err}");
        common::logged(&run)
    };
    let trained = |config: &str, out: &str, critic: &str| {
        trained_with(config, out, &["learner.kind=\"ppo\"", &format!("learner.ppo.critic=\"{critic}\"")])
    };
    // TensorBoard: a point per episode of the training curves, and the held-out summary.
    let tb_points = |run: &str, tag: &str| -> usize {
        let dir = dir.join(run).join("tb");
        let file = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap().path();
        let bytes = std::fs::read(file).unwrap();
        bytes.windows(tag.len()).filter(|w| *w == tag.as_bytes()).count()
    };
    // Checkpoints are not compared byte for byte: burn's records carry parameter ids that
    // differ between two processes of the same stack. Every episode's losses and welfare
    // follow from the weights before it.
    // The default (MAPPO, central under the welfare reward) and IPPO (local critics).
    for critic in ["auto", "local"] {
        let (a, b) = (
            trained(&seam, &format!("seam-{critic}"), critic),
            trained(&own, &format!("own-{critic}"), critic),
        );
        same_training(&a, &b, &["actor_loss", "critic_loss", "entropy", "welfare"], critic);
        // Both summaries hold the last episode's line (`last_episode.welfare`: a sweep's
        // objective on either stack), the seam's the line itself.
        let last = |run: &str| json(&dir.join(run).join("summary.json"))["last_episode"].clone();
        let (mut s, q) = (last(&format!("seam-{critic}")), last(&format!("own-{critic}")));
        assert!(s["wall_time"].is_number(), "{s}");
        s.as_object_mut().unwrap().remove("wall_time");
        assert_eq!(&s, a.last().unwrap(), "{critic}: the line as logged, but its wall time");
        assert_eq!(s["episode"], 5, "{critic}: {s}");
        for key in ["episode", "welfare", "actor_loss", "critic_loss", "entropy", "reward_spread"] {
            assert!(s[key].is_number(), "{critic}: {key}: {s}");
            assert_eq!(s[key], q[key], "{critic}: last_episode.{key}");
        }
        // The held-out evaluation, sampled as trained (each agent drawing from its own stream,
        // as the queue stack's actors do) and greedy: every figure the queue stack's
        // `eval_sampled` and `eval` hold, the fairness replays' included, to the bit.
        let summary = |run: &str| json(&dir.join(run).join("summary.json"));
        let (s, q) = (summary(&format!("seam-{critic}")), summary(&format!("own-{critic}")));
        for (seam, own) in [(&s["eval"], &q["eval_sampled"]), (&s["greedy"]["eval"], &q["eval"])] {
            let figures = own.as_object().unwrap();
            let shared: Vec<&String> = figures.keys().filter(|k| seam.get(k.as_str()).is_some()).collect();
            assert!(shared.len() >= 15, "{critic}: {shared:?}");
            for key in shared {
                assert!(seam[key]["mean"].is_number(), "{critic}: {key}: {seam}");
                assert_eq!(seam[key], own[key], "{critic}: held-out {key}");
            }
        }
    }
    // The seam's actor-critic (an actor and critic per weight class, the whole row) is the
    // queue world's with share = "class" and features = "all".
    let ac = [
        "learner.kind=\"actor_critic\"",
        "learner.actor_critic.share=\"class\"",
        "learner.actor_critic.features=\"all\"",
    ];
    let (a, b) = (trained_with(&seam, "seam-ac", &ac), trained_with(&own, "own-ac", &ac));
    same_training(&a, &b, &["actor_loss", "critic_loss", "welfare"], "actor-critic");
    // Reading SPEC 4's block alone (the thesis's features), the same again; its run plays as
    // judged, and its export reads that block (budget share and 16 utilities).
    let spec = [
        "learner.kind=\"actor_critic\"",
        "learner.actor_critic.share=\"class\"",
        "learner.actor_critic.features=\"spec\"",
    ];
    let (a, b) = (trained_with(&seam, "seam-spec", &spec), trained_with(&own, "own-spec", &spec));
    same_training(&a, &b, &["critic_loss", "welfare"], "spec");
    let run = dir.join("seam-spec");
    let judged = json(&run.join("summary.json"))["eval"]["welfare"]["mean"].clone();
    let replays = std::cell::Cell::new(0);
    let replay = |policy: &str| {
        replays.set(replays.get() + 1);
        let (code, stdout, err) = common::mtf_in(
            dir.to_str().unwrap(),
            &[
                "compare",
                "--config",
                &seam,
                "--policies",
                policy,
                "--seeds",
                "4",
                "--json",
                "--quiet",
                "--out",
                &format!("c-{}", replays.get()),
            ],
        );
        assert_eq!(code, 0, "{policy}: {err}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()["rows"][0]["eval"]["welfare"]["mean"].clone()
    };
    assert_eq!(replay(&format!("run:{}", run.display())), judged);
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--out",
        dir.join("spec-agent").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let described = Command::new(dir.join("spec-agent")).arg("--describe").output().unwrap();
    let described: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(described["observation_size"], 17, "{described}");
    assert!(replay("agent:spec-agent").as_f64().is_some_and(f64::is_finite));
    // A checkpoint of another network layout (the critic changed on resume) is refused in
    // one line naming it, the run left as it was.
    let run = dir.join("seam-local");
    let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
    assert!(config.contains("critic = \"local\""), "{config}");
    std::fs::write(
        run.join("config.toml"),
        config
            .replace("critic = \"local\"", "critic = \"central\"")
            .replace("episodes = 6", "episodes = 8"),
    )
    .unwrap();
    let before = common::logged(&run);
    let (code, _, err) = mtf(&[
        "train",
        "--resume",
        run.to_str().unwrap(),
        "--allow-config-change",
        "learner.ppo.critic,train.episodes",
        "--quiet",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("latest.ckpt") && err.contains("network layout") && err.lines().count() == 1,
        "{err}"
    );
    assert_eq!(common::logged(&run), before);
    assert_eq!(tb_points("seam-auto", "charts/welfare"), 6);
    // Every figure the copies computed, episode by episode (the queue world's fairness
    // figures are not computed in training: no point, no key).
    assert_eq!(tb_points("seam-auto", "charts/throughput_w1"), 6);
    assert_eq!(tb_points("seam-auto", "charts/dropped"), 6);
    assert_eq!(tb_points("seam-auto", "charts/phi_min"), 0);
    for line in common::logged(&dir.join("seam-auto")) {
        assert!(line["dropped"].is_number() && line["throughput_w4"].is_number(), "{line}");
        assert!(line.get("phi_min").is_none(), "{line}");
    }
    assert_eq!(tb_points("seam-auto", "losses/actor_loss"), 6);
    assert_eq!(tb_points("seam-auto", "summary/eval_welfare"), 1);

    // With their own rewards the queue world's learners keep an actor per agent: the main
    // job (the thesis's actor-critic, SPEC 4's features) and PPO (IPPO per agent) train the
    // same on either stack, to the bit.
    let seam = short_quickstart(&dir, "seam-own.toml", &[("stack", "seam".into())]);
    let own = short_quickstart(&dir, "own-own.toml", &[]);
    for (name, sets) in [("ac", vec![]), ("ppo", vec!["learner.kind=\"ppo\""])] {
        let (a, b) = (
            trained_with(&seam, &format!("seam-own-{name}"), &sets),
            trained_with(&own, &format!("own-own-{name}"), &sets),
        );
        same_training(&a, &b, &["actor_loss", "critic_loss", "welfare"], name);
    }
    // Difference rewards re-run each round's mechanism on the round record the world gives
    // through the trait (World::mechanism_round): the same training again.
    let diff = ["learner.kind=\"ppo\"", "learner.reward=\"difference\"", "train.envs=2"];
    let (a, b) = (trained_with(&seam, "seam-diff", &diff), trained_with(&own, "own-diff", &diff));
    same_training(&a, &b, &["actor_loss", "critic_loss", "welfare"], "difference rewards");
    // Hedge per budget state (the queue world's own, with its round-rescaled variant)
    // re-runs every round through the same record: the same training again.
    for (name, sets) in [
        ("hedge", vec!["learner.kind=\"hedge\""]),
        ("hedge-round", vec!["learner.kind=\"hedge\"", "learner.hedge.scale=\"round\""]),
    ] {
        let (a, b) = (
            trained_with(&seam, &format!("seam-{name}"), &sets),
            trained_with(&own, &format!("own-{name}"), &sets),
        );
        same_training(&a, &b, &["entropy", "welfare"], name);
    }
    // Its actors are per agent: `run:` plays the judged welfare, the export holds the 8
    // agents' actors (by id, not by group) and drives back, and `--agent` names an agent.
    let run = dir.join("seam-own-ac");
    let judged = json(&run.join("summary.json"))["eval"]["welfare"]["mean"].clone();
    assert_eq!(replay(&format!("run:{}", run.display())), judged);
    // `sampled:run:` is `run:`; `greedy:run:` replays the judged argmax, its row marked
    // near-uniform in the table and the JSON (the sampled row is what it learned).
    assert_eq!(replay(&format!("sampled:run:{}", run.display())), judged);
    let greedy = json(&run.join("summary.json"))["greedy"]["eval"]["welfare"]["mean"].clone();
    assert_eq!(replay(&format!("greedy:run:{}", run.display())), greedy);
    let both = format!("run:{0},greedy:run:{0}", run.display());
    let (code, table, err) = mtf(&[
        "compare",
        "--config",
        &seam,
        "--policies",
        &both,
        "--seeds",
        "4",
        "--quiet",
        "--out",
        dir.join("c-both").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        table.contains("| greedy:run:seam-own-ac (near-uniform) |") && table.contains("| run:seam-own-ac |"),
        "{table}"
    );
    assert!(table.contains("(near-uniform): the policy's mean entropy is above 90%"), "{table}");
    let rows = json(&dir.join("c-both/summary.json"))["rows"].clone();
    assert_eq!(
        (rows[0]["near_uniform"].clone(), rows[1]["near_uniform"].clone()),
        (false.into(), true.into()),
        "{rows}"
    );
    // The same actors, on other episodes (their levels differ): both near-uniform.
    for r in rows.as_array().unwrap() {
        assert!(r["entropy_share"].as_f64().is_some_and(|e| e > 0.9 && e <= 1.0), "{r}");
    }
    // Hedge's table plays from the budgets, sampled as it trained; no world policy carries it.
    let hedge = dir.join("seam-hedge");
    let judged_hedge = json(&hedge.join("summary.json"))["eval"]["welfare"]["mean"].clone();
    assert_eq!(replay(&format!("run:{}", hedge.display())), judged_hedge);
    // Both draw their levels and are judged drawing them; their argmax is a second row,
    // marked where the policy is near-uniform (after 6 episodes the actor-critic still is).
    for r in [&run, &hedge] {
        let s = json(&r.join("summary.json"));
        let share = s["entropy_share"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0 + 1e-9, "{s}");
        assert_eq!(s["near_uniform"], share > 0.9, "{s}");
        assert_eq!(s["greedy"]["held_out"].as_array().unwrap().len(), 4, "{s}");
        assert!(s["greedy"]["vs_best_fixed"]["mean"].is_number(), "{s}");
        assert_ne!(s["greedy"]["eval"]["welfare"]["mean"], s["eval"]["welfare"]["mean"], "{s}");
    }
    assert_eq!(json(&run.join("summary.json"))["near_uniform"], true);
    // A policy per agent plays only the agents it was trained for: under a config of 6
    // agents (the same classes, rows and levels) either run is refused in one line.
    let mut fewer: toml::Table = std::fs::read_to_string(&seam).unwrap().parse().unwrap();
    fewer["env"]["agents"][0]["count"] = 2.into();
    let fewer_path = dir.join("fewer.toml");
    std::fs::write(&fewer_path, toml::to_string(&fewer).unwrap()).unwrap();
    for r in [&run, &hedge] {
        let (code, _, err) = mtf(&[
            "compare",
            "--config",
            fewer_path.to_str().unwrap(),
            "--policies",
            &format!("run:{}", r.display()),
            "--seeds",
            "2",
            "--quiet",
            "--out",
            dir.join("fewer-out").to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("for 8 agents") && err.contains("has 6") && err.lines().count() == 1,
            "{err}"
        );
    }
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        hedge.to_str().unwrap(),
        "--out",
        dir.join("hedge-agent").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("budget states") && err.lines().count() == 1, "{err}");
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--out",
        dir.join("own-agent").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let described = Command::new(dir.join("own-agent")).arg("--describe").output().unwrap();
    let described: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(described["agents"], serde_json::json!([0, 1, 2, 3, 4, 5, 6, 7]), "{described}");
    assert_eq!(described["world"]["per_agent"], 8, "{described}");
    assert_eq!(described["observation_size"], 17, "{described}");
    assert!(replay("agent:own-agent").as_f64().is_some_and(f64::is_finite));
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--agent",
        "8",
        "--out",
        dir.join("agent-8").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("actor per agent") && err.contains("0..7"), "{err}");
    // One agent's actor serves every agent, from one process.
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--agent",
        "3",
        "--out",
        dir.join("agent-3").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(replay("agent:agent-3").as_f64().is_some_and(f64::is_finite));
    // A level per agent (learner.fixed.per_agent) is played as fixed:[...] plays it.
    let levels = "[0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8]";
    let out = dir.join("seam-fixed-each");
    let per_agent = format!("learner.fixed.per_agent={levels}");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &seam,
        "--quiet",
        "--set",
        "learner.kind=\"fixed\"",
        "--set",
        &per_agent,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let judged = json(&dir.join("seam-fixed-each/summary.json"))["eval"]["welfare"]["mean"].clone();
    assert!(judged.as_f64().is_some_and(f64::is_finite), "{judged}");
    assert_eq!(replay(&format!("fixed:{levels}")), judged);
    assert_ne!(replay("fixed:0.1"), judged);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ppo_finds_each_groups_level_in_the_toy_world_and_is_scored_sampling() {
    // The bandit pays an agent 1 - (level - target)^2 (plus noise) with targets 0.3 and 0.7 by
    // group, and agents 1 and 3 arrive a round late (their first rows are masked). One shared
    // actor per group reading the agent's row: the best fixed level pays 0.96 to both groups,
    // each group's own target 1, so a learner that finds both is +0.04 above it.
    let dir = tmp("ppo");
    let (config, run, s) = finds_both_targets(&dir, "ppo", 60);
    let lines = common::logged(&run);
    assert_eq!(lines.len(), 60);
    // 8 copies (the group of one seed), 2 agents in round 0 and 4 in rounds 1-9.
    assert_eq!(lines[0]["agent_steps"], 8 * (2 + 9 * 4));
    assert!(lines[59]["entropy"].as_f64().unwrap() < 0.5, "{}", lines[59]);
    // Fitness, as ES's: the groups' mean returns, at most (10 + 9) / 2 rounds paying 1 each.
    let fitness = lines[59]["fitness"].as_f64().unwrap();
    assert!(fitness > 9.0 && fitness < 9.7, "{}", lines[59]);
    plays_as_scored(&dir, &config, &run, &s);
    // A central critic reads every agent's row, and agents come and go here: refused.
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &config,
        "--set",
        "learner.ppo.critic=\"central\"",
        "--quiet",
        "--out",
        dir.join("central").to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("learner.ppo.critic"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn compare_and_analyze_put_a_trained_run_next_to_every_fixed_level() {
    let dir = tmp("compare");
    let config = bandit(&dir, 10, "");
    let run = dir.join("run");
    assert_eq!(mtf(&["train", "--config", &config, "--quiet", "--out", run.to_str().unwrap()]).0, 0);
    let spec = format!("fixed:all,uniform,run:{}", run.display());
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--policies",
        &spec,
        "--seeds",
        "3",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 11 + 1 + 1, "every level, uniform, the run");
    // Without noise in the mean, level 0.5 pays both groups 1 - 0.04 = 0.96 per round.
    let half = rows.iter().find(|r| r["policy"] == "fixed:0.5").unwrap();
    assert!((half["eval"]["reward"]["mean"].as_f64().unwrap() - 0.96).abs() < 0.02, "{half}");
    let (code, stdout, err) = mtf(&[
        "analyze",
        "--config",
        &config,
        "--run",
        run.to_str().unwrap(),
        "--seeds",
        "3",
        "--out",
        dir.join("an").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("| run:run |") && stdout.contains("baseline"), "{stdout}");
    // Analyze states the levels no agent leaves alone: the groups' targets differ, so none.
    assert!(stdout.contains("where selfish learners may settle): none."), "{stdout}");
    // A baseline no row has, and an --out that holds a run, are refused in one line before
    // anything is played: the first leaves no run directory behind (it made one, after
    // playing every row, before 2026-11-29), the second leaves the run as it was.
    let bad = dir.join("bad-baseline");
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--policies",
        "fixed:0.3",
        "--baseline",
        "fixed:0.9",
        "--out",
        bad.to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("--baseline fixed:0.9: no such row") && !bad.exists(), "{err}");
    let cmp = dir.join("cmp");
    let before = std::fs::read_to_string(cmp.join("summary.json")).unwrap();
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--policies",
        "fixed:0.3",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("already holds a run"), "{err}");
    assert_eq!(std::fs::read_to_string(cmp.join("summary.json")).unwrap(), before);
    exported_agents_play_as_the_run(&dir, &config, &run, &v);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fixed:G=X,H=Y` plays a level per group, by the world's group names (the queue world's
/// `fixed:w1=...` form, in every world): at each group's target the bandit pays 1 per round
/// (noise has mean 0), one level for both 1 - 0.4^2 = 0.84 to the group it misses. Two
/// spellings label one row; a missing, unknown or repeated group and a level off the grid are
/// refused in one line before anything is played.
#[test]
fn a_level_per_group_plays_each_groups_target() {
    let dir = tmp("per-group");
    let config = bandit(&dir, 10, "");
    let (code, stdout, err) = mtf(&[
        "compare",
        "--config",
        &config,
        "--policies",
        "fixed:group_1=0.7,group_0=0.3,fixed:0.3",
        "--label",
        "targets=fixed:group_0=0.3, group_1=0.7",
        "--baseline",
        "fixed:group_1=0.7, group_0=0.3",
        "--seeds",
        "3",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{v}");
    let reward = |r: &serde_json::Value| r["eval"]["reward"]["mean"].as_f64().unwrap();
    let targets = rows.iter().find(|r| r["policy"] == "targets").unwrap();
    assert_eq!(targets["spec"], "fixed:group_0=0.3,group_1=0.7", "{targets}");
    assert!((reward(targets) - 1.0).abs() < 0.02, "{targets}");
    let one = rows.iter().find(|r| r["policy"] == "fixed:0.3").unwrap();
    // Group 1 (odd agents) is paid 0.84 at 0.3: about half the agent-rounds.
    assert!(reward(targets) - reward(one) > 0.06 && reward(targets) - reward(one) < 0.1, "{one}");
    // `--baseline` took the relabelled row by another spelling of its spec.
    let d = one["improvement"]["mean"].as_f64().unwrap();
    assert!((d + reward(targets) - reward(one)).abs() < 1e-9 && v["baseline"] == 0, "{v}");
    for (spec, says) in [
        ("fixed:group_0=0.3", "no level for group `group_1`"),
        (
            "fixed:group_0=0.3,nobody=0.7",
            "`nobody` is not a group of this world (groups: group_0, group_1)",
        ),
        ("fixed:group_0=0.3,group_0=0.4,group_1=0.7", "group `group_0` is given twice"),
        ("fixed:group_0=0.35,group_1=0.7", "group_0: 0.35 is not one of this world's"),
    ] {
        let out = dir.join("refused");
        let (code, _, err) = mtf(&["compare", "--config", &config, "--policies", spec, "--out", out.to_str().unwrap()]);
        assert_eq!((code, err.trim().lines().count()), (2, 1), "{spec}: {err}");
        assert!(err.contains(says) && !out.exists(), "{spec}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mtf export` of the bandit run, driven by `agent:PATH`: the same episodes as `run:DIR` (the
/// comparison `compared` made on 3 seeds); one group's file serves both groups; a file of
/// another world and an agent answering outside the levels are refused in one line.
fn exported_agents_play_as_the_run(dir: &Path, config: &str, run: &Path, compared: &serde_json::Value) {
    let agent = dir.join("agent");
    let (code, stdout, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", agent.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let m: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(m["manifest"]["world"]["name"], "bandit", "{stdout}");
    assert_eq!(m["manifest"]["agents"], serde_json::json!([0, 1]), "{stdout}");
    let play = |spec: &str, out: &str| {
        let (code, stdout, err) = mtf(&[
            "compare",
            "--config",
            config,
            "--policies",
            spec,
            "--seeds",
            "3",
            "--json",
            "--out",
            dir.join(out).to_str().unwrap(),
        ]);
        (code, stdout, err)
    };
    let (code, stdout, err) = play(&format!("agent:{}", agent.display()), "cmp-agent");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let trained = compared["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["policy"] == "run:run")
        .unwrap();
    assert_eq!(v["rows"][0]["eval"], trained["eval"], "the exported agent plays the run's episodes");
    // The file of group 1 alone serves both groups: group 0's agents now aim at 0.7.
    let one = dir.join("agent-1");
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        run.to_str().unwrap(),
        "--agent",
        "1",
        "--out",
        one.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let ask = |file: &Path, args: &[&str]| {
        let mut child = Command::new(file)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"{\"world\": [0, 0.5]}\n{\"world\": [1, 0.5]}\n")
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let both = ask(&one, &[]);
    assert_eq!(both, ask(&agent, &["--agent", "1"]), "group 1's policy, whatever the row's group");
    assert_eq!(both.lines().count(), 2, "{both}");
    assert!(both.contains("\"threshold\""), "{both}");
    assert_eq!(play(&format!("agent:{}", one.display()), "cmp-one").0, 0);
    // Another world's config, and an executable answering outside the levels.
    let small = root().join("configs/gavel/small.toml");
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        small.to_str().unwrap(),
        "--policy",
        &format!("agent:{}", agent.display()),
        "--out",
        dir.join("sim-gavel").to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("acts in the bandit world") && err.contains("gavel world"), "{err}");
    let liar = dir.join("liar.sh");
    std::fs::write(&liar, "#!/bin/sh\nwhile read line; do echo '{\"threshold\": 7}'; done\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&liar, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (code, _, err) = play(&format!("agent:{}", liar.display()), "cmp-liar");
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("chose threshold 7, not one of the levels"), "{err}");
    // The failed comparison's directory holds no run (no config.toml, no summary), so the same
    // --out takes the next one (it was refused as "already holds a run").
    let out = dir.join("cmp-liar");
    assert!(!out.join("config.toml").exists() && !out.join("summary.json").exists());
    assert_eq!(play("fixed:0.3", "cmp-liar").0, 0);
}

#[test]
fn gavels_world_from_the_command_line() {
    let small = root().join("configs/gavel/small.toml");
    let out = tmp("gavel-sim");
    let (code, stdout, err) = mtf(&[
        "simulate",
        "--config",
        small.to_str().unwrap(),
        "--mechanism",
        "fifo_perf",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // Gavel's own simulator: 14.2228 h on this trace.
    let avg = v["rows"][0]["eval"]["avg_jct_h"]["mean"].as_f64().unwrap();
    assert!((avg / 14.2228 - 1.0).abs() < 0.01, "{avg}");
    assert_eq!(v["seeds"], 1, "a trace is one episode");
    // Gavel keeps a record of every round: its first episode's round log.
    assert!(std::fs::read_to_string(out.join("rounds.jsonl")).unwrap().lines().count() > 1);
    // Bad input: one line naming what is wrong, exit 2.
    let (code, _, err) = mtf(&["simulate", "--config", small.to_str().unwrap(), "--mechanism", "lasagna"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("mtf: unknown mechanism `lasagna`") && err.lines().count() == 1,
        "{err}"
    );
    let bad = tmp("gavel-bad");
    std::fs::create_dir_all(&bad).unwrap();
    let trace = bad.join("bad.trace");
    std::fs::write(
        &trace,
        "ResNet-18 (batch size 64)\tcmd\tdir\t--n\t1\t100\t1\t1\t-1\t0\nNoSuchModel\tcmd\tdir\t--n\t1\t100\t1\t1\t-1\t5\n",
    )
    .unwrap();
    let set = format!("env.trace={}", trace.display());
    let (code, _, err) = mtf(&["simulate", "--config", small.to_str().unwrap(), "--set", &set]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("bad.trace: line 2, column 1: job type `NoSuchModel`") && err.lines().count() == 1,
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&bad);
}

/// Resuming a run of a world behind the seam refused `--allow-config-change train.episodes`
/// ("changed since its checkpoint") and ignored `--config`/`--set` (exit 0, "complete"); the
/// world was chosen from `--config`, not from the run; a group's edited config.toml never
/// reached its complete replicates. Now it behaves as a queue-world resume does.
#[test]
fn a_seam_resume_ignored_its_flags_and_refused_allowed_changes() {
    let dir = tmp("resume-flags");
    let config = bandit(&dir, 10, "");
    for (name, extra) in [("run", None), ("group", Some("2"))] {
        let out = dir.join(name);
        let r = out.to_str().unwrap();
        let mut args = vec!["train", "--config", &config, "--quiet", "--out", r];
        if let Some(n) = extra {
            args.extend(["--replicates", n]);
        }
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 0, "{err}");
        for (flags, says) in [
            (vec!["--config", config.as_str()], "do not pass --config"),
            (vec!["--set", "env.noise=0.1"], "--set cannot change"),
            (vec!["--seed", "4"], "--seed cannot change"),
        ] {
            let mut args = vec!["train", "--resume", r, "--quiet"];
            args.extend(flags.iter().copied());
            let (code, _, err) = mtf(&args);
            assert_eq!(code, 2, "{name} {flags:?}: {err}");
            assert!(err.contains(says), "{name} {flags:?}: {err}");
        }
        // The quickstart's config beside a bandit run: the run's own world decides.
        let q = common::quickstart();
        let (code, _, err) = mtf(&["train", "--resume", r, "--config", &q]);
        assert_eq!(code, 2);
        assert!(err.contains("do not pass --config") && !err.contains("market"), "{err}");
        let cfg = out.join("config.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(&cfg, text.replace("episodes = 6\n", "episodes = 8\n")).unwrap();
        let (code, _, err) = mtf(&["train", "--resume", r, "--quiet"]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(
            err.contains("train.episodes") && err.contains("--allow-config-change"),
            "{name}: {err}"
        );
        let (code, _, err) = mtf(&["train", "--resume", r, "--quiet", "--allow-config-change", "train.episodes"]);
        assert_eq!(code, 0, "{name}: {err}");
        let runs: Vec<PathBuf> = match extra {
            None => vec![out.clone()],
            Some(_) => (0..2).map(|k| out.join(format!("replicate-{k}"))).collect(),
        };
        for run in runs {
            assert_eq!(
                common::logged(&run).len(),
                8,
                "{}: trained on to the allowed episodes",
                run.display()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_searches_a_toy_world_and_prunes_by_generation() {
    let dir = tmp("sweep");
    let config = bandit(&dir, 10, "");
    let sweep = dir.join("sweep.toml");
    let write = |metric: &str| {
        std::fs::write(
            &sweep,
            format!(
                "base = \"bandit.toml\"\nsampler = \"random\"\nseed = 5\ntrials = 6\nworkers = 1\n\
                 [objective]\nmetric = \"{metric}\"\ndirection = \"maximize\"\n\
                 [budget]\nepisodes = 6\neval_seeds = 3\n\
                 [pruner]\nkind = \"successive_halving\"\nwindow = 1\nmin_resource = 2\nreduction_factor = 2\n\
                 [params]\n\"learner.es.sigma\" = {{ type = \"float\", low = 0.01, high = 1.0, log = true }}\n"
            ),
        )
        .unwrap()
    };
    write("vs_best_fixed.mean");
    let out = dir.join("out");
    let storage = format!("sqlite:{}", dir.join("study.db").display());
    let args = [
        "sweep",
        "--config",
        sweep.to_str().unwrap(),
        "--storage",
        &storage,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    let (code, stdout, err) = mtf(&args);
    assert_eq!(code, 0, "{err}");
    // Every complete trial's value is its run's summary.json figure; pruned ones stopped at a
    // rung (2 or 4 generations of 6), their generations reported to the pruner as they ran.
    let csv = std::fs::read_to_string(out.join("trials.csv")).unwrap();
    let (mut complete, mut pruned, mut best) = (0, 0, f64::NEG_INFINITY);
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        let run = PathBuf::from(cells[7]);
        let generations = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap().lines().count();
        match cells[1] {
            "complete" => {
                complete += 1;
                let s = json(&run.join("summary.json"));
                let v: f64 = cells[2].parse().unwrap();
                assert_eq!(v, s["vs_best_fixed"]["mean"].as_f64().unwrap(), "{line}");
                assert_eq!(generations, 6, "{line}");
                best = best.max(v);
            }
            "pruned" => {
                pruned += 1;
                assert!(generations == 2 || generations == 4, "{line}: {generations} generations");
                assert!(!run.join("summary.json").exists(), "{line}");
            }
            other => panic!("{line}: {other}"),
        }
    }
    assert_eq!(complete + pruned, 6, "{csv}");
    assert!(complete >= 1 && pruned >= 1, "{csv}");
    assert!(stdout.contains(&format!("best vs_best_fixed.mean = {best:.4}")), "{stdout}");
    // The shape the sweep checks objectives against is the summary a run writes.
    let world = env::registry::load(Path::new(&config), &[]).unwrap();
    let real = std::fs::read_dir(out.join("trials"))
        .unwrap()
        .map(|e| e.unwrap().path().join("summary.json"))
        .find(|p| p.exists())
        .expect("a complete trial");
    assert_eq!(
        leaves(&agents::worlds::train::summary_shape(
            world.as_ref(),
            false,
            agents::learners::LearnerKind::Es
        )),
        leaves(&json(&real))
    );
    // best.toml trains in the world; an objective the world's runs do not write is one line.
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        out.join("best.toml").to_str().unwrap(),
        "--set",
        "train.episodes=1",
        "--quiet",
        "--out",
        dir.join("best").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // The shipped Gavel sweep runs (one trial, one generation, two held-out seeds).
    let gavel = root().join("configs/sweeps/gavel-es.toml");
    let storage_g = format!("sqlite:{}", dir.join("gavel.db").display());
    let (code, stdout, err) = mtf(&[
        "sweep",
        "--config",
        gavel.to_str().unwrap(),
        "--storage",
        &storage_g,
        "--out",
        dir.join("gavel").to_str().unwrap(),
        "--quiet",
        "--trials",
        "1",
        "--set",
        "train.episodes=1",
        "--set",
        "train.eval_seeds=2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("1 complete"), "{stdout}");
    write("eval_welfare.mean");
    let (code, _, err) = mtf(&args);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("objective.metric") && err.contains("eval_welfare.mean"), "{err}");
    // Minimising the bandit's reward: no per-generation figure agrees with that direction, and
    // a pruner following one would cut the trials the objective prefers.
    let text = std::fs::read_to_string(&sweep)
        .unwrap()
        .replace("eval_welfare.mean", "eval.reward.mean")
        .replace("maximize", "minimize");
    std::fs::write(&sweep, text).unwrap();
    let (code, _, err) = mtf(&args);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(err.contains("objective.intermediate") && err.contains("better higher"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The paths of a JSON value's numbers, strings and arrays (`a.b.c`).
fn leaves(v: &serde_json::Value) -> std::collections::BTreeSet<String> {
    fn walk(v: &serde_json::Value, at: String, out: &mut std::collections::BTreeSet<String>) {
        match v.as_object() {
            Some(o) => o
                .iter()
                .for_each(|(k, x)| walk(x, if at.is_empty() { k.clone() } else { format!("{at}.{k}") }, out)),
            None => {
                out.insert(at);
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(v, String::new(), &mut out);
    out
}

/// docs/AGENTS.md's protocol is the queue world's on either stack (issue 38's gap 6): behind
/// the seam a plain executable is started per agent and reads `{budget, utilities, tokens}`,
/// the very lines the queue stack sends it, byte for byte; AGENTS.md's example then plays as
/// the per-agent fixed policy it implements, seed by seed.
#[cfg(unix)]
#[test]
fn an_external_agent_reads_the_queue_worlds_protocol_on_either_stack() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp("external-on-seam");
    let seam = short_quickstart(&dir, "seam.toml", &[("stack", "seam".into())]);
    let own = short_quickstart(&dir, "own.toml", &[]);
    let agent = |name: &str, body: &str| {
        let p = dir.join(name);
        std::fs::write(&p, format!("#!/usr/bin/env python3\n{body}")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        format!("agent:{}", p.display())
    };
    let compare = |config: &str, policies: &str, seeds: &str, out: &str| compare_json(config, policies, seeds, "1", &dir.join(out));
    // The valuation world too (its replies are bid factors), 20 rounds of first-price.
    let auction = std::fs::read_to_string(root().join("configs/auctions/first-price.toml"))
        .unwrap()
        .replace("rounds = 3000", "rounds = 20");
    let (auction_own, auction_seam) = (dir.join("fp-own.toml"), dir.join("fp-seam.toml"));
    std::fs::write(&auction_own, &auction).unwrap();
    std::fs::write(&auction_seam, auction.replace("[env]\n", "[env]\nstack = \"seam\"\n")).unwrap();
    let (auction_own, auction_seam) = (auction_own.display().to_string(), auction_seam.display().to_string());
    for (world, configs, reply, agents, rounds) in [
        ("queues", [&seam, &own], "{'threshold': 0.1 if agent % 2 == 0 else 0.5}", 8, 40),
        ("valuations", [&auction_seam, &auction_own], "{'bid_factor': 0.75}", 4, 20),
    ] {
        let mut logs = Vec::new();
        for (config, stack) in configs.into_iter().zip(["seam", "own"]) {
            let log = dir.join(format!("log-{world}-{stack}"));
            std::fs::create_dir_all(&log).unwrap();
            let logger = agent(
                &format!("logger-{world}-{stack}.py"),
                &format!(
                    "import json, sys\nagent = int(sys.argv[sys.argv.index('--agent') + 1])\n\
                     with open('{}/a%d.jsonl' % agent, 'a') as log:\n    for line in sys.stdin:\n        \
                     log.write(line)\n        log.flush()\n        print(json.dumps({reply}), flush=True)\n",
                    log.display()
                ),
            );
            compare(config, &logger, "1", &format!("c-{world}-{stack}"));
            logs.push(log);
        }
        for a in 0..agents {
            let read = |log: &Path| std::fs::read_to_string(log.join(format!("a{a}.jsonl"))).unwrap_or_default();
            let (seam, own) = (read(&logs[0]), read(&logs[1]));
            assert_eq!(own.lines().count(), rounds, "{world} agent {a}: {own}");
            assert_eq!(seam, own, "{world} agent {a}'s requests");
            let first: serde_json::Value = serde_json::from_str(seam.lines().next().unwrap()).unwrap();
            assert!(first["utilities"].as_array().is_some_and(|u| !u.is_empty()), "{first}");
            assert!(first["budget"].as_f64().is_some() && first["tokens"].as_f64().is_some(), "{first}");
        }
    }
    let doc = std::fs::read_to_string(root().join("docs/AGENTS.md")).unwrap();
    let example = doc.split("```python\n").nth(1).unwrap().split("```").next().unwrap();
    let alt = agent("alt.py", example.trim_start_matches("#!/usr/bin/env python3\n"));
    let v = compare(&seam, &format!("{alt},fixed:[0.1,0.5,0.1,0.5,0.1,0.5,0.1,0.5]"), "2", "c-alt");
    let welfare = |k: usize| v["rows"][k]["eval"]["welfare"]["mean"].as_f64();
    assert!(welfare(0).is_some(), "{v}");
    assert_eq!(welfare(0), welfare(1), "{v}");
}

#[test]
fn a_fixed_run_behind_the_seam_exports_its_levels_as_an_agent() {
    // A fixed run's export is its levels as constant policies: one for every group, or one
    // per agent where the run fixed a level per weight class; driven by agent:PATH it plays
    // the run's own episodes (the queue stack exports fixed runs too).
    let dir = tmp("fixed-export");
    let seam = short_quickstart(&dir, "seam.toml", &[("stack", "seam".into())]);
    let cases = [
        ("all", "learner.fixed.threshold=0.3", "fixed:0.3"),
        (
            "class",
            "learner.fixed.by_weight={w1=0.2,w2=0.5,w4=0.8}",
            "fixed:w1=0.2,w2=0.5,w4=0.8",
        ),
    ];
    let mut played = Vec::new();
    for (name, set, spec) in cases {
        let run = dir.join(format!("run-{name}"));
        let (code, _, err) = mtf(&[
            "train",
            "--config",
            &seam,
            "--set",
            "learner.kind=\"fixed\"",
            "--set",
            set,
            "--quiet",
            "--out",
            run.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{name}: {err}");
        let exe = dir.join(format!("agent-{name}"));
        let (code, _, err) = mtf(&["export", "--run", run.to_str().unwrap(), "--out", exe.to_str().unwrap()]);
        assert_eq!(code, 0, "{name}: {err}");
        let described = Command::new(&exe).arg("--describe").output().unwrap();
        let described: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
        assert_eq!(described["kind"], "fixed", "{name}: {described}");
        let v = compare_json(
            &seam,
            &format!("agent:{},{spec}", exe.display()),
            "3",
            "1",
            &dir.join(format!("cmp-{name}")),
        );
        let (agent, fixed) = (&v["rows"][0]["per_seed"], &v["rows"][1]["per_seed"]);
        assert_eq!(agent.as_array().map(Vec::len), Some(3), "{name}: {v}");
        assert_eq!(agent, fixed, "{name}");
        played.push(agent.clone());
    }
    // The two runs' levels play different episodes (so each comparison could fail).
    assert_ne!(played[0], played[1]);
    // --agent past the groups is one line naming them.
    let (code, _, err) = mtf(&[
        "export",
        "--run",
        dir.join("run-all").to_str().unwrap(),
        "--agent",
        "9",
        "--out",
        dir.join("agent-9").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--agent 9") && err.trim_end().lines().count() == 1, "{err}");
}

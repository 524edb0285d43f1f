//! End-to-end tests of `mtf train`: run directory, resume after SIGKILL, corrupt checkpoints,
//! thread-count independence.

use crate::common;
use common::{mtf, mtf_in, quickstart};
use std::path::Path;
use std::time::{Duration, Instant};

fn tmp(name: &str) -> common::Tmp {
    common::tmp("train", name)
}

/// Per-episode metrics without the wall-clock time (the one figure that is not replayable).
fn episodes(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v.as_object_mut().unwrap().remove("wall_time");
            v
        })
        .collect()
}

fn eval_welfare(dir: &Path) -> serde_json::Value {
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    s["eval_welfare"].clone()
}

const SMALL: [&str; 8] = [
    "--set",
    "env.rounds=40",
    "--set",
    "train.eval_seeds=2",
    "--set",
    "train.checkpoint_every=2",
    "--set",
    "learner.actor_critic.actor_hidden=32",
];

#[test]
fn a_run_directory_holds_everything() {
    let out = tmp("files");
    let q = quickstart();
    let mut args = vec![
        "train",
        "--config",
        q.as_str(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "train.episodes=3",
    ];
    args.extend(SMALL);
    let (code, stdout, err) = mtf(&args);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("tensorboard --logdir"), "{stdout}");
    // The main job (the quickstart's actor-critic, own rewards) says where it sits: against
    // the best fixed level, uniform play and the selfish equilibrium own rewards lead to, each
    // line's numbers those of summary.json, sampled as it trained, its argmax marked
    // near-uniform.
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let r = &s["references"];
    let pm = |v: &serde_json::Value| format!("{:+.3} +- {:.3}", v["mean"].as_f64().unwrap(), v["ci95"].as_f64().unwrap());
    let line = |start: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` line: {stdout}"))
            .to_string()
    };
    assert_eq!(r["scored"], "sampled");
    assert!(
        line("trained 3 episodes (ActorCritic)").contains("sampled (as trained)"),
        "{stdout}"
    );
    let best = line("vs the best fixed level");
    assert!(
        best.contains(&format!("({}, picked on other seeds)", r["best_fixed"].as_str().unwrap())),
        "{best}"
    );
    assert!(best.contains(&pm(&r["sampled_vs_best_fixed"])), "{best} / {r}");
    assert!(line("vs uniform random play").contains(&pm(&r["sampled_vs_uniform"])), "{stdout}");
    let selfish = line("vs the selfish equilibrium");
    let sf = &r["selfish"];
    assert!(sf["spec"].as_str().unwrap().starts_with("fixed:w1="), "{sf}");
    assert!(
        selfish.contains(sf["spec"].as_str().unwrap()) && selfish.contains(&pm(&sf["run_vs"])),
        "{selfish} / {sf}"
    );
    assert!(selfish.contains(&format!("itself {}", pm(&sf["vs_best_fixed"]))), "{selfish}");
    // Own rewards lead below the best fixed level (quickstart: levels near 0.9, about -6).
    assert!(sf["vs_best_fixed"]["mean"].as_f64().unwrap() < -2.0, "{sf}");
    let levels = line("mean levels in the last training episode: ");
    assert_eq!(levels.matches('=').count(), 3, "{levels}");
    // Three episodes teach little: the argmax is marked as noise.
    assert_eq!(s["near_uniform"], true);
    assert!(
        line("trained 3 episodes").contains("the argmax of a near-uniform policy"),
        "{stdout}"
    );

    for f in [
        "config.toml",
        "metrics.jsonl",
        "summary.json",
        "checkpoints/latest.ckpt",
        "checkpoints/episode-000002.ckpt",
        "checkpoints/episode-000003.ckpt",
    ] {
        assert!(out.join(f).exists(), "missing {f}");
    }
    assert_eq!(episodes(&out).len(), 3);
    let events: Vec<_> = std::fs::read_dir(out.join("tb")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(events.len(), 1);
    assert!(events[0].file_name().unwrap().to_str().unwrap().starts_with("events.out.tfevents."));
    assert!(std::fs::metadata(&events[0]).unwrap().len() > 500, "scalars were written");
    // The resolved config reruns.
    let (code, _, err) = mtf(&[
        "simulate",
        "--config",
        out.join("config.toml").to_str().unwrap(),
        "--seeds",
        "1",
        "--out",
        out.join("sim").to_str().unwrap(),
        "--policy",
        &format!("run:{}", out.display()),
    ]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_run_killed_with_sigkill_and_resumed_matches_an_uninterrupted_run() {
    killed_and_resumed("actor_critic", "actor_critic", &[]);
}

#[test]
fn a_class_shared_actor_critic_run_killed_with_sigkill_and_resumed_matches_an_uninterrupted_run() {
    // Pooled per class (the learner of worlds whose agents come and go), on fixed agents; its
    // lives are cleared at a checkpoint, which is taken between episodes.
    killed_and_resumed("actor_critic", "ac-class", &["--set", "learner.actor_critic.share=\"class\""]);
}

#[test]
fn a_ppo_run_on_two_environment_copies_killed_with_sigkill_and_resumed_matches_an_uninterrupted_run() {
    // PPO updates at every episode's end, so a checkpoint never holds half a rollout.
    killed_and_resumed("ppo", "ppo", &["--set", "train.envs=2"]);
}

fn killed_and_resumed(learner: &str, name: &str, extra: &[&str]) {
    let q = quickstart();
    let (full, cut) = (tmp(&format!("full-{name}")), tmp(&format!("cut-{name}")));
    let common = |dir: &Path| {
        let mut a: Vec<String> = [
            "train",
            "--config",
            &q,
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
            "--set",
            "train.episodes=8",
            "--set",
            "env.rounds=120",
            "--set",
            "train.eval_seeds=2",
            "--set",
            "train.checkpoint_every=3",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(
            [
                "--set".to_string(),
                format!("learner.kind={learner}"),
                "--set".to_string(),
                format!("learner.{learner}.actor_hidden=32"),
            ]
            .into_iter(),
        );
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let (code, _, err) = mtf(&common(&full).iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");

    let mut child = crate::common::spawn_quiet(&common(&cut));
    let start = Instant::now();
    loop {
        let lines = std::fs::read_to_string(cut.join("metrics.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines >= 3 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "training never got going");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let done_before = episodes(&cut).len();
    assert!(done_before < 8 || cut.join("summary.json").exists());

    let (code, _, err) = mtf(&["train", "--resume", cut.to_str().unwrap(), "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(episodes(&cut), episodes(&full), "resumed after {done_before} episodes");
    assert_eq!(eval_welfare(&cut), eval_welfare(&full));
    let _ = std::fs::remove_dir_all(&full);
    let _ = std::fs::remove_dir_all(&cut);
}

#[test]
fn a_corrupt_or_truncated_checkpoint_is_a_clear_error() {
    let q = quickstart();
    let out = tmp("corrupt");
    let mut args = vec![
        "train",
        "--config",
        q.as_str(),
        "--out",
        out.to_str().unwrap(),
        "--set",
        "train.episodes=2",
    ];
    args.extend(SMALL);
    assert_eq!(mtf(&args).0, 0);
    let ckpt = out.join("checkpoints/latest.ckpt");
    let bytes = std::fs::read(&ckpt).unwrap();
    for (bad, want) in [
        (bytes[..bytes.len() / 2].to_vec(), "truncated"),
        (
            {
                let mut b = bytes.clone();
                b[40] ^= 0xff;
                b
            },
            "checksum",
        ),
        (b"garbage".to_vec(), "not an mtf checkpoint"),
    ] {
        std::fs::write(&ckpt, &bad).unwrap();
        let (code, _, err) = mtf(&["train", "--resume", out.to_str().unwrap(), "--quiet"]);
        assert_eq!(code, 2, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("latest.ckpt") && err.contains(want), "{err}");
        assert!(!err.contains("panicked"));
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn training_does_not_depend_on_the_thread_count() {
    let q = quickstart();
    // One environment copy, and four (`train.envs`: stepped in parallel, acted for in one pass).
    for (learner, envs) in [
        ("actor_critic", 1),
        ("hedge", 1),
        ("ppo", 1),
        ("actor_critic", 4),
        ("ppo", 4),
        ("hedge", 4),
    ] {
        let (a, b) = (tmp(&format!("t1-{learner}-{envs}")), tmp(&format!("t2-{learner}-{envs}")));
        for (dir, threads) in [(&a, "1"), (&b, "2")] {
            let mut args = vec![
                "train",
                "--config",
                q.as_str(),
                "--quiet",
                "--out",
                dir.to_str().unwrap(),
                "--threads",
                threads,
                "--set",
                "train.episodes=2",
            ];
            let kind = format!("learner.kind={learner}");
            let copies = format!("train.envs={envs}");
            args.extend(["--set", kind.as_str(), "--set", copies.as_str()]);
            args.extend(SMALL);
            let (code, _, err) = mtf(&args);
            assert_eq!(code, 0, "{err}");
        }
        assert_eq!(episodes(&a), episodes(&b), "{learner} x {envs}");
        assert_eq!(eval_welfare(&a), eval_welfare(&b), "{learner} x {envs}");
        let _ = std::fs::remove_dir_all(&a);
        let _ = std::fs::remove_dir_all(&b);
    }
}

#[test]
fn bad_training_invocations_are_one_line_and_status_2() {
    let q = quickstart();
    for (args, want) in [
        (vec!["train"], "give --config FILE"),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.kind=dqn"],
            "learner.kind: unknown variant `dqn`",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "train.episodes=0"],
            "train.episodes: must be at least 1",
        ),
        (
            vec![
                "train",
                "--config",
                q.as_str(),
                "--set",
                "learner.kind=hedge",
                "--set",
                "learner.reward=difference",
            ],
            "learner.reward: difference rewards train actor_critic and ppo",
        ),
        (
            vec![
                "train",
                "--config",
                q.as_str(),
                "--set",
                "mechanism.name=\"stride\"",
                "--set",
                "learner.reward=difference",
            ],
            "which `stride` does not fully determine",
        ),
        (
            vec![
                "train",
                "--config",
                q.as_str(),
                "--set",
                "learner.reward=difference",
                "--set",
                "learner.difference_default=0.55",
            ],
            "learner.difference_default: 0.55 is not one of the threshold levels",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "train.envs=0"],
            "train.envs: must be in [1, 1024], got 0",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.ppo.epochs=0"],
            "learner.ppo.epochs: must be in [1, 1000], got 0",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.ppo.critic=\"global\""],
            "learner.ppo.critic: unknown variant `global`",
        ),
        // Values that can only diverge (they trained to NaN and exited 0).
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.ppo.lr=1e9"],
            "learner.ppo.lr: 1e9 is more than 1, where training can only diverge",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.ppo.vf_coef=1e308"],
            "learner.ppo.vf_coef: 1e308 is more than 1e6",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.actor_critic.weight_decay=1e308"],
            "learner.actor_critic.weight_decay: 1e308 is more than 1",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.actor_critic.reward_scale=1e308"],
            "learner.actor_critic.reward_scale: 1e308 is more than 1e6",
        ),
        (
            vec!["train", "--config", q.as_str(), "--set", "learner.es.lr=2"],
            "learner.es.lr: 2 is more than 1",
        ),
        (vec!["train", "--resume", "/no/such/run"], "not a run directory"),
        (vec!["train", "--resume", "/tmp", "--config", q.as_str()], "do not pass --config"),
    ] {
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

/// Learning works: on the quickstart (episodes shortened to 100 rounds, 60 training episodes,
/// the hyperparameters `configs/sweeps/quickstart.toml` found), the trained actor-critic's
/// greedy policy beats the worst fixed threshold clearly and comes within 2% of the best one on
/// the 8 held-out seeds, where every fixed threshold sees the same arrivals. Measured: learned
/// 115.73, best of the 10 fixed thresholds 116.01 (-0.24%), worst (0.9) 106.16. Not "beats the
/// best": with selfish rewards raising one's own threshold pays (env/examples/deviation.rs), so
/// learners settle just below the best fixed threshold; 2% leaves room for floating-point
/// differences between machines (burn's matrix kernels pick SIMD paths at run time).
#[test]
fn the_readmes_learning_line_learns_what_it_quotes() {
    // README.md's learning line, verbatim but for the output directory: the actor-critic with
    // the shared welfare reward, 3 training replicates of 200 episodes, judged against the best
    // fixed level as trained (sampled). The README quotes the IQM and its bootstrap CI from
    // docs/figures/numbers.json (scripts/docs-figures.sh); a float-level difference between
    // machines may move the last digit, so this checks the claim: the whole CI above the best
    // fixed level, and the IQM within 0.15 of the quoted one. (Issue 40: the line it replaced
    // omitted a setting its test used and gave -2.6% verbatim.)
    let out = tmp("learns");
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.starts_with("target/release/mtf train") && l.contains("--out runs/learns"))
        .expect("README.md has the learning line");
    let args: Vec<String> = line
        .split_whitespace()
        .skip(1)
        .map(|a| {
            if a == "runs/learns" {
                out.to_str().unwrap().to_string()
            } else {
                a.to_string()
            }
        })
        .chain(["--quiet".to_string()])
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = mtf_in(concat!(env!("CARGO_MANIFEST_DIR"), "/.."), &args);
    assert_eq!(code, 0, "{err}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let sampled = &s["vs_baseline"]["sampled"];
    let (iqm, lo) = (sampled["iqm"].as_f64().unwrap(), sampled["iqm_ci"][0].as_f64().unwrap());
    let numbers: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/figures/numbers.json")).unwrap())
            .unwrap();
    let quoted: f64 = numbers["learns.sampled"]
        .as_str()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|x| x.parse().ok())
        .expect("numbers.json quotes learns.sampled");
    eprintln!("learning line: sampled minus the best fixed level, IQM {iqm:+.3} (CI from {lo:+.3}); quoted {quoted:+.2}");
    assert!(lo > 0.0, "the CI's lower end {lo} is not above the best fixed level");
    assert!((iqm - quoted).abs() <= 0.15, "IQM {iqm} vs the quoted {quoted}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A tiny fixed-threshold run in `dir` (fast: no network to train).
fn tiny_run(dir: &Path, episodes: u32) -> (i32, String, String) {
    let q = quickstart();
    mtf(&[
        "train",
        "--config",
        &q,
        "--quiet",
        "--out",
        dir.to_str().unwrap(),
        "--set",
        "learner.kind=hedge",
        "--set",
        &format!("train.episodes={episodes}"),
        "--set",
        "env.rounds=30",
        "--set",
        "train.eval_seeds=1",
        "--set",
        "train.checkpoint_every=2",
    ])
}

#[test]
fn resume_of_a_finished_run_rewrote_summary_with_last_episode_null() {
    let dir = tmp("finished");
    let (code, _, err) = tiny_run(&dir, 3);
    assert_eq!(code, 0, "{err}");
    let before = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let (code, out, err) = mtf(&["train", "--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("the run is complete"), "{out}");
    assert_eq!(std::fs::read_to_string(dir.join("summary.json")).unwrap(), before);
    // Killed during the held-out evaluation: no summary yet. Resume writes it, with the last
    // episode taken from metrics.jsonl.
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    let (code, _, err) = mtf(&["train", "--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["last_episode"]["episode"], 2, "{summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resume_trusted_an_edited_config_toml() {
    let dir = tmp("edited");
    let (code, _, err) = tiny_run(&dir, 2);
    assert_eq!(code, 0, "{err}");
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    let config = dir.join("config.toml");
    let original = std::fs::read_to_string(&config).unwrap();
    let table: toml::Table = original.parse().unwrap();
    let edit = |key: &str, value: toml::Value| {
        let mut t = table.clone();
        let (section, name) = key.split_once('.').unwrap_or(("", key));
        let at = if section.is_empty() {
            &mut t
        } else {
            t[section].as_table_mut().unwrap()
        };
        at.insert(name.to_string(), value);
        std::fs::write(&config, toml::to_string(&t).unwrap()).unwrap();
    };
    let resume = |extra: &[&str]| {
        let mut args = vec!["train", "--quiet", "--resume", dir.to_str().unwrap()];
        args.extend(extra);
        mtf(&args)
    };
    // Each edit keeps every tensor's shape, and each was resumed silently.
    for (key, value) in [
        ("seed", toml::Value::Integer(99)),
        ("env.rounds", toml::Value::Integer(31)),
        ("env.reward", toml::Value::String("welfare".into())),
        ("env.observe_burst", toml::Value::Boolean(true)),
        ("mechanism.name", toml::Value::String("round_robin".into())),
        ("train.envs", toml::Value::Integer(2)),
    ] {
        edit(key, value);
        let (code, _, err) = resume(&[]);
        assert_eq!(code, 2, "{key}: {err}");
        assert!(
            err.contains("config.toml: changed since its checkpoint was written, at ")
                && err.contains(key)
                && err.contains("--allow-config-change")
                && err.trim().lines().count() == 1,
            "{key}: {err}"
        );
        // Export and run: read the same checkpoint: refused too.
        let (code, _, err) = mtf(&["export", "--run", dir.to_str().unwrap(), "--out", dir.join("a").to_str().unwrap()]);
        assert_eq!(code, 2, "{key}: {err}");
    }
    // More episodes, named: resumed; the threads never matter.
    edit("train.episodes", toml::Value::Integer(3));
    let (code, _, err) = resume(&["--allow-config-change", "train.episodes"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(episodes(&dir).len(), 3);
    // The checkpoints now record the new config: resuming the finished run needs no flag.
    let (code, _, err) = mtf(&["train", "--quiet", "--resume", dir.to_str().unwrap(), "--threads", "2"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = mtf(&["train", "--config", &quickstart(), "--allow-config-change", "seed"]);
    assert_eq!(code, 2);
    assert!(err.contains("needs --resume"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_latest_ckpt_silently_restarted_from_episode_0() {
    let dir = tmp("fallback");
    let (code, _, err) = tiny_run(&dir, 3);
    assert_eq!(code, 0, "{err}");
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    std::fs::remove_file(dir.join("checkpoints/latest.ckpt")).unwrap();
    std::fs::remove_file(dir.join("checkpoints/episode-000003.ckpt")).unwrap();
    // Left by a write that was killed: cleaned up on the next open.
    std::fs::write(dir.join("checkpoints/latest.ckpt.ckpt.99-0.tmp"), b"torn").unwrap();
    let (code, _, err) = mtf(&["train", "--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // Resumed from episode-000002.ckpt: episodes 0 and 1 kept, episode 2 redone.
    assert_eq!(episodes(&dir).len(), 3);
    assert!(!dir.join("checkpoints/latest.ckpt.ckpt.99-0.tmp").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_writers_of_one_run_directory_interleaved_episodes() {
    let dir = tmp("two-writers");
    std::fs::create_dir_all(&dir).unwrap();
    // Hold the lock the way a live writer does, from another process (flock).
    let mut holder = std::process::Command::new("flock")
        .arg(dir.join(".lock"))
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    // Wait until the lock is really held (the file exists before flock takes it).
    let lock = dir.join(".lock");
    let start = std::time::Instant::now();
    let held = || std::fs::File::open(&lock).is_ok_and(|f| matches!(f.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock)));
    while !held() {
        assert!(start.elapsed().as_secs() < 30, "flock never took the lock");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, _, err) = tiny_run(&dir, 2);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another mtf process is writing this run directory"), "{err}");
    assert!(!dir.join("config.toml").exists(), "the second writer wrote nothing");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn run_directory_faults_hung_panicked_or_named_no_file() {
    let dir = tmp("faults");
    let (code, _, err) = tiny_run(&dir, 2);
    assert_eq!(code, 0, "{err}");
    let d = dir.to_str().unwrap();
    // A FIFO as latest.ckpt: refused at once, not read forever.
    let ck = dir.join("checkpoints/latest.ckpt");
    std::fs::remove_file(&ck).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&ck).status().unwrap().success());
    let (code, _, err) = mtf(&["train", "--quiet", "--resume", d]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("latest.ckpt: not a regular file") && err.lines().count() == 1, "{err}");
    std::fs::remove_file(&ck).unwrap();
    // A binary metrics.jsonl names the file.
    std::fs::remove_file(dir.join("summary.json")).unwrap();
    std::fs::write(dir.join("metrics.jsonl"), [0xff, 0xfe, 0x00, 0x9c]).unwrap();
    let (code, _, err) = mtf(&["train", "--quiet", "--resume", d]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("metrics.jsonl: not UTF-8"), "{err}");
    std::fs::remove_file(dir.join("metrics.jsonl")).unwrap();
    // A tb that is a file: an error, not a panic inside tensorboard-rs.
    std::fs::remove_dir_all(dir.join("tb")).unwrap();
    std::fs::write(dir.join("tb"), b"x").unwrap();
    let (code, _, err) = mtf(&["train", "--quiet", "--resume", d]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("tb: exists and is not a directory"), "{err}");
    // --name cannot leave the output folder.
    let (code, _, err) = mtf(&["train", "--config", &quickstart(), "--name", "../../escape"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("a run name is one plain file name"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn difference_rewards_change_what_the_learners_learn_from() {
    // The same run paid its own rewards and paid difference rewards: the critics see other
    // returns, so their losses differ from the first episode on; both runs complete.
    let q = quickstart();
    for learner in ["actor_critic", "ppo"] {
        let mut logs = Vec::new();
        for reward in ["own", "difference"] {
            let dir = tmp(&format!("reward-{learner}-{reward}"));
            let kind = format!("learner.kind={learner}");
            let paid = format!("learner.reward={reward}");
            let mut args = vec![
                "train",
                "--config",
                q.as_str(),
                "--quiet",
                "--out",
                dir.to_str().unwrap(),
                "--set",
                "train.episodes=2",
                "--set",
                kind.as_str(),
                "--set",
                paid.as_str(),
            ];
            args.extend(SMALL);
            let (code, _, err) = mtf(&args);
            assert_eq!(code, 0, "{err}");
            logs.push(episodes(&dir));
            let _ = std::fs::remove_dir_all(&dir);
        }
        assert_ne!(logs[0][0]["critic_loss"], logs[1][0]["critic_loss"], "{learner}");
    }
}

/// A relative `env.trace` is the config's folder's (in the file) or the current directory's
/// (on the command line), resolved once: the run's config.toml keeps the file it read, so the
/// run plays (`run:`), exports and resumes from anywhere.
#[test]
fn a_relative_trace_path_broke_every_later_use_of_the_run() {
    let base = common::tmp("train", "trace");
    let (conf, elsewhere) = (base.join("conf"), base.join("elsewhere"));
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let q = std::fs::read_to_string(common::quickstart()).unwrap();
    let with_trace = q.replacen("arrivals = \"mmpp\"", "arrivals = \"trace\"\ntrace = \"arrivals.csv\"", 1);
    assert_ne!(with_trace, q);
    std::fs::write(conf.join("traced.toml"), with_trace).unwrap();
    let rows: String = (0..7)
        .map(|r| format!("{}\n", vec![(r % 3 + 1).to_string(); 8].join(",")))
        .collect();
    std::fs::write(conf.join("arrivals.csv"), format!("a0,a1,a2,a3,a4,a5,a6,a7\n{rows}")).unwrap();
    std::fs::write(elsewhere.join("other.csv"), "9,9,9,9,9,9,9,9\n").unwrap();
    let run_in = |dir: &Path, args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_mtf"))
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    let run = base.join("run");
    let config = conf.join("traced.toml");
    let (code, _, err) = run_in(
        &elsewhere,
        &[
            "train",
            "--config",
            config.to_str().unwrap(),
            "--set",
            "train.episodes=2",
            "--set",
            "env.rounds=20",
            "--quiet",
            "--out",
            run.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let stored = std::fs::read_to_string(run.join("config.toml")).unwrap();
    let want = conf.join("arrivals.csv").canonicalize().unwrap();
    assert!(stored.contains(&format!("trace = \"{}\"", want.display())), "{stored}");
    for args in [
        vec![
            "simulate",
            "--config",
            config.to_str().unwrap(),
            "--policy",
            &format!("run:{}", run.display()),
            "--seeds",
            "1",
            "--quiet",
            "--set",
            "env.rounds=20",
            "--out",
            base.join("sim").to_str().unwrap(),
        ],
        vec!["train", "--resume", run.to_str().unwrap(), "--quiet"],
        vec![
            "export",
            "--run",
            run.to_str().unwrap(),
            "--out",
            base.join("agent").to_str().unwrap(),
        ],
    ] {
        let (code, _, err) = run_in(&base, &args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    // On the command line, a relative trace is the current directory's.
    let (code, _, err) = run_in(
        &elsewhere,
        &[
            "simulate",
            "--config",
            config.to_str().unwrap(),
            "--set",
            "env.trace=other.csv",
            "--seeds",
            "1",
            "--quiet",
            "--set",
            "env.rounds=20",
            "--out",
            base.join("sim2").to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&base);
}

/// Each world reports its own figures: training in the valuation world printed and stored a
/// welfare of 0, logged bid factors as thresholds and had no revenue or surplus scalars.
#[test]
fn the_valuation_world_reported_welfare_and_thresholds() {
    let auction = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/auctions/second-price.toml");
    let out = common::tmp("train", "valuations");
    let (code, stdout, err) = mtf(&[
        "train",
        "--config",
        auction.to_str().unwrap(),
        "--set",
        "learner.kind=hedge",
        "--set",
        "train.episodes=2",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        stdout.contains("held-out surplus per bidder per item") && stdout.contains("revenue per item") && !stdout.contains("welfare"),
        "{stdout}"
    );
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for key in ["revenue_per_item", "surplus_per_bidder_item", "sold_share", "bid_factor"] {
        assert!(s["eval"].get(key).is_some(), "eval.{key}: {s}");
    }
    for key in ["welfare", "backlog", "dropped", "jain", "throughput_by_weight"] {
        assert!(s["eval"].get(key).is_none(), "eval.{key} in the valuation world: {s}");
    }
    assert!(
        s.get("eval_welfare").is_none() && s["last_episode"].get("bid_factor_by_weight").is_some(),
        "{s}"
    );
    let tb = std::fs::read_dir(out.join("tb")).unwrap().next().unwrap().unwrap().path();
    let events = String::from_utf8_lossy(&std::fs::read(tb).unwrap()).into_owned();
    for tag in [
        "charts/bid_factor/w1",
        "auction/revenue_per_item",
        "auction/surplus_per_bidder_item",
        "summary/eval_revenue_per_item",
    ] {
        assert!(events.contains(tag), "no {tag}");
    }
    assert!(!events.contains("charts/threshold") && !events.contains("charts/welfare"));
    // A run group there scores its replicates by the surplus, not by a welfare of 0.
    let group = out.with_extension("group");
    let (code, stdout, err) = mtf(&[
        "train",
        "--config",
        auction.to_str().unwrap(),
        "--set",
        "learner.kind=hedge",
        "--set",
        "train.episodes=2",
        "--replicates",
        "2",
        "--quiet",
        "--out",
        group.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.contains("held-out surplus per bidder item over replicates"), "{stdout}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(group.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["figure"], "surplus_per_bidder_item");
    assert!(s["eval_welfare"]["mean"].as_f64().unwrap() > 0.0, "{s}");
    let _ = std::fs::remove_dir_all(&group);
    // The queue world keeps its own.
    let q = out.with_extension("queues");
    common::train_quickstart(&q, &["train.episodes=1"]);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(q.join("summary.json")).unwrap()).unwrap();
    assert!(
        s["eval_welfare"]["mean"].is_number() && s["eval"].get("revenue_per_item").is_none(),
        "{s}"
    );
    assert!(s["last_episode"].get("threshold_by_weight").is_some());
    // Curves against agent-steps beside episodes, and hyperparameters of the learner it ran
    // only (issue 40.7: 93 hparams, other learners' keys among them).
    let tb = std::fs::read_dir(q.join("tb")).unwrap().next().unwrap().unwrap().path();
    let events = String::from_utf8_lossy(&std::fs::read(tb).unwrap()).into_owned();
    assert!(events.contains("agent_steps/welfare") && events.contains("charts/welfare"));
    assert!(
        events.contains("learner.actor_critic.actor_lr"),
        "the learner's own hyperparameters"
    );
    assert!(
        !events.contains("learner.ppo.lr") && !events.contains("learner.es.sigma"),
        "other learners' hyperparameters"
    );
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&q);
}

#[test]
fn ppo_under_the_welfare_reward_defaults_to_an_actor_per_class() {
    // PPO's `share` and `entropy` are "auto" (issue 41): for MAPPO (the default critic) under
    // the shared welfare reward the w124-mmpp recipe, so a run with the defaults trains as one
    // that sets the recipe, to the bit; for IPPO under it one actor per class at 0.01 (since
    // 2026-12-02); under own rewards per agent at 0.01, as before the change.
    let q = quickstart();
    let train = |name: &str, sets: &[&str]| {
        let out = tmp(name);
        let mut args = vec!["train", "--config", q.as_str(), "--out", out.to_str().unwrap()];
        for s in ["learner.kind=ppo", "train.episodes=2", "env.rounds=40", "train.eval_seeds=2"]
            .iter()
            .chain(sets)
        {
            args.extend(["--set", s]);
        }
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 0, "{err}");
        (episodes(&out), eval_welfare(&out), out)
    };
    let defaults = train("ppo-welfare-auto", &["env.reward=welfare"]);
    let recipe = train(
        "ppo-welfare-recipe",
        &["env.reward=welfare", "learner.ppo.share=\"class\"", "learner.ppo.entropy=0"],
    );
    let unshared = train(
        "ppo-welfare-unshared",
        &["env.reward=welfare", "learner.ppo.share=\"none\"", "learner.ppo.entropy=0.01"],
    );
    assert_eq!((&defaults.0, &defaults.1), (&recipe.0, &recipe.1));
    assert_ne!(defaults.0, unshared.0, "the recipe trains otherwise than an actor per agent");
    let ippo = train("ppo-welfare-ippo-auto", &["env.reward=welfare", "learner.ppo.critic=\"local\""]);
    let ippo_class = train(
        "ppo-welfare-ippo-class",
        &[
            "env.reward=welfare",
            "learner.ppo.critic=\"local\"",
            "learner.ppo.share=\"class\"",
            "learner.ppo.entropy=0.01",
        ],
    );
    assert_eq!((&ippo.0, &ippo.1), (&ippo_class.0, &ippo_class.1));
    let ippo_before = train(
        "ppo-welfare-ippo-before",
        &[
            "env.reward=welfare",
            "learner.ppo.critic=\"local\"",
            "learner.ppo.share=\"none\"",
            "learner.ppo.entropy=0.01",
        ],
    );
    assert_ne!(ippo.0, ippo_before.0, "IPPO's default is no longer an actor per agent");
    let own = train("ppo-own-auto", &[]);
    let before = train("ppo-own-before", &["learner.ppo.share=\"none\"", "learner.ppo.entropy=0.01"]);
    assert_eq!((&own.0, &own.1), (&before.0, &before.1));
    // The run's config says "auto", and resumes and reads back as it was trained.
    let config = std::fs::read_to_string(defaults.2.join("config.toml")).unwrap();
    assert!(
        config.contains("entropy = \"auto\"") && config.contains("share = \"auto\""),
        "{config}"
    );
    // TensorBoard's HPARAMS tab records what it trained with, `auto` decided (it recorded
    // "auto" before 2026-12-02): each key's value follows it within a few bytes (the key ends
    // where the entry's value field, tag 0x12, starts: `critic` is not `critic_hidden`).
    let tb = std::fs::read_dir(defaults.2.join("tb")).unwrap().next().unwrap().unwrap().path();
    let events = String::from_utf8_lossy(&std::fs::read(tb).unwrap()).into_owned();
    let after = |key: &str| {
        let entry = format!("{key}\u{12}");
        let at = events.find(&entry).unwrap_or_else(|| panic!("{key} not recorded"));
        events[at + entry.len()..].chars().take(12).collect::<String>()
    };
    for (key, value) in [("learner.ppo.share", "class"), ("learner.ppo.critic", "central")] {
        let v = after(key);
        assert!(v.contains(value) && !v.contains("auto"), "{key}: {v:?}");
    }
    assert!(!after("learner.ppo.entropy").contains("auto"));
}

#[test]
fn the_actor_critic_under_the_welfare_reward_defaults_to_an_actor_per_class() {
    // The actor-critic's `share` and `entropy` are "auto" since 2026-12-05 (issue 41): under
    // the shared welfare reward from 200 training episodes on the w124-mmpp recipe (one actor
    // and critic per weight class, no bonus), to the bit; under it over fewer episodes (since
    // 2026-12-07) and under own rewards (the main job) per agent with the annealed 0.01, as
    // before.
    let q = quickstart();
    let train = |name: &str, long: bool, sets: &[&str]| {
        let out = tmp(name);
        let mut args = vec!["train", "--config", q.as_str(), "--out", out.to_str().unwrap()];
        let budget: &[&str] = if long {
            &["train.episodes=200", "env.rounds=6"]
        } else {
            &["train.episodes=2", "env.rounds=40"]
        };
        for s in budget
            .iter()
            .chain(&[
                "learner.kind=actor_critic",
                "train.eval_seeds=2",
                "learner.actor_critic.actor_hidden=32",
            ])
            .chain(sets)
        {
            args.extend(["--set", s]);
        }
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 0, "{err}");
        (episodes(&out), eval_welfare(&out), out)
    };
    const RECIPE: [&str; 3] = [
        "env.reward=welfare",
        "learner.actor_critic.share=\"class\"",
        "learner.actor_critic.entropy=0",
    ];
    const BEFORE: [&str; 3] = [
        "env.reward=welfare",
        "learner.actor_critic.share=\"none\"",
        "learner.actor_critic.entropy=0.01",
    ];
    let long = train("ac-welfare-auto-long", true, &["env.reward=welfare"]);
    let recipe = train("ac-welfare-recipe-long", true, &RECIPE);
    let long_before = train("ac-welfare-before-long", true, &BEFORE);
    assert_eq!((&long.0, &long.1), (&recipe.0, &recipe.1));
    assert_ne!(long.0, long_before.0, "the recipe trains otherwise than an actor per agent");
    let defaults = train("ac-welfare-auto", false, &["env.reward=welfare"]);
    let before = train("ac-welfare-before", false, &BEFORE);
    let short_recipe = train("ac-welfare-recipe", false, &RECIPE);
    assert_eq!((&defaults.0, &defaults.1), (&before.0, &before.1), "2 episodes: per agent");
    assert_ne!(defaults.0, short_recipe.0);
    // A 2-episode checkpoint of the class recipe is not the default's learner: refused in one line.
    let path = short_recipe.2.join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let as_auto = text
        .replace("share = \"class\"", "share = \"auto\"")
        .replace("entropy = 0.0", "entropy = \"auto\"");
    std::fs::write(&path, as_auto).unwrap();
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        q.as_str(),
        "--policies",
        &format!("run:{}", short_recipe.2.display()),
        "--seeds",
        "2",
        "--set",
        "env.rounds=40",
        "--out",
        tmp("ac-class-read-as-auto").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let own = train("ac-own-auto", false, &[]);
    let own_before = train(
        "ac-own-before",
        false,
        &["learner.actor_critic.share=\"none\"", "learner.actor_critic.entropy=0.01"],
    );
    assert_eq!((&own.0, &own.1), (&own_before.0, &own_before.1));
    let config = std::fs::read_to_string(defaults.2.join("config.toml")).unwrap();
    assert!(config.contains("share = \"auto\""), "{config}");
    // A run written before the change has no `share` in its config (per agent was left out):
    // it reads as trained, per agent, and plays its checkpoint as before.
    let compare = |dir: &Path, name: &str| {
        let (code, out, err) = mtf(&[
            "compare",
            "--config",
            q.as_str(),
            "--policies",
            &format!("run:{}", dir.display()),
            "--seeds",
            "2",
            "--set",
            "env.rounds=40",
            "--json",
            "--out",
            dir.join(name).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let rows = v["rows"].as_array().unwrap();
        rows.iter()
            .map(|r| (r["policy"].clone(), r["summary"]["welfare"].clone()))
            .collect::<Vec<_>>()
    };
    let played = compare(&before.2, "cmp-a");
    let path = before.2.join("config.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("share = \"none\"\n"), "{text}");
    std::fs::write(&path, text.replace("share = \"none\"\n", "")).unwrap();
    assert_eq!(compare(&before.2, "cmp-b"), played);
    for (_, _, dir) in [long, recipe, long_before, defaults, short_recipe, before, own, own_before] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn an_entropy_bonus_that_is_neither_a_number_nor_auto_is_one_line_naming_its_key() {
    let q = quickstart();
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        q.as_str(),
        "--set",
        "learner.kind=ppo",
        "--set",
        "learner.ppo.entropy=\"much\"",
    ]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("learner.ppo.entropy") && err.contains("\"auto\""), "{err}");
}

//! Issue 42's attack pass, one test per class of what got through, named after what broke.
//! (The plot hang has its unit test in `report::plots`; empty `learner.fixed` tables theirs in
//! `learners::fixed`; duplicate market tenant names theirs in `env::market`.)

use crate::common::{mtf, tmp};
use std::path::Path;

fn config(rel: &str) -> String {
    format!("{}/../configs/{rel}", env!("CARGO_MANIFEST_DIR"))
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

#[test]
fn a_market_whose_only_learner_has_count_0_divided_by_zero() {
    let out = tmp("reliability", "count0");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &config("market/duel.toml"),
        "--set",
        "market.tenants.1.count=0",
        "--set",
        "learner.kind=\"ppo\"",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no tenant learns") && err.lines().count() == 1, "{err}");
}

#[test]
fn seed_was_ignored_and_baseline_accepted_on_a_market_file() {
    // --seed N is the root seed on every world: the market's drawn job sizes follow it.
    let three = config("market/three-types.toml");
    let cost = |seed: &str| {
        let out = tmp("reliability", &format!("market-seed-{seed}"));
        let (code, stdout, err) = mtf(&[
            "simulate",
            "--config",
            &three,
            "--seed",
            seed,
            "--json",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        json(&stdout)["metrics"]["cost_per_work"].clone()
    };
    assert_ne!(cost("1"), cost("2"), "another --seed, other job sizes");
    let (code, _, err) = mtf(&["compare", "--config", &three, "--policies", "own", "--baseline", "whatever"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--baseline whatever") && err.lines().count() == 1, "{err}");
}

#[test]
fn sweep_export_replaced_an_existing_file_without_force() {
    let dir = tmp("reliability", "export");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("study.journal");
    std::fs::write(&file, "mine").unwrap();
    let (code, _, err) = mtf(&[
        "sweep",
        "export",
        "--study",
        "nope",
        "--storage",
        "sqlite:/nonexistent/x.db",
        "--out",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exists") && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine", "the file is untouched");
}

#[test]
fn curves_accepted_threads_0_and_1025() {
    for t in ["0", "1025"] {
        let (code, _, err) = mtf(&["curves", "runs/none", "--threads", t]);
        assert_eq!(code, 2, "{t}: {err}");
        assert!(err.contains("threads"), "{err}");
    }
}

#[test]
fn a_run_group_with_a_replicate_deleted_was_read_as_a_smaller_group() {
    let group = tmp("reliability", "group");
    let q = config("quickstart.toml");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &q,
        "--replicates",
        "2",
        "--quiet",
        "--out",
        group.to_str().unwrap(),
        "--set",
        "env.rounds=20",
        "--set",
        "train.episodes=1",
        "--set",
        "train.eval_seeds=1",
        "--set",
        "learner.kind=\"fixed\"",
    ]);
    assert_eq!(code, 0, "{err}");
    let spec = format!("run:{}", group.display());
    let n = std::cell::Cell::new(0);
    let compare = |spec: &str| {
        n.set(n.get() + 1);
        let out = group.join(format!("cmp-{}", n.get()));
        mtf(&[
            "compare",
            "--config",
            &q,
            "--policies",
            spec,
            "--seeds",
            "1",
            "--set",
            "env.rounds=20",
            "--out",
            out.to_str().unwrap(),
        ])
    };
    assert_eq!(compare(&spec).0, 0);
    // Replicate 1 deleted, then replaced by a file: refused, naming it.
    std::fs::remove_dir_all(group.join("replicate-1")).unwrap();
    let (code, _, err) = compare(&spec);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("replicate-1") && err.contains("replicate 1 of the group's 2"), "{err}");
    std::fs::write(group.join("replicate-1"), "not a run").unwrap();
    let (code, _, err) = compare(&spec);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = mtf(&["curves", group.to_str().unwrap(), "--out", group.join("c").to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("replicate-1"), "{err}");
    let _ = std::fs::remove_dir_all(Path::new(&group));
}

/// A market run read where a queue-world run is (a `run:` policy on a queue config, `--resume`,
/// `mtf curves`, export's loader) was refused blaming the run's own config: "env.world: unknown
/// variant `market`". Now one line names the run, its world and what reads it.
#[test]
fn a_market_run_read_as_a_queue_run_blamed_its_config() {
    let dir = tmp("reliability", "market-as-queue");
    let run = dir.join("run");
    let (code, _, err) = mtf(&[
        "train",
        "--config",
        &config("market/duel.toml"),
        "--set",
        "train.episodes=2",
        "--set",
        "train.replicates=1",
        "--quiet",
        "--out",
        run.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let policy = format!("run:{}", run.display());
    let q = config("quickstart.toml");
    let r = run.to_str().unwrap();
    let curves = dir.join("curves");
    for args in [
        vec!["compare", "--config", &q, "--policies", &policy, "--seeds", "1"],
        vec!["simulate", "--config", &q, "--policy", &policy, "--seeds", "1"],
        vec!["train", "--resume", r],
        vec!["curves", r, "--out", curves.to_str().unwrap()],
    ] {
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            err.contains(r) && err.contains("a run of the market world") && !err.contains("unknown variant"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

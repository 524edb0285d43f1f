//! The CLI keeps INTERFACE's promises: common flags with one meaning, usage errors that point
//! to the subcommand's help, limits checked before allocating, machine-readable `--json`.

use crate::common;
use common::{mtf, quickstart};

#[test]
fn unknown_flag_pointed_to_the_top_level_help() {
    let (code, _, err) = mtf(&["simulate", "--config", &quickstart(), "--frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("(see `mtf simulate --help`)") && err.lines().count() == 1, "{err}");
    let (_, _, err) = mtf(&["sweep", "--bogus"]);
    assert!(err.contains("(see `mtf sweep --help`)"), "{err}");
}

#[test]
fn threads_0_seeds_1e9_and_huge_widths_were_accepted_or_aborted() {
    let q = quickstart();
    for (args, want) in [
        (vec!["simulate", "--config", &q, "--threads", "0"], "--threads"),
        (vec!["train", "--config", &q, "--threads", "0"], "threads in [1, 1024]"),
        (vec!["simulate", "--config", &q, "--seeds", "1000000000"], "seeds in [1, 100000]"),
        (
            vec!["train", "--config", &q, "--set", "learner.actor_critic.actor_hidden=100000000"],
            "learner.actor_critic.actor_hidden: 100000000 is more than the limit",
        ),
        (
            vec!["train", "--config", &q, "--set", "train.eval_seeds=0"],
            "train.eval_seeds: must be in [1, 100000], got 0",
        ),
        (
            vec!["simulate", "--config", &q, "--mechanism", "fifa"],
            "unknown mechanism `fifa` given on the command line",
        ),
    ] {
        let (code, _, err) = mtf(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{args:?}: {err}");
    }
}

#[test]
fn common_flags_exist_where_interface_promises_them() {
    for (cmd, flags) in [
        ("simulate", &["--set", "--seed", "--threads", "--out", "--json", "--quiet"][..]),
        ("train", &["--set", "--seed", "--threads", "--out", "--json", "--quiet"]),
        ("compare", &["--set", "--seed", "--threads", "--out", "--json", "--quiet"]),
        (
            "sweep",
            &["--set", "--seed", "--sampler-seed", "--threads", "--out", "--json", "--quiet"],
        ),
        ("reproduce", &["--set", "--seed", "--threads", "--out", "--json", "--quiet"]),
        ("export", &["--out", "--json", "--quiet", "--force"]),
    ] {
        let (code, help, _) = mtf(&[cmd, "--help"]);
        assert_eq!(code, 0);
        for f in flags {
            assert!(
                help.contains(&format!("{f} ")) || help.contains(&format!("{f}\n")),
                "{cmd} lacks {f}:\n{help}"
            );
        }
    }
    let (_, help, _) = mtf(&["simulate", "--help"]);
    for form in ["fixed:X", "hedge", "run:RUN_DIR", "agent:PATH"] {
        assert!(help.contains(form), "--policy help lacks {form}");
    }
}

#[test]
fn json_output_of_train_and_compare_is_one_object() {
    let dir = common::tmp("flags", "json");
    let run = dir.join("run");
    let q = quickstart();
    let small = [
        "--set",
        "env.rounds=20",
        "--set",
        "train.eval_seeds=1",
        "--set",
        "train.episodes=2",
        "--set",
        "learner.kind=hedge",
    ];
    let mut args = vec!["train", "--config", &q, "--quiet", "--json", "--out", run.to_str().unwrap()];
    args.extend(small);
    let (code, out, err) = mtf(&args);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert!(v["summary"]["eval_welfare"]["mean"].is_f64(), "{v}");
    assert_eq!(v["run_dir"], run.to_str().unwrap());
    let cmp = dir.join("cmp");
    let (code, out, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--set",
        "env.rounds=20",
        "--seeds",
        "2",
        "--policies",
        "fixed:0.0,hedge",
        "--json",
        "--out",
        cmp.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["rows"].as_array().unwrap().len(), 2, "{v}");
    assert!(v["rows"][0]["summary"]["welfare"]["mean"].is_f64());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reproduce_thesis_quick_writes_its_report_and_figures() {
    // The quick plan with 20-round episodes: every section runs, in seconds.
    let out = common::tmp("flags", "reproduce");
    let (code, stdout, err) = mtf(&[
        "reproduce",
        "thesis",
        "--quick",
        "--set",
        "env.rounds=20",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "--quiet prints no progress: {err}");
    let v: serde_json::Value = serde_json::from_str(stdout.trim()).unwrap();
    let index = std::fs::read_to_string(v["index"].as_str().unwrap()).unwrap();
    assert!(
        index.contains("20 rounds per episode"),
        "the report states the episode length it ran"
    );
    for section in ["Fig. 5.2/5.3", "Table 5.2", "Wall time"] {
        assert!(index.contains(section), "index.md lacks {section}");
    }
    // Each claim's measurement carries the paired differences (3 seeds in the quick plan).
    let paired = index.lines().filter(|l| l.starts_with("Paired over the same 3 seeds")).count();
    assert_eq!(paired, 8, "one paired line per weight setup's claim, Poisson and mmpp");
    // The report opens with the verdict: one paragraph per thesis claim, each with its word.
    let verdict = &index[..index.find("\nMode: ").expect("the mode line")];
    assert!(verdict.contains("## Verdict"), "{verdict}");
    let claims: Vec<&str> = verdict.lines().filter(|l| l.starts_with("**") && !l.starts_with("**Can")).collect();
    assert_eq!(claims.len(), 7, "1.28x, four setups, phi, envy: {claims:?}");
    for c in &claims {
        let words = [
            "— reproduced.",
            "— not reproduced.",
            "— reproduced only under the thesis code's structure.",
            ": reproduced",
            ": not reproduced",
        ];
        assert!(words.iter().any(|w| c.contains(w)), "no verdict in {c}");
    }
    // The sections the verdict is written from.
    for section in ["thesis-code preset", "Can learning help? `mtf analyze`"] {
        assert!(index.contains(section), "index.md lacks {section}");
    }
    assert!(out.join("analyze-w128-mmpp/analysis.md").exists());
    // Every figure the report links exists, as PNG and SVG.
    let linked: Vec<&str> = index.lines().filter_map(|l| l.strip_prefix("![](")?.strip_suffix(')')).collect();
    assert!(linked.len() >= 8, "{linked:?}");
    for png in linked {
        assert!(out.join(png).exists() && out.join(png.replace(".png", ".svg")).exists(), "{png}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// Help that says what each command does: every policy form where policies are taken, the
/// level as a threshold or a bid factor, no crate description on top, `--threads` as each
/// command defaults it, comma lists shown with commas, and help about help exits 0.
#[test]
fn help_texts_said_what_the_commands_do() {
    let help = |args: &[&str]| {
        let (code, out, err) = mtf(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        out
    };
    for cmd in ["simulate", "compare"] {
        let h = help(&[cmd, "--help"]);
        for form in [
            "fixed:X",
            "fixed:w1=X,w2=Y",
            "fixed:[X,Y",
            "sampled:run:RUN_DIR",
            "run:RUN_DIR",
            "agent:PATH",
            "hedge",
            "bid factor",
        ] {
            assert!(h.contains(form), "{cmd} --help lacks {form}: {h}");
        }
        assert!(h.contains("Worker threads (default 2;") && !h.contains("train.threads"), "{h}");
    }
    let top = help(&["--help"]);
    assert!(top.starts_with("The MTF harness"), "{top}");
    assert!(help(&["train", "--help"]).contains("default: the config's train.threads"));
    assert!(help(&["sweep", "--help"]).contains("default: the sweep file's budget.threads"));
    let analyze = help(&["analyze", "--help"]);
    assert!(
        analyze.contains("default 100,1000,10000") && analyze.contains("Default: stride,gandiva_fair,themis in the queue world"),
        "{analyze}"
    );
    // No hard break mid-sentence (a line that ends without punctuation and the next starting in
    // lower case, after a short line).
    let sweep = help(&["sweep", "--help"]);
    assert!(!sweep.contains("again, or\nwith"), "{sweep}");
    assert!(help(&["help", "--help"]).starts_with("The MTF harness"));
}

/// A bad value on the command line names the flag, not the file it overrides.
#[test]
fn bad_flag_values_were_blamed_on_the_config_or_the_input_file() {
    let q = common::quickstart();
    let (code, _, err) = mtf(&["simulate", "--config", &q, "--set", "env.rounds=-3", "--quiet"]);
    assert_eq!(code, 2);
    assert!(err.starts_with("mtf: --set env.rounds=-3 (over "), "{err}");
    let (code, _, err) = mtf(&["simulate", "--config", &q, "--set", "env.agents.*.weight=-1", "--quiet"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("--set env.agents.*.weight=-1") && err.contains("env.agents[0].weight"),
        "{err}"
    );
    let out = common::run_piped(
        env!("CARGO_BIN_EXE_mtf"),
        &["schedule", "--mechanism", "themis", "--fairness", "2"],
        b"{}",
    );
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("'--fairness <FAIRNESS>'") && !err.contains("input"), "{err}");
}

//! `onnx:PATH` policies: a network saved as ONNX (by any trainer) acting for every agent in
//! simulate and compare. The files are written here as torch.onnx.export writes an MLP's head
//! (MatMul, Add over a free batch axis), so the answers are known: constant logits play that
//! fixed level, seed for seed. Python's side (a policy trained on mtf_env scoring the same
//! welfare in Python as in mtf) is python/tests/test_examples.py.

use crate::common;
use common::mtf;
use prost::Message;
use std::path::Path;
use tract_onnx::pb;

fn tmp(name: &str) -> common::Tmp {
    common::tmp("onnx", name)
}

fn value_info(name: &str, dims: &[Option<i64>]) -> pb::ValueInfoProto {
    use pb::tensor_shape_proto::{dimension::Value, Dimension};
    let dim = dims
        .iter()
        .map(|d| Dimension {
            value: Some(d.map_or_else(|| Value::DimParam("batch".into()), Value::DimValue)),
            ..Default::default()
        })
        .collect();
    pb::ValueInfoProto {
        name: name.into(),
        r#type: Some(pb::TypeProto {
            value: Some(pb::type_proto::Value::TensorType(pb::type_proto::Tensor {
                elem_type: pb::tensor_proto::DataType::Float as i32,
                shape: Some(pb::TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn tensor(name: &str, dims: &[i64], values: Vec<f32>) -> pb::TensorProto {
    pb::TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: pb::tensor_proto::DataType::Float as i32,
        float_data: values,
        ..Default::default()
    }
}

/// `logits = obs W + b` over `batch` (`None`: a free axis) rows of `dim` features, `k` logits.
fn linear(path: &Path, batch: Option<i64>, dim: usize, w: Vec<f32>, b: Vec<f32>) {
    let k = b.len();
    let graph = pb::GraphProto {
        name: "policy".into(),
        node: vec![
            pb::NodeProto {
                op_type: "MatMul".into(),
                input: vec!["obs".into(), "w".into()],
                output: vec!["xw".into()],
                ..Default::default()
            },
            pb::NodeProto {
                op_type: "Add".into(),
                input: vec!["xw".into(), "b".into()],
                output: vec!["logits".into()],
                ..Default::default()
            },
        ],
        initializer: vec![tensor("w", &[dim as i64, k as i64], w), tensor("b", &[k as i64], b)],
        input: vec![value_info("obs", &[batch, Some(dim as i64)])],
        // torch's dynamo exporter declares the intermediate shapes too, over its `batch`
        // symbol (fixing the input to [n, dim] without them contradicted these).
        value_info: vec![value_info("xw", &[batch, Some(k as i64)])],
        output: vec![value_info("logits", &[batch, Some(k as i64)])],
        ..Default::default()
    };
    let model = pb::ModelProto {
        ir_version: 8,
        opset_import: vec![pb::OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(graph),
        producer_name: "mtf tests".into(),
        ..Default::default()
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, model.encode_to_vec()).unwrap();
}

/// A policy whose logits ignore the observation and favour level `j` of `k`.
fn constant(path: &Path, batch: Option<i64>, dim: usize, k: usize, j: usize) {
    let b = (0..k).map(|i| if i == j { 30.0 } else { 0.0 }).collect();
    linear(path, batch, dim, vec![0.0; dim * k], b);
}

fn simulate(policy: &str, out: &Path) -> (i32, String, String) {
    common::simulate_quickstart(policy, 3, out)
}

fn per_seed_welfare(dir: &Path) -> Vec<f64> {
    std::fs::read_to_string(dir.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["welfare"].as_f64().unwrap())
        .collect()
}

/// The quickstart's observation length, read from the refusal of a model of the wrong one
/// (which is what the message is for).
fn quickstart_dim(dir: &Path) -> usize {
    let wrong = dir.join("wrong-dim.onnx");
    constant(&wrong, None, 1, 10, 0);
    let (code, _, err) = simulate(&format!("onnx:{}", wrong.display()), &dir.join("sim-wrong"));
    assert_eq!(code, 2, "{err}");
    let says = err.split("observation has ").nth(1).unwrap_or_else(|| panic!("{err}"));
    says.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn an_onnx_policy_of_constant_logits_plays_that_fixed_level_seed_for_seed() {
    let dir = tmp("constant");
    let dim = quickstart_dim(&dir);
    // Quickstart levels 0.0, 0.1, ..., 0.9: index 4 is 0.4; free batch and batch-1 models alike.
    let (free, one) = (dir.join("free.onnx"), dir.join("one.onnx"));
    constant(&free, None, dim, 10, 4);
    constant(&one, Some(1), dim, 10, 4);
    let fixed = {
        let (code, _, err) = simulate("fixed:0.4", &dir.join("sim-fixed"));
        assert_eq!(code, 0, "{err}");
        per_seed_welfare(&dir.join("sim-fixed"))
    };
    for (spec, out) in [
        (format!("onnx:{}", free.display()), "sim-free"),
        (format!("onnx:{}", one.display()), "sim-one"),
        // Logits 30 apart: a draw leaves the favoured level with probability below 1e-12.
        (format!("sampled:onnx:{}", free.display()), "sim-sampled"),
    ] {
        let (code, _, err) = simulate(&spec, &dir.join(out));
        assert_eq!(code, 0, "{spec}: {err}");
        assert_eq!(per_seed_welfare(&dir.join(out)), fixed, "{spec}");
    }
    // The same model through the seam's commands (a queue-world file with env.stack =
    // "seam"): one layout for both, so it plays fixed:0.4's episodes there too.
    let (code, stdout, err) = common::mtf(&[
        "compare",
        "--config",
        &common::quickstart(),
        "--set",
        "env.stack=seam",
        "--policies",
        &format!("onnx:{},fixed:0.4", free.display()),
        "--seeds",
        "3",
        "--json",
        "--quiet",
        "--out",
        dir.join("cmp-seam").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["rows"][0]["per_seed"].as_array().map(Vec::len), Some(3), "{stdout}");
    assert_eq!(v["rows"][0]["per_seed"], v["rows"][1]["per_seed"], "{stdout}");
    // A different level is a different episode (so the comparison above could fail).
    constant(&free, None, dim, 10, 8);
    let (code, _, err) = simulate(&format!("onnx:{}", free.display()), &dir.join("sim-other"));
    assert_eq!(code, 0, "{err}");
    assert_ne!(per_seed_welfare(&dir.join("sim-other")), fixed);
}

#[test]
fn an_onnx_policy_enters_compare_beside_the_fixed_levels() {
    let dir = tmp("compare");
    let dim = quickstart_dim(&dir);
    let model = dir.join("p.onnx");
    constant(&model, None, dim, 10, 3);
    let q = common::quickstart();
    let spec = format!("onnx:{}", model.display());
    let (code, json, err) = mtf(&[
        "compare",
        "--config",
        &q,
        "--policies",
        &format!("{spec},fixed:0.3,fixed:0.6"),
        "--seeds",
        "3",
        "--json",
        "--quiet",
        "--out",
        dir.join("cmp").to_str().unwrap(),
        "--set",
        "env.rounds=60",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let row = |p: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["policy"] == p)
            .unwrap_or_else(|| panic!("{p}: {json}"))
            .clone()
    };
    assert_eq!(row(&spec)["summary"]["welfare"], row("fixed:0.3")["summary"]["welfare"]);
    assert_ne!(row(&spec)["summary"]["welfare"], row("fixed:0.6")["summary"]["welfare"]);
}

/// In a world behind the seam (the toy bandit: its row is [group, round share], 11 levels
/// 0.0..1.0) an ONNX policy acts for every live agent on its row (refused there before
/// 2026-12-02): constant logits play that level, and a model that reads the group feature
/// plays each group's target, seed for seed the same episodes as `fixed:0.3` and
/// `fixed:group_0=0.3,group_1=0.7`; greedy or sampled alike (logits 30 apart).
#[test]
fn an_onnx_policy_plays_in_a_world_behind_the_seam() {
    let dir = tmp("seam");
    let config = dir.join("bandit.toml");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&config, "[env]\nworld = \"bandit\"\nagents = 4\nrounds = 10\nnoise = 0.05\n").unwrap();
    let (one, groups, wrong) = (dir.join("one.onnx"), dir.join("groups.onnx"), dir.join("wrong.onnx"));
    constant(&one, None, 2, 11, 3);
    // Group 0 (feature 0): logit 30 at level 3; group 1 (feature 1): 0 there, 60 at level 7.
    let mut w = vec![0.0; 2 * 11];
    (w[3], w[7]) = (-30.0, 60.0);
    let mut b = vec![0.0; 11];
    b[3] = 30.0;
    linear(&groups, Some(1), 2, w, b);
    constant(&wrong, None, 3, 11, 3);
    let policies = format!(
        "onnx:{},fixed:0.3,sampled:onnx:{},fixed:group_0=0.3,group_1=0.7,fixed:0.5",
        one.display(),
        groups.display()
    );
    let (code, json, err) = mtf(&[
        "compare",
        "--config",
        config.to_str().unwrap(),
        "--policies",
        &policies,
        "--seeds",
        "3",
        "--json",
        "--out",
        dir.join("cmp").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let seeds = |k: usize| v["rows"][k]["per_seed"].clone();
    assert_eq!(v["rows"][0]["policy"], format!("onnx:{}", one.display()), "{json}");
    assert_eq!(seeds(0), seeds(1), "{json}");
    assert_eq!(seeds(2), seeds(3), "{json}");
    assert_ne!(seeds(3), seeds(4), "{json}");
    assert_ne!(seeds(0), seeds(2), "{json}");
    let (code, _, err) = mtf(&[
        "compare",
        "--config",
        config.to_str().unwrap(),
        "--policies",
        &format!("onnx:{}", wrong.display()),
        "--out",
        dir.join("bad").to_str().unwrap(),
    ]);
    assert_eq!((code, err.trim().lines().count()), (2, 1), "{err}");
    assert!(
        err.contains("wrong.onnx") && err.contains("3 features") && !dir.join("bad").exists(),
        "{err}"
    );
}

#[test]
fn onnx_files_that_do_not_fit_are_one_line_naming_the_file() {
    let dir = tmp("errors");
    let dim = quickstart_dim(&dir);
    let garbage = dir.join("garbage.onnx");
    std::fs::write(&garbage, b"not a protobuf at all \xff\xff\xff").unwrap();
    let (k5, batch3) = (dir.join("k5.onnx"), dir.join("batch3.onnx"));
    constant(&k5, None, dim, 5, 0);
    constant(&batch3, Some(3), dim, 10, 0);
    for (spec, says) in [
        (format!("onnx:{}", garbage.display()), "not an ONNX model"),
        (format!("onnx:{}", dir.join("missing.onnx").display()), "missing.onnx"),
        (format!("onnx:{}", dir.display()), "not a file"),
        (format!("onnx:{}", k5.display()), "10 levels"),
        (format!("onnx:{}", batch3.display()), "batch axis is fixed at 3"),
        ("onnx:".to_string(), "`onnx:` needs a path"),
        ("sampled:onnx:".to_string(), "`sampled:onnx:` needs a path"),
    ] {
        let (code, _, err) = simulate(&spec, &dir.join("sim"));
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(err.contains(says), "{spec}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{spec}: {err}");
    }
}

/// Logits `j x - 0.9 j^2` of the summed utilities x (`m` of them after the budget): level
/// round(x / 1.8), so the level follows the queue, an agent's and a round's own.
fn varied_weights(dim: usize, k: usize, m: usize) -> (Vec<f32>, Vec<f32>) {
    let w = (0..dim * k)
        .map(|i| if (1..=m).contains(&(i / k)) { (i % k) as f32 } else { 0.0 })
        .collect();
    let b = (0..k).map(|j| -0.9 * (j * j) as f32).collect();
    (w, b)
}

#[test]
fn a_sampled_onnx_policy_draws_the_same_levels_on_either_stack() {
    let dir = tmp("stacks");
    let dim = quickstart_dim(&dir);
    let model = dir.join("soft.onnx");
    // varied_weights at a tenth of the scale: probabilities that follow each agent's queue,
    // none near 0 or 1, so every draw of every agent decides a level.
    let (w, b) = varied_weights(dim, 10, 16);
    let tenth = |v: Vec<f32>| v.into_iter().map(|x| x / 10.0).collect();
    linear(&model, None, dim, tenth(w), tenth(b));
    let (spec, greedy) = (format!("sampled:onnx:{}", model.display()), format!("onnx:{}", model.display()));
    let compare = |stack: &str, out: &str| {
        let (code, stdout, err) = mtf(&[
            "compare",
            "--config",
            &common::quickstart(),
            "--set",
            &format!("env.stack={stack}"),
            "--set",
            "env.rounds=60",
            "--policies",
            &format!("{spec},{greedy}"),
            "--seeds",
            "6",
            "--json",
            "--quiet",
            "--out",
            dir.join(out).to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{stack}: {err}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    // Behind the seam: the row's per-seed welfare, in the order of its episode seeds.
    let seam = compare("seam", "seam");
    let seeds: Vec<u64> = seam["episode_seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_u64().unwrap())
        .collect();
    let row = |r: usize| -> Vec<f64> {
        seam["rows"][r]["per_seed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let (sampled, argmax) = (row(0), row(1));
    // The queue stack's per-episode lines, by seed (one per seed of the one row).
    compare("queue", "queue");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("queue").join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let own: Vec<f64> = seeds
        .iter()
        .map(|s| {
            let line = lines
                .iter()
                .find(|l| l["seed"].as_u64() == Some(*s) && l["policy"] == spec.as_str())
                .unwrap_or_else(|| panic!("seed {s}"));
            line["welfare"].as_f64().unwrap()
        })
        .collect();
    // Each agent draws from its own stream on either stack (one stream for all behind the
    // seam drew other levels: every seed differed).
    assert_eq!(sampled, own);
    // The draws matter: the model's argmax plays other episodes.
    assert_eq!(argmax.len(), 6);
    assert!(argmax.iter().zip(&sampled).all(|(a, b)| a != b), "{argmax:?} {sampled:?}");
}

#[test]
fn an_exported_onnx_agent_plays_what_the_onnx_policy_plays_seed_for_seed() {
    let dir = tmp("export");
    let dim = quickstart_dim(&dir);
    let model = dir.join("p.onnx");
    let (w, b) = varied_weights(dim, 10, 16);
    linear(&model, None, dim, w, b);
    let exe = dir.join("agent");
    let q = common::quickstart();
    let spec = format!("onnx:{}", model.display());
    let (code, json, err) = mtf(&[
        "export",
        "--policy",
        &spec,
        "--config",
        &q,
        "--out",
        exe.to_str().unwrap(),
        "--json",
        "--set",
        "env.rounds=60",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["manifest"]["kind"], "onnx", "{json}");
    // The agent describes the observation it reads: the one mtf_env gives Python.
    let described = std::process::Command::new(&exe).arg("--describe").output().unwrap();
    let d: serde_json::Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(d["observation_size"], dim, "{d}");
    let (code, _, err) = simulate(&spec, &dir.join("sim-onnx"));
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = simulate(&format!("agent:{}", exe.display()), &dir.join("sim-agent"));
    assert_eq!(code, 0, "{err}");
    let (onnx, agent) = (per_seed_welfare(&dir.join("sim-onnx")), per_seed_welfare(&dir.join("sim-agent")));
    assert_eq!(onnx, agent);
    // The weights matter: the policy is none of the fixed levels in disguise.
    for level in 0..10 {
        let out = dir.join(format!("sim-fixed-{level}"));
        let (code, _, err) = simulate(&format!("fixed:{}", level as f64 / 10.0), &out);
        assert_eq!(code, 0, "{err}");
        assert_ne!(per_seed_welfare(&out), onnx, "level {level}");
    }
}

#[test]
fn onnx_exports_that_cannot_work_are_refused_in_one_line() {
    let dir = tmp("export-errors");
    let dim = quickstart_dim(&dir);
    let q = common::quickstart();
    let (wrong, batch3, ok) = (dir.join("wrong.onnx"), dir.join("batch3.onnx"), dir.join("ok.onnx"));
    constant(&wrong, None, dim + 1, 10, 0);
    constant(&batch3, Some(3), dim, 10, 0);
    constant(&ok, None, dim, 10, 0);
    let out = dir.join("agent");
    let market = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
    for (args, says) in [
        (
            vec![
                "--policy".to_string(),
                format!("onnx:{}", wrong.display()),
                "--config".into(),
                q.clone(),
            ],
            "observation has",
        ),
        // A tenant's agent answers one observation at a time.
        (
            vec![
                "--policy".into(),
                format!("onnx:{}", batch3.display()),
                "--config".into(),
                q.clone(),
            ],
            "batch axis is fixed at 3",
        ),
        (
            vec![
                "--policy".into(),
                format!("sampled:onnx:{}", ok.display()),
                "--config".into(),
                q.clone(),
            ],
            "--sample --seed N",
        ),
        (
            vec!["--policy".into(), "fixed:0.3".into(), "--config".into(), q.clone()],
            "--run RUN_DIR",
        ),
        (
            vec![
                "--policy".into(),
                format!("onnx:{}", ok.display()),
                "--config".into(),
                market.display().to_string(),
            ],
            "another world's",
        ),
        (
            vec![
                "--policy".into(),
                format!("onnx:{}", ok.display()),
                "--config".into(),
                q.clone(),
                "--agent".into(),
                "1".into(),
            ],
            "one model every agent runs",
        ),
    ] {
        let mut full = vec!["export".to_string(), "--out".into(), out.display().to_string()];
        full.extend(args.clone());
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let (code, _, err) = mtf(&full);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(!out.exists(), "{args:?} wrote the agent");
    }
}

//! End-to-end tests of `mtf schedule`.

use crate::common;

fn mtf(args: &[&str], stdin: &str) -> (i32, String, String) {
    let out = common::run_piped(env!("CARGO_BIN_EXE_mtf"), args, stdin.as_bytes());
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

const SPEC: &str = r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
 "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#;

#[test]
fn spec_example_from_stdin_and_from_a_file() {
    let want = "{\"owners\":[1,0,1,1],\"budgets\":[51.0,49.0],\"turn\":1,\"spent\":[1.0,3.0],\"paid\":[true,true,true,true]}\n";
    let (code, out, err) = mtf(&["schedule", "--mechanism", "mtf"], SPEC);
    assert_eq!((code, out.as_str(), err.as_str()), (0, want, ""));
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/rounds/spec-example.json");
    let (code, out, _) = mtf(&["schedule", "--mechanism", "mtf", "--input", file], "");
    assert_eq!((code, out.as_str()), (0, want));
}

#[test]
fn spec_section_8_auction_example() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/rounds/auction-example.json");
    let (code, out, err) = mtf(&["schedule", "-m", "second_price", "--input", file], "");
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["owners"], serde_json::json!([0, 2]));
    assert_eq!(v["prices"], serde_json::json!([3.0, 4.0]));
    assert_eq!(v["spent"], serde_json::json!([3.0, 0.0, 4.0]));
    let budgets: Vec<f64> = serde_json::from_value(v["budgets"].clone()).unwrap();
    for (got, want) in budgets.iter().zip([7.0 + 7.0 / 3.0, 10.0 + 7.0 / 3.0, 6.0 + 7.0 / 3.0]) {
        assert!((got - want).abs() < 1e-12, "{budgets:?}");
    }
    let (code, out, _) = mtf(&["schedule", "-m", "first_price", "--input", file], "");
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["prices"], serde_json::json!([5.0, 4.5]));
}

#[test]
fn bad_bids_are_input_errors() {
    for (round, want) in [
        (r#"{"utilities": [[0.5]], "budgets": [1]}"#, "missing field `bids`"),
        (r#"{"utilities": [[0.5]], "budgets": [1], "bids": [[-1]]}"#, "bids"),
        (r#"{"utilities": [[0.5]], "budgets": [1], "bids": [[1, 2]]}"#, "bids"),
        (r#"{"utilities": [[0.5]], "budgets": [1], "bids": [[1], [2]]}"#, "bids"),
        (r#"{"utilities": [[0.5]], "budgets": [1], "bids": [[1]], "reserve": -2}"#, "reserve"),
        (r#"{"utilities": [[0.5]], "budgets": [1], "bids": [["x"]]}"#, "input"),
    ] {
        let (code, out, err) = mtf(&["schedule", "-m", "first_price"], round);
        assert_eq!((code, out.as_str()), (2, ""), "{round}: {err}");
        assert!(err.contains(want) && err.lines().count() == 1, "{round}: {err}");
    }
}

#[test]
fn every_mechanism_runs_on_the_demand_example() {
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../configs/rounds/demand-example.json");
    for m in scheduler::registry::NAMES {
        let (code, out, err) = mtf(&["schedule", "-m", m, "--input", file], "");
        if scheduler::registry::GAVEL.contains(m) {
            // Gavel's policies need the round's jobs (ids, remaining work, the clock...).
            assert_eq!(code, 2, "{m}: {err}");
            assert!(err.contains("missing field `ids`") && err.lines().count() == 1, "{m}: {err}");
            continue;
        }
        assert_eq!(code, 0, "{m}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["owners"].as_array().unwrap().len(), 4, "{m}");
    }
}

#[test]
fn state_printed_by_one_call_continues_in_the_next() {
    // Stride with one accelerator and two equal agents alternates only if the passes carry over.
    let round = r#"{"utilities": [[1.0], [1.0]], "rates": [[1.0], [1.0]]"#;
    let (_, first, _) = mtf(&["schedule", "-m", "stride"], &format!("{round}}}"));
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    let (code, second, err) = mtf(&["schedule", "-m", "stride"], &format!("{round}, \"state\": {}}}", v["state"]));
    assert_eq!(code, 0, "{err}");
    let w: serde_json::Value = serde_json::from_str(&second).unwrap();
    assert_eq!((v["owners"][0].as_u64(), w["owners"][0].as_u64()), (Some(0), Some(1)));
}

#[test]
fn bad_input_is_one_line_and_exit_status_2() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["schedule", "-m", "mtf"], "{not json", "bad JSON"),
        (
            &["schedule", "-m", "mtf"],
            r#"{"utilities": [[0.1, 0.2], [0.3]], "thresholds": [0, 0], "budgets": [1, 1]}"#,
            "`utilities` row 1 has 1 entries, expected 2",
        ),
        (&["schedule", "-m", "mtf"], r#"{"utilities": [[NaN]]}"#, "bad JSON"),
        (
            &["schedule", "-m", "mtf"],
            r#"{"utilities": [[0.5]], "thresholds": [0.5], "budgets": [1], "weights": [-1]}"#,
            "`weights`[0] is -1",
        ),
        (
            &["schedule", "-m", "mtf"],
            r#"{"utilities": [[0.5]], "thresholds": [0.5], "budgets": [-2]}"#,
            "`budgets`[0] is -2",
        ),
        (
            &["schedule", "-m", "mtf"],
            r#"{"utilities": [[0.5]], "thresholds": [1.5], "budgets": [1]}"#,
            "`thresholds`[0] is 1.5",
        ),
        (
            &["schedule", "-m", "mtf"],
            r#"{"utilities": [[0.5]], "budgets": [1]}"#,
            "missing field `thresholds`",
        ),
        (
            &["schedule", "-m", "max_throughput"],
            r#"{"utilities": [[0.5]]}"#,
            "missing field `rates`",
        ),
        (&["schedule", "-m", "nope"], r#"{"utilities": [[0.5]]}"#, "unknown mechanism `nope`"),
        (
            &["schedule", "-m", "stride"],
            r#"{"utilities": [[0.5]], "rates": [[1]], "state": {"passes": [1, 2], "active": [true]}}"#,
            "`state.passes` has 2 entries, expected 1",
        ),
        (
            &["schedule", "-m", "themis", "--fairness", "3"],
            r#"{"utilities": [[0.5]]}"#,
            "'--fairness <FAIRNESS>'",
        ),
        (
            &["schedule", "-m", "mtf", "--input", "/no/such/file.json"],
            "",
            "/no/such/file.json",
        ),
        (&["schedule"], "", "--mechanism"),
        (&["shedule"], "", "unrecognized subcommand"),
    ];
    for (args, stdin, needle) in cases {
        let (code, out, err) = mtf(args, stdin);
        assert_eq!(code, 2, "{args:?} {stdin}: {err}");
        assert!(out.is_empty(), "{args:?}: stdout {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: not one line: {err}");
        assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn help_documents_the_optional_fields() {
    let (code, out, _) = mtf(&["schedule", "--help"], "");
    assert_eq!(code, 0);
    for field in ["rates", "types", "fairness", "state", "thresholds", "budgets"] {
        assert!(out.contains(field), "help lacks {field}");
    }
}

#[test]
fn a_gavel_policy_schedules_a_round_of_jobs() {
    // Two jobs, one V100 and one K80; job 0 runs 10x faster on the V100, job 1 2x. Gavel's
    // aware FIFO gives each, in id order, its fastest free type: job 0 the V100, job 1 the K80.
    let round = r#"{"demands": [1000, 1000], "rates": [[3600, 360], [720, 360]], "types": [0, 1],
        "ids": [7, 9], "remaining": [1000, 1000], "ages": [0, 0], "clock": 0, "round_seconds": 360,
        "type_names": ["v100", "k80"]}"#;
    let (code, out, err) = mtf(&["schedule", "-m", "fifo_perf"], round);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["owners"], serde_json::json!([0, 1]));
}

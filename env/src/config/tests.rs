//! The scenario config's tests: defaults, errors naming file, key and problem, overrides.

use super::*;

fn load_str(text: &str, overrides: &[&str]) -> Result<Scenario, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).unwrap();
    for o in overrides {
        apply_override(&mut table, o).unwrap();
    }
    let file: ScenarioFile = from_table("test.toml", table)?;
    file.resolve(Path::new("test.toml"))
}

#[test]
fn defaults_are_the_spec_scenario() {
    let s = load_str("", &[]).unwrap();
    assert_eq!((s.n(), s.m(), s.queue_cap, s.deadline), (20, 40, 1000, 10));
    assert_eq!(s.agents[5].app, 1);
    assert_eq!(s.file.env.threshold_levels.len(), 10);
}

#[test]
fn errors_name_file_key_and_problem() {
    let e = |t: &str| load_str(t, &[]).unwrap_err().to_string();
    assert_eq!(e("[env]\nroundz = 3"), "test.toml: env.roundz: unknown field `roundz`, expected one of `rounds`, `world`, `stack`, `queues`, `dispatch`, `placement`, `p2c_draw`, `arrivals`, `trace`, `trace_format`, `trace_time_scale`, `trace_start`, `service`, `deadline`, `queue_cap`, `reward`, `heterogeneity`, `base_rate`, `threshold_levels`, `bid_levels`, `value_scale`, `observe_burst`, `observe_budgets`, `observe_weight`, `observe_by_type`, `mmpp`, `agents`, `cluster`, `catalog`");
    assert!(e("[env]\nrounds = \"many\"").starts_with("test.toml: env.rounds: invalid type: string \"many\""));
    assert_eq!(
        e("[[env.agents]]\nload = 0.5\nweight = 0"),
        "test.toml: env.agents[0].weight: must be a finite number > 0, got 0"
    );
    assert_eq!(
        e("[[env.agents]]\nload = 1.5"),
        "test.toml: env.agents[0].load: must be in (0, 1], got 1.5"
    );
    assert_eq!(
        e("[[env.agents]]\nload = 0.5\ncount = 0"),
        "test.toml: env.agents[0].count: must be at least 1"
    );
    assert!(e("[[env.agents]]\nload = 0.5\napplication = \"bert\"")
        .starts_with("test.toml: env.agents[0].application: `bert` is not in the catalog"));
    assert_eq!(e("[env]\nagents = []"), "test.toml: env.agents: needs at least one agent group");
    assert_eq!(
        e("[env]\ncluster = []"),
        "test.toml: env.cluster: needs at least one accelerator group"
    );
    assert!(e("[env]\ndeadline = \"soon\"").contains("env.deadline: deadline must be a whole number"));
    assert!(e("[mechanism]\nname = \"fifa\"").starts_with("test.toml: mechanism.name: unknown mechanism `fifa`"));
    // Gavel's policies schedule jobs: named in the queue world, they are refused as such (one
    // panicked on the queue world's round, which carries no jobs).
    assert!(e("[mechanism]\nname = \"fifo\"").contains("`fifo` is one of Gavel's policies"));
    assert!(e("[env]\nqueues = \"stack\"").starts_with("test.toml: env.queues: unknown variant `stack`"));
}

#[test]
fn huge_values_panicked_or_aborted_on_allocation() {
    let e = |t: &str, o: &[&str]| load_str(t, o).unwrap_err().to_string();
    assert!(e("", &["env.base_rate=1e300"]).starts_with("test.toml: env.base_rate: must be in (0, 1e9]"));
    assert!(e("", &["env.arrivals=\"mmpp\"", "env.mmpp.high_mult=1e308"])
        .starts_with("test.toml: env.mmpp.high_mult: must be a number in [0, 1e6]"));
    assert!(e("", &["env.arrivals=\"mmpp\"", "env.mmpp.high_mult=1e6", "env.base_rate=1e6"])
        .starts_with("test.toml: env.mmpp.high_mult: agent 0 would see"));
    let catalog = "[env.catalog]\napplications = [\"a\"]\ntypes = [\"gemmini_2ghz\", \"gemmini_3ghz\"]\nthroughput = [[1, 1e300]]";
    let got = e(catalog, &[]);
    assert!(
        got.starts_with("test.toml: env.catalog.throughput[0][1]: gives a service rate of 4e301"),
        "{got}"
    );
    let sized = |agents: u64, accelerators: u64| {
        format!("[[env.agents]]\ncount = {agents}\nload = 0.5\n[[env.cluster]]\ntype = \"gemmini_2ghz\"\ncount = {accelerators}")
    };
    assert_eq!(
        e(&sized(1_000_000_000, 1), &[]),
        "test.toml: env.agents[].count: 1000000000 in all, more than the limit of 10000"
    );
    assert!(e(&sized(1, 1_000_000_000), &[]).starts_with("test.toml: env.cluster[].count: 1000000000 in all"));
    assert!(e(&sized(10_000, 10_001), &[]).contains("cells"));
    assert!(e(&sized(u64::MAX / 2, 1), &[]).contains("more than the limit"));
    load_str(&sized(1, 100_000), &[]).unwrap();
    assert!(e("", &["env.rounds=4294967295"]).starts_with("test.toml: env.rounds: must be in [1, 10000000]"));
    assert!(e("", &["mechanism.total_tokens=1e300"]).starts_with("test.toml: mechanism.total_tokens"));
    assert!(e(
        "[[env.agents]]\nload = 0.5\nweight = 1e308\n[[env.agents]]\nload = 0.5\nweight = 1e-308",
        &[]
    )
    .starts_with("test.toml: env.agents[1].weight: 1e-308 is more than 1e9 times smaller than the largest weight (1e308)"));
}

#[test]
fn weights_of_1e308_gave_welfare_0() {
    // Scale-invariant: multiplying every weight by 2^k changes no bit of any result.
    let w = [1.0, 2.0, 4.0];
    let big: Vec<f64> = w.iter().map(|x| x * 2f64.powi(1000)).collect();
    let tiny: Vec<f64> = w.iter().map(|x| x * 2f64.powi(-1000)).collect();
    assert_eq!(normalised_weights(&big), normalised_weights(&w));
    assert_eq!(normalised_weights(&tiny), normalised_weights(&w));
    assert_eq!(
        normalised_weights(&[3.0, 1e308]),
        vec![3.0 / 2f64.powi(1023), 1e308 / 2f64.powi(1023)]
    );
    assert!(normalised_weights(&[1e308, 1e308]).iter().sum::<f64>().is_finite());
}

#[test]
fn set_with_a_newline_smuggled_a_second_key() {
    let e = |o: &str| apply_override(&mut toml::Table::new(), o).unwrap_err();
    assert!(
        e("env.rounds=5\nfoo=1").contains("control character '\\n'"),
        "{}",
        e("env.rounds=5\nfoo=1")
    );
    assert!(e("env.rounds=5 \t").contains("control character"));
    let mut t = toml::Table::new();
    apply_override(&mut t, "env.rounds=5").unwrap();
    assert_eq!(t["env"]["rounds"].as_integer(), Some(5));
}

#[test]
fn trace_first_row_of_minus_one_nan_or_bom_was_dropped_as_a_header() {
    let dir = std::env::temp_dir().join(format!("mtf-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let read = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        read_trace(&p, 2)
    };
    assert!(read("neg.csv", "-1,2\n3,4\n")
        .unwrap_err()
        .contains("line 1: expected non-negative whole numbers"));
    assert!(read("nan.csv", "nan,2\n3,4\n").unwrap_err().contains("line 1"));
    assert_eq!(read("bom.csv", "\u{feff}1,2\n3,4\n").unwrap(), vec![vec![1, 2], vec![3, 4]]);
    assert_eq!(read("header.csv", "agent0,agent1\n3,4\n").unwrap(), vec![vec![3, 4]]);
    assert!(read("huge.csv", "18446744073709551615,0\n")
        .unwrap_err()
        .contains("more than the limit"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A counts trace's header was ignored: columns named `agent1,agent0` were read in file order
/// (issue 40.4). Names now place the columns; names that are no agent are an error.
#[test]
fn trace_header_names_were_ignored() {
    let dir = std::env::temp_dir().join(format!("mtf-trace-names-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let read = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        read_trace(&p, 3)
    };
    assert_eq!(
        read("rev.csv", "agent2,agent0,agent1\n1,2,3\n4,5,6\n").unwrap(),
        vec![vec![2, 3, 1], vec![5, 6, 4]]
    );
    assert_eq!(
        read("idx.csv", "1,0,2\n7,8,9\n").unwrap(),
        vec![vec![1, 0, 2], vec![7, 8, 9]],
        "a numeric first row is data"
    );
    assert_eq!(read("short.csv", "a1,tenant_2,agent0\n1,2,3\n").unwrap(), vec![vec![3, 1, 2]]);
    assert!(read("bad.csv", "a,b,c\n1,2,3\n").unwrap_err().contains("header `a` names no agent"));
    assert!(read("far.csv", "agent0,agent1,agent7\n1,2,3\n")
        .unwrap_err()
        .contains("header `agent7` names no agent"));
    assert!(read("dup.csv", "agent0,agent0,agent1\n1,2,3\n")
        .unwrap_err()
        .contains("agent 0 named twice"));
    assert!(read("few.csv", "agent0,agent1\n1,2\n")
        .unwrap_err()
        .contains("expected one per agent (3)"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A job log (submit time and agent per job) was refused: only per-round counts were read
/// (issue 40.4). Columns by header name; unknown or missing names are errors.
#[test]
fn a_job_log_was_refused() {
    let dir = std::env::temp_dir().join(format!("mtf-trace-jobs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let read = |name: &str, text: &str, scale: f64| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        trace::read_jobs(&p, 2, scale)
    };
    // Seconds at 360-second rounds: 0 and 359 s are round 0, 720 s round 2.
    let log = "agent,submit\n0,0\n1,359\n0,720\n1,720.5\n1,721\n";
    assert_eq!(read("s.csv", log, 1.0 / 360.0).unwrap(), vec![vec![1, 1], vec![0, 0], vec![1, 2]]);
    // The time scale compresses the log: a higher load, the same jobs.
    assert_eq!(read("s2.csv", log, 1.0 / 720.0).unwrap(), vec![vec![1, 1], vec![1, 2]]);
    assert_eq!(
        read("c.csv", "submit,agent,count\n1,1,5\n", 1.0).unwrap(),
        vec![vec![0, 0], vec![0, 5]]
    );
    for (text, says) in [
        ("submit,agent,duration\n0,0,5\n", "unknown column `duration`"),
        ("submit\n0\n", "needs the columns submit and agent"),
        ("submit,agent\n-1,0\n", "not a time >= 0"),
        ("submit,agent\n0,2\n", "not an agent index in [0, 2)"),
        ("submit,agent\n0,0,1\n", "3 columns, the header names 2"),
        ("submit,agent\n1e12,0\n", "past the 10000000 rounds"),
        ("submit,agent\n", "no jobs"),
    ] {
        let e = read("bad.csv", text, 1.0).unwrap_err();
        assert!(e.contains(says), "{text:?}: {e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn overrides_reach_any_key() {
    let s = load_str(
        "",
        &[
            "env.rounds=50",
            "env.deadline=none",
            "mechanism.name=stride",
            "env.arrivals=mmpp",
            "seed=9",
        ],
    )
    .unwrap();
    assert_eq!(
        (
            s.file.env.rounds,
            s.deadline,
            s.file.mechanism.name.as_str(),
            s.file.env.arrivals,
            s.file.seed
        ),
        (50, u32::MAX, "stride", Arrivals::Mmpp, 9)
    );
    let e = load_str("", &["env.rounds=-3"]).unwrap_err().to_string();
    assert!(e.starts_with("test.toml: env.rounds: invalid value"), "{e}");
}

#[test]
fn overrides_index_and_sweep_arrays() {
    let text = "[[env.agents]]\nload = 0.5\n[[env.agents]]\nload = 0.5\nweight = 2.0";
    let s = load_str(text, &["env.agents.*.load=0.8", "env.agents.1.weight=4"]).unwrap();
    assert_eq!(
        s.agents.iter().map(|a| (a.load, a.weight)).collect::<Vec<_>>(),
        vec![(0.8, 1.0), (0.8, 4.0)]
    );
    let mut t: toml::Table = toml::from_str(text).unwrap();
    assert!(apply_override(&mut t, "env.agents.5.load=0.1")
        .unwrap_err()
        .contains("has 2 elements"));
    assert!(apply_override(&mut t, "env.agents.x.load=0.1")
        .unwrap_err()
        .contains("index it with a number"));
    assert!(apply_override(&mut t, "nokey").unwrap_err().contains("expected key.path=value"));
}

/// `--set` on an element of a numeric array (`market.tenants.0.speeds.1=2`) was refused with a
/// hint from the queue world's tables (`speeds.1.load`): it now sets the element; a table element
/// set whole names one of its own fields (issue 42.7).
#[test]
fn set_on_a_numeric_array_element_gave_a_queue_world_hint() {
    let mut t: toml::Table = toml::from_str("[[market.tenants]]\nname = \"a\"\nspeeds = [1.0, 2.0, 3.0]").unwrap();
    apply_override(&mut t, "market.tenants.0.speeds.1=0.5").unwrap();
    apply_override(&mut t, "market.tenants.*.speeds.2=7.0").unwrap();
    assert_eq!(t["market"]["tenants"][0]["speeds"], toml::Value::try_from([1.0, 0.5, 7.0]).unwrap());
    let e = apply_override(&mut t, "market.tenants.0.speeds.3=1").unwrap_err();
    assert!(e.contains("has 3 elements"), "{e}");
    let e = apply_override(&mut t, "market.tenants.0.speeds.1.x=1").unwrap_err();
    assert!(e.contains("is a value, not a table") && e.contains("speeds.1="), "{e}");
    // An array the file leaves at its default has no elements to set.
    let e = apply_override(&mut t, "env.threshold_levels.0=0.05").unwrap_err();
    assert!(
        e.contains("`env.threshold_levels` is not in the file") && e.contains("env.threshold_levels=[...]"),
        "{e}"
    );
    let e = apply_override(&mut t, "learner.levels.*=0.5").unwrap_err();
    assert!(e.contains("`learner.levels` is not in the file"), "{e}");
    let e = apply_override(&mut t, "market.tenants.0=1").unwrap_err();
    assert!(e.contains("market.tenants.0.name") && !e.contains("load"), "{e}");
}

/// A market's `work_trace` given with `--set` was resolved against the file's folder, where
/// every other path given with `--set` is resolved against the current directory (issue 42.7).
#[test]
fn a_market_work_trace_set_on_the_command_line_was_read_from_the_files_folder() {
    let dir = std::env::temp_dir().join(format!("mtf-overrides-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    let file = dir.join("sub").join("m.toml");
    std::fs::write(
        &file,
        "[[market.tenants]]\nwork_trace = \"t.csv\"\n[[market.tenants]]\nname = \"b\"",
    )
    .unwrap();
    let cwd = std::env::current_dir().unwrap();
    let t = read_table(&file, &["market.tenants.1.work_trace=x/t.csv".into(), "env.trace=y.csv".into()]).unwrap();
    let tenants = t["market"]["tenants"].as_array().unwrap();
    assert_eq!(
        tenants[0]["work_trace"].as_str(),
        Some("t.csv"),
        "the file's own path stays relative to it"
    );
    assert_eq!(tenants[1]["work_trace"].as_str(), Some(cwd.join("x/t.csv").to_str().unwrap()));
    assert_eq!(t["env"]["trace"].as_str(), Some(cwd.join("y.csv").to_str().unwrap()));
    let t = read_table(&file, &["market.tenants.*.work_trace=z.csv".into()]).unwrap();
    for tenant in t["market"]["tenants"].as_array().unwrap() {
        assert_eq!(tenant["work_trace"].as_str(), Some(cwd.join("z.csv").to_str().unwrap()));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn resolved_config_round_trips_through_toml() {
    let s = load_str(
        "[env]\nrounds = 7\n[[env.agents]]\ncount = 2\nweight = 2.0\nload = 0.8\napplication = \"resnet_conv\"",
        &[],
    )
    .unwrap();
    let again: ScenarioFile = toml::from_str(&s.to_toml()).unwrap();
    assert_eq!(again, s.file);
}

#[test]
fn mmpp_defaults_keep_the_mean_rate() {
    assert!((Mmpp::default().mean_mult() - 1.0).abs() < 1e-12);
}

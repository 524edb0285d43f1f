//! `mtf simulate`: evaluation episodes without learning; a metrics table (mean and 95% CI over
//! seeds) and a run directory.

use crate::error::user;
use crate::run_dir;
use env::config::Scenario;
use env::eval::{evaluate, ActionSource, Fixed, Stat, Summary};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Options of `mtf simulate`.
#[derive(Debug, Clone)]
pub struct SimulateArgs {
    /// Scenario file.
    pub config: PathBuf,
    /// Mechanism override.
    pub mechanism: Option<String>,
    /// Policy spec, e.g. `fixed:0.3`.
    pub policy: String,
    /// Episodes.
    pub seeds: usize,
    /// Root seed override.
    pub seed: Option<u64>,
    /// Worker threads.
    pub threads: usize,
    /// `--set` overrides.
    pub set: Vec<String>,
    /// Print JSON instead of the table.
    pub json: bool,
    /// Run directory override.
    pub out: Option<PathBuf>,
    /// No progress bars (simulate draws none; accepted for one meaning everywhere).
    pub quiet: bool,
}

/// Load a scenario with the command line's overrides; config errors are user errors.
pub fn load_scenario(config: &Path, set: &[String], mechanism: Option<&str>, seed: Option<u64>) -> anyhow::Result<Scenario> {
    let mut overrides = set.to_vec();
    if let Some(m) = mechanism {
        // Reported as the command line's, not as a key of the config file.
        if !scheduler::registry::NAMES.contains(&m) {
            return Err(user(format!(
                "unknown mechanism `{m}` given on the command line (known: {})",
                scheduler::registry::NAMES.join(", ")
            )));
        }
        overrides.push(format!("mechanism.name=\"{m}\""));
    }
    if let Some(s) = seed {
        overrides.push(format!("seed={s}"));
    }
    // Any experiment file works: its [learner] and [train] sections are checked and unused.
    crate::config::Experiment::load(config, &overrides)
        .map(|e| e.scenario)
        .map_err(|e| user(e.to_string()))
}

/// A policy for evaluation, parsed from its spec: `fixed:TAU`; `hedge` (learning online from
/// uniform weights in every episode); `run:RUN_DIR` (a trained run's greedy policy);
/// `agent:PATH` (exported agent binaries, driven over their protocol).
pub fn policy_factory(
    spec: &str,
    scenario: &Scenario,
    agent_errors: &crate::drive::ErrorSlot,
) -> anyhow::Result<Box<dyn Fn() -> Box<dyn ActionSource> + Sync>> {
    let levels = &scenario.file.env.threshold_levels;
    if let Some(tau) = spec.strip_prefix("fixed:") {
        let t: f64 = tau.parse().map_err(|_| user(format!("--policy {spec}: `{tau}` is not a number")))?;
        let level = levels
            .iter()
            .position(|&l| (l - t).abs() < 1e-9)
            .ok_or_else(|| user(format!("--policy {spec}: {t} is not one of the threshold levels {levels:?}")))?;
        return Ok(Box::new(move || Box::new(Fixed { level }) as Box<dyn ActionSource>));
    }
    if spec == "hedge" {
        // Hedge plays online, from uniform weights, in every evaluation episode.
        let exp = crate::config::Experiment {
            scenario: scenario.clone(),
            learner: crate::config::LearnerSection {
                kind: crate::config::LearnerKind::Hedge,
                ..Default::default()
            },
            train: Default::default(),
        };
        return Ok(Box::new(move || {
            let exp = exp.clone();
            Box::new(crate::learner::OnlineLearning::new(Box::new(move || {
                crate::train::build_learner(&exp)
            }))) as Box<dyn ActionSource>
        }));
    }
    if let Some(dir) = spec.strip_prefix("run:") {
        let (exp, learner, _) = crate::train::load_run(Path::new(dir), false)?;
        let trained = &exp.scenario;
        if (trained.n(), trained.m(), &trained.file.env.threshold_levels) != (scenario.n(), scenario.m(), levels) {
            return Err(user(format!(
                "--policy {spec}: the run was trained for {} agents, {} accelerators and levels {:?}; this scenario has {}, {} and {:?}",
                trained.n(),
                trained.m(),
                trained.file.env.threshold_levels,
                scenario.n(),
                scenario.m(),
                levels
            )));
        }
        let policy = std::sync::Mutex::new(learner.fork());
        return Ok(Box::new(move || {
            Box::new(crate::learner::Acting {
                policy: policy.lock().expect("not poisoned").fork(),
                greedy: true,
            }) as Box<dyn ActionSource>
        }));
    }
    if let Some(path) = spec.strip_prefix("agent:") {
        let manifest =
            crate::drive::check(Path::new(path), scenario.n(), scenario.m(), levels).map_err(|e| user(format!("--policy {spec}: {e}")))?;
        // A bare name is a file in the current directory (INTERFACE), never a `$PATH` lookup.
        let path = std::fs::canonicalize(path).map_err(|e| user(format!("--policy {spec}: {path}: {e}")))?;
        let timeout = crate::drive::reply_timeout().map_err(user)?;
        let (levels, errors) = (levels.clone(), agent_errors.clone());
        return Ok(Box::new(move || {
            Box::new(crate::drive::AgentProcesses::new(
                &path,
                manifest.clone(),
                &levels,
                errors.clone(),
                timeout,
            )) as Box<dyn ActionSource>
        }));
    }
    Err(user(format!(
        "--policy {spec}: expected fixed:TAU, hedge, run:RUN_DIR or agent:PATH"
    )))
}

#[derive(Serialize)]
struct SummaryFile<'a> {
    config: String,
    mechanism: &'a str,
    policy: &'a str,
    root_seed: u64,
    episode_seeds: &'a [u64],
    threads: usize,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// The `simulate` command.
pub fn run(args: SimulateArgs) -> anyhow::Result<ExitCode> {
    if args.seeds == 0 {
        return Err(user("--seeds must be at least 1"));
    }
    let scenario = load_scenario(&args.config, &args.set, args.mechanism.as_deref(), args.seed)?;
    let agent_errors = crate::drive::ErrorSlot::default();
    let make = policy_factory(&args.policy, &scenario, &agent_errors)?;
    let seeds = env::eval::episode_seeds(scenario.file.seed, args.seeds);
    let stem = args.config.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario");
    let (dir, _lock) = run_dir::create(args.out.as_deref(), &format!("simulate-{stem}"))?;
    run_dir::write_atomic(&dir.join("config.toml"), scenario.to_toml().as_bytes())?;

    let episodes = evaluate(&scenario, &seeds, make.as_ref(), true, args.threads);
    if let Some(e) = agent_errors.lock().expect("not poisoned").take() {
        return Err(user(format!("--policy {}: {e}", args.policy)));
    }
    let mut lines = String::new();
    for (seed, m) in seeds.iter().zip(&episodes) {
        let mut v = serde_json::to_value(m)?;
        v["seed"] = (*seed).into();
        lines.push_str(&serde_json::to_string(&v)?);
        lines.push('\n');
    }
    run_dir::write_atomic(&dir.join("metrics.jsonl"), lines.as_bytes())?;
    let summary = Summary::of(&scenario, &episodes);
    let file = SummaryFile {
        config: args.config.display().to_string(),
        mechanism: &scenario.file.mechanism.name,
        policy: &args.policy,
        root_seed: scenario.file.seed,
        episode_seeds: &seeds,
        threads: args.threads,
        summary: &summary,
    };
    let json = serde_json::to_string_pretty(&file)?;
    run_dir::write_atomic(&dir.join("summary.json"), json.as_bytes())?;

    if args.json {
        let mut v = serde_json::to_value(&file)?;
        v["run_dir"] = dir.display().to_string().into();
        println!("{}", serde_json::to_string(&v)?);
    } else {
        println!(
            "mtf simulate: {}, mechanism {}, policy {}, {} seeds",
            args.config.display(),
            scenario.file.mechanism.name,
            args.policy,
            args.seeds
        );
        print!("{}", table(&summary));
        println!("run directory: {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The metrics table: one row per figure, mean and 95% CI.
pub fn table(s: &Summary) -> String {
    let mut rows: Vec<(String, Stat)> = vec![
        ("welfare (jobs/round)".into(), s.welfare),
        ("throughput (jobs/round)".into(), s.throughput),
    ];
    for (w, st) in &s.throughput_by_weight {
        rows.push((format!("  per agent, weight {w}"), *st));
    }
    rows.extend([
        ("dropped (jobs/round)".to_string(), s.dropped),
        ("rejected (jobs/round)".into(), s.rejected),
        ("mean wait (rounds)".into(), s.mean_wait),
        ("backlog (jobs/agent)".into(), s.backlog),
        ("reward (per agent-round)".into(), s.reward),
        ("tokens spent (per round)".into(), s.tokens_spent),
        ("Jain's index".into(), s.jain),
    ]);
    for (name, st) in [
        ("phi min", s.phi_min),
        ("phi median", s.phi_median),
        ("SI violations (agents)", s.si_violations),
        ("EF violations (pairs)", s.ef_violations),
        ("Pareto (share of rounds)", s.pareto),
    ] {
        if let Some(st) = st {
            rows.push((name.into(), st));
        }
    }
    rows.push(("scheduling time (us/round)".into(), s.sched_us));
    let mut out = format!("{:<30} {:>12} {:>12}\n", "metric", "mean", "95% CI +-");
    for (name, st) in rows {
        out.push_str(&format!("{name:<30} {:>12.4} {:>12.4}\n", st.mean, st.ci95));
    }
    out
}

//! `mtf compare`: policies x mechanisms on the same seeds (so the same arrival sequences for
//! all), with the SPEC 5 figures as mean and 95% CI, written as markdown and CSV.

use crate::error::user;
use crate::run_dir;
use crate::simulate::{load_scenario, policy_factory};
use crate::table::{csv, markdown, Row};
use env::eval::episode_seeds;
use env::eval::{evaluate, Summary};
use std::path::PathBuf;
use std::process::ExitCode;

/// Options of `mtf compare`.
#[derive(Debug, Clone)]
pub struct CompareArgs {
    /// Scenario or experiment config.
    pub config: PathBuf,
    /// Policy specs (comma-separated on the command line).
    pub policies: Vec<String>,
    /// Mechanisms (default: the config's).
    pub mechanisms: Vec<String>,
    /// Episodes per pair.
    pub seeds: usize,
    /// Root seed override.
    pub seed: Option<u64>,
    /// Worker threads.
    pub threads: usize,
    /// `--set` overrides.
    pub set: Vec<String>,
    /// Run directory override.
    pub out: Option<PathBuf>,
    /// Print the rows (policy, mechanism, figures) as JSON instead of the markdown table.
    pub json: bool,
    /// No progress bars (compare draws none; accepted for one meaning everywhere).
    pub quiet: bool,
}

/// Expand `fixed:all` to every threshold level.
pub fn expand_policies(specs: &[String], levels: &[f64]) -> Vec<String> {
    specs
        .iter()
        .flat_map(|p| {
            if p == "fixed:all" {
                levels.iter().map(|l| format!("fixed:{l}")).collect()
            } else {
                vec![p.clone()]
            }
        })
        .collect()
}

/// Evaluate every policy x mechanism pair on the same seeds.
pub fn compare(args: &CompareArgs) -> anyhow::Result<(env::config::Scenario, Vec<Row>, Vec<u64>)> {
    if args.seeds == 0 {
        return Err(user("--seeds must be at least 1"));
    }
    let base = load_scenario(&args.config, &args.set, None, args.seed)?;
    let policies = expand_policies(&args.policies, &base.file.env.threshold_levels);
    if policies.is_empty() {
        return Err(user("--policies needs at least one policy"));
    }
    let mechanisms = if args.mechanisms.is_empty() {
        vec![base.file.mechanism.name.clone()]
    } else {
        args.mechanisms.clone()
    };
    let seeds = episode_seeds(base.file.seed, args.seeds);
    let mut rows = Vec::new();
    for mech in &mechanisms {
        let scenario = load_scenario(&args.config, &args.set, Some(mech), args.seed)?;
        for policy in &policies {
            let errors = crate::drive::ErrorSlot::default();
            let make = policy_factory(policy, &scenario, &errors)?;
            let episodes = evaluate(&scenario, &seeds, make.as_ref(), true, args.threads);
            if let Some(e) = errors.lock().expect("not poisoned").take() {
                return Err(user(format!("--policies {policy}: {e}")));
            }
            let weights = scenario.agents.iter().map(|a| a.weight).collect();
            rows.push(Row {
                policy: policy.clone(),
                mechanism: mech.clone(),
                summary: Summary::of(&scenario, &episodes),
                episodes,
                weights,
            });
        }
    }
    Ok((base, rows, seeds))
}

/// The `compare` command.
pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let (scenario, rows, seeds) = compare(&args)?;
    let stem = args.config.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario");
    let (dir, _lock) = run_dir::create(args.out.as_deref(), &format!("compare-{stem}"))?;
    run_dir::write_atomic(&dir.join("config.toml"), scenario.to_toml().as_bytes())?;
    let mut lines = String::new();
    for r in &rows {
        for (seed, e) in seeds.iter().zip(&r.episodes) {
            let mut v = serde_json::to_value(e)?;
            v["seed"] = (*seed).into();
            v["policy"] = r.policy.clone().into();
            v["mechanism"] = r.mechanism.clone().into();
            lines.push_str(&serde_json::to_string(&v)?);
            lines.push('\n');
        }
    }
    run_dir::write_atomic(&dir.join("metrics.jsonl"), lines.as_bytes())?;
    let md = markdown(&rows);
    let title = format!(
        "# Comparison: {} ({} seeds, same arrivals for every row)\n\n",
        args.config.display(),
        seeds.len()
    );
    run_dir::write_atomic(&dir.join("comparison.md"), (title + &md).as_bytes())?;
    run_dir::write_atomic(&dir.join("comparison.csv"), &csv(&rows)?)?;
    let plots = crate::plots::comparison(&dir, &rows)?;
    run_dir::write_atomic(
        &dir.join("summary.json"),
        serde_json::to_string_pretty(&serde_json::json!({ "seeds": seeds, "rows": rows, "plots": plots }))?.as_bytes(),
    )?;
    if args.json {
        let v = serde_json::json!({ "run_dir": dir.display().to_string(), "seeds": seeds, "rows": rows });
        println!("{v}");
    } else {
        print!("{md}");
        println!("run directory: {}", dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

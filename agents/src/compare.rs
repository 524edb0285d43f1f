//! `mtf compare`: policies x mechanisms on the same seeds (so the same arrival sequences for
//! all), with the SPEC 5 figures as mean and 95% CI, written as markdown and CSV.

use crate::error::user;
use crate::run_dir;
use crate::simulate::{episode_seeds, load_scenario, policy_factory};
use env::eval::{evaluate, Stat, Summary};
use env::metrics::EpisodeMetrics;
use serde::Serialize;
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

/// One evaluated pair.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Policy spec.
    pub policy: String,
    /// Mechanism name.
    pub mechanism: String,
    /// Its figures over seeds.
    pub summary: Summary,
    /// Per-seed episodes (for the distribution plots).
    #[serde(skip)]
    pub episodes: Vec<EpisodeMetrics>,
    /// The agents' weights.
    #[serde(skip)]
    pub weights: Vec<f64>,
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

fn fmt(s: &Stat) -> String {
    format!("{:.3} +- {:.3}", s.mean, s.ci95)
}

/// The markdown comparison table.
pub fn markdown(rows: &[Row]) -> String {
    let weights: Vec<f64> = rows
        .first()
        .map(|r| r.summary.throughput_by_weight.iter().map(|(w, _)| *w).collect())
        .unwrap_or_default();
    let mut head = vec!["policy".to_string(), "mechanism".into(), "welfare".into()];
    head.extend(weights.iter().map(|w| format!("thr w={w}")));
    head.extend(
        [
            "dropped/round",
            "phi min",
            "phi median",
            "EF violations",
            "Pareto",
            "Jain",
            "sched us",
        ]
        .map(String::from),
    );
    let mut out = format!("| {} |\n|{}\n", head.join(" | "), "---|".repeat(head.len()));
    for r in rows {
        let s = &r.summary;
        let opt = |x: &Option<Stat>| x.as_ref().map(fmt).unwrap_or_else(|| "-".into());
        let mut cells = vec![r.policy.clone(), r.mechanism.clone(), fmt(&s.welfare)];
        cells.extend(s.throughput_by_weight.iter().map(|(_, st)| fmt(st)));
        cells.extend([
            fmt(&s.dropped),
            opt(&s.phi_min),
            opt(&s.phi_median),
            opt(&s.ef_violations),
            opt(&s.pareto),
            fmt(&s.jain),
            fmt(&s.sched_us),
        ]);
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    out
}

/// The CSV: one row per pair, mean and ci95 columns per figure.
pub fn csv(rows: &[Row]) -> anyhow::Result<Vec<u8>> {
    let weights: Vec<f64> = rows
        .first()
        .map(|r| r.summary.throughput_by_weight.iter().map(|(w, _)| *w).collect())
        .unwrap_or_default();
    let mut cols = vec!["welfare".to_string()];
    cols.extend(weights.iter().map(|w| format!("throughput_w{w}")));
    cols.extend(["dropped", "phi_min", "phi_median", "ef_violations", "pareto", "jain", "sched_us"].map(String::from));
    let mut header = vec!["policy".to_string(), "mechanism".to_string()];
    for c in &cols {
        header.push(format!("{c}_mean"));
        header.push(format!("{c}_ci95"));
    }
    let records: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let s = &r.summary;
            let mut stats = vec![Some(s.welfare)];
            stats.extend(s.throughput_by_weight.iter().map(|(_, st)| Some(*st)));
            stats.extend([
                Some(s.dropped),
                s.phi_min,
                s.phi_median,
                s.ef_violations,
                s.pareto,
                Some(s.jain),
                Some(s.sched_us),
            ]);
            let mut rec = vec![r.policy.clone(), r.mechanism.clone()];
            for st in stats {
                rec.push(st.map(|x| x.mean.to_string()).unwrap_or_default());
                rec.push(st.map(|x| x.ci95.to_string()).unwrap_or_default());
            }
            rec
        })
        .collect();
    run_dir::csv_bytes(&header, &records)
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

//! `mtf curves`: training curves of several runs overlaid. Runs with the same config but their
//! seeds (a run group's replicates, or runs named one by one) form one series whose band is the
//! 95% CI over runs, the spread a paper reports; a series of one run shows the CI over the
//! episodes of each block. Each series' held-out level (greedy, from its `summary.json`) is a
//! marker at the right, and `--against` policies are dashed reference lines evaluated on the
//! held-out seeds.

use crate::error::user;
use crate::eval::policies::Named;
pub use crate::report::plots::{Reference, Series};
use crate::run::{self, RunDir};
use crate::train::EpisodeLog;
use env::eval::Stat;
use env::metrics::Metric;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What to draw.
#[derive(Debug, Clone)]
pub struct CurvesSpec {
    /// Run directories or run groups.
    pub runs: Vec<PathBuf>,
    /// The per-episode figure (default: the world's headline, welfare or surplus).
    pub metric: Option<String>,
    /// Policies drawn as reference lines, evaluated on the first run's held-out seeds.
    pub against: Vec<String>,
    /// Blocks each curve is averaged in.
    pub blocks: usize,
    /// Output directory (default runs/curves-<timestamp>).
    pub out: Option<PathBuf>,
    /// Worker threads for `against` (results do not depend on it).
    pub threads: usize,
}

/// What `mtf curves` made.
#[derive(Debug, Clone, Serialize)]
pub struct Curves {
    /// The figure drawn.
    pub metric: String,
    /// The series.
    pub series: Vec<Series>,
    /// The reference lines.
    pub references: Vec<Reference>,
    /// The output directory.
    pub dir: PathBuf,
    /// Files written.
    pub files: Vec<String>,
}

/// A run's config without what differs between its replicates (the seeds).
fn config_key(dir: &Path) -> crate::error::Result<String> {
    let text = run::read_text(&RunDir::at(dir).config(), run::MAX_TEXT)?;
    Ok(text
        .lines()
        .filter(|l| !(l.starts_with("seed =") || l.starts_with("replicate =")))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// Every per-episode value of `metric` in a run's log.
fn logged(dir: &Path, metric: Option<&str>) -> crate::error::Result<(Vec<f64>, bool)> {
    let path = RunDir::at(dir).metrics();
    let text = run::read_text(&path, 1 << 30)?;
    let mut values = Vec::new();
    let mut bids = false;
    for (k, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let log =
            EpisodeLog::from_json(line).map_err(|e| user(format!("{}: line {} is not an episode record: {e}", path.display(), k + 1)))?;
        bids = log.bids;
        values.push(match metric {
            None => log.headline(),
            Some(m) => log
                .get(m)
                .ok_or_else(|| user(format!("{}: line {} has no `{m}`", path.display(), k + 1)))?,
        });
    }
    if values.is_empty() {
        return Err(user(format!("{}: no episodes logged", path.display())));
    }
    Ok((values, bids))
}

/// The held-out greedy figure `key` of a run, from its summary.
fn held_out(dir: &Path, key: &str) -> Option<f64> {
    let text = run::read_text(&RunDir::at(dir).summary(), run::MAX_TEXT).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["eval"][key]["mean"].as_f64()
}

/// Episode ends and per-block values of `values` in up to `blocks` equal blocks.
fn blocks_of(values: &[f64], blocks: usize) -> Vec<(u64, Vec<f64>)> {
    let per = values.len().div_ceil(blocks.max(1)).max(1);
    values
        .chunks(per)
        .enumerate()
        .map(|(b, c)| ((b * per + c.len()) as u64, c.to_vec()))
        .collect()
}

/// Read the runs, group them by config, and evaluate the references.
pub fn curves(spec: &CurvesSpec) -> crate::error::Result<Curves> {
    if spec.runs.is_empty() {
        return Err(user("name at least one run directory or run group"));
    }
    if spec.blocks == 0 {
        return Err(user("--blocks must be at least 1"));
    }
    if let Some(m) = &spec.metric {
        let known = EpisodeLog::keys();
        if !known.contains(&m.as_str()) {
            return Err(user(format!(
                "--metric {m}: not a per-episode figure (one of {})",
                known.join(", ")
            )));
        }
    }
    // (config key, label, runs), in the order first named.
    let mut groups: Vec<(String, String, Vec<PathBuf>)> = Vec::new();
    for given in &spec.runs {
        let runs = if crate::train::group::is_group(given) {
            crate::train::group::replicates(given)
        } else if RunDir::at(given).metrics().is_file() {
            vec![given.clone()]
        } else {
            return Err(user(format!(
                "{}: not a run directory or run group (no metrics.jsonl)",
                given.display()
            )));
        };
        let name = given
            .file_name()
            .map_or_else(|| given.display().to_string(), |f| f.to_string_lossy().into_owned());
        for r in runs {
            let key = config_key(&r)?;
            match groups.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, label, members)) => {
                    if !label.split(" + ").any(|l| l == name) {
                        label.push_str(&format!(" + {name}"));
                    }
                    members.push(r);
                }
                None => groups.push((key, name.clone(), vec![r])),
            }
        }
    }
    let mut metric_key = spec.metric.clone();
    let mut series = Vec::new();
    for (_, label, runs) in &groups {
        let mut logs = Vec::new();
        for r in runs {
            let (values, bids) = logged(r, spec.metric.as_deref())?;
            if metric_key.is_none() {
                metric_key = Some(if bids { "surplus_per_bidder_item" } else { "welfare" }.into());
            }
            logs.push(values);
        }
        let shortest = logs.iter().map(Vec::len).min().unwrap_or(0);
        let points = if logs.len() == 1 {
            blocks_of(&logs[0], spec.blocks)
                .into_iter()
                .map(|(e, v)| (e, Stat::of(&v)))
                .collect()
        } else {
            // Each run's block mean, then the statistic over runs.
            let per_run: Vec<Vec<(u64, Vec<f64>)>> = logs.iter().map(|l| blocks_of(&l[..shortest], spec.blocks)).collect();
            (0..per_run[0].len())
                .map(|b| {
                    let means: Vec<f64> = per_run.iter().map(|r| r[b].1.iter().sum::<f64>() / r[b].1.len() as f64).collect();
                    (per_run[0][b].0, Stat::of(&means))
                })
                .collect()
        };
        let key = metric_key.clone().unwrap_or_default();
        let held: Option<Vec<f64>> = runs.iter().map(|r| held_out(r, &key)).collect();
        series.push(Series {
            label: if runs.len() > 1 {
                format!("{label} ({} runs)", runs.len())
            } else {
                label.clone()
            },
            runs: runs.iter().map(|r| r.display().to_string()).collect(),
            points,
            held_out: held.map(|h| Stat::of(&h)),
        });
    }
    let metric = metric_key.unwrap_or_else(|| "welfare".into());
    let figure = Metric::named(&metric).expect("a known figure");
    let mut references = Vec::new();
    if !spec.against.is_empty() {
        let first = &groups[0].2[0];
        let (exp, _, _) = crate::train::load_run(first, false)?;
        let seeds = env::eval::episode_seeds(exp.scenario.file.seed, exp.train.eval_seeds);
        for p in &spec.against {
            let eps = Named::parse(p, &exp.scenario)?.evaluate(&exp.scenario, &seeds, spec.threads)?;
            let xs: Vec<f64> = eps.iter().filter_map(|e| (figure.of)(e)).collect();
            references.push(Reference {
                policy: crate::eval::policies::canonical(p),
                level: Stat::of(&xs),
            });
        }
    }
    let dir = RunDir::create(spec.out.as_deref(), "curves")?;
    let mut csv = csv::Writer::from_writer(Vec::new());
    let io = |e: csv::Error| crate::error::failed(format!("writing curves.csv: {e}"));
    csv.write_record(["series", "kind", "episodes", "mean", "ci95", "n"]).map_err(io)?;
    let ci = |s: &Stat| if s.has_ci() { s.ci95.to_string() } else { String::new() };
    for s in &series {
        let n = if s.runs.len() > 1 { s.runs.len() } else { 0 };
        for (e, st) in &s.points {
            let n = if n > 0 { n.to_string() } else { "episodes".into() };
            csv.write_record([s.label.clone(), "training".into(), e.to_string(), st.mean.to_string(), ci(st), n])
                .map_err(io)?;
        }
        if let Some(h) = &s.held_out {
            let last = s.points.last().map_or(0, |p| p.0);
            csv.write_record([
                s.label.clone(),
                "held_out_greedy".into(),
                last.to_string(),
                h.mean.to_string(),
                ci(h),
                s.runs.len().to_string(),
            ])
            .map_err(io)?;
        }
    }
    for r in &references {
        csv.write_record([
            r.policy.clone(),
            "reference".into(),
            String::new(),
            r.level.mean.to_string(),
            ci(&r.level),
            String::new(),
        ])
        .map_err(io)?;
    }
    let bytes = csv
        .into_inner()
        .map_err(|e| crate::error::failed(format!("writing curves.csv: {e}")))?;
    run::write_atomic(&dir.file("curves.csv"), &bytes)?;
    let label = figure.label.unwrap_or(figure.key);
    let mut files = vec!["curves.csv".to_string()];
    files.extend(crate::report::plots::curves(
        dir.path(),
        "curves",
        &metric,
        label,
        &series,
        &references,
    )?);
    Ok(Curves {
        metric,
        series,
        references,
        dir: dir.path().to_path_buf(),
        files,
    })
}

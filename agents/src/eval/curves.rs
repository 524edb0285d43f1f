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

/// The held-out greedy figure `key` of a run, from its summary.
fn held_out(dir: &Path, key: &str) -> Option<f64> {
    let text = run::read_text(&RunDir::at(dir).summary(), run::MAX_TEXT).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v["eval"][key]["mean"].as_f64()
}

/// Episode ends and per-block values of `values` in up to `blocks` equal blocks (the last may
/// be shorter).
pub(crate) fn blocks_of(values: &[f64], blocks: usize) -> Vec<(u64, Vec<f64>)> {
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
    let groups = grouped(&spec.runs)?;
    // A run's config.toml must parse (one that did not was drawn anyway).
    let first = &groups[0].1[0];
    let table = env::config::read_table(&RunDir::at(first).config(), &[])?;
    if env::registry::stack_of_table(&table) == env::registry::Stack::Seam {
        return seam_curves(spec, &groups);
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
    let mut metric_key = spec.metric.clone();
    let mut series = Vec::new();
    for (label, runs) in &groups {
        let (s, bids) = series_of(label, runs, spec.metric.as_deref(), spec.blocks)?;
        metric_key.get_or_insert_with(|| if bids { "surplus_per_bidder_item" } else { "welfare" }.into());
        series.push(s);
    }
    let metric = metric_key.unwrap_or_else(|| "welfare".into());
    // The held-out figure each series' runs were scored on.
    for (s, (_, runs)) in series.iter_mut().zip(&groups) {
        let held: Option<Vec<f64>> = runs.iter().map(|r| held_out(r, &metric)).collect();
        s.held_out = held.map(|h| Stat::of(&h));
    }
    let figure = Metric::named(&metric).expect("a known figure");
    let references = references(&spec.against, &groups[0].1[0], figure, spec.threads)?;
    let dir = RunDir::create(spec.out.as_deref(), "curves")?;
    run::write_atomic(&dir.file("curves.csv"), &csv(&series, &references)?)?;
    let mut files = vec!["curves.csv".to_string()];
    files.extend(crate::report::plots::files(&crate::report::plots::curves(
        dir.path(),
        "curves",
        &metric,
        figure.label.unwrap_or(figure.key),
        &series,
        &references,
    )?));
    Ok(Curves {
        metric,
        series,
        references,
        dir: dir.path().to_path_buf(),
        files,
    })
}

/// Curves of runs in a world behind the seam: each generation's logged figure (`--metric`, or
/// the world's headline; `fitness` is logged too), the held-out level from `summary.json`.
fn seam_curves(spec: &CurvesSpec, groups: &[(String, Vec<PathBuf>)]) -> crate::error::Result<Curves> {
    let summary = |r: &Path| crate::train::log::read_json(&RunDir::at(r).summary()).ok();
    let first = &groups[0].1[0];
    let metric = match &spec.metric {
        Some(m) => m.clone(),
        None => summary(first)
            .and_then(|s| s["headline"].as_str().map(String::from))
            .unwrap_or_else(|| "fitness".into()),
    };
    // Before any output: a spec or figure the world does not know is refused first.
    let against = seam_references(&spec.against, first, &metric, spec.threads)?;
    let mut series = Vec::new();
    for (label, runs) in groups {
        let mut logs = Vec::new();
        for r in runs {
            let path = RunDir::at(r).metrics();
            let text = run::read_text(&path, run::MAX_TEXT)?;
            let values: Vec<f64> = text
                .lines()
                .filter(|l| !l.trim().is_empty())
                .enumerate()
                .map(|(k, l)| {
                    serde_json::from_str::<serde_json::Value>(l)
                        .ok()
                        .and_then(|v| v[&metric].as_f64())
                        .ok_or_else(|| user(format!("{}: line {} has no `{metric}`", path.display(), k + 1)))
                })
                .collect::<crate::error::Result<_>>()?;
            if values.is_empty() {
                return Err(user(format!("{}: no generations logged", path.display())));
            }
            logs.push(values);
        }
        let points = points_of(&logs, spec.blocks);
        let held: Option<Vec<f64>> = runs
            .iter()
            .map(|r| summary(r).and_then(|s| s["eval"][&metric]["mean"].as_f64()))
            .collect();
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
    // The first run's own references on its held-out seeds (every replicate of a group is
    // scored on the same ones): the best fixed level, every agent at its own rule, uniform
    // play, the selfish equilibrium.
    let references: Vec<Reference> = summary(first)
        .map(|s| {
            let refs = &s["references"];
            ["best_fixed", "own", "uniform", "selfish"]
                .iter()
                .filter_map(|k| {
                    let level = refs[k]["eval"][&metric]["mean"].as_f64()?;
                    let policy = match (*k, refs[k]["level"].as_f64()) {
                        ("best_fixed", Some(x)) => format!("best fixed level {x}"),
                        ("selfish", _) => format!("selfish equilibrium {}", refs[k]["spec"].as_str().unwrap_or("?")),
                        (k, _) => k.replace('_', " "),
                    };
                    Some(crate::report::plots::Reference {
                        policy,
                        level: Stat::of(&[level]),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    // A policy named again with --against is drawn once, as evaluated (with its CI): uniform
    // play, the world's own rule (`own` or `fixed:own`), the best fixed level as `fixed:X`.
    let same = |summary: &str, a: &str| {
        let a = a.strip_prefix("fixed:").filter(|x| x.parse::<f64>().is_err()).unwrap_or(a);
        summary == a
            || summary.strip_prefix("best fixed level ").is_some_and(|x| a == format!("fixed:{x}"))
            || summary.strip_prefix("selfish equilibrium ") == Some(a)
    };
    let mut references: Vec<Reference> = references
        .into_iter()
        .filter(|r| !against.iter().any(|a| same(&r.policy, &a.policy)))
        .collect();
    references.extend(against);
    drawn(spec, metric, series, references)
}

/// The `against` policies' levels of figure `metric` on the held-out seeds of the seam run in
/// `first` (the seeds its summary was scored on: its root seed, `train.eval_seeds`), a line
/// per row a spec plays (`fixed:all`: every level).
fn seam_references(against: &[String], first: &Path, metric: &str, threads: usize) -> crate::error::Result<Vec<Reference>> {
    if against.is_empty() {
        return Ok(Vec::new());
    }
    let exp = crate::worlds::train::SeamExperiment::load(&RunDir::at(first).config(), &[])?;
    let w = exp.world.as_ref();
    let Some(k) = w.metrics().iter().position(|m| m.key == metric) else {
        return Err(user(format!(
            "--against: `{metric}` is not a figure of this world's episodes (one of {}), so no policy's level of it can be drawn",
            w.metrics().iter().map(|m| m.key).collect::<Vec<_>>().join(", ")
        )));
    };
    let seeds = env::eval::episode_seeds(exp.root(), exp.train.eval_seeds);
    let mut out = Vec::new();
    for spec in against {
        for (policy, p) in crate::worlds::policies::parse(spec, w)? {
            let played = crate::worlds::evaluate(w, p.as_ref(), &seeds, threads);
            if let Some(e) = p.failure() {
                return Err(crate::error::policy(&policy, e));
            }
            let xs: Vec<f64> = played.iter().map(|e| e.figures[k]).filter(|x| x.is_finite()).collect();
            out.push(Reference {
                policy,
                level: Stat::of(&xs),
            });
        }
    }
    Ok(out)
}

/// `curves.csv` and the figure of `series` and `references` in a new output directory.
fn drawn(spec: &CurvesSpec, metric: String, series: Vec<Series>, references: Vec<Reference>) -> crate::error::Result<Curves> {
    let dir = RunDir::create(spec.out.as_deref(), "curves")?;
    run::write_atomic(&dir.file("curves.csv"), &csv(&series, &references)?)?;
    let mut files = vec!["curves.csv".to_string()];
    files.extend(crate::report::plots::files(&crate::report::plots::curves(
        dir.path(),
        "curves",
        &metric,
        &metric,
        &series,
        &references,
    )?));
    Ok(Curves {
        metric,
        series,
        references,
        dir: dir.path().to_path_buf(),
        files,
    })
}

/// A series' points from its runs' logs (cut to the shortest), in up to `blocks` blocks: the
/// 95% CI over runs with two or more, else over each block's values.
fn points_of(logs: &[Vec<f64>], blocks: usize) -> Vec<(u64, Stat)> {
    let shortest = logs.iter().map(Vec::len).min().unwrap_or(0);
    let per_run: Vec<Vec<(u64, Vec<f64>)>> = logs.iter().map(|l| blocks_of(&l[..shortest], blocks)).collect();
    (0..per_run[0].len())
        .map(|b| {
            let stat = if logs.len() == 1 {
                Stat::of(&per_run[0][b].1)
            } else {
                Stat::of(
                    &per_run
                        .iter()
                        .map(|r| r[b].1.iter().sum::<f64>() / r[b].1.len() as f64)
                        .collect::<Vec<f64>>(),
                )
            };
            (per_run[0][b].0, stat)
        })
        .collect()
}

/// The runs `given` names (run groups expanded to their replicates), grouped by their config
/// without the seeds: (label, runs), in the order first named.
fn grouped(given: &[PathBuf]) -> crate::error::Result<Vec<(String, Vec<PathBuf>)>> {
    let mut groups: Vec<(String, String, Vec<PathBuf>)> = Vec::new();
    for path in given {
        let runs = if crate::train::group::is_group(path) {
            crate::train::group::replicates(path)?
        } else if RunDir::at(path).metrics().is_file() {
            vec![path.clone()]
        } else {
            crate::train::queue_world_run(path)?;
            return Err(user(format!(
                "{}: not a run directory or run group (no metrics.jsonl)",
                path.display()
            )));
        };
        let name = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned());
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
    Ok(groups.into_iter().map(|(_, label, runs)| (label, runs)).collect())
}

/// One series' training curve from its runs' logs (`metric`, or each world's headline), and
/// whether they are the valuation world's (bids). Its held-out level is filled by the caller.
fn series_of(label: &str, runs: &[PathBuf], metric: Option<&str>, blocks: usize) -> crate::error::Result<(Series, bool)> {
    let mut logs = Vec::new();
    let mut bids = false;
    for r in runs {
        let (values, b) = crate::train::logged_figure(r, metric)?;
        if values.is_empty() {
            return Err(user(format!("{}: no episodes logged", RunDir::at(r).metrics().display())));
        }
        bids = b;
        logs.push(values);
    }
    let shortest = logs.iter().map(Vec::len).min().unwrap_or(0);
    let points = if logs.len() == 1 {
        blocks_of(&logs[0], blocks).into_iter().map(|(e, v)| (e, Stat::of(&v))).collect()
    } else {
        // Each run's block mean, then the statistic over runs.
        let per_run: Vec<Vec<(u64, Vec<f64>)>> = logs.iter().map(|l| blocks_of(&l[..shortest], blocks)).collect();
        (0..per_run[0].len())
            .map(|b| {
                let means: Vec<f64> = per_run.iter().map(|r| r[b].1.iter().sum::<f64>() / r[b].1.len() as f64).collect();
                (per_run[0][b].0, Stat::of(&means))
            })
            .collect()
    };
    let series = Series {
        label: if runs.len() > 1 {
            format!("{label} ({} runs)", runs.len())
        } else {
            label.to_string()
        },
        runs: runs.iter().map(|r| r.display().to_string()).collect(),
        points,
        held_out: None,
    };
    Ok((series, bids))
}

/// The `against` policies' levels of `figure` on the held-out seeds of the run in `first`.
fn references(against: &[String], first: &Path, figure: &Metric, threads: usize) -> crate::error::Result<Vec<Reference>> {
    if against.is_empty() {
        return Ok(Vec::new());
    }
    let (exp, _, _) = crate::train::load_run(first, false)?;
    let seeds = env::eval::episode_seeds(exp.scenario.file.seed, exp.train.eval_seeds);
    against
        .iter()
        .map(|p| {
            let eps = Named::parse(p, &exp.scenario)?.evaluate(&exp.scenario, &seeds, threads)?;
            let xs: Vec<f64> = eps.iter().filter_map(|e| (figure.of)(e)).collect();
            Ok(Reference {
                policy: crate::eval::policies::canonical(p),
                level: Stat::of(&xs),
            })
        })
        .collect()
}

/// `curves.csv`: every series' training points and held-out level, then the references.
fn csv(series: &[Series], references: &[Reference]) -> crate::error::Result<Vec<u8>> {
    let ci = |s: &Stat| if s.has_ci() { s.ci95.to_string() } else { String::new() };
    let mut records = Vec::new();
    for s in series {
        let n = if s.runs.len() > 1 {
            s.runs.len().to_string()
        } else {
            "episodes".into()
        };
        for (e, st) in &s.points {
            records.push(vec![
                s.label.clone(),
                "training".into(),
                e.to_string(),
                st.mean.to_string(),
                ci(st),
                n.clone(),
            ]);
        }
        if let Some(h) = &s.held_out {
            let last = s.points.last().map_or(0, |p| p.0);
            records.push(vec![
                s.label.clone(),
                "held_out_greedy".into(),
                last.to_string(),
                h.mean.to_string(),
                ci(h),
                s.runs.len().to_string(),
            ]);
        }
    }
    for r in references {
        records.push(vec![
            r.policy.clone(),
            "reference".into(),
            String::new(),
            r.level.mean.to_string(),
            ci(&r.level),
            String::new(),
        ]);
    }
    let header = ["series", "kind", "episodes", "mean", "ci95", "n"].map(String::from);
    run::csv_bytes(&header, &records)
}

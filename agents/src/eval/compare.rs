//! `mtf compare`: policies x mechanisms on the same seeds (so the same arrival sequences for
//! all), with the SPEC 5 figures as mean and 95% CI, written as markdown and CSV.

use crate::config::Source;
use crate::error::user;
use crate::eval::policies::Named;
pub use crate::report::groups::GroupRow;
use crate::report::groups::{groups_markdown_of, read_labels, Label};
use crate::report::stats::Replicates;
use crate::report::table::{csv, markdown, Row};
use crate::run;
use env::config::Scenario;
use env::eval::{episode_seeds, Summary};
use std::path::PathBuf;

/// What to compare.
#[derive(Debug, Clone)]
pub struct CompareSpec {
    /// The scenario's source.
    pub source: Source,
    /// Policy specs ([`crate::eval::policies`]; `fixed:all` expands to every level).
    pub policies: Vec<String>,
    /// Mechanisms (empty: the config's).
    pub mechanisms: Vec<String>,
    /// Episodes per pair (the same seeds for every pair).
    pub seeds: usize,
    /// Worker threads (results do not depend on it).
    pub threads: usize,
    /// The row every row is paired against, `POLICY/MECHANISM` (default: the best fixed level
    /// under the first mechanism).
    pub baseline: Option<String>,
    /// `NAME=SPEC`: the rows of policy SPEC are named NAME in tables and figures.
    pub labels: Vec<String>,
}

/// Every policy x mechanism pair, evaluated on the same seeds.
#[derive(Debug, Clone)]
pub struct Compared {
    /// The scenario with the config's own mechanism.
    pub scenario: Scenario,
    /// One row per pair, mechanisms outermost.
    pub rows: Vec<Row>,
    /// The run groups compared: their replicates against the baseline row, greedy and sampled,
    /// per mechanism.
    pub groups: Vec<GroupRow>,
    /// The episodes' seeds.
    pub seeds: Vec<u64>,
}

/// Evaluate every policy x mechanism pair on the same seeds (so on the same arrivals).
pub fn compare(spec: &CompareSpec) -> crate::error::Result<Compared> {
    if spec.seeds == 0 {
        return Err(user("--seeds must be at least 1"));
    }
    let base = spec.source.load(None)?;
    if spec.policies.is_empty() {
        return Err(user("--policies needs at least one policy"));
    }
    // The labels' own form before anything is played (which rows they name is checked once
    // the rows are made, in `name_rows`; before 2026-12-02 a malformed label was refused only
    // after every row had been evaluated).
    let labels = read_labels(&spec.labels, crate::eval::policies::canonical)?;
    let mechanisms = if spec.mechanisms.is_empty() {
        vec![base.file.mechanism.name.clone()]
    } else {
        spec.mechanisms.clone()
    };
    let seeds = episode_seeds(base.file.seed, spec.seeds);
    let mut rows = Vec::new();
    for mech in &mechanisms {
        let scenario = spec.source.load(Some(mech))?;
        crate::train::memory::check(&crate::train::memory::evaluation(&scenario, spec.threads), "this comparison")?;
        // A mechanism that ignores the agents' actions gives every policy the same episodes:
        // one row stands for them all (played as the first level; no policy is built).
        if !scheduler::registry::reads_actions(mech) {
            // Every policy must still be one (a missing run is an error here too).
            for policy in &crate::eval::policies::expand(&spec.policies, scenario.action_levels())? {
                Named::parse(policy, &scenario)?;
            }
            let played = format!("fixed:{}", scenario.action_levels()[0]);
            let episodes = Named::parse(&played, &scenario)?.evaluate(&scenario, &seeds, spec.threads)?;
            rows.push(Row {
                policy: crate::report::table::ANY_POLICY.into(),
                spec: None,
                mechanism: mech.clone(),
                summary: Summary::of(&scenario, &episodes),
                weights: scenario.agents.iter().map(|a| a.weight).collect(),
                episodes,
                paired: None,
            });
            continue;
        }
        // `fixed:all` is every level of this mechanism's action: thresholds, or bid factors.
        for policy in &crate::eval::policies::expand(&spec.policies, scenario.action_levels())? {
            let episodes = Named::parse(policy, &scenario)?.evaluate(&scenario, &seeds, spec.threads)?;
            rows.push(Row {
                policy: policy.clone(),
                spec: None,
                mechanism: mech.clone(),
                summary: Summary::of(&scenario, &episodes),
                weights: scenario.agents.iter().map(|a| a.weight).collect(),
                episodes,
                paired: None,
            });
        }
    }
    let baseline = match &spec.baseline {
        None => crate::report::table::default_baseline(&rows),
        Some(given) => {
            let b = unlabelled(given, &labels);
            let want = canonical_label(&b);
            rows.iter().position(|r| r.label() == want || blind_row(r, &b)).ok_or_else(|| {
                let known: Vec<String> = rows.iter().map(Row::label).collect();
                user(format!("--baseline {given}: no such row (rows: {})", known.join(", ")))
            })?
        }
    };
    crate::report::table::pair(&mut rows, baseline);
    let mut groups = group_rows(&spec.policies, &mechanisms, &rows, base.file.seed);
    let own = rows[baseline].label();
    name_rows(&mut rows, &mut groups, labels)?;
    // The baseline as the rows now read: a renamed baseline row by its name (it kept its
    // spec there before 2026-12-02, and its own row showed +0.000 where `baseline` belongs).
    let named = rows[baseline].label();
    for p in rows.iter_mut().filter_map(|r| r.paired.as_mut()) {
        p.baseline.clone_from(&named);
    }
    for g in groups.iter_mut().filter(|g| g.baseline == own) {
        g.baseline.clone_from(&named);
    }
    Ok(Compared {
        scenario: base,
        rows,
        groups,
        seeds,
    })
}

/// `POLICY/MECHANISM` with the policy spelled as rows label it (`fixed:0` is `fixed:0.0`).
/// `--baseline NAME/MECHANISM` where a `--label` gave NAME: the row of its spec (rows are
/// renamed after the baseline is paired), as the seam's comparison takes it.
fn unlabelled(baseline: &str, labels: &[Label<'_>]) -> String {
    let (p, m) = baseline.rsplit_once('/').map_or((baseline, None), |(p, m)| (p, Some(m)));
    match labels.iter().find(|l| l.name == p.trim()) {
        Some(l) => m.map_or_else(|| l.want.clone(), |m| format!("{}/{m}", l.want)),
        None => baseline.to_string(),
    }
}

fn canonical_label(label: &str) -> String {
    match label.rsplit_once('/') {
        Some((p, m)) if p.starts_with("fixed:") => format!("{}/{m}", crate::eval::policies::canonical(p)),
        _ => label.to_string(),
    }
}

/// Whether `label` (`POLICY/MECHANISM`) names `row` as the one row of a mechanism that ignores
/// the agents' actions (every policy's row under it is that row).
fn blind_row(row: &Row, label: &str) -> bool {
    row.policy == crate::report::table::ANY_POLICY && label.rsplit_once('/').is_some_and(|(_, m)| m == row.mechanism)
}

/// Every run group named in `policies` (greedy and sampled) under every mechanism, from its
/// replicates' paired rows.
fn group_rows(policies: &[String], mechanisms: &[String], rows: &[Row], root: u64) -> Vec<GroupRow> {
    let mut out = Vec::new();
    let mut specs: Vec<String> = Vec::new();
    for p in policies {
        let dir = p.strip_prefix("sampled:run:").or_else(|| p.strip_prefix("run:"));
        if let Some(dir) = dir.filter(|d| crate::train::group::is_group(std::path::Path::new(d))) {
            for s in [format!("run:{dir}"), format!("sampled:run:{dir}")] {
                if !specs.contains(&s) {
                    specs.push(s);
                }
            }
        }
    }
    for mech in mechanisms {
        for spec in &specs {
            // Every group was read (and checked) when the rows were made.
            let members = crate::eval::policies::group_members(spec).ok().flatten().unwrap_or_default();
            let scores: Vec<f64> = rows
                .iter()
                .filter(|r| &r.mechanism == mech && members.contains(&r.policy))
                .filter_map(|r| r.paired.as_ref().map(|p| p.welfare_diff.mean))
                .collect();
            let Some(baseline) = rows.iter().find_map(|r| r.paired.as_ref().map(|p| p.baseline.clone())) else {
                continue;
            };
            if scores.is_empty() {
                continue;
            }
            out.push(GroupRow {
                policy: spec.clone(),
                spec: None,
                mechanism: mech.clone(),
                baseline,
                vs_baseline: Replicates::of(&scores, env::rng::stream_seed(root, "replicates-bootstrap", 0)),
            });
        }
    }
    out
}

/// With run groups: the paired figure with each group as one row (its replicates' mean
/// difference to the baseline and the 95% CI over replicates, Student's t) beside the rows of
/// no group; nothing without groups.
fn groups_figure(dir: &std::path::Path, c: &Compared) -> crate::error::Result<Vec<crate::report::plots::Figure>> {
    let Some(first) = c.groups.first() else { return Ok(Vec::new()) };
    let members: Vec<String> = c
        .groups
        .iter()
        .flat_map(|g| {
            crate::eval::policies::group_members(g.spec.as_ref().unwrap_or(&g.policy))
                .ok()
                .flatten()
                .unwrap_or_default()
        })
        .collect();
    // Significant differences red, the others grey, as in the per-replicate figure.
    let colour = |s: &env::eval::Stat| {
        if s.has_ci() && (s.mean - s.bar() > 0.0 || s.mean + s.bar() < 0.0) {
            3
        } else {
            7
        }
    };
    // The mechanism in a row's name only where the comparison has several.
    let several = c.rows.iter().any(|r| r.mechanism != c.rows[0].mechanism);
    let name = |policy: &str, mechanism: &str| {
        if several {
            format!("{policy}/{mechanism}")
        } else {
            policy.to_string()
        }
    };
    let mut names = Vec::new();
    let mut stats = Vec::new();
    for r in c.rows.iter().filter(|r| !members.contains(r.spec.as_ref().unwrap_or(&r.policy))) {
        if let Some(p) = &r.paired {
            names.push(name(&r.policy, &r.mechanism));
            stats.push((p.welfare_diff, colour(&p.welfare_diff)));
        }
    }
    for g in &c.groups {
        let s = env::eval::Stat::of(&g.vs_baseline.scores);
        names.push(name(
            &format!("{} ({} replicates)", g.policy, g.vs_baseline.scores.len()),
            &g.mechanism,
        ));
        stats.push((s, colour(&s)));
    }
    crate::report::plots::per_row_values(
        dir,
        "welfare_paired_groups",
        &names,
        &format!("Welfare minus {}'s, paired over seeds, each run group as one row", first.baseline),
        "welfare difference (jobs per round)",
        &stats,
        &[("95% CI excludes 0", 3), ("95% CI includes 0", 7)],
        "Rows of no group: mean paired difference and its 95% CI over seeds; a group: the mean of its replicates' scores (each a mean paired difference over the seeds) and the 95% CI over replicates (Student's t)",
    )
}

/// The across-replicates table of a comparison's run groups (markdown), empty without groups.
pub fn groups_markdown(groups: &[GroupRow]) -> String {
    let Some(first) = groups.first() else { return String::new() };
    groups_markdown_of(
        groups,
        &format!(
            "its welfare minus the baseline's ({}), seed by seed on the same seeds, averaged over the seeds (jobs per round)",
            first.baseline
        ),
    )
}

/// [`env::eval::trace_note`] as a paragraph, or nothing.
pub fn trace_note(c: &Compared) -> String {
    env::eval::trace_note(&c.scenario, c.seeds.len()).map_or_else(String::new, |n| format!("\n{n}\n"))
}

/// Name the rows of each `NAME=SPEC` (after pairing and grouping, which read the specs): tables
/// and figures show NAME (a run's directory made labels with timestamps), the JSON both. A run
/// group's NAME names its row across replicates and, as `NAME, replicate K`, its replicates'
/// rows; `run:GROUP`'s name reaches its sampled rows as `NAME (sampled)` unless
/// `sampled:run:GROUP` has a label of its own.
fn name_rows(rows: &mut [Row], groups: &mut [GroupRow], named: Vec<Label<'_>>) -> crate::error::Result<()> {
    for Label { raw: l, name, want, .. } in &named {
        if rows.iter().any(|r| r.policy == *name && r.policy != *want) {
            return Err(user(format!("--label {l}: `{name}` is another row's policy")));
        }
    }
    let named: Vec<(&str, &str, &str, String)> = named.into_iter().map(|l| (l.raw, l.name, l.spec, l.want)).collect();
    // A greedy group's name for its sampled twin, where that has none of its own.
    let mut names: Vec<(Option<&str>, String, String)> = named
        .iter()
        .map(|(l, name, spec, _)| (Some(*l), name.to_string(), spec.to_string()))
        .collect();
    for (_, name, spec, _) in &named {
        let twin = format!("sampled:{spec}");
        let labelled = named.iter().any(|(_, _, s, w)| *s == twin || *w == twin);
        if spec.starts_with("run:") && !labelled && groups.iter().any(|g| g.policy == twin) {
            names.push((None, format!("{name} (sampled)"), twin));
        }
    }
    for (l, name, spec) in names {
        let want = crate::eval::policies::canonical(&spec);
        let mut hit = false;
        let mut rename = |policy: &mut String, spec: &mut Option<String>, to: String| {
            *spec = Some(std::mem::replace(policy, to));
            hit = true;
        };
        for r in rows.iter_mut().filter(|r| r.policy == want || r.policy == spec) {
            rename(&mut r.policy, &mut r.spec, name.clone());
        }
        for g in groups.iter_mut().filter(|g| g.policy == want || g.policy == spec) {
            let members = crate::eval::policies::group_members(&g.policy).ok().flatten().unwrap_or_default();
            for r in rows.iter_mut() {
                if let Some(k) = members.iter().position(|m| *m == r.policy) {
                    let replicate = members[k].rsplit_once("replicate-").map_or(k.to_string(), |(_, k)| k.to_string());
                    rename(&mut r.policy, &mut r.spec, format!("{name}, replicate {replicate}"));
                }
            }
            rename(&mut g.policy, &mut g.spec, name.clone());
        }
        if let (false, Some(l)) = (hit, l) {
            return Err(user(format!("--label {l}: no row has the policy `{spec}`")));
        }
    }
    Ok(())
}

/// Write a comparison's run directory: `config.toml`, `metrics.jsonl` (one line per pair and
/// seed), `comparison.md`, `comparison.csv`, the plots, `summary.json`. Returns the directory.
pub fn write(c: &Compared, source: &Source, out: Option<&std::path::Path>) -> crate::error::Result<PathBuf> {
    let dir = run::RunDir::create(out, &format!("compare-{}", source.stem()))?;
    run::write_atomic(&dir.config(), c.scenario.to_toml().as_bytes())?;
    let mut lines = Vec::new();
    for r in &c.rows {
        lines.extend(crate::eval::simulate::jsonl(&c.seeds, &r.episodes, |v| {
            v["policy"] = r.policy.clone().into();
            v["mechanism"] = r.mechanism.clone().into();
        })?);
    }
    run::write_atomic(&dir.metrics(), &lines)?;
    let title = format!(
        "# Comparison: {} ({} seeds, same arrivals for every row)\n\n",
        source.config.display(),
        c.seeds.len()
    );
    let mut plots = crate::report::plots::comparison(dir.path(), &c.rows)?;
    plots.extend(groups_figure(dir.path(), c)?);
    let mut md = title + &markdown(&c.rows) + &trace_note(c) + &groups_markdown(&c.groups) + "\n## Figures\n\n";
    md.push_str(&crate::report::plots::markdown_list(&plots));
    run::write_atomic(&dir.file("comparison.md"), md.as_bytes())?;
    run::write_atomic(&dir.file("comparison.csv"), &csv(&c.rows)?)?;
    run::write_atomic(
        &dir.summary(),
        serde_json::to_string_pretty(
            &serde_json::json!({ "seeds": c.seeds, "rows": c.rows, "groups": c.groups, "plots": crate::report::plots::files(&plots) }),
        )?
        .as_bytes(),
    )?;
    Ok(dir.path().to_path_buf())
}

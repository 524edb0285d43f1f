//! `mtf scan`: a world's figures against one config key (Gavel's arrival rate, a cluster's
//! size), one line per policy and mechanism, on the same seeds at every value; where each
//! line's headline blows up.

use super::policies;
use super::{evaluate, summarise};
use crate::report::markdown::Table;
use crate::run::{self, RunDir};
use env::eval::{episode_seeds, Stat};
use serde_json::json;
use std::path::PathBuf;

/// What to scan.
#[derive(Clone, Debug, Default)]
pub struct ScanSpec {
    /// The config.
    pub config: PathBuf,
    /// `--set` overrides (every value gets them).
    pub set: Vec<String>,
    /// The key scanned (`env.generate.rate`).
    pub key: String,
    /// Its values.
    pub values: Vec<f64>,
    /// Mechanisms (empty: the config's).
    pub mechanisms: Vec<String>,
    /// Policy specs for the mechanisms that read actions (default `fixed:0.5`).
    pub policies: Vec<String>,
    /// Episodes per value.
    pub seeds: usize,
    /// Worker threads.
    pub threads: usize,
    /// The factor over the first value's headline that counts as blowing up.
    pub blowup: f64,
    /// Run directory.
    pub out: Option<PathBuf>,
}

/// One line of the scan.
#[derive(Clone, Debug)]
pub struct Line {
    /// `policy/mechanism`.
    pub label: String,
    /// The headline at every value.
    pub headline: Vec<Stat>,
    /// The first value at which the headline blew up, if any.
    pub blowup: Option<f64>,
}

/// A scan's result.
#[derive(Clone, Debug)]
pub struct Scanned {
    /// Its lines.
    pub lines: Vec<Line>,
    /// The key and its values.
    pub key: String,
    /// The values.
    pub values: Vec<f64>,
    /// The headline's label.
    pub headline: String,
    /// The run directory.
    pub dir: PathBuf,
}

/// Scan, and write `scan.md`, `scan.csv`, `summary.json` and the figure (`scan.png`, `.svg`).
pub fn scan(spec: &ScanSpec) -> crate::error::Result<Scanned> {
    if spec.values.is_empty() {
        return Err(crate::error::user("--values: give at least one value"));
    }
    let at = |v: f64| -> Vec<String> {
        let mut s = spec.set.clone();
        s.push(format!("{}={v}", spec.key));
        s
    };
    let first = super::load(&spec.config, &at(spec.values[0]), None, None)?;
    let head = first.headline();
    let metric = first.metrics()[head];
    let mechanisms: Vec<String> = if spec.mechanisms.is_empty() {
        vec![first.mechanism().unwrap_or_else(|| "-".into())]
    } else {
        spec.mechanisms.clone()
    };
    let specs = if spec.policies.is_empty() {
        vec!["fixed:0.5".to_string()]
    } else {
        policies::split(&spec.policies)
    };
    let mut named = Vec::new();
    for s in &specs {
        named.extend(policies::parse(s, first.as_ref())?);
    }
    let varies = super::plays_every_seed(first.as_ref(), named.iter().map(|(_, p)| p.as_ref()));
    let seeds = episode_seeds(super::root_seed(first.as_ref()), if varies { spec.seeds } else { 1 });
    let mut lines: Vec<Line> = Vec::new();
    for m in &mechanisms {
        let mech = (m != "-").then_some((first.as_ref(), m.as_str()));
        for (k, &v) in spec.values.iter().enumerate() {
            let world = super::load(&spec.config, &at(v), None, mech)?;
            let mut named = Vec::new();
            for s in &specs {
                named.extend(policies::parse(s, world.as_ref())?);
            }
            if !world.reads_actions() {
                named.truncate(1);
                named[0].0 = "any".into();
            }
            for (label, policy) in named {
                let label = format!("{label}/{m}");
                let played = evaluate(world.as_ref(), policy.as_ref(), &seeds, spec.threads);
                if let Some(e) = policy.failure() {
                    return Err(crate::error::policy(&label, e));
                }
                let stat = summarise(&played, world.metrics())[head];
                match lines.iter_mut().find(|l| l.label == label) {
                    Some(l) => l.headline.push(stat),
                    None if k == 0 => lines.push(Line {
                        label,
                        headline: vec![stat],
                        blowup: None,
                    }),
                    None => return Err(crate::error::user(format!("{label}: a policy that exists at some values only"))),
                }
            }
        }
    }
    let better = super::sign(metric.better);
    for l in &mut lines {
        let base = l.headline[0].mean;
        l.blowup = spec
            .values
            .iter()
            .zip(&l.headline)
            .find(|(_, s)| {
                !s.mean.is_finite() || (better < 0.0 && s.mean > spec.blowup * base) || (better > 0.0 && s.mean * spec.blowup < base)
            })
            .map(|(v, _)| *v);
    }
    let dir = RunDir::create(spec.out.as_deref(), &format!("scan-{}", run::stem(&spec.config)))?;
    let scanned = Scanned {
        lines,
        key: spec.key.clone(),
        values: spec.values.clone(),
        headline: metric.label.to_string(),
        dir: dir.path().to_path_buf(),
    };
    run::write_atomic(&dir.file("scan.md"), scanned.markdown(spec.blowup).as_bytes())?;
    run::write_atomic(&dir.file("scan.csv"), &scanned.csv()?)?;
    let summary = json!({
        "key": scanned.key, "values": scanned.values, "headline": metric.key, "seeds": seeds.len(),
        "lines": scanned.lines.iter().map(|l| json!({"label": l.label, "blowup": l.blowup,
            "mean": l.headline.iter().map(|s| s.mean).collect::<Vec<f64>>(),
            "ci95": l.headline.iter().map(|s| s.ci95).collect::<Vec<f64>>()})).collect::<Vec<_>>(),
    });
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let series: Vec<(String, Vec<Stat>)> = scanned.lines.iter().map(|l| (l.label.clone(), l.headline.clone())).collect();
    crate::report::plots::lines(dir.path(), "scan", "", &spec.key, metric.label, &scanned.values, false, &series)?;
    Ok(scanned)
}

impl Scanned {
    /// The table: a row per value, a column per line, and where each line blew up.
    pub fn markdown(&self, factor: f64) -> String {
        let mut head = vec![self.key.clone()];
        head.extend(self.lines.iter().map(|l| l.label.clone()));
        let mut t = Table::new(head).numbers_from(1);
        for (k, v) in self.values.iter().enumerate() {
            let mut cells = vec![format!("{v}")];
            cells.extend(self.lines.iter().map(|l| l.headline[k].pm(2).replace("+-", "±")));
            t.row(cells);
        }
        let blow: Vec<String> = self
            .lines
            .iter()
            .map(|l| match l.blowup {
                Some(v) => format!("{}: {v}", l.label),
                None => format!("{}: not within the values", l.label),
            })
            .collect();
        format!(
            "{t}\n{}; where it blows up (first value above {factor}x its value at {}): {}.\n",
            self.headline,
            self.values[0],
            blow.join("; ")
        )
    }

    fn csv(&self) -> crate::error::Result<Vec<u8>> {
        let head = vec![self.key.clone(), "line".into(), "mean".into(), "ci95".into()];
        let mut records = Vec::new();
        for l in &self.lines {
            for (v, s) in self.values.iter().zip(&l.headline) {
                records.push(vec![v.to_string(), l.label.clone(), s.mean.to_string(), s.ci95.to_string()]);
            }
        }
        run::csv_bytes(&head, &records)
    }
}

/// Parse `--values`: numbers, comma-separated, or `A:B:STEP`.
pub fn parse_values(text: &str) -> Result<Vec<f64>, String> {
    if let [a, b, step] = text.split(':').collect::<Vec<_>>()[..] {
        let (a, b, step): (f64, f64, f64) = (
            a.parse().map_err(|_| format!("`{a}` is not a number"))?,
            b.parse().map_err(|_| format!("`{b}` is not a number"))?,
            step.parse().map_err(|_| format!("`{step}` is not a number"))?,
        );
        if !(step > 0.0 && a <= b && (b - a) / step <= 10_000.0) {
            return Err(format!(
                "{text}: expected START:END:STEP with START <= END, STEP > 0, at most 10000 values"
            ));
        }
        let n = ((b - a) / step + 1e-9).floor() as usize;
        return Ok((0..=n).map(|k| ((a + k as f64 * step) * 1e9).round() / 1e9).collect());
    }
    text.split(',')
        .map(|v| v.trim().parse::<f64>().map_err(|_| format!("`{v}` is not a number")))
        .collect()
}

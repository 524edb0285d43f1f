//! The comparison table: one evaluated (policy, mechanism) pair per row. It is the single
//! source of `comparison.md`, `comparison.csv` and the comparison plots (`plots`), and of the
//! thesis report's tables; `compare` and `reproduce` fill it.

use crate::report::markdown::Table;
use crate::run;
use env::eval::{Stat, Summary};
use env::metrics::spec::{NEAR_UNIFORM, WELFARE};
use env::metrics::{EpisodeMetrics, Metric, METRICS};
use serde::Serialize;

/// The policy of a row whose mechanism ignores the agents' actions
/// (`scheduler::registry::reads_actions`): one row stands for every policy.
pub const ANY_POLICY: &str = "any";

/// One evaluated pair.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Policy spec (or the name `--label` gave it).
    pub policy: String,
    /// The spec, where `--label` named the row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
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
    /// Its welfare against the comparison's baseline row, seed by seed ([`pair`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<Paired>,
}

/// A row's welfare minus the baseline row's, paired seed by seed (both ran on the same seeds,
/// so the arrivals cancel out of the difference): mean and paired 95% CI.
#[derive(Debug, Clone, Serialize)]
pub struct Paired {
    /// The baseline row, `POLICY/MECHANISM`.
    pub baseline: String,
    /// Welfare difference, jobs per round.
    pub welfare_diff: Stat,
    /// Whether the CI excludes 0.
    pub significant: bool,
}

impl Row {
    /// `POLICY/MECHANISM`, as `--baseline` names a row.
    pub fn label(&self) -> String {
        format!("{}/{}", self.policy, self.mechanism)
    }

    /// Whether its policy's distribution is nearly uniform (mean entropy above
    /// `env::metrics::spec::NEAR_UNIFORM` of `ln K`): its greedy action is an argmax of noise.
    pub fn near_uniform(&self) -> bool {
        self.summary.stat("entropy_share").is_some_and(|s| s.mean > NEAR_UNIFORM)
    }

    /// The policy as tables show it: flagged when it is near-uniform.
    pub fn shown_policy(&self) -> String {
        if self.near_uniform() {
            format!("{} (near-uniform)", self.policy)
        } else {
            self.policy.clone()
        }
    }
}

/// The default baseline: the best fixed level (by mean welfare) under the first mechanism, or
/// the first row when that mechanism has no fixed policy.
pub fn default_baseline(rows: &[Row]) -> usize {
    let Some(first) = rows.first() else { return 0 };
    rows.iter()
        .enumerate()
        .filter(|(_, r)| r.mechanism == first.mechanism && r.policy.starts_with("fixed:"))
        .max_by(|a, b| {
            a.1.summary
                .headline()
                .1
                .mean
                .total_cmp(&b.1.summary.headline().1.mean)
                .then(b.0.cmp(&a.0))
        })
        .map_or(0, |(i, _)| i)
}

/// The headline figure of `a` minus that of `b` (welfare, jobs per round; in the valuation world
/// the surplus per bidder per item), seed by seed (both evaluated on the same seeds): mean and
/// paired 95% CI.
pub fn welfare_diff(a: &Row, b: &Row) -> Stat {
    let d: Vec<f64> = a
        .episodes
        .iter()
        .zip(&b.episodes)
        .map(|(x, y)| headline_of(x) - headline_of(y))
        .collect();
    Stat::of(&d)
}

/// Fill every row's [`Paired`] against row `baseline`.
pub fn pair(rows: &mut [Row], baseline: usize) {
    let base = rows[baseline].clone();
    let label = base.label();
    for r in rows.iter_mut() {
        let welfare_diff = welfare_diff(r, &base);
        r.paired = Some(Paired {
            baseline: label.clone(),
            significant: significant(&welfare_diff),
            welfare_diff,
        });
    }
}

fn diff_cell(p: &Paired, is_baseline: bool) -> String {
    if is_baseline {
        return "baseline".into();
    }
    signed(&p.welfare_diff)
}

/// Whether a paired difference's 95% CI excludes 0.
pub fn significant(d: &Stat) -> bool {
    d.ci95.is_finite() && d.mean.abs() > d.ci95
}

/// A paired difference as `+m +- ci`, with ` *` when its CI excludes 0.
pub fn signed(d: &Stat) -> String {
    let mark = if significant(d) { " *" } else { "" };
    format!("{}{mark}", d.signed_pm(3))
}

fn fmt(s: &Stat) -> String {
    s.pm(3)
}

/// The figures a comparison shows after welfare, in `env::metrics::METRICS`'s order: those
/// with a column.
fn columns(rows: &[Row]) -> impl Iterator<Item = &'static Metric> {
    let world = world(rows);
    let headline = headline_key(rows);
    METRICS
        .iter()
        .filter(move |m| m.column.is_some() && m.key != headline && m.world.is_none_or(|w| Some(w) == world))
}

/// The world of the rows' episodes.
fn world(rows: &[Row]) -> Option<env::config::World> {
    rows.first().and_then(|r| r.summary.world)
}

/// The key of the rows' headline figure: `welfare`, or `surplus_per_bidder_item` in the
/// valuation world (which has no jobs).
pub fn headline_key(rows: &[Row]) -> &'static str {
    rows.first().map_or(WELFARE.key, |r| r.summary.headline().0)
}

/// An episode's headline figure (see [`headline_key`]).
pub fn headline_of(e: &EpisodeMetrics) -> f64 {
    e.auction.as_ref().map_or(e.welfare, |a| a.surplus_per_bidder_item)
}

/// The weight classes of the rows (the first row's).
fn classes(rows: &[Row]) -> Vec<f64> {
    rows.first()
        .filter(|r| r.summary.world != Some(env::config::World::Valuations))
        .map(|r| r.summary.throughput_by_weight.iter().map(|(w, _)| *w).collect())
        .unwrap_or_default()
}

/// The markdown comparison table.
pub fn markdown(rows: &[Row]) -> String {
    let weights = classes(rows);
    let paired = rows.iter().find_map(|r| r.paired.as_ref());
    let valuations = world(rows) == Some(env::config::World::Valuations);
    let name = if valuations { "surplus/bidder-item" } else { "welfare" };
    let mut head = vec!["policy".to_string(), "mechanism".into(), name.into()];
    if paired.is_some() {
        head.push(format!("Δ {name} (paired)"));
    }
    // Per-agent throughput (jobs a round) of each weight class: "thr" read as threshold (issue 40.8).
    head.extend(weights.iter().map(|w| format!("jobs/round per agent, w={w}")));
    head.extend(columns(rows).filter_map(|m| m.column).map(String::from));
    let mut table = Table::new(head);
    // The best row by mean welfare (the first of equals) is marked in bold.
    let best = rows
        .iter()
        .enumerate()
        .max_by(|a, b| {
            a.1.summary
                .headline()
                .1
                .mean
                .total_cmp(&b.1.summary.headline().1.mean)
                .then(b.0.cmp(&a.0))
        })
        .map(|(i, _)| i);
    for (i, r) in rows.iter().enumerate() {
        let s = &r.summary;
        let welfare = if rows.len() > 1 && Some(i) == best {
            format!("**{}**", fmt(&s.headline().1))
        } else {
            fmt(&s.headline().1)
        };
        let mut cells = vec![r.shown_policy(), r.mechanism.clone(), welfare];
        if let Some(p) = &r.paired {
            cells.push(diff_cell(p, p.baseline == r.label()));
        }
        cells.extend(s.throughput_by_weight.iter().take(weights.len()).map(|(_, st)| fmt(st)));
        cells.extend(columns(rows).map(|m| s.get(m).as_ref().map(fmt).unwrap_or_else(|| "-".into())));
        table.row(cells);
    }
    let mut out = table.to_string();
    if rows.iter().any(Row::near_uniform) {
        out.push_str(&format!(
            "\n(near-uniform): the policy's mean entropy is above {:.0}% of the largest (ln K): its greedy row is an argmax of noise, and its sampled row is what it learned.\n",
            NEAR_UNIFORM * 100.0
        ));
    }
    if rows.iter().any(|r| r.policy == ANY_POLICY) {
        out.push_str("\nany: the mechanism ignores the agents' thresholds and bids, so every policy gives the same episodes under it; one row stands for them all.\n");
    }
    if rows.iter().any(|r| !r.summary.headline().1.has_ci()) {
        out.push_str(&format!("\n{}\n", env::eval::ONE_SEED_NOTE));
    }
    if let (Some(p), true) = (paired, valuations) {
        out.push_str(&format!(
            "\nΔ surplus/bidder-item: each row's surplus per bidder per item (value won minus price paid) minus the baseline's ({}), seed by seed on the same seeds, mean and paired 95% CI; * marks a difference whose CI excludes 0; the best is in bold. Every other column: mean +- 95% CI over seeds (revenue per item in value units, the share of items sold, scheduling time in microseconds per round).\n",
            p.baseline
        ));
    } else if let Some(p) = paired {
        out.push_str(&format!(
            "\nΔ welfare: each row's weighted welfare minus the baseline's ({}), seed by seed on the same seeds, mean and paired 95% CI in jobs per round; * marks a difference whose CI excludes 0; the best mean welfare is in bold. Every other column: mean +- 95% CI over seeds (welfare and throughput in jobs per round, dropped jobs per round, scheduling time in microseconds per round).\n",
            p.baseline
        ));
    }
    out
}

/// The CSV: one row per pair, mean and ci95 columns per figure (welfare, throughput per weight
/// class, then the comparison's columns by key).
pub fn csv(rows: &[Row]) -> crate::error::Result<Vec<u8>> {
    let weights = classes(rows);
    let mut cols = vec![headline_key(rows).to_string()];
    cols.extend(weights.iter().map(|w| format!("throughput_w{w}")));
    cols.extend(columns(rows).map(|m| m.key.to_string()));
    let mut header = vec!["policy".to_string(), "mechanism".to_string()];
    for c in &cols {
        header.push(format!("{c}_mean"));
        header.push(format!("{c}_ci95"));
    }
    let paired = rows.iter().any(|r| r.paired.is_some());
    if paired {
        let k = headline_key(rows);
        header.extend([
            "baseline".to_string(),
            format!("{k}_diff_mean"),
            format!("{k}_diff_ci95"),
            format!("{k}_diff_significant"),
        ]);
    }
    let records: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let s = &r.summary;
            let mut stats = vec![Some(s.headline().1)];
            stats.extend(s.throughput_by_weight.iter().take(weights.len()).map(|(_, st)| Some(*st)));
            stats.extend(columns(rows).map(|m| s.get(m)));
            let mut rec = vec![r.policy.clone(), r.mechanism.clone()];
            for st in stats {
                rec.push(st.map(|x| x.mean.to_string()).unwrap_or_default());
                rec.push(st.filter(Stat::has_ci).map(|x| x.ci95.to_string()).unwrap_or_default());
            }
            if paired {
                match &r.paired {
                    Some(p) => rec.extend([
                        p.baseline.clone(),
                        p.welfare_diff.mean.to_string(),
                        Some(p.welfare_diff)
                            .filter(Stat::has_ci)
                            .map(|x| x.ci95.to_string())
                            .unwrap_or_default(),
                        p.significant.to_string(),
                    ]),
                    None => rec.extend(std::iter::repeat_n(String::new(), 4)),
                }
            }
            rec
        })
        .collect();
    run::csv_bytes(&header, &records)
}

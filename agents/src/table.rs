//! The comparison table: one evaluated (policy, mechanism) pair per row. It is the single
//! source of `comparison.md`, `comparison.csv` and the comparison plots (`plots`), and of the
//! thesis report's tables; `compare` and `reproduce` fill it.

use crate::run_dir;
use env::eval::{Stat, Summary};
use env::metrics::EpisodeMetrics;
use serde::Serialize;

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
pub fn csv(rows: &[Row]) -> crate::Result<Vec<u8>> {
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

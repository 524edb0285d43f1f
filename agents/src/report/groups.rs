//! What a comparison's rows are called and how its run groups read, in every world's
//! comparison (the queue world's `eval::compare` and the seam's `worlds::compare`): the
//! `--label NAME=SPEC` reader and a run group's row across its replicates with its table.

use crate::error::user;
use crate::report::markdown::Table;
use crate::report::stats::Replicates;

/// A run group's replicates in a comparison: each replicate's paired headline difference to
/// the baseline row (welfare in the queue world), reduced across replicates ([`Replicates`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct GroupRow {
    /// The group's spec (`run:GROUP` or `sampled:run:GROUP`), or the name `--label` gave it.
    pub policy: String,
    /// The spec, where `--label` named the group.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    /// The mechanism.
    pub mechanism: String,
    /// The baseline row, `POLICY/MECHANISM`.
    pub baseline: String,
    /// The replicates against it.
    pub vs_baseline: Replicates,
}

/// A `--label NAME=SPEC`, read and checked ([`read_labels`]).
pub struct Label<'a> {
    /// The flag's text.
    pub raw: &'a str,
    /// NAME, trimmed.
    pub name: &'a str,
    /// SPEC, trimmed.
    pub spec: &'a str,
    /// SPEC as the rows it plays are labelled (`canonical`).
    pub want: String,
}

/// Every `--label NAME=SPEC` read and checked before any row is renamed, in every world's
/// comparison: names must tell rows apart (unique, printable, no `|`, one name per spec;
/// `canonical` gives a spec as its rows are labelled). Whether a name is another row's policy
/// is the caller's to check, against its rows.
pub fn read_labels(labels: &[String], canonical: impl Fn(&str) -> String) -> crate::error::Result<Vec<Label<'_>>> {
    let mut named: Vec<Label<'_>> = Vec::new();
    for l in labels {
        let Some((name, spec)) = l.split_once('=').filter(|(n, s)| !n.trim().is_empty() && !s.trim().is_empty()) else {
            return Err(user(format!("--label {l}: expected NAME=SPEC, e.g. learned=run:runs/quickstart")));
        };
        let (name, spec) = (name.trim(), spec.trim());
        if name.chars().any(|c| c.is_control() || c == '|') || name.len() > 64 {
            return Err(user(format!(
                "--label {l}: a name of at most 64 printable characters, without `|` (a table's column separator)"
            )));
        }
        if name == crate::report::table::ANY_POLICY {
            return Err(user(format!(
                "--label {l}: `{name}` is the row of a mechanism that ignores the agents' actions; choose another name"
            )));
        }
        let want = canonical(spec);
        if named.iter().any(|n| n.name == name) {
            return Err(user(format!("--label {l}: `{name}` names two policies")));
        }
        if named.iter().any(|n| n.want == want) {
            return Err(user(format!("--label {l}: `{want}` is labelled twice")));
        }
        named.push(Label { raw: l, name, spec, want });
    }
    Ok(named)
}

/// The across-replicates table of a comparison's run groups (markdown, empty without
/// groups), `score` saying what a replicate's score is (every world's).
pub fn groups_markdown_of(groups: &[GroupRow], score: &str) -> String {
    if groups.is_empty() {
        return String::new();
    }
    let mut t = Table::new([
        "run group",
        "mechanism",
        "replicates",
        "mean",
        "IQM [95% CI]",
        "P(> baseline) [95% CI]",
    ]);
    for g in groups {
        let r = &g.vs_baseline;
        t.row([
            g.policy.clone(),
            g.mechanism.clone(),
            r.scores.len().to_string(),
            format!("{:+.3}", r.mean),
            format!("{:+.3} [{:+.3}, {:+.3}]", r.iqm, r.iqm_ci[0], r.iqm_ci[1]),
            format!(
                "{:.2} [{:.2}, {:.2}]",
                r.prob_improvement, r.prob_improvement_ci[0], r.prob_improvement_ci[1]
            ),
        ]);
    }
    format!(
        "\n## Across training replicates\n\n{t}\nEach replicate's score: {score}. IQM: the interquartile mean of the replicates' scores, with its 95% percentile-bootstrap interval over replicates; P(> baseline): the share of replicates that beat the baseline (a tie counts half), with its bootstrap interval (Agarwal et al., NeurIPS 2021).\n"
    )
}

//! `mtf simulate`, `mtf compare` and `mtf analyze` in a world behind the seam: policies x
//! mechanisms on the same seeds, every figure of the world as mean and 95% CI, and each row's
//! headline next to a baseline row's as a paired difference over the seeds (signed so that
//! positive is better, `*` when its CI excludes 0).

use super::deviations::{deviations, Deviation};
use super::policies::{self, Named};
use super::{evaluate, paired, sign, summarise, Played};
use crate::report::markdown::Table;
use crate::run::{self, RunDir};
use env::eval::{episode_seeds, Stat};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// What to compare.
#[derive(Clone, Debug, Default)]
pub struct SeamCompare {
    /// The config.
    pub config: PathBuf,
    /// `--set` overrides.
    pub set: Vec<String>,
    /// Root seed override.
    pub seed: Option<u64>,
    /// Policy specs (`fixed:X`, `fixed:all`, `uniform`, `run:DIR`).
    pub policies: Vec<String>,
    /// Mechanisms (empty: the config's).
    pub mechanisms: Vec<String>,
    /// Evaluation episodes.
    pub seeds: usize,
    /// Worker threads.
    pub threads: usize,
    /// The row every row is compared with, `POLICY/MECHANISM` (default: the best fixed-level
    /// row under the first mechanism, else the first row not of a run group).
    pub baseline: Option<String>,
    /// Run directory.
    pub out: Option<PathBuf>,
    /// The command's name, for the run directory (`simulate` or `compare`).
    pub command: &'static str,
    /// `--label NAME=SPEC`: NAME for the rows SPEC plays (`NAME, replicate K` for a run
    /// group's, `NAME, ROW` for another spec of several rows, as `fixed:all`).
    pub labels: Vec<String>,
}

/// One row: a policy under a mechanism.
#[derive(Clone, Debug)]
pub struct Row {
    /// Policy label (`any` under a mechanism that ignores the agents' actions).
    pub policy: String,
    /// Mechanism.
    pub mechanism: String,
    /// Every episode.
    pub played: Vec<Played>,
    /// The row's own label where `--label` renamed it (kept in the JSON beside the name).
    pub spec: Option<String>,
    /// The run group it is a replicate of (its name: `run:GROUP`, or its label).
    pub group: Option<String>,
    /// Whether its policy plays without drawing (an argmax, a fixed level): a near-uniform
    /// one's row is then an argmax of noise, and marked.
    pub greedy: bool,
}

impl Row {
    /// The mean share of `ln K` of the distributions its policy chose from, where it says.
    pub fn entropy_share(&self) -> Option<f64> {
        super::mean_entropy_share(&self.played)
    }

    /// Whether it is the argmax of a near-uniform policy.
    pub fn near_uniform(&self) -> bool {
        self.greedy && self.entropy_share().is_some_and(|e| e > env::metrics::spec::NEAR_UNIFORM)
    }

    /// Its label in tables: marked where it is an argmax of noise.
    fn shown(&self) -> String {
        if self.near_uniform() {
            format!("{} (near-uniform)", self.policy)
        } else {
            self.policy.clone()
        }
    }
}

/// A comparison, and the world's metric list to read it with.
pub struct Compared {
    /// The rows.
    pub rows: Vec<Row>,
    /// The baseline row's index.
    pub baseline: usize,
    /// Figure keys, labels, directions.
    pub metrics: &'static [env::worlds::WorldMetric],
    /// The world's named actions (rows beside the levels).
    pub named_actions: &'static [&'static str],
    /// The headline figure's index.
    pub headline: usize,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// The run directory.
    pub dir: PathBuf,
    /// Whether another seed gives another episode (else it was played once).
    pub varies: bool,
    /// `mtf analyze`'s best unilateral deviation from each level (empty elsewhere).
    pub deviations: Vec<Deviation>,
    /// `mtf analyze`'s selfish equilibrium, whose row is `selfish equilibrium` (else `None`).
    pub selfish: Option<SelfishFound>,
    /// Each run group's replicates against the baseline row, per mechanism: their headline
    /// improvements reduced across replicates (IQM, P(> baseline), bootstrap CIs).
    pub groups: Vec<crate::report::groups::GroupRow>,
    /// `mtf simulate`'s first episode as the world tells it (`World::story`), when it does.
    pub story: Option<String>,
    /// `mtf simulate`'s first episode's record (`World::record`: the market's figures per
    /// tenant and type; by default the figures by key): `metrics` in `summary.json`.
    pub episode: Option<Value>,
}

/// Where `mtf analyze`'s iterated best responses per group stopped
/// ([`env::worlds::selfish`], from the best fixed level, on the analysis's seeds).
#[derive(Clone, Debug, serde::Serialize)]
pub struct SelfishFound {
    /// The profile as a spec (`fixed:G=X,...`): what `mtf compare` replays.
    pub spec: String,
    /// Passes taken.
    pub passes: usize,
    /// Whether no group gained in the last pass (else a cycle, or the pass limit).
    pub converged: bool,
    /// Levels tried, each on every seed.
    pub evaluations: usize,
}

/// Run the comparison and write its run directory (`comparison.md`, `comparison.csv`,
/// `summary.json`).
pub fn compare(spec: &SeamCompare) -> crate::error::Result<Compared> {
    compare_in(spec, super::load(&spec.config, &spec.set, spec.seed, None)?.as_ref())
}

/// [`compare`] in `first`, the world of `spec`'s config as already loaded.
fn compare_in(spec: &SeamCompare, first: &dyn env::worlds::World) -> crate::error::Result<Compared> {
    let mechanisms: Vec<String> = if spec.mechanisms.is_empty() {
        vec![first.mechanism().unwrap_or_else(|| "-".into())]
    } else {
        spec.mechanisms
            .iter()
            .flat_map(|m| m.split(','))
            .map(|m| m.trim().to_string())
            .filter(|m| !m.is_empty())
            .collect()
    };
    let doing = match spec.command {
        "simulate" => "this simulation",
        "analyze" => "this analysis",
        _ => "this comparison",
    };
    crate::train::memory::check(&crate::train::memory::world_episodes(first, spec.threads), doing)?;
    // No policy named: the world's own rule where it has one (the market's `own`: each
    // tenant's own factor), else every agent at 0.5.
    let specs = match policies::split(&spec.policies) {
        s if s.is_empty() => vec![first.named_actions().first().map_or("fixed:0.5".to_string(), |n| n.to_string())],
        s => s,
    };
    // Every world and policy first: a refused spec leaves no run directory, and a taken --out
    // is refused before anything is played.
    let labels = crate::report::groups::read_labels(&spec.labels, |s| policies::canonical(s, first))?;
    let mut used = vec![false; labels.len()];
    // Each renamed row's own label (its spec in the JSON), by its new name.
    let mut renamed: Vec<(String, String)> = Vec::new();
    // Per row to be played (mechanisms outermost), the run group it is a replicate of.
    let mut row_groups: Vec<Option<String>> = Vec::new();
    let group_names = group_names(&specs, &labels);
    let mut plays = Vec::new();
    for m in &mechanisms {
        let mut world = if first.mechanism().as_deref() == Some(m.as_str()) || m == "-" {
            first.fork()
        } else {
            super::load(&spec.config, &spec.set, spec.seed, Some((first, m.as_str())))?
        };
        // A table of policies shows the fairness figures; analyze's many evaluations do not
        // pay for their replays.
        world.set_fairness(spec.command != "analyze");
        let mut named: Vec<Named> = Vec::new();
        let mut of_spec: Vec<usize> = Vec::new();
        for (k, s) in specs.iter().enumerate() {
            let rows = policies::parse(s, world.as_ref())?;
            of_spec.extend(std::iter::repeat_n(k, rows.len()));
            named.extend(rows);
        }
        if world.reads_actions() {
            name_rows(&labels, &specs, &of_spec, &group_names, &mut named, &mut used, &mut renamed)?;
            row_groups.extend(of_spec.iter().map(|&k| group_names[k].clone()));
        } else {
            // Every policy plays the same episodes: one row.
            named.truncate(1);
            if let Some(n) = named.first_mut() {
                n.0 = "any".into();
            }
            row_groups.extend(named.iter().map(|_| None));
        }
        plays.push((m.clone(), world, named));
    }
    if let Some(j) = used.iter().position(|u| !u) {
        return Err(crate::error::user(format!(
            "--label {}: no row has the policy `{}`",
            labels[j].raw, labels[j].spec
        )));
    }
    let varies = plays
        .iter()
        .any(|(_, w, named)| super::plays_every_seed(w.as_ref(), named.iter().map(|(_, p)| p.as_ref())));
    let seeds = episode_seeds(super::root_seed(first), if varies { spec.seeds } else { 1 });
    let baseline = baseline_row(spec.baseline.as_deref(), &plays, &mechanisms[0], &renamed)?;
    let dir = RunDir::create(spec.out.as_deref(), &format!("{}-{}", spec.command, run::stem(&spec.config)))?;
    // The resolved world of the first mechanism (the others differ by its key alone), written
    // with the summary at the end: a run that fails on the way (an agent process that broke
    // its protocol) leaves no config.toml, so its directory does not count as a run.
    let config = toml::to_string(&first.config()).map_err(|e| crate::error::failed(e.to_string()))?;
    let played = play_rows(spec, plays, &seeds, &dir, &renamed);
    if played.is_err() && spec.out.is_none() {
        // The directory is this call's own (a fresh name under runs/): nothing to keep.
        let _ = std::fs::remove_dir_all(dir.path());
    }
    let (mut rows, story, episode) = played?;
    for (r, g) in rows.iter_mut().zip(row_groups) {
        r.group = g;
    }
    let mut c = Compared {
        rows,
        baseline,
        metrics: first.metrics(),
        named_actions: first.named_actions(),
        headline: first.headline(),
        seeds,
        dir: dir.path().to_path_buf(),
        varies,
        deviations: Vec::new(),
        selfish: None,
        groups: Vec::new(),
        story,
        episode,
    };
    if spec.baseline.is_none() {
        c.baseline = c.default_baseline();
    }
    c.groups = c.group_rows(super::root_seed(first));
    run::write_atomic(&dir.config(), config.as_bytes())?;
    run::write_atomic(&dir.file("comparison.md"), c.markdown().as_bytes())?;
    run::write_atomic(&dir.file("comparison.csv"), &c.csv()?)?;
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&c.json())?.as_bytes())?;
    Ok(c)
}

/// Each spec's run-group name (`None` for a spec that is no run group): its label, else
/// `run:GROUP` as its replicates' rows begin (the spec as given where two groups share a name).
fn group_names(specs: &[String], labels: &[crate::report::groups::Label<'_>]) -> Vec<Option<String>> {
    let stems: Vec<Option<String>> = specs
        .iter()
        .map(|s| {
            let dir = s.strip_prefix("run:").filter(|d| crate::RunDir::at(d).is_group())?;
            Some(format!("run:{}", policies::stem(Path::new(dir))))
        })
        .collect();
    (0..specs.len())
        .map(|k| {
            let stem = stems[k].as_ref()?;
            Some(match labels.iter().find(|l| l.spec == specs[k]) {
                Some(l) => l.name.to_string(),
                None if stems.iter().filter(|s| s.as_ref() == Some(stem)).count() > 1 => specs[k].clone(),
                None => stem.clone(),
            })
        })
        .collect()
}

/// The row `--baseline POLICY/MECHANISM` names (the first without one; MECHANISM defaults to
/// `first_mechanism`): a row by its name or, where --label renamed it, by its own label.
#[allow(clippy::type_complexity)]
fn baseline_row(
    baseline: Option<&str>,
    plays: &[(String, Box<dyn env::worlds::World>, Vec<Named>)],
    first_mechanism: &str,
    renamed: &[(String, String)],
) -> crate::error::Result<usize> {
    let Some(b) = baseline else { return Ok(0) };
    let (p, m) = b.rsplit_once('/').unwrap_or((b, first_mechanism));
    // `fixed:b=0.2,a=0.1` is the row `fixed:a=0.1,b=0.2`.
    let p = plays
        .first()
        .map_or_else(|| p.to_string(), |(_, w, _)| policies::canonical(p, w.as_ref()));
    let p = p.as_str();
    let own = |label: &str| renamed.iter().any(|(to, from)| to == label && from == p);
    plays
        .iter()
        .flat_map(|(mech, _, named)| named.iter().map(move |(label, _)| (label.as_str(), mech.as_str())))
        .position(|(label, mech)| (label == p || label == "any" || own(label)) && mech == m)
        .ok_or_else(|| crate::error::user(format!("--baseline {b}: no such row (rows are POLICY/MECHANISM of the table)")))
}

/// Rename the rows `--label`s name in one mechanism's rows (`named`, played from `specs` as
/// `of_spec` says; `group_names` marks the run groups, [`group_names`]): a label names a spec as written, or the row a one-row spec plays
/// by that row's label (`fixed:0.2` for `fixed:0.20`, either way round: [`policies::canonical`]); its rows become NAME, `NAME, replicate K` (a run group's)
/// or `NAME, ROW`. Checked against the rows' own labels, whatever the labels' order: a NAME
/// that is another row's label, a row labelled twice, or two rows of one name are refused.
/// `used` marks the labels that named a spec; `renamed` gets each renamed row's (new name,
/// own label).
fn name_rows(
    labels: &[crate::report::groups::Label<'_>],
    specs: &[String],
    of_spec: &[usize],
    group_names: &[Option<String>],
    named: &mut [Named],
    used: &mut [bool],
    renamed: &mut Vec<(String, String)>,
) -> crate::error::Result<()> {
    let own: Vec<String> = named.iter().map(|n| n.0.clone()).collect();
    let rows_of = |k: usize| -> Vec<usize> { (0..own.len()).filter(|&r| of_spec[r] == k).collect() };
    let mut by = vec![None::<usize>; named.len()];
    for (j, l) in labels.iter().enumerate() {
        let Some(k) = (0..specs.len()).find(|&k| {
            let rows = rows_of(k);
            specs[k] == l.spec || (rows.len() == 1 && (own[rows[0]] == l.spec || own[rows[0]] == l.want))
        }) else {
            continue;
        };
        used[j] = true;
        if let Some(r) = (0..own.len()).find(|&r| of_spec[r] != k && own[r] == l.name) {
            return Err(crate::error::user(format!(
                "--label {}: `{}` is another row's policy",
                l.raw, own[r]
            )));
        }
        let mine = rows_of(k);
        let group = group_names[k].is_some();
        for (i, &r) in mine.iter().enumerate() {
            if let Some(before) = by[r] {
                return Err(crate::error::user(format!(
                    "--label {}: `{}` is labelled twice (by {} too)",
                    l.raw, own[r], labels[before].raw
                )));
            }
            by[r] = Some(j);
            named[r].0 = match (mine.len(), group) {
                (1, _) => l.name.to_string(),
                (_, true) => format!("{}, replicate {i}", l.name),
                _ => format!("{}, {}", l.name, own[r]),
            };
        }
    }
    for r in (0..named.len()).filter(|&r| by[r].is_some()) {
        if (0..named.len()).any(|o| o != r && named[o].0 == named[r].0) {
            let l = labels[by[r].expect("renamed")].raw;
            return Err(crate::error::user(format!("--label {l}: `{}` names two rows", named[r].0)));
        }
        renamed.push((named[r].0.clone(), own[r].clone()));
    }
    Ok(())
}

/// Every row of a comparison played on `seeds`, and (`mtf simulate`) the first row's round
/// log, story and episode record.
#[allow(clippy::type_complexity)]
fn play_rows(
    spec: &SeamCompare,
    plays: Vec<(String, Box<dyn env::worlds::World>, Vec<Named>)>,
    seeds: &[u64],
    dir: &RunDir,
    renamed: &[(String, String)],
) -> crate::error::Result<(Vec<Row>, Option<String>, Option<Value>)> {
    let mut rows = Vec::new();
    let (mut story, mut episode) = (None, None);
    for (m, world, named) in plays {
        for (label, policy) in named {
            if spec.command == "simulate" && rows.is_empty() {
                let told = round_log(world.as_ref(), policy.as_ref(), seeds[0], &dir)?;
                (story, episode) = (told.0, Some(told.1));
            }
            let played = evaluate(world.as_ref(), policy.as_ref(), seeds, spec.threads);
            if let Some(e) = policy.failure() {
                return Err(crate::error::policy(&label, e));
            }
            rows.push(Row {
                group: None,
                spec: renamed.iter().find(|(to, _)| *to == label).map(|(_, from)| from.clone()),
                policy: label,
                mechanism: m.clone(),
                played,
                greedy: !policy.draws(),
            });
        }
    }
    Ok((rows, story, episode))
}

impl Compared {
    fn stats(&self, r: &Row) -> Vec<Stat> {
        summarise(&r.played, self.metrics)
    }

    /// Whether a row plays fixed levels (`fixed:X`, a level per group or per agent; by its own
    /// spec where `--label` renamed it), not a world's named action (the market's `fixed:own`,
    /// a row beside the levels).
    fn is_fixed_level(&self, r: &Row) -> bool {
        let spec = r.spec.as_deref().unwrap_or(&r.policy);
        spec.strip_prefix("fixed:")
            .is_some_and(|x| !self.named_actions.contains(&x.trim()) && x.trim() != "all")
    }

    /// The row compared against where `--baseline` names none: the best fixed-level row
    /// (`fixed:...`, by its mean headline, the first of equals) under the first mechanism, as
    /// the queue world's own compare picks it; else the first row that is not a run group's
    /// replicate (a group is scored against it), else the first.
    fn default_baseline(&self) -> usize {
        let Some(first) = self.rows.first() else { return 0 };
        let better = sign(self.metrics[self.headline].better);
        let fixed = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.mechanism == first.mechanism && self.is_fixed_level(r))
            .map(|(k, r)| (k, self.stats(r)[self.headline].mean * better))
            .filter(|(_, v)| v.is_finite())
            .fold(None::<(usize, f64)>, |b, (k, v)| match b {
                Some((_, bv)) if bv >= v => b,
                _ => Some((k, v)),
            });
        fixed
            .map(|(k, _)| k)
            .or_else(|| self.rows.iter().position(|r| r.group.is_none()))
            .unwrap_or(0)
    }

    /// Every run group's replicates against the baseline row, per mechanism (in row order).
    fn group_rows(&self, root: u64) -> Vec<crate::report::groups::GroupRow> {
        let base = &self.rows[self.baseline];
        let mut keys: Vec<(&str, &str)> = Vec::new();
        for r in &self.rows {
            if let Some(g) = &r.group {
                if !keys.contains(&(g.as_str(), r.mechanism.as_str())) {
                    keys.push((g, &r.mechanism));
                }
            }
        }
        keys.into_iter()
            .map(|(g, m)| {
                // The baseline, where it is a replicate, is not scored against itself.
                let scores: Vec<f64> = (0..self.rows.len())
                    .filter(|&k| k != self.baseline && self.rows[k].group.as_deref() == Some(g) && self.rows[k].mechanism == m)
                    .map(|k| self.improvement(k).mean)
                    .collect();
                crate::report::groups::GroupRow {
                    policy: g.to_string(),
                    spec: None,
                    mechanism: m.to_string(),
                    baseline: format!("{}/{}", base.policy, base.mechanism),
                    vs_baseline: crate::report::stats::Replicates::of(&scores, env::rng::stream_seed(root, "replicates-bootstrap", 0)),
                }
            })
            .collect()
    }

    /// Row r's headline improvement over the baseline row (positive is better).
    pub fn improvement(&self, r: usize) -> Stat {
        let d = paired(&self.rows[r].played, &self.rows[self.baseline].played, self.headline);
        Stat {
            mean: d.mean * sign(self.metrics[self.headline].better) + 0.0, // no -0.000 for a tie under lower-is-better
            ci95: d.ci95,
        }
    }

    /// The table: the figures the world shows, each as mean ± CI, and the paired improvement
    /// of the headline over the baseline row.
    pub fn markdown(&self) -> String {
        let m = &self.metrics[self.headline];
        let base = &self.rows[self.baseline];
        // A figure no row has (the fairness figures where nothing asked for them: analyze's)
        // is left out rather than shown as a column of `-`.
        let stats: Vec<Vec<Stat>> = self.rows.iter().map(|r| self.stats(r)).collect();
        let shown: Vec<usize> = (0..self.metrics.len())
            .filter(|&k| self.metrics[k].shown && stats.iter().any(|s| s[k].mean.is_finite()))
            .collect();
        let mut head = vec!["policy".to_string(), "mechanism".to_string()];
        head.extend(shown.iter().map(|&k| self.metrics[k].label.to_string()));
        head.push(format!("vs {}/{} (+ better)", base.policy, base.mechanism));
        let mut t = Table::new(head).numbers_from(2);
        for (r_k, (r, stats)) in self.rows.iter().zip(&stats).enumerate() {
            let mut cells = vec![r.shown(), r.mechanism.clone()];
            cells.extend(shown.iter().map(|&k| pm(stats[k], self.metrics[k].decimals)));
            let d = self.improvement(r_k);
            let star = if d.has_ci() && (d.mean - d.ci95 > 0.0 || d.mean + d.ci95 < 0.0) {
                " *"
            } else {
                ""
            };
            let dec = m.decimals;
            cells.push(if r_k == self.baseline {
                "baseline".into()
            } else if d.has_ci() {
                format!("{:+.dec$} ± {:.dec$}{star}", d.mean, d.ci95)
            } else {
                format!("{:+.dec$}", d.mean)
            });
            t.row(cells);
        }
        let seeds = if self.varies {
            format!(
                "{} seeds; the last column is the paired difference over the same seeds, `*` where its 95% CI excludes 0",
                self.seeds.len()
            )
        } else {
            "one episode: nothing in this config draws from the seed (a replayed trace, given arrivals and sizes) and no policy draws its actions, so every seed plays the same episode and there is no spread to state (no CI); Gavel's world generates jobs that differ by seed with `env.generate`".into()
        };
        let story = self.story.as_ref().map_or(String::new(), |s| {
            format!("\nThe first seed's episode ({}), round by round:\n\n{s}", self.seeds[0])
        });
        let groups = crate::report::groups::groups_markdown_of(
            &self.groups,
            &format!(
                "its {} minus the baseline's ({}/{}), seed by seed on the same seeds, averaged over the seeds, signed so that + is better",
                m.label, base.policy, base.mechanism
            ),
        );
        let noise = if self.rows.iter().any(Row::near_uniform) {
            format!(
                "(near-uniform): the policy's mean entropy is above {:.0}% of the largest (ln K): its greedy row is an argmax of noise; play it as it trained (run:DIR) for what it learned.\n",
                env::metrics::spec::NEAR_UNIFORM * 100.0
            )
        } else {
            String::new()
        };
        format!(
            "{t}\nheadline: {} ({} is better); {seeds}.\n{noise}{groups}{}{story}",
            m.label,
            if sign(m.better) > 0.0 { "higher" } else { "lower" },
            self.deviations_markdown()
        )
    }

    /// The levels no agent leaves alone, and per level the best unilateral deviation (nothing
    /// when there are none).
    fn deviations_markdown(&self) -> String {
        if self.deviations.is_empty() {
            return String::new();
        }
        let mut t = Table::new(["common level", "best deviation", "gain in own return", "by"]);
        for d in &self.deviations {
            let (to, by) = if d.profitable() {
                (d.to.to_string(), d.agent.clone())
            } else if d.gain.mean > 1e-9 {
                (format!("none beyond its CI ({})", d.to), d.agent.clone())
            } else {
                ("none".into(), "-".into())
            };
            t.row(vec![d.level.to_string(), to, pm(d.gain, 4), by]);
        }
        let eq = self.equilibria();
        let eq = if eq.is_empty() {
            "none".to_string()
        } else {
            eq.iter().map(f64::to_string).collect::<Vec<_>>().join(", ")
        };
        let selfish = self.selfish.as_ref().map_or_else(String::new, |f| {
            format!(
                "\nThe selfish equilibrium (row `selfish equilibrium`): {} after {} pass{} of best responses per group from the best fixed level ({}; each group's representative, its first agent where the group is there from the start, else one from the middle of the episode, tries every level, everyone else at the current profile, its own return on the selection seeds, other than the table's; the whole group moves where it gains).\n",
                f.spec,
                f.passes,
                if f.passes == 1 { "" } else { "es" },
                if f.converged {
                    "converged: no group gains"
                } else {
                    "not converged: a profile repeated, or the pass limit"
                }
            )
        });
        format!(
            "{selfish}\nLevels no agent is seen to leave alone (no deviation gains beyond its 95% CI: symmetric equilibria among the levels, where selfish learners may settle): {eq}.\n\n{t}\nA deviation: one agent at another level, every other at the common one; its gain is in its own return (the world's reward summed over the episode), paired over the same seeds, and counts where its 95% CI excludes 0. Deviators: every agent, or each group's representative above {} agents (its first agent where the group is there from the start, else one from the middle of the episode).\n",
            super::deviations::EVERY_AGENT
        )
    }

    /// The levels from which no agent gains by deviating alone.
    pub fn equilibria(&self) -> Vec<f64> {
        self.deviations.iter().filter(|d| !d.profitable()).map(|d| d.level).collect()
    }

    fn csv(&self) -> crate::error::Result<Vec<u8>> {
        let mut head = vec!["policy".to_string(), "mechanism".to_string()];
        for m in self.metrics {
            head.push(m.key.to_string());
            head.push(format!("{}_ci95", m.key));
        }
        head.push("improvement".into());
        head.push("improvement_ci95".into());
        let records: Vec<Vec<String>> = self
            .rows
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let mut c = vec![r.policy.clone(), r.mechanism.clone()];
                for s in self.stats(r) {
                    c.push(s.mean.to_string());
                    c.push(s.ci95.to_string());
                }
                let d = self.improvement(k);
                c.push(d.mean.to_string());
                c.push(d.ci95.to_string());
                c
            })
            .collect();
        run::csv_bytes(&head, &records)
    }

    /// `summary.json`.
    pub fn json(&self) -> Value {
        let rows: Vec<Value> = self
            .rows
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let figs: serde_json::Map<String, Value> = self
                    .metrics
                    .iter()
                    .zip(self.stats(r))
                    .map(|(m, s)| (m.key.to_string(), json!({"mean": s.mean, "ci95": s.ci95})))
                    .collect();
                let d = self.improvement(k);
                let mut j = json!({"policy": r.policy, "mechanism": r.mechanism, "eval": figs,
                       "improvement": {"mean": d.mean, "ci95": d.ci95},
                       "per_seed": r.played.iter().map(|p| p.figures[self.headline]).collect::<Vec<f64>>()});
                if let Some(s) = &r.spec {
                    j["spec"] = s.clone().into();
                }
                if let Some(g) = &r.group {
                    j["group"] = g.clone().into();
                }
                if let Some(e) = r.entropy_share() {
                    j["entropy_share"] = e.into();
                    j["near_uniform"] = r.near_uniform().into();
                }
                j
            })
            .collect();
        let mut v = json!({"seeds": self.seeds.len(), "episode_seeds": self.seeds, "headline": self.metrics[self.headline].key, "baseline": self.baseline, "rows": rows});
        if let Some(e) = &self.episode {
            v["metrics"] = e.clone();
        }
        if !self.groups.is_empty() {
            v["groups"] = json!(self.groups);
        }
        if !self.deviations.is_empty() {
            v["deviations"] = self
                .deviations
                .iter()
                .map(|d| {
                    let mut j = json!(d);
                    j["leaves"] = d.profitable().into();
                    j
                })
                .collect();
            v["equilibria"] = json!(self.equilibria());
        }
        if let Some(f) = &self.selfish {
            v["selfish"] = json!(f);
        }
        v
    }
}

/// `mtf analyze` in a world behind the seam: every fixed level and named action, uniform play
/// and (with a run) the trained actors, on the same seeds, each against the best fixed level;
/// below them, the best unilateral deviation from each level ([`deviations`]) and the levels
/// no agent leaves alone. The root seed is `seed`, else the run's (so its rows are played on
/// the seeds its summary was scored on), else the config's.
pub fn analyze(
    config: &Path,
    set: &[String],
    seed: Option<u64>,
    run_dir: Option<&Path>,
    baselines: Option<&[String]>,
    seeds: usize,
    select_seeds: usize,
    threads: usize,
    out: Option<&Path>,
) -> crate::error::Result<Compared> {
    let mut policies = vec!["fixed:all".to_string(), "uniform".into()];
    if let Some(r) = run_dir {
        policies.push(format!("run:{}", r.display()));
    }
    // Before 2026-11-29 `--seed` was dropped here, and a run trained on another root seed
    // than its config's was analyzed on the config's seeds.
    let seed = seed.or_else(|| {
        let table = env::config::read_table(&RunDir::at(run_dir?).config(), &[]).ok()?;
        table.get("seed")?.as_integer().map(|s| s as u64)
    });
    // Loaded once: the comparison and the deviations play copies of it.
    let world = super::load(config, set, seed, None)?;
    // `--baselines`: where none are named, the world's own (the queue world's cluster
    // schedulers, at the best fixed level; none in most worlds).
    let baselines: Vec<String> = match baselines {
        Some(b) => policies::split(b),
        None => world.baselines().iter().map(|b| b.to_string()).collect(),
    };
    // Each baseline's world (a mechanism's) or policy (under the config's mechanism), before
    // anything is played: a bad one fails now, not after the analysis.
    let mut against: Vec<(String, Box<dyn env::worlds::World>, Option<Named>)> = Vec::new();
    for b in &baselines {
        if is_policy_spec(b) || world.named_actions().contains(&b.as_str()) {
            for n in policies::parse(b, world.as_ref())? {
                // The analysis plays every level and uniform play already: no second row.
                let played_already = n.0 == "uniform"
                    || world.named_actions().contains(&n.0.as_str())
                    || (n.0.starts_with("fixed:") && !n.0.contains(['=', '[']));
                if !played_already {
                    against.push((world.mechanism().unwrap_or_else(|| "-".into()), world.fork(), Some(n)));
                }
            }
        } else {
            let w = super::load(config, set, seed, Some((world.as_ref(), b.as_str())))?;
            against.push((b.clone(), w, None));
        }
    }
    let mut c = compare_in(
        &SeamCompare {
            config: config.to_path_buf(),
            set: set.to_vec(),
            seed,
            policies,
            mechanisms: Vec::new(),
            seeds,
            threads,
            baseline: None,
            out: out.map(Path::to_path_buf),
            command: "analyze",
            labels: Vec::new(),
        },
        world.as_ref(),
    )?;
    // The baseline is the best fixed level (a named action, the market's `fixed:own`, is a
    // row beside the levels, not one of them), picked on other seeds than the rows are scored
    // on (`--select-seeds`, as training's references and the queue world's own analysis pick
    // it; before 2026-12-04 on the scored seeds), and the selfish equilibrium searched there
    // too. A world that plays one episode whatever the seed has one seed to pick on.
    let select = if c.varies {
        env::eval::selection_seeds(super::root_seed(world.as_ref()), select_seeds.max(1))
    } else {
        c.seeds.clone()
    };
    let best_level = super::best_level(world.as_ref(), &select, threads);
    let best_label = format!("fixed:{}", super::action_name(best_level, world.as_ref()));
    c.baseline = c.rows.iter().position(|r| r.policy == best_label).unwrap_or(0);
    if world.reads_actions() {
        c.deviations = deviations(world.as_ref(), &c.seeds, threads);
        if !world.shares_reward() {
            selfish_row(&mut c, world.as_ref(), &select, threads);
        }
    }
    // The baselines: a mechanism at the best fixed level (`any` where it ignores the levels),
    // a policy as named, on the same seeds.
    let best_value = world.levels()[best_level];
    for (mechanism, w, named) in against {
        let (policy, played, greedy) = match named {
            Some((label, p)) => {
                let played = evaluate(w.as_ref(), p.as_ref(), &c.seeds, threads);
                if let Some(e) = p.failure() {
                    return Err(crate::error::policy(&label, e));
                }
                (label, played, !p.draws())
            }
            None => {
                // The best fixed level's value where the mechanism's grid has it (its levels
                // may be another grid: an auction's bid factors), else the mechanism's own
                // best level on the selection seeds.
                let k = env::config::level_index(w.levels(), best_value).unwrap_or_else(|| super::best_level(w.as_ref(), &select, threads));
                let label = if w.reads_actions() {
                    format!("fixed:{}", super::action_name(k, w.as_ref()))
                } else {
                    "any".into()
                };
                (label, evaluate(w.as_ref(), &super::Fixed::new(vec![k]), &c.seeds, threads), true)
            }
        };
        c.rows.push(Row {
            policy,
            mechanism,
            played,
            spec: None,
            group: None,
            greedy,
        });
    }
    // A run group's replicates against the analysis's baseline (the comparison scored them
    // against its own default).
    c.groups = c.group_rows(super::root_seed(world.as_ref()));
    let dir = RunDir::at(&c.dir);
    // Rewritten with the analysis's rows (the comparison wrote them without the selfish row).
    run::write_atomic(&dir.file("comparison.csv"), &c.csv()?)?;
    run::write_atomic(&dir.file("comparison.md"), c.markdown().as_bytes())?;
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&c.json())?.as_bytes())?;
    Ok(c)
}

/// Whether a `--baselines` entry names a policy (`fixed:...`, `run:...`, `uniform`, `hedge`)
/// rather than a mechanism.
fn is_policy_spec(entry: &str) -> bool {
    entry.contains(':') || entry == "hedge" || entry == "uniform"
}

/// The selfish equilibrium from the baseline (the best fixed level) on `c`'s seeds, as a row
/// `selfish equilibrium` (its spec kept beside it) and `c.selfish`. Only the levels are tried
/// (not the world's named actions).
fn selfish_row(c: &mut Compared, world: &dyn env::worlds::World, select: &[u64], threads: usize) {
    let base = &c.rows[c.baseline];
    let Some(start) = base
        .policy
        .strip_prefix("fixed:")
        .and_then(|x| x.parse::<f64>().ok())
        .and_then(|x| env::config::level_index(world.levels(), x))
    else {
        return;
    };
    let found = env::worlds::selfish::selfish(world, start, select, threads);
    let spec = super::group_spec(&found.levels, world);
    let played = evaluate(world, &super::Fixed::new(found.levels), &c.seeds, threads);
    c.rows.push(Row {
        policy: "selfish equilibrium".into(),
        mechanism: base.mechanism.clone(),
        played,
        spec: Some(spec.clone()),
        group: None,
        greedy: true,
    });
    c.selfish = Some(SelfishFound {
        spec,
        passes: found.passes,
        converged: found.converged,
        evaluations: found.evaluations,
    });
}

/// The first seed's episode, round by round as the world records it, to `rounds.jsonl` (a
/// line per round, its index as `round`; nothing for a world that keeps no round record), and
/// as the world tells it (`World::story`): its figures drawn in `dir`, its text returned, with
/// the episode's record (`World::record`).
fn round_log(
    world: &dyn env::worlds::World,
    policy: &dyn super::RowPolicy,
    seed: u64,
    dir: &RunDir,
) -> crate::error::Result<(Option<String>, Value)> {
    let (mut w, mut p) = (world.fork(), policy.fork());
    w.set_recording(true);
    if !w.keeps_round_records() {
        super::play_watched(w.as_mut(), p.as_mut(), seed, &mut |_| {});
    } else {
        let mut round = 0u64;
        run::write_atomic_with(&dir.file("rounds.jsonl"), |out| {
            let mut failed = None;
            super::play_watched(w.as_mut(), p.as_mut(), seed, &mut |world| {
                if let (None, Some(mut r)) = (&failed, world.round_record()) {
                    if let Some(o) = r.as_object_mut() {
                        o.insert("round".into(), round.into());
                    }
                    let line = serde_json::to_string(&r).map_err(std::io::Error::other);
                    failed = line.and_then(|l| writeln!(out, "{l}")).err();
                }
                round += 1;
            });
            failed.map_or(Ok(()), Err)
        })?;
    }
    let record = w.record();
    let Some(story) = w.story() else {
        return Ok((None, record));
    };
    for s in &story.figures {
        crate::report::plots::world_series(dir.path(), s)?;
    }
    Ok((Some(story.text), record))
}

/// `mtf simulate`: one policy (`None`: the world's own rule where it has one, else
/// `fixed:0.5`), one mechanism.
pub fn simulate(
    config: &Path,
    set: &[String],
    seed: Option<u64>,
    mechanism: Option<&str>,
    policy: Option<&str>,
    seeds: usize,
    threads: usize,
    out: Option<&Path>,
) -> crate::error::Result<Compared> {
    compare(&SeamCompare {
        config: config.to_path_buf(),
        set: set.to_vec(),
        seed,
        policies: policy.map(|p| vec![p.to_string()]).unwrap_or_default(),
        mechanisms: mechanism.map(|m| vec![m.to_string()]).unwrap_or_default(),
        seeds,
        threads,
        baseline: None,
        out: out.map(Path::to_path_buf),
        command: "simulate",
        labels: Vec::new(),
    })
}

/// `mean ± ci95` with `decimals` places (the mean alone without a CI, `-` when absent).
fn pm(s: Stat, decimals: usize) -> String {
    if !s.mean.is_finite() {
        "-".into()
    } else if s.has_ci() {
        format!("{:.d$} ± {:.d$}", s.mean, s.ci95, d = decimals)
    } else {
        format!("{:.d$}", s.mean, d = decimals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_market_compares_its_own_factors_under_each_of_its_mechanisms() {
        // configs/market/duel.toml (L learns; E at its own factor 1, bidding 0.8): L at 0.9
        // earns 11 under first price and its own factor 1 earns 10; under second price both
        // earn 12, and E, alone on the A10 after L, pays the reserve 0.5 for work worth 8 (3).
        let out = std::env::temp_dir().join(format!("mtf-seam-market-compare-{}", std::process::id()));
        std::fs::remove_dir_all(&out).ok();
        let c = compare(&SeamCompare {
            config: Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml"),
            set: Vec::new(),
            seed: None,
            policies: vec!["own,fixed:0.9".into()],
            mechanisms: vec!["first_price,second_price".into()],
            seeds: 2,
            threads: 1,
            baseline: None,
            out: Some(out.clone()),
            command: "compare",
            labels: Vec::new(),
        })
        .unwrap();
        let rows: Vec<(String, String, f64)> = c
            .rows
            .iter()
            .map(|r| (r.policy.clone(), r.mechanism.clone(), r.played[0].figures[0]))
            .collect();
        let want = [
            ("own", "first_price", 10.0),
            ("fixed:0.9", "first_price", 11.0),
            ("own", "second_price", 12.0),
            ("fixed:0.9", "second_price", 12.0),
        ];
        assert_eq!(rows.len(), want.len(), "{rows:?}");
        // The duel draws nothing from the seed: each row is one episode.
        assert!(!c.varies && c.rows.iter().all(|r| r.played.len() == 1));
        for ((p, m, u), (wp, wm, wu)) in rows.iter().zip(want) {
            assert!(p == wp && m == wm && (u - wu).abs() < 1e-9, "{rows:?}");
        }
        std::fs::remove_dir_all(&out).ok();
        // A mechanism the market does not have: one line naming the ones it has.
        let duel = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
        let market = super::super::load(&duel, &[], None, None).unwrap();
        let err = super::super::load(&duel, &[], None, Some((market.as_ref(), "stride")))
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("unknown mechanism `stride` for the market (known: second_price, first_price, mtf)"),
            "{err}"
        );
    }

    fn analyzed(config: &Path, name: &str, seeds: usize) -> Compared {
        let out = std::env::temp_dir().join(format!("mtf-seam-analyze-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&out).ok();
        let c = analyze(config, &[], None, None, None, seeds, 8, 2, Some(&out)).unwrap();
        std::fs::remove_dir_all(&out).ok();
        c
    }

    fn deviation(c: &Compared, level: f64) -> &Deviation {
        c.deviations.iter().find(|d| (d.level - level).abs() < 1e-12).unwrap()
    }

    #[test]
    fn analyze_finds_the_duels_deviations_computed_by_hand() {
        // configs/market/duel.toml, first price: L alone learns, at factor f it earns 20 - 10 f
        // when it wins (f > 0.8) and 10 when it loses, so its best response to anything is 0.9
        // (11). Its reward is utility over its job's worth (20): leaving 0.5 or 1.0 for 0.9 gains
        // 1/20, leaving 1.2 gains 3/20; at 0.9 nothing gains, the one equilibrium.
        let c = analyzed(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml"),
            "duel",
            2,
        );
        assert_eq!(c.rows[c.baseline].policy, "fixed:0.9");
        assert_eq!(c.deviations.len(), 11);
        for (x, gain) in [(0.5, 0.05), (0.9, 0.0), (1.0, 0.05), (1.2, 0.15)] {
            let d = deviation(&c, x);
            assert!((d.gain.mean - gain).abs() < 1e-12, "{d:?}");
            if gain > 0.0 {
                assert!(d.agent == "L" && (d.to - 0.9).abs() < 1e-12, "{d:?}");
            }
        }
        assert_eq!(c.equilibria(), vec![0.9]);
        // L's best response to anything is 0.9, the best fixed level: it stays, in one pass.
        let f = c.selfish.as_ref().unwrap();
        assert!(f.spec.ends_with("=0.9") && f.passes == 1 && f.converged, "{f:?}");
        let v = c.json();
        assert_eq!(v["equilibria"], json!([0.9]));
        assert!(c.markdown().contains(
            "no deviation gains beyond its 95% CI: symmetric equilibria among the levels, where selfish learners may settle): 0.9."
        ));
    }

    #[test]
    fn analyze_finds_the_bandits_deviations_in_closed_form() {
        // Without noise agent i earns 1 - (level - target)^2 a round, alone: from a common level
        // the best deviation is one agent to its group's target. From 0.3 (group 0's target)
        // agent_1 (group 1, target 0.7, there from round 1) gains 0.16 in each of 9 rounds; from
        // 0.5 agent_0 gains 0.04 in each of 10 rounds (agent_1's 0.04 x 9 is less). The targets
        // differ, so no common level is an equilibrium.
        let path = std::env::temp_dir().join(format!("mtf-analyze-bandit-{}.toml", std::process::id()));
        std::fs::write(&path, "[env]\nworld = \"bandit\"\nagents = 4\nrounds = 10\nnoise = 0.0\n").unwrap();
        let c = analyzed(&path, "bandit", 3);
        std::fs::remove_file(&path).ok();
        let d = deviation(&c, 0.3);
        assert!(
            d.agent == "agent_1" && (d.to - 0.7).abs() < 1e-12 && (d.gain.mean - 1.44).abs() < 1e-9,
            "{d:?}"
        );
        assert!(d.gain.ci95.abs() < 1e-9, "the same gain on every seed: {d:?}");
        let d = deviation(&c, 0.5);
        assert!(
            d.agent == "agent_0" && (d.to - 0.3).abs() < 1e-12 && (d.gain.mean - 0.4).abs() < 1e-9,
            "{d:?}"
        );
        assert!(c.equilibria().is_empty());
        assert!(c.markdown().contains("where selfish learners may settle): none."));
        // Iterated best responses from the best fixed level (0.5, 0.96 a round) move each group
        // to its target in one pass (1.0 a round: +0.04), and the second pass finds no gain.
        assert_eq!(c.rows[c.baseline].policy, "fixed:0.5");
        let f = c.selfish.as_ref().unwrap();
        assert_eq!((f.spec.as_str(), f.passes, f.converged), ("fixed:group_0=0.3,group_1=0.7", 2, true));
        let k = c.rows.iter().position(|r| r.policy == "selfish equilibrium").unwrap();
        assert!((c.improvement(k).mean - 0.04).abs() < 1e-9, "{:?}", c.improvement(k));
        assert_eq!(c.json()["selfish"]["spec"], "fixed:group_0=0.3,group_1=0.7");
        assert!(c
            .markdown()
            .contains("The selfish equilibrium (row `selfish equilibrium`): fixed:group_0=0.3,group_1=0.7 after 2 passes"));
    }

    /// Gavel's jobs arrive over the episode: its one group's representative is a job from the
    /// middle (the first meets an empty cluster, where no level changes its return). Under
    /// its welfare reward every job is paid the same, so there is no selfish equilibrium to
    /// report (it was reported, as the team's best response, before the review of 2026-12-02).
    #[test]
    fn gavels_selfish_equilibrium_is_searched_by_a_job_that_meets_the_others() {
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gavel/learn.toml");
        let mut world = super::super::load(&config, &[], None, None).unwrap();
        let reps = env::worlds::selfish::representatives(world.as_mut(), 1);
        let jobs = world.possible();
        assert!(jobs > 2 && reps == [Some(jobs / 2)], "{reps:?} of {jobs}");
        let out = std::env::temp_dir().join(format!("mtf-seam-gavel-welfare-{}", std::process::id()));
        std::fs::remove_dir_all(&out).ok();
        let set = ["env.reward=\"welfare\"".to_string()];
        let c = analyze(&config, &set, None, None, None, 1, 8, 2, Some(&out)).unwrap();
        std::fs::remove_dir_all(&out).ok();
        assert!(c.selfish.is_none() && !c.rows.iter().any(|r| r.policy == "selfish equilibrium"));
        assert!(!c.deviations.is_empty(), "the deviations stay");
    }

    #[test]
    fn simulate_logs_gavels_rounds_where_each_job_ran() {
        // configs/gavel/small.toml replays a trace under max-min fairness: every round's
        // running jobs hold at most the cluster's GPUs of each type, and every job of the
        // trace runs in some round.
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gavel/small.toml");
        let out = std::env::temp_dir().join(format!("mtf-seam-gavel-log-{}", std::process::id()));
        std::fs::remove_dir_all(&out).ok();
        let c = simulate(&config, &[], None, None, Some("fixed:0.5"), 1, 1, Some(&out)).unwrap();
        let world = super::super::load(&config, &[], None, None).unwrap();
        let cluster: Vec<(String, u64)> = world.config()["env"]["cluster"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| (g["type"].as_str().unwrap().to_string(), g["count"].as_integer().unwrap() as u64))
            .collect();
        let log = std::fs::read_to_string(c.dir.join("rounds.jsonl")).unwrap();
        let mut ran = std::collections::BTreeSet::new();
        let mut last_end = 0.0;
        for (k, line) in log.lines().enumerate() {
            let r: Value = serde_json::from_str(line).unwrap();
            assert_eq!(r["round"], k as u64);
            let (start, end) = (r["start_h"].as_f64().unwrap(), r["end_h"].as_f64().unwrap());
            assert!(start >= last_end - 1e-9 && end >= start, "{r}");
            last_end = end;
            for (ty, count) in &cluster {
                let held: u64 = r["running"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|j| j["type"] == ty.as_str())
                    .map(|j| j["gpus"].as_u64().unwrap())
                    .sum();
                assert!(held <= *count, "{ty}: {held} of {count}: {r}");
            }
            for j in r["running"].as_array().unwrap() {
                ran.insert(j["job"].as_str().unwrap().to_string());
            }
        }
        assert_eq!(ran.len(), world.possible(), "every job ran");
        // Generated jobs arriving far apart (learn.toml at 0.02 jobs/h): the world jumps over
        // the gaps, and a round with no job is logged with none (it repeated the last round's
        // jobs, still holding their GPUs, before 2026-11-29).
        let sparse = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gavel/learn.toml");
        let set = [
            "env.generate.rate=0.02".to_string(),
            "env.generate.jobs=6".into(),
            "env.window=[0, 6]".into(),
        ];
        let c = simulate(&sparse, &set, None, None, Some("fixed:0.5"), 1, 1, Some(&out.join("sparse"))).unwrap();
        let log = std::fs::read_to_string(c.dir.join("rounds.jsonl")).unwrap();
        let rounds: Vec<Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(rounds.iter().any(|r| r["jobs"] == 0), "{log}");
        for r in &rounds {
            assert!(r["running"].as_array().unwrap().len() as u64 <= r["jobs"].as_u64().unwrap(), "{r}");
        }
        std::fs::remove_dir_all(&out).ok();
    }

    #[test]
    fn simulate_logs_the_markets_rounds_and_tells_the_papers_example() {
        // configs/market/laissezcloud-example.toml: the paper's example, its arrivals given.
        // Through the seam every tenant plays its own factor (`own`); the round log holds each
        // round's prices and tenants (env/src/market/tests.rs asserts every round of the
        // market itself; before 2026-11-29 this test held the log equal to the market's own
        // `mtf simulate`, since removed).
        let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/laissezcloud-example.toml");
        let base = std::env::temp_dir().join(format!("mtf-seam-round-log-{}", std::process::id()));
        std::fs::remove_dir_all(&base).ok();
        let seam = simulate(&config, &[], None, None, None, 2, 1, Some(&base.join("seam"))).unwrap();
        let a: Vec<Value> = std::fs::read_to_string(seam.dir.join("rounds.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(a.len(), 10);
        assert_eq!(a[3]["round"], 3);
        // Round 1: B wins the A10 at A's bid, 0.687; A runs on the Trainium on demand.
        assert_eq!(a[1]["prices"][0], 0.687);
        assert_eq!(a[1]["tenants"][1]["place"]["on_demand"], 2);
        assert_eq!(a[1]["tenants"][2]["place"]["unit"], 0);
        // And its story: the round table and totals (round 1: B on the A10 at A's bid; round
        // 3: A waits on the Trainium for its reserved A10), and its figures.
        let md = seam.markdown();
        assert!(
            md.contains("| 1 | 0.6870 | 0.3912 | 0.8040 | L4 at 0.3912 | Trainium at 0.8040 | A10 at 0.6870 |"),
            "{md}"
        );
        assert!(
            md.contains("| 3 | 0.6520 | 0.3912 | 0.8040 | done | Trainium at 0.8040 (A10 reserved) | L4 at 0.3912 |"),
            "{md}"
        );
        for f in ["prices.png", "prices.svg", "cost_per_work.png", "config.toml"] {
            assert!(seam.dir.join(f).is_file(), "{f}");
        }
        // The episode's record: the market's figures (2 of 3 jobs finish in the 10 rounds).
        assert_eq!(seam.json()["metrics"]["finished"], 2);
        assert_eq!(seam.json()["metrics"]["rounds"], 10);
        // A world that keeps no round record writes no log.
        let bandit = base.join("bandit.toml");
        std::fs::write(&bandit, "[env]\nworld = \"bandit\"\nagents = 2\nrounds = 3\n").unwrap();
        let c = simulate(&bandit, &[], None, None, Some("fixed:0.3"), 1, 1, Some(&base.join("b"))).unwrap();
        assert!(c.dir.join("summary.json").exists() && !c.dir.join("rounds.jsonl").exists());
        std::fs::remove_dir_all(&base).ok();
    }

    #[test]
    fn a_policy_that_draws_is_played_on_every_seed_of_a_world_that_replays_one_trace() {
        // configs/gavel/small.toml replays one trace: under MTF with every job at 0.5 each seed
        // is the same episode (played once), but uniform play draws its levels from the seed:
        // played once, its one draw was stated as if it were the policy's value, with no spread
        // (before 2026-11-29).
        let out = std::env::temp_dir().join(format!("mtf-seam-draws-{}", std::process::id()));
        std::fs::remove_dir_all(&out).ok();
        let spec = |policies: &str, name: &str| SeamCompare {
            config: Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gavel/small.toml"),
            policies: vec![policies.into()],
            mechanisms: vec!["mtf".into()],
            seeds: 4,
            threads: 2,
            out: Some(out.join(name)),
            command: "compare",
            ..SeamCompare::default()
        };
        let fixed = compare(&spec("fixed:0.5", "fixed")).unwrap();
        assert_eq!(fixed.rows[0].played.len(), 1);
        assert!(!fixed.varies);
        let both = compare(&spec("uniform,fixed:0.5", "both")).unwrap();
        assert!(both.varies && both.rows.iter().all(|r| r.played.len() == 4));
        let jct: Vec<f64> = both.rows[0].played.iter().map(|p| p.figures[both.headline]).collect();
        assert!(jct.windows(2).any(|w| w[0] != w[1]), "uniform's draws differ by seed: {jct:?}");
        assert!(both.rows[1].played.iter().all(|p| p.figures == fixed.rows[0].played[0].figures));
        std::fs::remove_dir_all(&out).ok();
    }
}

//! Training replicates as one run group (`train.replicates = R`, `mtf train --replicates R`):
//! `<group>/replicate-K/` for K in 0..R, each an ordinary run directory whose training seed is
//! the root seed's `replicate` stream K (replicate 0 trains with the root seed itself, so it is
//! the run a plain `mtf train` makes), and `<group>/summary.json` with the statistics across
//! replicates.
//!
//! Replicates train side by side on `--threads` workers, each on one thread: a replicate's
//! results do not depend on how many run at once. Every replicate is then evaluated greedy and
//! sampled on the same held-out seeds as the baseline — the best fixed level, picked on
//! selection seeds — and each replicate's score is its paired mean difference to the baseline
//! over those seeds; the group reports their interquartile mean with a bootstrap interval over
//! replicates and the probability of improvement ([`crate::report::stats`]). A sweep's hook sees
//! replicate 0's episodes (its pruner follows that curve); stopping it stops every replicate.

use super::{load_run, resume as resume_run, start as start_run, train, Opened, Outcome, TrainSpec, Trained};
use crate::config::Experiment;
use crate::error::user;
use crate::learners::wrap::{Layered, Sample};
use crate::learners::{Fixed, Policy};
use crate::report::stats::Replicates;
use crate::run::{self, RunDir};
use env::eval::{episode_seeds, evaluate, selection_seeds, Stat};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Whether `dir` is a run group.
pub fn is_group(dir: &Path) -> bool {
    RunDir::at(dir).is_group()
}

/// The replicates' run directories of the group at `dir`, in order: every one of the
/// `train.replicates` its `config.toml` says it has. A replicate deleted, or replaced by a file
/// or a link, is an error naming it (such a group was read as a smaller one, silently).
pub fn replicates(dir: &Path) -> crate::error::Result<Vec<PathBuf>> {
    let group = RunDir::at(dir);
    let text = run::read_text(&group.config(), 1 << 24)?;
    let expected = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("train")?.get("replicates")?.as_integer())
        .filter(|&r| r >= 1)
        .ok_or_else(|| crate::error::run_dir(&group.config(), "a run group's config.toml without train.replicates"))?;
    (0..expected as usize)
        .map(|k| {
            let p = group.replicate(k);
            let real_dir = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
            let config = std::fs::symlink_metadata(RunDir::at(&p).config()).is_ok_and(|m| m.is_file());
            if real_dir && config {
                // Its config must read, and be this replicate's (a replicate swapped for
                // another run's, or a config that does not parse, was read as one).
                let own = RunDir::at(&p).config();
                let table = run::read_text(&own, run::MAX_TEXT)?
                    .parse::<toml::Table>()
                    .map_err(|e| crate::error::run_dir(&own, format!("replicate {k}'s config.toml does not parse: {}", e.message())))?;
                let index = table.get("train").and_then(|t| t.get("replicate")).and_then(|v| v.as_integer()).unwrap_or(0);
                if index != k as i64 {
                    return Err(crate::error::run_dir(
                        &own,
                        format!("says train.replicate = {index}, where replicate {k} of the group is expected: a replicate swapped for another run is refused"),
                    ));
                }
                Ok(p)
            } else {
                Err(crate::error::run_dir(
                    &p,
                    format!("replicate {k} of the group's {expected} is missing or not a run directory: a damaged group is refused rather than read as a smaller one (restore it, or train the group again)"),
                ))
            }
        })
        .collect()
}

/// A run group's `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    /// Replicates.
    pub replicates: usize,
    /// Their run directories.
    pub runs: Vec<String>,
    /// The baseline every replicate is paired with: the best fixed level on selection seeds.
    pub baseline: Baseline,
    /// Held-out evaluation episodes (the same seeds for every replicate and the baseline).
    pub eval_seeds: usize,
    /// Each replicate's greedy held-out welfare, mean and 95% CI over replicates.
    pub eval_welfare: Stat,
    /// The same, drawing actions as in training.
    pub eval_sampled_welfare: Stat,
    /// Every replicate against the baseline: greedy and sampled.
    pub vs_baseline: VsBaseline,
    /// Every replicate as trained (sampled for a learner that draws its actions, else greedy)
    /// against uniform random play, sampled: the floor a learner must beat.
    pub vs_uniform: Replicates,
    /// Uniform random play's held-out figure.
    pub uniform_welfare: Stat,
    /// How the replicates are judged: `sampled` (they draw their actions in training) or
    /// `greedy`.
    pub scored: &'static str,
    /// Replicates whose sampled policy is near-uniform (its greedy figure an argmax of noise).
    pub near_uniform: usize,
    /// Wall seconds the group took to train and evaluate.
    pub seconds: f64,
    /// The figure the `eval_*welfare` fields and the scores hold: `welfare`, or in the
    /// valuation world (which has no jobs) `surplus_per_bidder_item`.
    pub figure: &'static str,
}

/// The baseline of a run group.
#[derive(Debug, Clone, Serialize)]
pub struct Baseline {
    /// Its policy spec (`fixed:X`).
    pub policy: String,
    /// Selection episodes it was picked on.
    pub select_seeds: usize,
    /// Its held-out welfare.
    pub eval_welfare: Stat,
}

/// The replicates' scores against the baseline (welfare, jobs per round, paired on seeds).
#[derive(Debug, Clone, Serialize)]
pub struct VsBaseline {
    /// Greedy.
    pub greedy: Replicates,
    /// Sampled.
    pub sampled: Replicates,
}

impl std::fmt::Display for GroupSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let figure = self.figure.replace('_', " ");
        if self.scored == "sampled" {
            // As trained first; the argmax second, marked when it is one of noise.
            writeln!(
                f,
                "{} replicates; held-out {figure} over replicates {} sampled (as trained), {} greedy; baseline {} {:.3}",
                self.replicates,
                self.eval_sampled_welfare.pm(3),
                self.eval_welfare.pm(3),
                self.baseline.policy,
                self.baseline.eval_welfare.mean
            )?;
            writeln!(
                f,
                "  sampled minus baseline: IQM {} (95% bootstrap CI over replicates)",
                self.vs_baseline.sampled.cell()
            )?;
            writeln!(
                f,
                "  greedy minus baseline:  IQM {}{}",
                self.vs_baseline.greedy.cell(),
                if self.near_uniform > 0 {
                    format!(
                        " ({} of {} replicates near-uniform: their greedy figures are argmaxes of noise)",
                        self.near_uniform, self.replicates
                    )
                } else {
                    String::new()
                }
            )?;
        } else {
            writeln!(
                f,
                "{} replicates; held-out {figure} over replicates {}; baseline {} {:.3}",
                self.replicates,
                self.eval_welfare.pm(3),
                self.baseline.policy,
                self.baseline.eval_welfare.mean
            )?;
            writeln!(
                f,
                "  minus baseline: IQM {} (95% bootstrap CI over replicates)",
                self.vs_baseline.greedy.cell()
            )?;
        }
        writeln!(
            f,
            "  minus uniform random play ({:.3}): IQM {}",
            self.uniform_welfare.mean,
            self.vs_uniform.cell()
        )
    }
}

/// The shape of a group's `summary.json`: every key it holds, numbers as 0 (what a sweep's
/// objective is checked against before any trial runs).
pub fn summary_shape() -> serde_json::Value {
    let none = Replicates::of(&[0.0], 0);
    serde_json::to_value(GroupSummary {
        replicates: 0,
        runs: Vec::new(),
        baseline: Baseline {
            policy: String::new(),
            select_seeds: 0,
            eval_welfare: Stat::default(),
        },
        eval_seeds: 0,
        eval_welfare: Stat::default(),
        eval_sampled_welfare: Stat::default(),
        vs_baseline: VsBaseline {
            greedy: none.clone(),
            sampled: none.clone(),
        },
        vs_uniform: none,
        uniform_welfare: Stat::default(),
        scored: "sampled",
        near_uniform: 0,
        seconds: 0.0,
        figure: "welfare",
    })
    .expect("a group summary serialises")
}

/// A new group of `exp`'s replicates in `dir`.
pub fn start(exp: Experiment, dir: RunDir, args: &TrainSpec) -> crate::error::Result<Trained> {
    run::write_atomic(&dir.config(), exp.to_toml().as_bytes())?;
    let runs = (0..exp.train.replicates)
        .map(|k| {
            let path = dir.replicate(k);
            Ok(Ok(start_run(
                replicate(&exp, k),
                RunDir::create(Some(&path), &format!("replicate-{k}"))?,
            )?))
        })
        .collect::<crate::error::Result<Vec<_>>>()?;
    train_all(exp, dir, runs, args)
}

/// The group at `path`, resumed: each replicate from its last checkpoint (those complete as
/// they are, those never started from scratch).
pub fn resume(path: &Path, args: &TrainSpec) -> crate::error::Result<Trained> {
    let dir = RunDir::open(path)?;
    let exp = Experiment::load(&dir.config(), &super::run_config_sets(&dir.config())).map_err(|e| user(e.to_string()))?;
    // The group's config.toml edited since its replicates started was read for the group's
    // references only (the replicates resumed from their own: issue 40.8, exit 0 on a changed
    // env.rounds). A change is refused unless allowed, and an allowed one reaches every
    // replicate's config.toml (which this group wrote) before it resumes.
    let mut rewrites = Vec::new();
    for k in 0..exp.train.replicates {
        let own = RunDir::at(&dir.replicate(k)).config();
        let Ok(text) = std::fs::read_to_string(&own) else {
            continue;
        };
        let want = replicate(&exp, k).to_toml();
        super::refuse_changes(
            &dir.config(),
            &text,
            &want,
            &args.allow_config_change,
            &format!("replicate-{k}'s config.toml"),
        )?;
        if text != want {
            rewrites.push((own, want));
        }
    }
    for (own, want) in rewrites {
        run::write_atomic(&own, want.as_bytes())?;
    }
    let runs = (0..exp.train.replicates)
        .map(|k| {
            let p = dir.replicate(k);
            if RunDir::at(&p).config().exists() {
                resume_run(&p, &args.allow_config_change)
            } else {
                Ok(Ok(start_run(
                    replicate(&exp, k),
                    RunDir::create(Some(&p), &format!("replicate-{k}"))?,
                )?))
            }
        })
        .collect::<crate::error::Result<Vec<_>>>()?;
    train_all(exp, dir, runs, args)
}

/// Replicate `k` of the group's experiment: one run, its own training seed.
fn replicate(exp: &Experiment, k: usize) -> Experiment {
    let mut e = exp.clone();
    e.train.replicates = 1;
    e.train.replicate = k as u64;
    e
}

/// Train every replicate side by side, then summarise the group.
fn train_all(exp: Experiment, dir: RunDir, runs: Vec<Result<Opened, Trained>>, args: &TrainSpec) -> crate::error::Result<Trained> {
    let started = Instant::now();
    let threads = args.threads.unwrap_or(exp.train.threads);
    let total = exp.train.episodes * runs.len() as u64;
    let bar = super::progress_bar(total, "replicates: episode {pos}/{len} [{bar:30}] ETA {eta}", args.quiet);
    let stop = Arc::new(AtomicBool::new(false));
    // Plain threads, not a rayon pool: a replicate runs a pool of its own, and a rayon worker
    // blocked in it would take up a queued replicate inside it (`env::par::on_workers`).
    let outcomes: Vec<crate::error::Result<Trained>> = env::par::on_workers(threads, runs, |_, k, run| match run {
        Err(complete) => Ok(complete),
        Ok(opened) => {
            let (bar, stop, user_hook) = (bar.clone(), Arc::clone(&stop), args.on_episode.clone());
            let hook = move |log: &super::EpisodeLog| -> crate::error::Result<bool> {
                bar.inc(1);
                if stop.load(Ordering::Relaxed) {
                    return Ok(true);
                }
                let halt = match (&user_hook, k) {
                    (Some(h), 0) => (h.0)(log)?,
                    _ => false,
                };
                if halt {
                    stop.store(true, Ordering::Relaxed);
                }
                Ok(halt)
            };
            let each = TrainSpec {
                threads: Some(1),
                quiet: true,
                on_episode: Some(super::EpisodeHook(Arc::new(hook))),
                ..TrainSpec::default()
            };
            train(opened, &each)
        }
    });
    bar.finish_and_clear();
    let trained = outcomes.into_iter().collect::<crate::error::Result<Vec<Trained>>>()?;
    if let Some(after) = trained
        .iter()
        .filter_map(|t| match t.outcome {
            Outcome::Stopped { after } => Some(after),
            _ => None,
        })
        .min()
    {
        return Ok(Trained {
            dir: dir.path().to_path_buf(),
            outcome: Outcome::Stopped { after },
            summary: None,
        });
    }
    let paths: Vec<PathBuf> = trained.iter().map(|t| t.dir.clone()).collect();
    let mut summary = summarize(&exp, &paths, threads)?;
    summary.seconds = started.elapsed().as_secs_f64();
    let json = serde_json::to_value(&summary)?;
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&json)?.as_bytes())?;
    Ok(Trained {
        dir: dir.path().to_path_buf(),
        outcome: Outcome::Group(Box::new(summary)),
        summary: Some(json),
    })
}

/// Evaluate the baseline and every replicate (greedy and sampled) on the held-out seeds and
/// reduce them across replicates.
pub fn summarize(exp: &Experiment, runs: &[PathBuf], threads: usize) -> crate::error::Result<GroupSummary> {
    let sc = &exp.scenario;
    let root = sc.file.seed;
    let (held, select) = (
        episode_seeds(root, exp.train.eval_seeds),
        selection_seeds(root, exp.train.eval_seeds),
    );
    let welfare = |policy: &dyn Policy, seeds: &[u64]| super::references::headlines(sc, policy, seeds, threads);
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let best = super::references::best_fixed_level(sc, &select, threads);
    let base = welfare(&Fixed { level: best }, &held);
    let (mut greedy, mut sampled, mut near_uniform) = (Vec::new(), Vec::new(), 0);
    for run in runs {
        let (run_exp, learner, _) = load_run(run, false)?;
        super::check_fits(&format!("run:{}", run.display()), &run_exp.scenario, sc)?;
        greedy.push(welfare(learner.fork().as_ref(), &held));
        let draws = Layered::new(learner.fork(), Sample);
        let eps = evaluate(sc, &held, &draws, false, threads);
        near_uniform += usize::from(super::near_uniform(&env::eval::Summary::of(sc, &eps)));
        sampled.push(eps.iter().map(crate::report::table::headline_of).collect::<Vec<f64>>());
    }
    let paired = |runs: &[Vec<f64>]| -> Vec<f64> {
        runs.iter()
            .map(|w| mean(&w.iter().zip(&base).map(|(a, b)| a - b).collect::<Vec<_>>()))
            .collect()
    };
    let unif = welfare(&super::references::uniform_play(sc), &held);
    let stochastic = super::draws(exp.learner.kind);
    let scored = if stochastic { &sampled } else { &greedy };
    let vs_uniform: Vec<f64> = scored
        .iter()
        .map(|w| mean(&w.iter().zip(&unif).map(|(a, b)| a - b).collect::<Vec<_>>()))
        .collect();
    let boot = env::rng::stream_seed(root, "replicates-bootstrap", 0);
    let means = |runs: &[Vec<f64>]| Stat::of(&runs.iter().map(|w| mean(w)).collect::<Vec<_>>());
    Ok(GroupSummary {
        replicates: runs.len(),
        runs: runs.iter().map(|p| p.display().to_string()).collect(),
        baseline: Baseline {
            policy: crate::learners::fixed::Levels::All(sc.action_levels()[best]).spec(),
            select_seeds: select.len(),
            eval_welfare: Stat::of(&base),
        },
        eval_seeds: held.len(),
        eval_welfare: means(&greedy),
        eval_sampled_welfare: means(&sampled),
        vs_baseline: VsBaseline {
            greedy: Replicates::of(&paired(&greedy), boot),
            sampled: Replicates::of(&paired(&sampled), boot),
        },
        vs_uniform: Replicates::of(&vs_uniform, boot),
        uniform_welfare: Stat::of(&unif),
        scored: if stochastic { "sampled" } else { "greedy" },
        near_uniform,
        figure: if sc.file.env.world == env::config::World::Valuations {
            "surplus_per_bidder_item"
        } else {
            "welfare"
        },
        seconds: 0.0,
    })
}

//! `mtf analyze` on a market file (`env.world = "market"`): can learning help the `learn =
//! true` tenants, and where would selfish learners stop.
//!
//! On the evaluation seeds a market run of the file evaluates on (`train.eval_seeds` of them,
//! or `--seeds`), the learning tenants play every common level of `learner.levels`, a level
//! drawn uniformly every round, their own factors, and (with `--run`) a trained run's policies,
//! one row per replicate; every other tenant plays its own factor. Each row is stated as mean
//! and 95% CI over the seeds and as its paired difference to the best common level (the
//! baseline) over the same seeds. Below the table: the common levels no learning tenant gains
//! by leaving alone (the symmetric equilibria among the levels, which selfish learners may
//! settle on) and, per level, the most one tenant gains by deviating. The rows of a run equal
//! its own `summary.json` (the same seeds, the same greedy play; an actor's `sampled:` rows
//! its sampled figures).

use crate::error::{user, Result};
use crate::run;
use crate::train::market::{self as tm, Deviation, Learners, MarketScore, MarketTraining};
use env::eval::Stat;
use env::market::MarketFile;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One row: what the learning tenants played and how it went.
#[derive(Clone, Debug, Serialize)]
pub struct AnalysisRow {
    /// `fixed:X`, `uniform`, `own`, `run:DIR#r` (greedy) or `sampled:run:DIR#r` (an actor's
    /// draws).
    pub policy: String,
    /// Mean utility per learning tenant.
    pub utility: Stat,
    /// Welfare (the value of all finished work).
    pub welfare: Stat,
    /// What all tenants paid.
    pub paid: Stat,
    /// Utility minus the best common level's, paired over the seeds.
    pub vs_best: Stat,
    /// A run's greedy row whose actors are near-uniform where tenants decide (entropy above
    /// `env::metrics::spec::NEAR_UNIFORM` of the largest): an argmax of noise.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub near_uniform: bool,
}

/// What `mtf analyze` on a market file found; `summary.json` is it as JSON.
#[derive(Clone, Debug, Serialize)]
pub struct MarketAnalysis {
    /// The run directory.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The market file.
    pub config: String,
    /// `second_price`, `first_price` or `mtf`.
    pub mechanism: String,
    /// The evaluation seeds.
    pub seeds: Vec<u64>,
    /// Every row, the common levels first.
    pub rows: Vec<AnalysisRow>,
    /// The best common level's row.
    pub baseline: usize,
    /// Common levels no learning tenant gains by leaving alone.
    pub equilibria: Vec<f64>,
    /// Per common level, the best unilateral deviation from it.
    pub deviations: Vec<Deviation>,
}

/// Analyze the market in `config` (with `--set` overrides) on `seeds` evaluation seeds (default
/// the file's `train.eval_seeds`), with a trained run's rows when `run_dir` is given.
///
/// The root seed: `seed`, else (with a run) the run's, so its rows are the ones its summary
/// states, else the file's.
pub fn analyze_market(
    config: &Path,
    set: &[String],
    seed: Option<u64>,
    run_dir: Option<&Path>,
    seeds: Option<usize>,
    out: Option<&Path>,
) -> Result<MarketAnalysis> {
    let path = config.display().to_string();
    let mut raw = MarketFile::load_unexpanded(config, set)?;
    let run_seed = match run_dir {
        Some(d) => Some(
            crate::train::market::TrainedMarket::load(d)
                .map_err(|e| user(format!("--run {}: {e}", d.display())))?
                .raw
                .seed,
        ),
        None => None,
    };
    if let Some(s) = seed.or(run_seed) {
        raw.seed = s;
    }
    let tr = MarketTraining::of(&raw, &path)?;
    let base = raw.at_seed(raw.seed);
    let ls = Learners::of(&base, &raw);
    let seeds = tm::eval_seeds(&raw, seeds.unwrap_or(tr.train.eval_seeds));
    let files: Vec<MarketFile> = seeds.iter().map(|&s| raw.at_seed(s)).collect();
    crate::train::memory::check(&crate::train::memory::market_evaluation(&base, false), "this analysis")?;
    let levels = &tr.learner.levels;
    // (policy, scores per seed, near-uniform greedy actors)
    let mut played: Vec<(String, Vec<MarketScore>, bool)> = levels
        .iter()
        .enumerate()
        .map(|(k, &x)| Ok((format!("fixed:{x}"), tm::level_scores(&raw, &ls, levels, k, &seeds)?, false)))
        .collect::<Result<_>>()?;
    played.push(("uniform".into(), tm::uniform_scores(&raw, &ls, levels, raw.seed, &seeds)?, false));
    played.push(("own".into(), tm::own_scores(&files, &ls), false));
    if let Some(dir) = run_dir {
        let spec = format!("run:{}", dir.display());
        let trained = super::market::trained_run(dir, &base, &format!("--run {}", dir.display()))?;
        if trained.who != ls.who {
            return Err(user(format!("--run {}: its learning tenants are not this file's", dir.display())));
        }
        let mut world = trained.world(&raw)?;
        // Greedy, then (actors) drawing as they trained: a replicate's greedy row is marked
        // where its actors are near-uniform, an argmax of noise.
        for sampled in [false, true] {
            for r in 0..trained.policies.replicates.len() {
                let mut acting = trained.acting(r, sampled);
                let scores = tm::play_seeds(&mut world, &mut acting, &ls, &seeds);
                let share = acting.entropy_share();
                if sampled && share.is_none() {
                    break; // Hedge's levels: nothing to draw.
                }
                let noise = !sampled && share.is_some_and(|e| e > env::metrics::spec::NEAR_UNIFORM);
                let name = if sampled {
                    format!("sampled:{spec}#{r}")
                } else {
                    format!("{spec}#{r}")
                };
                played.push((name, scores, noise));
            }
        }
    }
    let mean = |s: &[MarketScore]| MarketScore::mean(s).utility;
    let baseline = crate::learners::argmax(played[..levels.len()].iter().map(|(_, s, _)| mean(s)));
    let stat = |s: &[MarketScore], f: fn(&MarketScore) -> f64| Stat::of(&s.iter().map(f).collect::<Vec<_>>());
    let best = played[baseline].1.clone();
    let rows = played
        .iter()
        .map(|(policy, s, near_uniform)| AnalysisRow {
            policy: policy.clone(),
            near_uniform: *near_uniform,
            utility: stat(s, |x| x.utility),
            welfare: stat(s, |x| x.welfare),
            paid: stat(s, |x| x.paid),
            vs_best: Stat::of(&s.iter().zip(&best).map(|(a, b)| a.utility - b.utility).collect::<Vec<_>>()),
        })
        .collect();
    let deviations = tm::deviations(&files, &ls, levels);
    let dir = run::RunDir::create(out, &format!("analyze-{}", run::stem(config)))?;
    run::write_atomic(&dir.config(), toml::to_string(&raw).map_err(|e| user(format!("{e}")))?.as_bytes())?;
    let done = MarketAnalysis {
        dir: dir.path().to_path_buf(),
        config: path,
        mechanism: serde_json::to_value(raw.mechanism.kind)?.as_str().unwrap_or("").to_string(),
        seeds,
        rows,
        baseline,
        equilibria: deviations.iter().filter(|d| d.gain <= 1e-9).map(|d| d.level).collect(),
        deviations,
    };
    run::write_atomic(&dir.path().join("analysis.md"), format!("{done}").as_bytes())?;
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&done)?.as_bytes())?;
    Ok(done)
}

impl std::fmt::Display for MarketAnalysis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let best = &self.rows[self.baseline].policy;
        writeln!(
            f,
            "mtf analyze: {} (market, {}), the learning tenants' policies on {} evaluation seeds",
            self.config,
            self.mechanism,
            self.seeds.len()
        )?;
        writeln!(
            f,
            "| learning tenants play | utility per learning tenant | welfare | paid | vs {best} (utility, + better) |"
        )?;
        writeln!(f, "|---|---:|---:|---:|---:|")?;
        for (k, r) in self.rows.iter().enumerate() {
            let vs = if k == self.baseline {
                "baseline".to_string()
            } else {
                let star = if r.vs_best.ci95.is_finite() && r.vs_best.mean.abs() > r.vs_best.ci95 {
                    " *"
                } else {
                    ""
                };
                format!("{}{star}", r.vs_best.signed_pm(3))
            };
            writeln!(
                f,
                "| {}{} | {} | {} | {} | {vs} |",
                r.policy,
                if r.near_uniform { " (near-uniform)" } else { "" },
                r.utility.pm(3),
                r.welfare.pm(1),
                r.paid.pm(1)
            )?;
        }
        writeln!(
            f,
            "\nOthers play their own factors. Last column: the paired difference over the same seeds, `*` where its 95% CI excludes 0."
        )?;
        let eq: Vec<String> = self.equilibria.iter().map(|x| x.to_string()).collect();
        writeln!(
            f,
            "Common levels no learning tenant gains by leaving alone (where selfish learners may stop): [{}]",
            eq.join(", ")
        )?;
        for d in self.deviations.iter().filter(|d| d.gain > 1e-9) {
            writeln!(f, "- from {}: {} gains {:.3} by playing {}", d.level, d.tenant, d.gain, d.to)?;
        }
        writeln!(f, "run directory: {}", self.dir.display())
    }
}

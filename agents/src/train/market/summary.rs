//! A market run's outcome: its replicates against the references, over replicates
//! (`summary.json`), TensorBoard's summary scalars, `episodes.csv`, the learning curve's figure
//! and the console report.

use super::{deviations, level_scores, own_scores, tb_writer, uniform_scores, Deviation, Learners, MarketScore, MarketTraining, TbWriter};
use crate::error::Result;
use crate::learners::LearnerKind;
use crate::run;
use crate::train::market_policy::GroupPolicies;
use env::eval::Stat;
use env::market::MarketFile;
use env::rng::stream_seed;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;

/// A market run's `summary.json` with its numbers zero (what a sweep's objective may name);
/// `sampled`: the run's learner draws its levels (not Hedge), so `sampled` is there.
pub fn summary_shape(sampled: bool) -> serde_json::Value {
    let stat = serde_json::to_value(Stat { mean: 0.0, ci95: 0.0 }).expect("plain numbers");
    let score = serde_json::to_value(MarketScore::default()).expect("plain numbers");
    let reps = serde_json::to_value(crate::report::stats::Replicates {
        scores: Vec::new(),
        mean: 0.0,
        iqm: 0.0,
        iqm_ci: [0.0, 0.0],
        prob_improvement: 0.0,
        prob_improvement_ci: [0.0, 0.0],
    })
    .expect("plain numbers");
    let mut shape = serde_json::json!({
        "utility": stat, "welfare": stat, "paid": stat,
        "own": score, "best": score, "uniform": score, "best_level": 0.0,
        "vs_best_level": reps, "vs_uniform": reps,
        "learning_tenants": 0, "episodes": 0,
    });
    if sampled {
        shape["sampled"] = serde_json::json!({
            "utility": stat, "welfare": stat, "paid": stat,
            "vs_best_level": reps, "vs_uniform": reps, "near_uniform": 0,
        });
    }
    shape
}

/// One replicate's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct MarketReplicate {
    /// Its training seed.
    pub seed: u64,
    /// Greedy evaluation, mean over the evaluation seeds.
    pub eval: MarketScore,
    /// The actors drawing their levels as they trained (PPO, ES, the actor-critic), the same
    /// seeds; Hedge keeps one level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<MarketScore>,
    /// The actors' mean entropy share (entropy over `ln K`) at the decision rounds of the
    /// sampled evaluation; above `env::metrics::spec::NEAR_UNIFORM`, near-uniform.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entropy_share: Option<f64>,
    /// The level each group plays greedily (Hedge), or its mean level at its tenants'
    /// decision rounds (PPO, ES), in group order.
    pub levels: Vec<f64>,
    /// The sampled training episodes' scores (copy 0's under PPO and ES).
    #[serde(skip)]
    pub curve: Vec<MarketScore>,
    /// Its policies (kept in the run's last checkpoint).
    #[serde(skip)]
    pub policy: GroupPolicies,
}

/// What `mtf train` on a market file produced; `summary.json` is it as JSON.
#[derive(Clone, Debug, Serialize)]
pub struct MarketTrained {
    /// The run directory.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The config file.
    pub config: String,
    /// `second_price`, `first_price` or `mtf`.
    pub mechanism: String,
    /// The learner registry's kind: `hedge`, `ppo`, `es` or `actor_critic`.
    pub learner: LearnerKind,
    /// The levels learners chose among.
    pub levels: Vec<f64>,
    /// Learning groups (the file's tenant entries with `learn = true`).
    pub groups: Vec<String>,
    /// Accelerator types in the market.
    pub types: usize,
    /// Learning tenants.
    pub learning_tenants: usize,
    /// Training episodes per replicate.
    pub episodes: u64,
    /// Evaluation seeds.
    pub eval_seeds: Vec<u64>,
    /// Per replicate.
    pub replicates: Vec<MarketReplicate>,
    /// Learners' mean utility per tenant, greedy, over replicates.
    pub utility: Stat,
    /// Welfare over replicates.
    pub welfare: Stat,
    /// What all tenants paid, over replicates.
    pub paid: Stat,
    /// The learners drawing a level uniformly at random every round, same seeds.
    pub uniform: MarketScore,
    /// The learners as economic agents (their own factors), same seeds.
    pub own: MarketScore,
    /// The best common level for all learners, and its figures, same seeds.
    pub best_level: f64,
    /// Its figures.
    pub best: MarketScore,
    /// Per level (all learners at it), same seeds.
    pub by_level: Vec<MarketScore>,
    /// Each replicate's greedy utility minus the best common level's (the same seeds): their
    /// IQM, bootstrap CI and probability of improvement, as run groups state them.
    pub vs_best_level: crate::report::stats::Replicates,
    /// The same against uniform random play.
    pub vs_uniform: crate::report::stats::Replicates,
    /// Learners that draw their levels (PPO, ES, the actor-critic): the same figures with each
    /// replicate's actors drawing as they trained, the same seeds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampled: Option<MarketSampled>,
    /// With `train.deviations`: per common level, the best unilateral deviation from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deviations: Option<Vec<Deviation>>,
}

/// A market run's learned figures with its actors drawing their levels (scored as they
/// trained), over replicates.
#[derive(Clone, Debug, Serialize)]
pub struct MarketSampled {
    /// Learners' mean utility per tenant.
    pub utility: Stat,
    /// Welfare.
    pub welfare: Stat,
    /// What all tenants paid.
    pub paid: Stat,
    /// Each replicate's utility minus the best common level's.
    pub vs_best_level: crate::report::stats::Replicates,
    /// The same against uniform random play.
    pub vs_uniform: crate::report::stats::Replicates,
    /// Replicates whose actors are near-uniform (their greedy figures an argmax of noise).
    pub near_uniform: usize,
}

/// The trained replicates against the references on the evaluation seeds (every common
/// level, uniform play, every tenant's own factor), over replicates.
pub(super) fn summarise(
    raw: &MarketFile,
    tr: &MarketTraining,
    dir: &run::RunDir,
    config: String,
    ls: &Learners,
    eval_seeds: Vec<u64>,
    reps: Vec<MarketReplicate>,
) -> Result<MarketTrained> {
    let levels = &tr.learner.levels;
    let eval_files: Vec<MarketFile> = eval_seeds.iter().map(|&s| raw.at_seed(s)).collect();
    let by_level: Vec<MarketScore> = (0..levels.len())
        .map(|k| Ok(MarketScore::mean(&level_scores(raw, ls, levels, k, &eval_seeds)?)))
        .collect::<Result<_>>()?;
    let best = crate::learners::argmax(by_level.iter().map(|s| s.utility));
    let stat = |f: fn(&MarketScore) -> f64| Stat::of(&reps.iter().map(|r| f(&r.eval)).collect::<Vec<_>>());
    let uniform = MarketScore::mean(&uniform_scores(raw, ls, levels, raw.seed, &eval_seeds)?);
    let against = |of: &[MarketScore], x: f64, k: u64| {
        let scores: Vec<f64> = of.iter().map(|s| s.utility - x).collect();
        crate::report::stats::Replicates::of(&scores, stream_seed(raw.seed, "market-bootstrap", k))
    };
    let greedy: Vec<MarketScore> = reps.iter().map(|r| r.eval).collect();
    let (vs_best_level, vs_uniform) = (against(&greedy, by_level[best].utility, 0), against(&greedy, uniform.utility, 1));
    let drawn: Option<Vec<MarketScore>> = reps.iter().map(|r| r.sampled).collect();
    let sampled = drawn.filter(|d| !d.is_empty()).map(|d| {
        let of = |f: fn(&MarketScore) -> f64| Stat::of(&d.iter().map(f).collect::<Vec<_>>());
        MarketSampled {
            utility: of(|s| s.utility),
            welfare: of(|s| s.welfare),
            paid: of(|s| s.paid),
            vs_best_level: against(&d, by_level[best].utility, 2),
            vs_uniform: against(&d, uniform.utility, 3),
            near_uniform: reps
                .iter()
                .filter(|r| r.entropy_share.is_some_and(|e| e > env::metrics::spec::NEAR_UNIFORM))
                .count(),
        }
    });
    Ok(MarketTrained {
        dir: dir.path().to_path_buf(),
        config,
        mechanism: serde_json::to_value(raw.mechanism.kind)?.as_str().unwrap_or("").to_string(),
        learner: tr.learner.section.kind,
        levels: levels.clone(),
        groups: ls.names.clone(),
        types: raw.market.types.len(),
        learning_tenants: ls.who.len(),
        episodes: tr.train.episodes,
        eval_seeds,
        utility: stat(|s| s.utility),
        welfare: stat(|s| s.welfare),
        paid: stat(|s| s.paid),
        uniform,
        vs_best_level,
        vs_uniform,
        sampled,
        own: MarketScore::mean(&own_scores(&eval_files, ls)),
        best_level: levels[best],
        best: by_level[best],
        by_level,
        replicates: reps,
        deviations: tr.train.deviations.then(|| deviations(&eval_files, ls, levels)),
    })
}

/// Each replicate's greedy (and sampled) evaluation against the references, and the HPARAMS
/// tab's end (a replicate finished before a resume gets them in a new event file of its run).
pub(super) fn tb_summary(dir: &run::RunDir, done: &MarketTrained, writers: &mut [Option<TbWriter>], copies: u64) -> Result<()> {
    for (r, rep) in done.replicates.iter().enumerate() {
        let mut tb = match writers[r].take() {
            Some(w) => w,
            None => tb_writer(dir, r)?,
        };
        let step = done.episodes * copies;
        for (tag, v) in [
            ("summary/eval_utility", rep.eval.utility),
            ("summary/eval_welfare", rep.eval.welfare),
            ("summary/vs_best_level", rep.eval.utility - done.best.utility),
            ("summary/vs_uniform", rep.eval.utility - done.uniform.utility),
        ] {
            tb.scalar(tag, v as f32, step)?;
        }
        if let Some(s) = rep.sampled {
            for (tag, v) in [
                ("summary/sampled_utility", s.utility),
                ("summary/sampled_vs_best_level", s.utility - done.best.utility),
                ("summary/sampled_vs_uniform", s.utility - done.uniform.utility),
            ] {
                tb.scalar(tag, v as f32, step)?;
            }
        }
        tb.hparams_end(true)?;
    }
    Ok(())
}

/// `episodes.csv`, `summary.json` and `learning.png` / `.svg`.
pub(super) fn write_outputs(dir: &run::RunDir, done: &MarketTrained) -> Result<()> {
    let mut csv = String::from("replicate,episode,utility,welfare,paid\n");
    for (r, rep) in done.replicates.iter().enumerate() {
        for (e, s) in rep.curve.iter().enumerate() {
            csv.push_str(&format!("{r},{e},{},{},{}\n", s.utility, s.welfare, s.paid));
        }
    }
    run::write_atomic(&dir.path().join("episodes.csv"), csv.as_bytes())?;
    // At most 30 points: each the mean of a window of episodes per replicate (sampled
    // episodes are noisy), with its CI over replicates.
    let episodes = done.replicates.first().map_or(0, |r| r.curve.len());
    let width = episodes.div_ceil(30).max(1);
    let windows: Vec<std::ops::Range<usize>> = (0..episodes).step_by(width).map(|a| a..(a + width).min(episodes)).collect();
    let xs: Vec<f64> = windows.iter().map(|w| w.end as f64).collect();
    let learned: Vec<Stat> = windows
        .iter()
        .map(|w| {
            let per_rep: Vec<f64> = done
                .replicates
                .iter()
                .map(|r| r.curve[w.clone()].iter().map(|s| s.utility).sum::<f64>() / w.len() as f64)
                .collect();
            Stat::of(&per_rep)
        })
        .collect();
    let episodes = windows.len();
    let flat = |x: f64| vec![Stat { mean: x, ci95: f64::NAN }; episodes];
    let series = vec![
        (
            format!(
                "{:?} (sampled; mean of {width} episodes), {} replicates",
                done.learner,
                done.replicates.len()
            )
            .to_lowercase(),
            learned,
        ),
        ("own factors (economic agent)".to_string(), flat(done.own.utility)),
        (format!("best common level {}", done.best_level), flat(done.best.utility)),
    ];
    crate::report::plots::lines(
        dir.path(),
        "learning",
        &format!("Learning tenants' utility per tenant ({})", done.mechanism),
        "training episodes",
        "utility per learning tenant",
        &xs,
        false,
        &series,
    )?;
    // Last: a run with its summary is complete (`--resume` then has nothing to do).
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(done)?.as_bytes())?;
    Ok(())
}

impl fmt::Display for MarketTrained {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} learning {} tenant(s) in {} ({}), {} episodes x {} replicates, {} evaluation seeds",
            self.learner.name(),
            self.learning_tenants,
            self.groups.join(", "),
            self.mechanism,
            self.episodes,
            self.replicates.len(),
            self.eval_seeds.len()
        )?;
        writeln!(
            f,
            "{:<34} {:>18} {:>12} {:>12}",
            "policy of the learning tenants", "utility/tenant", "welfare", "paid"
        )?;
        writeln!(
            f,
            "{:<34} {:>18} {:>12} {:>12}",
            match &self.sampled {
                Some(s) if s.near_uniform > 0 => format!("learned (greedy, {}/{} near-uniform)", s.near_uniform, self.replicates.len()),
                _ => "learned (greedy, over replicates)".into(),
            },
            self.utility.pm(3),
            self.welfare.pm(1),
            self.paid.pm(1)
        )?;
        if let Some(s) = &self.sampled {
            writeln!(
                f,
                "{:<34} {:>18} {:>12} {:>12}",
                "learned (sampled, as trained)",
                s.utility.pm(3),
                s.welfare.pm(1),
                s.paid.pm(1)
            )?;
        }
        for (name, s) in [
            ("uniform random level".to_string(), &self.uniform),
            ("own factors (economic agent)".to_string(), &self.own),
            (format!("best common level {}", self.best_level), &self.best),
        ] {
            writeln!(f, "{name:<34} {:>18.3} {:>12.1} {:>12.1}", s.utility, s.welfare, s.paid)?;
        }
        writeln!(
            f,
            "over replicates, learned minus the best common level: {}; minus uniform play: {}",
            self.vs_best_level.cell(),
            self.vs_uniform.cell()
        )?;
        if let Some(s) = &self.sampled {
            writeln!(
                f,
                "sampled as trained, minus the best common level: {}; minus uniform play: {}",
                s.vs_best_level.cell(),
                s.vs_uniform.cell()
            )?;
            if s.near_uniform > 0 {
                writeln!(
                    f,
                    "{} of {} replicates near-uniform (entropy above {:.0}% of ln K where tenants decide): their greedy figures are argmaxes of noise, the sampled ones what they learned",
                    s.near_uniform,
                    self.replicates.len(),
                    env::metrics::spec::NEAR_UNIFORM * 100.0
                )?;
            }
        }
        if let Some(d) = &self.deviations {
            let eq: Vec<String> = d.iter().filter(|d| d.gain <= 1e-9).map(|d| format!("{}", d.level)).collect();
            writeln!(f, "common levels no learning tenant gains by leaving alone: [{}]", eq.join(", "))?;
        }
        for (r, rep) in self.replicates.iter().enumerate() {
            let lv: Vec<String> = rep.levels.iter().map(|x| format!("{x:.2}")).collect();
            writeln!(f, "replicate {r}: levels [{}], utility {:.3}", lv.join(", "), rep.eval.utility)?;
        }
        writeln!(f, "run directory: {}", self.dir.display())
    }
}

//! `mtf train` on a market file (`env.world = "market"`, issue 29): learners that bid against
//! the economic agent in the LaissezCloud market ([`env::market`]).
//!
//! The tenants with `learn = true` learn their bid factor (under MTF their threshold) among
//! `learner.levels`; every other tenant plays its own (the economic agent: factor 1, its
//! break-even price). Tenants of one entry of the file's tenant list (a group with `count`)
//! share one policy. Episodes differ in their job sizes (`work_max`), drawn from each episode's
//! seed; a file without size ranges has one market, and its episodes differ only in what the
//! learners play.
//!
//! - `hedge`: the seam's Hedge ([`crate::learners::episode_hedge`]) in [`MarketWorld::learners`]: one
//!   weight vector over the levels per group, a factor kept for the whole job. Each episode,
//!   for every group and level, is replayed with the group's tenants at that level (the
//!   others as they played): full-information Hedge on the group's mean utility over its
//!   tenants' job worth (value x size), at the constant rate `learner.hedge.eta`. Greedy: the
//!   heaviest level.
//! - `ppo`, `es`, `actor_critic` (any learner of the registry that builds from the world's
//!   shape): built by their own configs for the market's shape ([`crate::learners::SeamShape`]:
//!   its learning tenants stay for the episode, one actor per group), choosing a level every
//!   round from [`env::market::Market::observe`]'s features (a launch table changes only at a
//!   decision point: arrival, waiting, a checkpoint), paid their utility's change each round
//!   over their job's full value (value x size).
//!
//! Each replicate trains from its own seed; evaluation plays the greedy policies (and, for
//! actors, their draws as they trained: a policy that learned little can have a poor argmax) on
//! `train.eval_seeds` seeds shared by every replicate, through the one episode driver over
//! [`MarketWorld`] ([`MarketActing`], what `mtf compare` and `mtf analyze` play too), beside
//! three references on the same seeds: uniform random play, every tenant its own factor (the
//! learners as economic agents) and the best common level (all learners at one level, the best
//! of the levels: the headroom a learner should reach). The learned figures are stated over
//! replicates (mean and 95% CI).

use crate::error::{user, Result};
use crate::learners::episode_hedge::EpisodeHedge;
use crate::learners::{Init, Learner, LearnerKind, SeamShape};
use crate::run;
use crate::train::market_policy::{market_world, GroupPolicies, MarketActing};
use env::eval::Stat;
use env::market::{Market, MarketFile};
use env::rng::{stream, stream_seed, unit};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

mod checkpoint;
mod config;
mod trained;

use checkpoint::{LearnerState, Restart, SavedReplicate};
pub use config::{MarketLearner, MarketTrain, MarketTraining};
use env::market::world::MarketWorld;
pub use trained::TrainedMarket;

/// Who learns in a market: the learning tenants, their groups numbered from 0, and the
/// groups' names.
#[derive(Clone, Debug)]
pub(crate) struct Learners {
    pub(crate) who: Vec<usize>,
    /// Each learning tenant's group, numbered from 0 (its pool: one actor per group).
    pub(crate) class: Vec<usize>,
    names: Vec<String>,
    /// Each group's index among the file's tenant entries (its group in [`MarketWorld`]).
    entries: Vec<usize>,
}

impl Learners {
    pub(crate) fn of(file: &MarketFile, raw: &MarketFile) -> Self {
        let who: Vec<usize> = (0..file.market.tenants.len()).filter(|&i| file.market.tenants[i].learn).collect();
        let mut groups: Vec<usize> = who.iter().map(|&i| file.market.tenants[i].group).collect();
        groups.sort_unstable();
        groups.dedup();
        let class = who
            .iter()
            .map(|&i| groups.binary_search(&file.market.tenants[i].group).expect("a group"))
            .collect();
        let names = groups.iter().map(|&g| raw.market.tenants[g].name.clone()).collect();
        Self {
            who,
            class,
            names,
            entries: groups,
        }
    }

    fn classes(&self) -> usize {
        self.names.len()
    }
}

/// One episode's figures for the learners and the market.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MarketScore {
    /// Mean utility per learning tenant (money).
    pub utility: f64,
    /// Welfare: the value of all finished work.
    pub welfare: f64,
    /// The exchange's revenue plus on-demand spending: what all tenants paid.
    pub paid: f64,
}

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

impl MarketScore {
    /// Its figures' names, as `episodes.csv` and a sweep's `objective.intermediate` name them.
    pub const KEYS: [&'static str; 3] = ["utility", "welfare", "paid"];

    /// A figure by name.
    pub fn get(&self, key: &str) -> Option<f64> {
        match key {
            "utility" => Some(self.utility),
            "welfare" => Some(self.welfare),
            "paid" => Some(self.paid),
            _ => None,
        }
    }

    pub(crate) fn of(market: &Market, who: &[usize]) -> Self {
        let totals = market.totals();
        Self {
            utility: who.iter().map(|&i| market.utility(i)).sum::<f64>() / who.len() as f64,
            welfare: totals.iter().map(|t| t.earned).sum(),
            paid: totals.iter().map(|t| t.spent).sum(),
        }
    }

    pub(crate) fn mean(xs: &[MarketScore]) -> Self {
        let k = xs.len().max(1) as f64;
        Self {
            utility: xs.iter().map(|s| s.utility).sum::<f64>() / k,
            welfare: xs.iter().map(|s| s.welfare).sum::<f64>() / k,
            paid: xs.iter().map(|s| s.paid).sum::<f64>() / k,
        }
    }
}

/// An episode at factors that need not be levels (own factors, a unilateral deviation).
pub(crate) fn play(file: &MarketFile, actions: &[f64]) -> Market {
    Market::play(file.clone(), actions, false, |_, _| {}).0
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

/// The best a single learning tenant does by leaving a common level alone (the others of every
/// learning group stay at it), mean utility over the evaluation seeds.
#[derive(Clone, Debug, Serialize)]
pub struct Deviation {
    /// The common level.
    pub level: f64,
    /// The largest gain in mean utility of one tenant deviating (0: no tenant gains: a
    /// symmetric equilibrium among the levels).
    pub gain: f64,
    /// Who gains it.
    pub tenant: String,
    /// By deviating to this level.
    pub to: f64,
}

/// [`Deviation`] for every level: each learning tenant at every other level, the rest at it.
pub(crate) fn deviations(files: &[MarketFile], ls: &Learners, levels: &[f64]) -> Vec<Deviation> {
    let utility = |x: f64, who: Option<(usize, f64)>| -> Vec<f64> {
        // Mean utility over `files` of every learning tenant, all at x but `who`.
        let mut u = vec![0.0; ls.who.len()];
        for f in files {
            let mut a = f.actions();
            for &i in &ls.who {
                a[i] = x;
            }
            if let Some((i, y)) = who {
                a[i] = y;
            }
            let m = play(f, &a);
            for (j, &i) in ls.who.iter().enumerate() {
                u[j] += m.utility(i) / files.len() as f64;
            }
        }
        u
    };
    let names = files
        .first()
        .map(|f| f.market.tenants.iter().map(|t| t.name.clone()).collect::<Vec<_>>())
        .unwrap_or_default();
    levels
        .iter()
        .map(|&x| {
            let base = utility(x, None);
            let mut best = Deviation {
                level: x,
                gain: 0.0,
                tenant: String::new(),
                to: x,
            };
            for (j, &i) in ls.who.iter().enumerate() {
                for &y in levels.iter().filter(|&&y| y != x) {
                    let g = utility(x, Some((i, y)))[j] - base[j];
                    if g > best.gain + 1e-9 {
                        best = Deviation {
                            level: x,
                            gain: g,
                            tenant: names[i].clone(),
                            to: y,
                        };
                    }
                }
            }
            best
        })
        .collect()
}

/// Per file, the score of the learners at their own factors (the economic agent), the others
/// at theirs.
pub(crate) fn own_scores(files: &[MarketFile], ls: &Learners) -> Vec<MarketScore> {
    files.iter().map(|f| MarketScore::of(&play(f, &f.actions()), &ls.who)).collect()
}

/// Per evaluation seed, the score of every learning group at level `k`, the others at their
/// own factors (through the one episode driver).
pub(crate) fn level_scores(raw: &MarketFile, ls: &Learners, levels: &[f64], k: usize, seeds: &[u64]) -> Result<Vec<MarketScore>> {
    let fixed = GroupPolicies::Constant {
        levels: vec![k; ls.classes()],
    };
    Ok(evaluate(raw, ls, levels, &fixed, seeds, false)?.0)
}

/// The learning tenants drawing a level uniformly at random every round, in tenant order,
/// from the stream `market-uniform` of the run's seed, one per evaluation seed (its index).
struct UniformActing {
    rng: rand::rngs::SmallRng,
    k: usize,
}

impl env::worlds::Acting<MarketWorld> for UniformActing {
    fn act(&mut self, _world: &MarketWorld, _obs: &[f32], _groups: &[usize], actions: &mut [usize]) {
        for a in actions.iter_mut() {
            *a = (unit(self.rng.next_u64()) * self.k as f64) as usize % self.k;
        }
    }
}

/// Per evaluation seed, the score of the learners playing [`UniformActing`], the others at
/// their own factors.
pub(crate) fn uniform_scores(raw: &MarketFile, ls: &Learners, levels: &[f64], seed: u64, seeds: &[u64]) -> Result<Vec<MarketScore>> {
    let mut world = market_world(raw, levels)?;
    Ok(seeds
        .iter()
        .enumerate()
        .map(|(j, &s)| {
            let mut uniform = UniformActing {
                rng: stream(seed, "market-uniform", j as u64),
                k: levels.len(),
            };
            env::worlds::play(&mut world, &mut uniform, s);
            MarketScore::of(world.game().market(), &ls.who)
        })
        .collect())
}

/// The evaluation seeds of a market run of `raw` (the same for every replicate and for `mtf
/// analyze`).
pub(crate) fn eval_seeds(raw: &MarketFile, n: usize) -> Vec<u64> {
    (0..n as u64).map(|j| stream_seed(raw.seed, "market-eval", j)).collect()
}

/// Train the learning tenants of the market in `config` (with `--set` overrides; `seed`
/// replaces the file's, `replicates` `train.replicates`) and write the run directory:
/// `config.toml`, `metrics.jsonl` (each training episode's score as it happens), `episodes.csv`
/// (each replicate's training curve), `summary.json` and `learning.png` / `.svg`; progress on
/// stderr unless `quiet`.
pub fn train_market(
    config: &Path,
    set: &[String],
    seed: Option<u64>,
    replicates: Option<usize>,
    out: Option<&Path>,
    name: Option<&str>,
    quiet: bool,
) -> Result<MarketTrained> {
    let done = train_market_with(config, set, seed, replicates, out, name, quiet, None)?;
    Ok(done.expect("without a hook nothing stops the run"))
}

/// Called after each training episode of replicate 0 with its number and sampled score;
/// `Ok(true)` stops the run there (a sweep's pruner).
pub type MarketHook<'a> = &'a (dyn Fn(u64, &MarketScore) -> Result<bool> + Sync);

/// [`train_market`] with a hook on replicate 0's episodes: `None` when the hook stopped the
/// run (its directory then holds `config.toml` only).
pub fn train_market_with(
    config: &Path,
    set: &[String],
    seed: Option<u64>,
    replicates: Option<usize>,
    out: Option<&Path>,
    name: Option<&str>,
    quiet: bool,
    hook: Option<MarketHook<'_>>,
) -> Result<Option<MarketTrained>> {
    let path = config.display().to_string();
    let mut raw = MarketFile::load_unexpanded(config, set)?;
    if let Some(s) = seed {
        raw.seed = s;
    }
    let mut tr = MarketTraining::of(&raw, &path)?;
    if let Some(r) = replicates {
        if !(1..=64).contains(&r) {
            return Err(user(format!("--replicates {r}: must be in [1, 64]")));
        }
        tr.train.replicates = r;
        // The run's config.toml replays the run: `--resume` reads it.
        raw.train
            .get_or_insert_with(toml::Table::new)
            .insert("replicates".into(), toml::Value::Integer(r as i64));
    }
    check_memory(&raw, &tr)?;
    let stem = run::stem(config);
    let dir = run::RunDir::create(out, name.unwrap_or(&format!("train-{stem}")))?;
    let config_text = toml::to_string(&raw).map_err(|e| user(format!("{e}")))?;
    run::write_atomic(&dir.config(), config_text.as_bytes())?;
    // A checkpoint before the first episode: a run killed then resumes naming its config.
    let restart = Restart::fresh(path);
    write_checkpoint(&dir, &config_text, &restart)?;
    run_from(&raw, &tr, &dir, restart, &config_text, quiet, hook)
}

/// `checkpoints/latest.ckpt`: where `restart` stands, with the config it trains.
fn write_checkpoint(dir: &run::RunDir, config_text: &str, restart: &Restart) -> Result<()> {
    let bytes = super::checkpoint::encode(restart.episodes, config_text, &restart.encode()?);
    std::fs::create_dir_all(dir.checkpoints()).map_err(|e| run::io_error(&dir.checkpoints(), "creating", e))?;
    run::write_atomic(&dir.latest_checkpoint(), &bytes)
}

/// A training episode's line in `metrics.jsonl`.
fn metrics_line(replicate: usize, episode: u64, s: &MarketScore) -> String {
    serde_json::json!({ "replicate": replicate, "episode": episode, "utility": s.utility, "welfare": s.welfare, "paid": s.paid })
        .to_string()
}

/// `mtf train --resume DIR` on a market run: from its checkpoint (written after every training
/// episode), the finished replicates as they were and the one in progress from its learner's
/// state; the same summary as a run never interrupted.
pub fn resume_market(dir: &Path, quiet: bool) -> Result<MarketTrained> {
    let done = resume_market_with(dir, quiet, None)?;
    Ok(done.expect("without a hook nothing stops the run"))
}

/// Whether the market run in `dir` finished (its summary is the last file it writes): a
/// resume then has nothing to do. Its checkpoint and config are checked first, as a resume
/// checks them (a config edited since is refused either way).
pub fn market_run_complete(dir: &Path) -> Result<bool> {
    let run = run::RunDir::at(dir);
    let config = run.config();
    let raw = MarketFile::load_unexpanded(&config, &[])?;
    let tr = MarketTraining::of(&raw, &config.display().to_string())?;
    read_restart(&run, &tr)?;
    Ok(run.summary().is_file())
}

/// The run's checkpoint and its config.toml's text, refused when that changed since the
/// checkpoint was written.
fn read_restart(run: &run::RunDir, tr: &MarketTraining) -> Result<(Restart, String)> {
    let (config, latest) = (run.config(), run.latest_checkpoint());
    if std::fs::symlink_metadata(&latest).is_err() {
        return Err(crate::error::run_dir(
            run.path(),
            "a market run without its checkpoint (checkpoints/latest.ckpt)",
        ));
    }
    let bytes = run::read_regular(&latest, super::checkpoint::MAX_BYTES)?;
    let decoded = super::checkpoint::decode(&latest, &bytes)?;
    let text = std::fs::read_to_string(&config).map_err(|e| run::io_error(&config, "reading", e))?;
    if decoded.config.is_some_and(|c| c != text) {
        return Err(crate::error::run_dir(
            &config,
            "changed since its checkpoint was written: a market run resumes with the config it started with",
        ));
    }
    let restart = Restart::read(decoded.episodes, decoded.learner, tr.train.replicates).map_err(|e| crate::error::run_dir(&latest, e))?;
    Ok((restart, text))
}

/// The policies of the finished market run in `dir`, one per replicate, from its checkpoint
/// (which holds them all once every replicate has finished); refused when its config.toml
/// changed since, or it has not finished.
pub(crate) fn trained_policies(dir: &Path) -> Result<Vec<GroupPolicies>> {
    let run = run::RunDir::at(dir);
    let config = run.config();
    let raw = MarketFile::load_unexpanded(&config, &[])?;
    let tr = MarketTraining::of(&raw, &config.display().to_string())?;
    let (restart, _) = read_restart(&run, &tr)?;
    if !restart.is_finished(tr.train.replicates) {
        let problem = if run.summary().is_file() {
            "was trained before market runs kept their policies in their checkpoint (2026-11-28); train it again".to_string()
        } else {
            format!(
                "has not finished training ({} of {} replicates); finish it with mtf train --resume {}",
                restart.done.len(),
                tr.train.replicates,
                dir.display()
            )
        };
        return Err(crate::error::run_dir(dir, problem));
    }
    Ok(restart.done.into_iter().map(|r| r.policy).collect())
}

/// [`resume_market`] with a hook on replicate 0's episodes (as [`train_market_with`]).
pub fn resume_market_with(dir: &Path, quiet: bool, hook: Option<MarketHook<'_>>) -> Result<Option<MarketTrained>> {
    let run = run::RunDir::open(dir)?;
    let config = run.config();
    let raw = MarketFile::load_unexpanded(&config, &[])?;
    let tr = MarketTraining::of(&raw, &config.display().to_string())?;
    check_memory(&raw, &tr)?;
    // Checkpoints go on naming the text the run started with (config.toml itself).
    let (restart, config_text) = read_restart(&run, &tr)?;
    // metrics.jsonl rewritten from the checkpoint, which holds every episode's score: lines
    // appended after it go, and lines a crash lost come back.
    let mut lines = String::new();
    for (r, rep) in restart.done.iter().enumerate() {
        for (e, sc) in rep.curve.iter().enumerate() {
            lines.push_str(&metrics_line(r, e as u64, sc));
            lines.push('\n');
        }
    }
    for (e, sc) in restart.curve.iter().enumerate() {
        lines.push_str(&metrics_line(restart.done.len(), e as u64, sc));
        lines.push('\n');
    }
    run::write_atomic(&run.metrics(), lines.as_bytes())?;
    run_from(&raw, &tr, &run, restart, &config_text, quiet, hook)
}

fn check_memory(raw: &MarketFile, tr: &MarketTraining) -> Result<()> {
    let base = raw.at_seed(raw.seed);
    // PPO's rollout (copies x tenants x rounds x its widths), as measured for PPO; the other
    // learners keep little beside the markets.
    let ppo = (tr.learner.section.kind == LearnerKind::Ppo).then(|| {
        let p = &tr.learner.section.ppo;
        let width =
            p.actor_hidden + p.critic_hidden[0] + p.critic_hidden[1] + tr.learner.levels.len() + Market::obs_dim(raw.market.types.len());
        (tr.train.envs * p.group, Learners::of(&base, raw).who.len(), p.rollout, width)
    });
    crate::train::memory::check(&crate::train::memory::market_training(&base, ppo), "this training run")
}

/// Train (or go on training) every replicate in `dir`, then evaluate and write the outputs.
#[allow(clippy::too_many_arguments)]
fn run_from(
    raw: &MarketFile,
    tr: &MarketTraining,
    dir: &run::RunDir,
    restart: Restart,
    config_text: &str,
    quiet: bool,
    hook: Option<MarketHook<'_>>,
) -> Result<Option<MarketTrained>> {
    let base = raw.at_seed(raw.seed);
    let ls = Learners::of(&base, raw);
    let eval_seeds = eval_seeds(raw, tr.train.eval_seeds);
    // TensorBoard's step: the markets played per training episode (PPO's and ES's parallel
    // copies; Hedge's episode drawn and its replays, a group at a time at each other level).
    let copies = match tr.learner.section.kind {
        LearnerKind::Hedge => (1 + ls.classes() * tr.learner.levels.len().saturating_sub(1)) as u64,
        _ => tr.learner.section.copies(tr.train.envs) as u64,
    };
    let config = restart.config.clone();
    let trained = train_replicates(raw, tr, dir, &ls, &eval_seeds, copies, restart, config_text, quiet, hook)?;
    let Some((reps, mut writers)) = trained else {
        return Ok(None);
    };
    // Every replicate's policies in the checkpoint (the run's policy file), before the
    // summary: a run killed after this resumes to its summary without training.
    let finished = Restart::finished(config.clone(), reps.iter().map(SavedReplicate::from).collect());
    write_checkpoint(dir, config_text, &finished)?;
    let done = summarise(raw, tr, dir, config, &ls, eval_seeds, reps)?;
    tb_summary(dir, &done, &mut writers, copies)?;
    write_outputs(dir, &done)?;
    Ok(Some(done))
}

/// Every replicate not finished before a resume, trained one after another from `restart`,
/// each episode logged (`metrics.jsonl`, TensorBoard, progress) and checkpointed: the
/// replicates in order and each one's TensorBoard writer, or `None` if `hook` stopped it.
#[allow(clippy::too_many_arguments)]
fn train_replicates(
    raw: &MarketFile,
    tr: &MarketTraining,
    dir: &run::RunDir,
    ls: &Learners,
    eval_seeds: &[u64],
    copies: u64,
    mut restart: Restart,
    config_text: &str,
    quiet: bool,
    hook: Option<MarketHook<'_>>,
) -> Result<Option<(Vec<MarketReplicate>, Vec<Option<TbWriter>>)>> {
    let levels = &tr.learner.levels;
    // Each training episode's score as it happens (metrics.jsonl) and a progress line: a
    // market sweep's trials were 17 minutes of silence, writing nothing until they finished.
    let log = std::sync::Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.metrics())
            .map_err(|e| run::io_error(&dir.metrics(), "creating", e))?,
    );
    let total = tr.train.episodes.saturating_mul(tr.train.replicates as u64);
    let first = restart.done.len();
    let at = first as u64 * tr.train.episodes + restart.episodes;
    let progress = std::sync::Mutex::new(super::Progress::new(total, at, quiet, "episode"));
    // TensorBoard: a run per replicate (tb/replicate-R), each training episode's scores against
    // the markets played.
    let resolved = resolved_table(raw, tr)?;
    let mut writers: Vec<Option<TbWriter>> = (0..tr.train.replicates).map(|_| None).collect();
    let mut reps: Vec<MarketReplicate> = restart.done.iter().cloned().map(MarketReplicate::from).collect();
    for rep in reps.iter_mut().filter(|r| r.sampled.is_none() || r.entropy_share.is_none()) {
        if let GroupPolicies::Actor { .. } = rep.policy {
            let (scores, _, entropy_share) = evaluate(raw, ls, levels, &rep.policy, eval_seeds, true)?;
            (rep.sampled, rep.entropy_share) = (Some(MarketScore::mean(&scores)), entropy_share);
        }
    }
    let mut resumed = Some((
        restart.episodes,
        std::mem::take(&mut restart.curve),
        std::mem::take(&mut restart.learner),
    ));
    for r in first..tr.train.replicates {
        let rs = stream_seed(raw.seed, env::rng::names::REPLICATE, r as u64);
        let mut tb = tb_writer(dir, r)?;
        if r != first || at == first as u64 * tr.train.episodes {
            tb.hparams(&resolved, &format!("replicate-{r}"))?;
        }
        let tb = std::sync::Mutex::new(tb);
        let each = |e: u64, s: &MarketScore| -> Result<bool> {
            let line = metrics_line(r, e, s);
            {
                use std::io::Write;
                let mut f = log.lock().expect("not poisoned");
                writeln!(f, "{line}").map_err(|e| run::io_error(&dir.metrics(), "writing", e))?;
            }
            {
                let mut tb = tb.lock().expect("not poisoned");
                for (k, v) in MarketScore::KEYS.iter().zip([s.utility, s.welfare, s.paid]) {
                    tb.scalar(&format!("charts/{k}"), v as f32, (e + 1) * copies)?;
                }
                // On disk before the episode's checkpoint: a run killed after it resumes past it.
                tb.flush()?;
            }
            let done = r as u64 * tr.train.episodes + e + 1;
            progress
                .lock()
                .expect("not poisoned")
                .tick(done, &format!("utility {:.3}", s.utility));
            match hook {
                Some(h) if r == 0 => h(e, s),
                _ => Ok(false),
            }
        };
        // After every training episode: the finished replicates and this one's state.
        let mut save = |episodes: u64, curve: &[MarketScore], state: LearnerState<'_>| -> Result<()> {
            let learner = match state {
                LearnerState::Hedge(h) => h.save(),
                LearnerState::Learner(l) => l.save()?,
            };
            let snapshot = Restart {
                config: restart.config.clone(),
                done: reps.iter().map(SavedReplicate::from).collect(),
                curve: curve.to_vec(),
                episodes,
                learner,
            };
            write_checkpoint(dir, config_text, &snapshot)
        };
        let from = if r == first { resumed.take() } else { None };
        let rep = replicate(raw, tr, ls, eval_seeds, rs, from, &mut save, Some(&each))?;
        writers[r] = Some(tb.into_inner().expect("not poisoned"));
        match rep {
            Some(rep) => reps.push(rep),
            None => return Ok(None),
        }
    }
    progress.lock().expect("not poisoned").finish();
    Ok(Some((reps, writers)))
}

type TbWriter = crate::run::tb::EventWriter;

/// Replicate `r`'s TensorBoard writer (`tb/replicate-R`; a new event file after a resume).
fn tb_writer(dir: &run::RunDir, r: usize) -> Result<TbWriter> {
    TbWriter::create(&dir.tb().join(format!("replicate-{r}")))
}

/// The trained replicates against the references on the evaluation seeds (every common
/// level, uniform play, every tenant's own factor), over replicates.
fn summarise(
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
fn tb_summary(dir: &run::RunDir, done: &MarketTrained, writers: &mut [Option<TbWriter>], copies: u64) -> Result<()> {
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

/// The run's config with every training default filled in (TensorBoard's HPARAMS tab).
pub fn resolved_table(raw: &MarketFile, tr: &MarketTraining) -> Result<toml::Table> {
    let bad = |e: String| crate::error::failed(format!("resolving the market run's config: {e}"));
    let mut t = toml::Table::try_from(raw).map_err(|e| bad(e.to_string()))?;
    t.insert("learner".into(), toml::Value::Table(tr.learner.to_table().map_err(bad)?));
    t.insert("train".into(), toml::Value::try_from(&tr.train).map_err(|e| bad(e.to_string()))?);
    Ok(t)
}

/// One replicate: train from `seed`, evaluate greedily.
/// `from`: the episodes it trained before a resume, their scores and the learner's bytes;
/// `save` is called after every episode.
#[allow(clippy::too_many_arguments)]
fn replicate(
    raw: &MarketFile,
    tr: &MarketTraining,
    ls: &Learners,
    eval: &[u64],
    seed: u64,
    from: Option<(u64, Vec<MarketScore>, Vec<u8>)>,
    save: &mut dyn FnMut(u64, &[MarketScore], LearnerState<'_>) -> Result<()>,
    hook: Option<MarketHook<'_>>,
) -> Result<Option<MarketReplicate>> {
    let stop = |e: u64, s: &MarketScore| hook.map_or(Ok(false), |h| h(e, s));
    let episodes = tr.train.episodes;
    let levels = &tr.learner.levels;
    let (start, mut curve, bytes) = from.unwrap_or((0, Vec::with_capacity(episodes as usize), Vec::new()));
    let episode_seed = |e: u64, k: u64| stream_seed(stream_seed(seed, env::rng::names::TRAIN_EPISODE, e), env::rng::names::TRAIN_ENV, k);
    match tr.learner.section.kind {
        LearnerKind::Hedge => {
            let resolved = env::market::world::resolved(raw).map_err(crate::error::failed)?;
            let world = MarketWorld::learners(raw.clone(), levels.clone(), resolved);
            let mut h = EpisodeHedge::new(
                env::worlds::World::group_names(&world).len(),
                levels.len(),
                tr.learner.section.hedge.eta,
            );
            if start > 0 {
                h.load(&bytes)?;
            }
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(rayon::current_num_threads())
                .build()
                .map_err(|e| crate::error::failed(format!("starting a thread pool: {e}")))?;
            let mut scored = market_world(raw, levels)?;
            for e in start..episodes {
                let drawn = h.episode(&world, seed, e, 1, &pool).picks;
                // The episode's score: the market drawn, its learners at the levels drawn.
                let policy = GroupPolicies::Constant {
                    levels: ls.entries.iter().map(|&g| drawn[g]).collect(),
                };
                let mut acting = MarketActing::new(&policy, &ls.class, levels, false);
                env::worlds::play(&mut scored, &mut acting, env::rng::env_seed(seed, e, 0));
                curve.push(MarketScore::of(scored.game().market(), &ls.who));
                let halt = stop(e, &curve[curve.len() - 1])?;
                save(e + 1, &curve, LearnerState::Hedge(&h))?;
                if halt {
                    return Ok(None);
                }
            }
            let heaviest = h.greedy();
            let greedy: Vec<usize> = ls.entries.iter().map(|&g| heaviest[g]).collect();
            let policy = GroupPolicies::Constant { levels: greedy };
            let (scores, ..) = evaluate(raw, ls, levels, &policy, eval, false)?;
            Ok(Some(MarketReplicate {
                seed,
                eval: MarketScore::mean(&scores),
                sampled: None,
                entropy_share: None,
                levels: policy_levels(&policy, levels),
                curve,
                policy,
            }))
        }
        kind => {
            let copies = tr.learner.section.copies(tr.train.envs);
            let resolved = env::market::world::resolved(raw).map_err(crate::error::failed)?;
            let mut worlds: Vec<MarketWorld> = (0..copies)
                .map(|_| MarketWorld::learners(raw.clone(), levels.clone(), resolved.clone()))
                .collect();
            // Built by their own configs, as in every world, for the market's shape: its
            // learning tenants act every round, one actor per group.
            let shape = SeamShape::persistent(&worlds[0], ls.class.clone());
            let mut learner: Box<dyn Learner> =
                tr.learner
                    .section
                    .build(&Init::seam(&shape, episodes, stream_seed(seed, env::rng::names::INIT, 0)));
            let hidden = match tr.learner.section.chosen().exported(&shape) {
                crate::learners::Exported::Actor { hidden } => hidden,
                other => {
                    return Err(crate::error::failed(format!(
                        "learner.{} exports {other:?}, not an actor",
                        kind.name()
                    )))
                }
            };
            if start > 0 {
                learner.load(&bytes)?;
            }
            let group = learner.seed_group().max(1);
            for e in start..episodes {
                let seeds: Vec<u64> = (0..copies).map(|k| episode_seed(e, (k / group) as u64)).collect();
                // Through the one training rollout over the world trait; copy 0's score.
                let policy_seed = stream_seed(seed, env::rng::names::POLICY_EPISODE, e);
                crate::train::rollout::train_world_episode(&mut worlds, learner.as_mut(), &seeds, policy_seed, &[]);
                let score = MarketScore::of(worlds[0].game().market(), &ls.who);
                curve.push(score);
                if let Some(what) = learner.non_finite() {
                    return Err(crate::error::failed(format!(
                        "training diverged in episode {e} (seed {seed}): {what}; lower learner.{}'s learning rate",
                        kind.name()
                    )));
                }
                let halt = stop(e, &score)?;
                save(e + 1, &curve, LearnerState::Learner(learner.as_ref()))?;
                if halt {
                    return Ok(None);
                }
            }
            let weights = (0..ls.classes())
                .map(|c| learner.export_weights(ls.class.iter().position(|&k| k == c).expect("a tenant per group")))
                .collect::<Result<Vec<_>>>()?;
            let policy = GroupPolicies::Actor { hidden, weights };
            let (scores, chosen, _) = evaluate(raw, ls, levels, &policy, eval, false)?;
            let (sampled, _, entropy_share) = evaluate(raw, ls, levels, &policy, eval, true)?;
            Ok(Some(MarketReplicate {
                seed,
                eval: MarketScore::mean(&scores),
                sampled: Some(MarketScore::mean(&sampled)),
                entropy_share,
                levels: chosen,
                curve,
                policy,
            }))
        }
    }
}

/// `policy` (one replicate's, for the learning tenants) played on each evaluation seed, greedy
/// or drawing as it trained, the others at their own factors: each seed's score, each group's
/// mean level at its tenants' decision rounds, and the actors' entropy share there.
fn evaluate(
    raw: &MarketFile,
    ls: &Learners,
    levels: &[f64],
    policy: &GroupPolicies,
    seeds: &[u64],
    sampled: bool,
) -> Result<(Vec<MarketScore>, Vec<f64>, Option<f64>)> {
    let mut world = market_world(raw, levels)?;
    let mut acting = MarketActing::new(policy, &ls.class, levels, sampled);
    let scores = play_seeds(&mut world, &mut acting, ls, seeds);
    Ok((scores, acting.mean_levels(), acting.entropy_share()))
}

/// `acting` for the learning tenants of `world` on each of `seeds` (through the one episode
/// driver): the learners' score per seed.
pub(crate) fn play_seeds(
    world: &mut MarketWorld,
    acting: &mut dyn env::worlds::Acting<MarketWorld>,
    ls: &Learners,
    seeds: &[u64],
) -> Vec<MarketScore> {
    seeds
        .iter()
        .map(|&s| {
            env::worlds::play(world, acting, s);
            MarketScore::of(world.game().market(), &ls.who)
        })
        .collect()
}

/// Hedge's level per group (the factor its tenants keep).
fn policy_levels(policy: &GroupPolicies, levels: &[f64]) -> Vec<f64> {
    match policy {
        GroupPolicies::Constant { levels: l } => l.iter().map(|&i| levels[i]).collect(),
        GroupPolicies::Actor { .. } => Vec::new(),
    }
}

/// `episodes.csv`, `summary.json` and `learning.png` / `.svg`.
fn write_outputs(dir: &run::RunDir, done: &MarketTrained) -> Result<()> {
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

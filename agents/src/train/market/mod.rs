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
use env::market::{Market, MarketFile};
use env::rng::stream_seed;
use serde::{Deserialize, Serialize};
use std::path::Path;

mod checkpoint;
mod config;
mod references;
mod summary;
mod trained;

use checkpoint::{LearnerState, Restart, SavedReplicate};
pub use config::{MarketLearner, MarketTrain, MarketTraining};
use env::market::world::MarketWorld;
pub use references::Deviation;
pub(crate) use references::*;
use summary::{summarise, tb_summary, write_outputs};
pub use summary::{summary_shape, MarketReplicate, MarketSampled, MarketTrained};
pub use trained::TrainedMarket;

/// Who learns in a market: the learning tenants, their groups numbered from 0, and the
/// groups' names.
#[derive(Clone, Debug)]
pub(crate) struct Learners {
    pub(crate) who: Vec<usize>,
    /// Each learning tenant's group, numbered from 0 (its pool: one actor per group).
    pub(crate) class: Vec<usize>,
    names: Vec<String>,
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
        Self { who, class, names }
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
                // The world's groups are the learning entries, in the learners' class order.
                let policy = GroupPolicies::Constant { levels: drawn };
                let mut acting = MarketActing::new(&policy, &ls.class, levels, false);
                env::worlds::play(&mut scored, &mut acting, env::rng::env_seed(seed, e, 0));
                curve.push(MarketScore::of(scored.game().market(), &ls.who));
                let halt = stop(e, &curve[curve.len() - 1])?;
                save(e + 1, &curve, LearnerState::Hedge(&h))?;
                if halt {
                    return Ok(None);
                }
            }
            let policy = GroupPolicies::Constant { levels: h.greedy() };
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

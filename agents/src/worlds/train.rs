//! `mtf train` in a world behind the seam: evolution strategies over one actor per group of
//! agents, PPO or the actor-critic with one actor per group (per agent, or per weight class,
//! where the agents stay: the queue world's, as on its own stack) trained through the one training
//! rollout (`train::rollout`: copies in seed groups, group-relative advantages, each agent's
//! life its own return where agents come and go), full-information Hedge over a level per
//! group held for the episode ([`crate::learners::episode_hedge`]), or a fixed level, or uniform play, to
//! evaluate them the same way; in a run directory like every other run's: the resolved `config.toml` first,
//! `metrics.jsonl` a line per generation (ES) or episode (PPO), TensorBoard scalars against
//! agent-steps, `checkpoints/latest.ckpt` after every one (a run killed with SIGKILL resumes
//! exactly: every random number of episode e comes from `(training seed, e)`), and
//! `summary.json` last.
//!
//! Every run judges itself: the held-out evaluation (the `mtf simulate` seeds of the root seed)
//! is reported next to the best fixed level (picked on other seeds, the selection seeds, then
//! scored on the held-out ones), uniform random play and the selfish equilibrium (best
//! responses per group from the best fixed level on the selection seeds,
//! `env::worlds::selfish`: where selfish learners go), as paired differences over the same
//! seeds, signed so that positive is better. ES's actors are scored greedily, as ES trains
//! them; PPO's sampled, as PPO trains. `train.replicates` trains a run group and states the
//! result over replicates (IQM, bootstrap CI, probability of improvement).
//!
//! PPO where agents come and go is pooled (`Ppo::pooled`): the agents of a group share one actor and one critic,
//! and an update sees only the rows of agents that acted, so its cost is the agent-steps
//! played. In Gavel's `configs/gavel/learn.toml` (200 jobs), 2 episodes of 2 copies: 8.0 s and
//! 212 MB (a row per possible agent per round, as the queue world's PPO keeps: 131.7 s and
//! 3.7 GB; 2026-11-27, one thread).

use super::actors::GroupActors;
use super::es::{self, Actors};
use super::hedge::HedgePolicy;
use super::{evaluate, mean_entropy_share, paired, sign, summarise, Fixed, Played, RowPolicy, Uniform};
use crate::config::TrainSection;
use crate::error::{failed, user};
use crate::learners::episode_hedge::EpisodeHedge;
use crate::learners::{Init, Learner, LearnerKind, LearnerSection, SeamShape};
use crate::run::{self, RunDir};
use env::eval::{episode_seeds, selection_seeds, Stat};
use env::worlds::World;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A validated experiment in a world behind the seam.
pub struct SeamExperiment {
    /// The world.
    pub world: Box<dyn World>,
    /// The learner.
    pub learner: LearnerSection,
    /// The training run.
    pub train: TrainSection,
}

impl SeamExperiment {
    /// Load a config with `--set` overrides: the world from its own sections, `[learner]` and
    /// `[train]` as in every experiment (the learner defaults to `es` here).
    pub fn load(config: &Path, set: &[String]) -> crate::error::Result<SeamExperiment> {
        let table = env::config::read_table(config, set)?;
        Self::from_table(table, config)
    }

    fn from_table(mut table: toml::Table, config: &Path) -> crate::error::Result<SeamExperiment> {
        let file = config.display().to_string();
        let mut learner_table = match table.remove("learner") {
            Some(toml::Value::Table(t)) => t,
            None => toml::Table::new(),
            Some(other) => return Err(user(format!("{file}: learner: expected a table, got {other}"))),
        };
        // `learner.levels` is the world's (its action grid, as the market reads it).
        if let Some(levels) = learner_table.remove("levels") {
            table.insert(
                "learner".into(),
                toml::Value::Table([("levels".to_string(), levels)].into_iter().collect()),
            );
        }
        let set_features = learner_table.get("actor_critic").and_then(|a| a.get("features")).is_some();
        let train_table = table.remove("train");
        let world = env::registry::build(table, config)?;
        // The world's defaults under the file's own keys (the market's tuned PPO, its Hedge).
        let mut sections = toml::Table::new();
        sections.insert("learner".into(), toml::Value::Table(learner_table));
        if let Some(t) = train_table {
            sections.insert("train".into(), t);
        }
        env::config::merge_under(&world.run_defaults(), &mut sections);
        let learner_table = sections.remove("learner");
        let mut learner: LearnerSection = match learner_table {
            Some(toml::Value::Table(t)) => {
                let wrapped: toml::Table = [("learner".to_string(), toml::Value::Table(t.clone()))].into_iter().collect();
                let w: Wrapped = env::config::from_table(&file, wrapped)?;
                let mut l = w.learner;
                if !t.contains_key("kind") {
                    l.kind = LearnerKind::Es;
                }
                l
            }
            _ => LearnerSection {
                kind: LearnerKind::Es,
                ..LearnerSection::default()
            },
        };
        let train: TrainSection = match sections.remove("train") {
            Some(t) => {
                let wrapped: toml::Table = [("train".to_string(), t)].into_iter().collect();
                env::config::from_table::<WrappedTrain>(&file, wrapped)?.train
            }
            None => TrainSection::default(),
        };
        let err = |key: &str, problem: String| env::config::ConfigError {
            file: file.clone(),
            key: key.into(),
            problem,
        };
        crate::config::check_train(&err, &train)?;
        if !train.references {
            // Every run here is judged against its references (its summary, a run group's
            // statistics and sweeps' objectives read them): refused, not ignored.
            return Err(err(
                "train.references",
                "false: behind the seam every run is judged against the best fixed level and uniform play (remove the key)".into(),
            )
            .into());
        }
        // The thesis's features (SPEC 4's block) where the world's rows hold them (the queue
        // world's, as on its own stack), else the agent's whole observation row, the default
        // where the config names none.
        if learner.kind == LearnerKind::ActorCritic && !set_features && world.feature_block("spec").is_none() {
            learner.actor_critic.features = crate::learners::Features::All;
        }
        // What this world cannot give a learner (SPEC 4's features, a round record, an actor
        // per agent) is refused by the learner's own checks, as in every world; every section
        // is checked for its own values, as in the queue world (a typo in one not chosen too).
        learner.validate(&SeamShape::of(world.as_ref()), &err)?;
        if learner.kind == LearnerKind::Es {
            es::check(&learner, &err)?;
        }
        if let Some((group, key)) = learner.chosen().group() {
            check_copies(&err, &train, group, key)?;
        }
        Ok(SeamExperiment { world, learner, train })
    }

    /// What the run will hold at peak (`--max-memory`): the episodes it plays at once (the
    /// rollout's copies or the evaluation's threads, whichever is more) and PPO's rollout.
    pub fn memory(&self) -> crate::train::memory::Estimate {
        let copies = self
            .learner
            .chosen()
            .group()
            .map_or(1, |(group, _)| self.train.envs.saturating_mul(group));
        let ppo = (self.learner.kind == LearnerKind::Ppo).then(|| {
            let p = &self.learner.ppo;
            let width = p.actor_hidden + p.critic_hidden[0] + p.critic_hidden[1] + self.world.levels().len() + self.world.layout().dim();
            (copies, width)
        });
        // A run group trains min(replicates, threads) replicates at once (`side_by_side`),
        // each with its copies and rollout buffers and its share of the threads; one alone
        // (the rest complete) has them all.
        let threads = self.train.threads.max(1);
        let runs = self.train.replicates.min(threads).max(1);
        let episodes = copies.max(threads).max(copies.max(threads / runs).saturating_mul(runs));
        let ppo = ppo.map(|(copies, width)| (copies.saturating_mul(runs), width));
        crate::train::memory::world_training(self.world.as_ref(), episodes, ppo)
    }

    /// The resolved experiment as TOML: the world's resolved config with `[learner]` and
    /// `[train]`. Enough to rerun (paths are absolute).
    pub fn to_toml(&self) -> String {
        let mut t = self.world.config();
        // The world's own `[learner]` keys (the market's `levels`) beside the learner's section.
        let mut learner = toml::Table::try_from(&self.learner).expect("a learner section serialises");
        if let Some(toml::Value::Table(own)) = t.remove("learner") {
            learner.extend(own);
        }
        t.insert("learner".into(), toml::Value::Table(learner));
        t.insert(
            "train".into(),
            toml::Value::try_from(&self.train).expect("a train section serialises"),
        );
        toml::to_string(&t).expect("a config serialises")
    }

    /// The root seed.
    pub fn root(&self) -> u64 {
        super::root_seed(self.world.as_ref())
    }

    /// This run's training seed (replicate 0: the root seed).
    pub fn training_seed(&self) -> u64 {
        match self.train.replicate {
            0 => self.root(),
            k => env::rng::stream_seed(self.root(), env::rng::names::REPLICATE, k),
        }
    }

    fn fresh_core(&self) -> crate::learners::es::EsCore {
        es::fresh(
            &self.learner.es,
            self.world.as_ref(),
            env::rng::stream_seed(self.training_seed(), env::rng::names::INIT, 0),
        )
    }
}

/// Whether `kind` trains a policy in a world behind the seam (fixed and uniform do not).
fn learns(kind: LearnerKind) -> bool {
    !matches!(kind, LearnerKind::Fixed | LearnerKind::Uniform)
}

/// `train.envs` seeds times `group` copies each, at most the limit.
fn check_copies(
    err: &dyn Fn(&str, String) -> env::config::ConfigError,
    train: &TrainSection,
    group: usize,
    key: &str,
) -> Result<(), env::config::ConfigError> {
    let copies = train.envs.saturating_mul(group);
    if copies > crate::learners::limits::MAX_ENVS {
        return Err(err(
            "train.envs",
            format!(
                "{} seeds x {key} {group} = {copies} copies of the world, more than {}",
                train.envs,
                crate::learners::limits::MAX_ENVS
            ),
        ));
    }
    Ok(())
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Wrapped {
    learner: LearnerSection,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct WrappedTrain {
    train: TrainSection,
}

/// A trained run's policy: ES's actors (greedy, as ES trains them), PPO's or the
/// actor-critic's as plain per-group weights drawing their levels (as they train), or Hedge's
/// weights drawing a level per group per episode (as it trains).
pub enum Trained {
    /// ES.
    Es(Actors),
    /// PPO or the actor-critic.
    Sampled(GroupActors),
    /// Hedge, and the world's observation width (for its exported actors).
    Hedge(EpisodeHedge, usize),
    /// A learner's own policy over the world's budgets (the queue world's Hedge per budget
    /// state), sampling as it trained; not exported (a world policy reads the row alone).
    Learned(Box<dyn crate::learners::Policy>),
}

impl Trained {
    /// The policy.
    pub fn policy(self) -> Box<dyn RowPolicy> {
        match self {
            Trained::Es(a) => Box::new(a),
            Trained::Sampled(a) => Box::new(a),
            Trained::Hedge(h, _) => Box::new(HedgePolicy::of(&h)),
            Trained::Learned(p) => Box::new(super::Learned::new(p)),
        }
    }

    /// The features of a `dim`-wide row its actors read (an export names them).
    pub fn reads(&self, dim: usize) -> std::ops::Range<usize> {
        match self {
            Trained::Es(a) => 0..a.core().features(),
            Trained::Sampled(a) => a.at..a.at + a.d,
            Trained::Hedge(..) | Trained::Learned(_) => 0..dim,
        }
    }

    /// Whether its actors are one per agent id ([`GroupActors::by_agent`]), not per group.
    pub fn per_agent(&self) -> bool {
        matches!(self, Trained::Sampled(a) if a.per_agent)
    }

    /// Each group's (or, [`Trained::per_agent`], each agent's) actor weights and the hidden
    /// width (what an export carries; an exported agent acts on the argmax).
    pub fn weights(&self) -> (Vec<Vec<f32>>, usize) {
        match self {
            Trained::Es(a) => {
                let core = a.core();
                ((0..core.blocks()).map(|g| core.actor(g).to_vec()).collect(), core.hidden())
            }
            Trained::Sampled(a) => (a.weights.clone(), a.hidden),
            Trained::Hedge(h, dim) => h.actors(*dim),
            Trained::Learned(_) => (Vec::new(), 0),
        }
    }

    /// The same policy acting on its argmax, for a policy that draws its actions from a
    /// distribution it keeps per row (PPO's, the actor-critic's, the queue world's Hedge per
    /// budget state); `None` for ES (greedy already) and the episode's Hedge (its draw is per
    /// episode, not per row).
    pub fn greedy(&self) -> Option<Box<dyn RowPolicy>> {
        match self {
            Trained::Sampled(a) => Some(Box::new(a.clone().greedy())),
            Trained::Learned(p) => Some(Box::new(super::Learned::new(p.fork()).greedy())),
            Trained::Es(_) | Trained::Hedge(..) => None,
        }
    }

    /// Whether `mtf export` can carry it (a world policy reads the row alone: a table over
    /// the budgets cannot be one).
    pub fn exportable(&self) -> bool {
        !matches!(self, Trained::Learned(_))
    }
}

/// The levels a fixed run behind the seam plays (`None` for any other learner): each agent's
/// (`true`: `learner.fixed` by weight class or by agent, resolved per agent id) or each
/// group's (`false`: one `threshold` for all), as level indexes of the run's world.
pub fn fixed_levels(dir: &Path) -> crate::error::Result<Option<(Vec<usize>, bool)>> {
    let config = RunDir::at(dir).config();
    if !config.exists() || env::registry::stack_of(&config, &[]) != env::registry::Stack::Seam {
        return Ok(None);
    }
    let exp = SeamExperiment::load(&config, &crate::train::run_config_sets(&config))?;
    if exp.learner.kind != LearnerKind::Fixed {
        return Ok(None);
    }
    let w = exp.world.as_ref();
    Ok(Some(match exp.learner.fixed.each(&SeamShape::of(w)) {
        Some(each) => (each, true),
        None => {
            let level = env::config::level_index(w.levels(), exp.learner.fixed.threshold).expect("checked");
            (vec![level; w.group_names().len()], false)
        }
    }))
}

/// A trained run's policy, for acting in `world` (its groups, features and levels must match).
pub fn trained_actors(dir: &Path, world: &dyn World) -> crate::error::Result<Trained> {
    let config = RunDir::at(dir).config();
    if !config.exists() {
        return Err(crate::error::run_dir(dir, "not a run directory (no config.toml)"));
    }
    if env::registry::stack_of(&config, &[]) != env::registry::Stack::Seam {
        // A queue-world run trained by its own commands keeps an actor per agent in another
        // checkpoint format.
        return Err(crate::error::run_dir(
            dir,
            "a run trained by the queue world's own commands (no env.stack = \"seam\" in its config.toml), read here by the seam's: play it under a queue-world config without env.stack",
        ));
    }
    let exp = SeamExperiment::load(&config, &crate::train::run_config_sets(&config))?;
    if !learns(exp.learner.kind) {
        return Err(crate::error::run_dir(
            dir,
            format!("a `{}` run has no actors to play", exp.learner.kind.name()),
        ));
    }
    let shape = |w: &dyn World| (w.group_names().len(), w.layout().names.clone(), w.levels().to_vec());
    if shape(exp.world.as_ref()) != shape(world) {
        return Err(crate::error::run_dir(
            dir,
            "was trained for other groups, features or levels than this world has",
        ));
    }
    let mut trainer = Trainer::fresh(&exp);
    let latest = RunDir::at(dir).latest_checkpoint();
    let bytes = run::read_regular(&latest, 1 << 32)?;
    let decoded = crate::train::checkpoint::decode(&latest, &bytes)?;
    trainer.restore(&latest, decoded.learner)?;
    let trained = trainer.trained(&exp)?;
    // A policy by agent id (an actor per agent, or a table over every agent's budget) plays
    // only the agents it was trained for: another count would index past them or leave some
    // on another's actor.
    let by_agent = trained.per_agent() || matches!(trained, Trained::Learned(_));
    let agents = |w: &dyn World| (w.possible(), w.group_names());
    if by_agent && agents(exp.world.as_ref()) != agents(world) {
        return Err(crate::error::run_dir(
            dir,
            format!(
                "keeps a policy per agent for {} agents of groups {}, and this world has {} of {}: play it under a config with the same agents",
                exp.world.possible(),
                exp.world.group_names().join(","),
                world.possible(),
                world.group_names().join(",")
            ),
        ));
    }
    Ok(trained)
}

/// What trains in a world behind the seam: ES's population, PPO or the actor-critic over
/// copies of the world (through the one training rollout), Hedge's weights, or nothing (fixed
/// and uniform, evaluated the same way).
enum Trainer {
    Es(crate::learners::es::EsCore),
    Hedge(EpisodeHedge),
    Rollout {
        learner: Box<dyn Learner>,
        copies: Vec<Box<dyn World>>,
        group: usize,
    },
    Nothing,
}

impl Trainer {
    fn fresh(exp: &SeamExperiment) -> Self {
        let w = exp.world.as_ref();
        let init = env::rng::stream_seed(exp.training_seed(), env::rng::names::INIT, 0);
        match exp.learner.kind {
            LearnerKind::Es => Trainer::Es(exp.fresh_core()),
            // Hedge over the episode where the world's rounds cannot be re-run; in the queue
            // world's (`World::scenario`) its own Hedge per budget state, through the rollout.
            LearnerKind::Hedge if w.scenario().is_none() => {
                Trainer::Hedge(EpisodeHedge::new(w.group_names().len(), w.levels().len(), exp.learner.hedge.eta))
            }
            LearnerKind::Fixed | LearnerKind::Uniform => Trainer::Nothing,
            // Every other learner (PPO, the actor-critic, one added to the registry) trains
            // through the one training rollout, built by its own config for the world's shape
            // (pooled per group where agents come and go, `WorldShape::persistent`; an actor
            // per agent unless shared where they stay, `WorldShape::per_agent`). The copies are forked
            // when training starts (a run's policy read for run:DIR or an export needs none).
            _ => Trainer::Rollout {
                learner: exp
                    .learner
                    .build(&Init::seam(&SeamShape::of(w), exp.train.episodes, init).in_scenario(w.scenario())),
                copies: Vec::new(),
                group: exp.learner.chosen().group().map_or(1, |(g, _)| g),
            },
        }
    }

    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        match self {
            Trainer::Es(core) => core.load(bytes, 0),
            Trainer::Hedge(h) => h.load(bytes),
            Trainer::Rollout { learner, .. } => learner.load(bytes),
            Trainer::Nothing => Ok(()),
        }
    }

    /// [`Trainer::load`] from the checkpoint at `path`: a state this run's learner cannot take
    /// (networks of another layout: a learner key changed on resume, or a run trained by an
    /// earlier mtf whose learner there differed) is the checkpoint's fault, said in one line
    /// naming it (exit 2).
    fn restore(&mut self, path: &Path, bytes: &[u8]) -> crate::error::Result<()> {
        self.load(bytes).map_err(|e| match e {
            crate::error::Error::Failed(m) => crate::error::run_dir(
                path,
                format!("holds a learner state this run's learner cannot load ({m}): it was written for another network layout: a learner key changed since, or an earlier mtf's learner; retrain the run"),
            ),
            other => other,
        })
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        match self {
            Trainer::Es(core) => Ok(core.save(0)),
            Trainer::Hedge(h) => Ok(h.save()),
            Trainer::Rollout { learner, .. } => learner.save(),
            Trainer::Nothing => Ok(Vec::new()),
        }
    }

    fn non_finite(&self) -> Option<String> {
        match self {
            Trainer::Es(core) => core.non_finite(),
            Trainer::Hedge(h) => h.non_finite(),
            Trainer::Rollout { learner, .. } => learner.non_finite(),
            Trainer::Nothing => None,
        }
    }

    /// Train episode (ES: generation) `e`: its line in `metrics.jsonl` (without agent-steps
    /// and wall time) and the agent-steps it played.
    fn episode(&mut self, exp: &SeamExperiment, root: u64, e: u64, pool: &rayon::ThreadPool) -> (Value, u64) {
        let w = exp.world.as_ref();
        match self {
            Trainer::Es(core) => {
                let g = es::generation(core, w, root, e, pool);
                (log_line(e, &g, w), g.played.iter().map(|p| p.agent_steps).sum())
            }
            Trainer::Hedge(h) => {
                let ep = h.episode(w, root, e, exp.train.envs, pool);
                let played = ep
                    .played
                    .into_iter()
                    .map(|(figures, paid)| Played {
                        figures,
                        group_returns: paid.group_returns,
                        agent_steps: paid.agent_steps,
                        entropy_share: None,
                    })
                    .collect();
                let g = es::Generation { played, spread: f64::NAN };
                let mut line = log_line(e, &g, w);
                line.as_object_mut().expect("a line is an object").remove("spread");
                line["entropy"] = json!(h.entropy_share());
                line["episodes_played"] = json!(ep.episodes);
                // Every episode played counts, the replays too: what the learner cost.
                (line, ep.agent_steps)
            }
            Trainer::Rollout { learner, copies, group } => {
                if copies.is_empty() {
                    copies.extend((0..exp.train.envs * *group).map(|_| w.fork()));
                }
                // Copies in groups of `group` share a seed (group-relative advantages).
                let seeds: Vec<u64> = (0..copies.len()).map(|k| es::copy_seed(root, e, k / *group)).collect();
                let policy_seed = env::rng::stream_seed(root, env::rng::names::POLICY_EPISODE, e);
                let (losses, played) =
                    pool.install(|| crate::train::rollout::train_world_episode_counted(copies, learner.as_mut(), &seeds, policy_seed, &[]));
                let figures: Vec<Vec<f64>> = copies.iter().map(|c| c.figures()).collect();
                let mut line = json!({
                    "episode": e,
                    "fitness": played.fitness.iter().sum::<f64>() / played.fitness.len() as f64,
                    "entropy": losses.entropy,
                    "actor_loss": losses.actor,
                    "critic_loss": losses.critic,
                    // The spread of the rewards the learner scored (the queue world's Hedge:
                    // its counterfactual rewards; 0 for the others), as the queue stack's line
                    // has it.
                    "reward_spread": losses.reward_spread,
                });
                add_figures(&mut line, w, figures.iter().map(Vec::as_slice));
                (line, played.agent_steps)
            }
            Trainer::Nothing => (json!({}), 0),
        }
    }

    /// The trained policy (fixed and uniform have none).
    fn trained(self, exp: &SeamExperiment) -> crate::error::Result<Trained> {
        let w = exp.world.as_ref();
        match self {
            Trainer::Es(core) => Ok(Trained::Es(Actors::new(core))),
            Trainer::Hedge(h) => Ok(Trained::Hedge(h, w.layout().dim())),
            Trainer::Rollout { learner, .. } => {
                let shape = SeamShape::of(w);
                let hidden = match exp.learner.chosen().exported(&shape) {
                    crate::learners::Exported::Actor { hidden } => hidden,
                    // A table over the budget states (Hedge's): the learner's own policy,
                    // reading the world's budgets.
                    crate::learners::Exported::Table => return Ok(Trained::Learned(learner.fork())),
                    other => return Err(failed(format!("a rollout learner exports {other:?}, not an actor"))),
                };
                let each = if crate::learners::WorldShape::per_agent(&shape) {
                    (0..w.possible())
                        .map(|id| learner.export_weights(id))
                        .collect::<crate::error::Result<Vec<_>>>()?
                } else {
                    Vec::new()
                };
                // Every agent of a group plays the group's actor where they share one (and
                // where a learner kept one per agent but a group's are the same weights, one
                // per group plays the same levels from the same draws): export the first's.
                let shared = each.is_empty() || (0..w.possible()).all(|id| each[id] == each[first_of(w, w.group(id))]);
                let weights = if shared {
                    (0..w.group_names().len())
                        .map(|g| match (0..w.possible()).find(|&id| w.group(id) == g) {
                            Some(id) if !each.is_empty() => Ok(each[id].clone()),
                            Some(id) => learner.export_weights(id),
                            None => Err(failed(format!("no agent of group {g} to export its actor from"))),
                        })
                        .collect::<crate::error::Result<Vec<_>>>()?
                } else {
                    each
                };
                // The row or the block of it the learner read (checked with its config).
                let reads = crate::learners::WorldShape::features(&shape, exp.learner.chosen().features())
                    .ok_or_else(|| failed("the learner's features are not in this world's rows"))?;
                let actors = GroupActors::new(weights, hidden, reads.d, w.levels().len(), true)
                    .reading(reads.at)
                    .drawing_for(w);
                Ok(Trained::Sampled(if shared { actors } else { actors.by_agent() }))
            }
            Trainer::Nothing => Err(failed("a fixed or uniform run has no actors")),
        }
    }

    /// The policy the run is judged by.
    fn policy(self, exp: &SeamExperiment) -> crate::error::Result<Box<dyn RowPolicy>> {
        let w = exp.world.as_ref();
        Ok(match exp.learner.kind {
            k if learns(k) => self.trained(exp)?.policy(),
            // A level per agent or per weight class where the world keeps a policy per
            // agent (the queue world's), else one for everyone (checked by its config).
            LearnerKind::Fixed => match exp.learner.fixed.each(&SeamShape::of(w)) {
                Some(each) => Box::new(super::PerAgent::new(each)),
                None => Box::new(Fixed::new(vec![
                    env::config::level_index(w.levels(), exp.learner.fixed.threshold).expect("checked")
                ])),
            },
            _ => Box::new(Uniform::of(w)),
        })
    }
}

/// The first agent of group `g` (every group has one: a world's groups are its agents').
fn first_of(w: &dyn World, g: usize) -> usize {
    (0..w.possible()).find(|&id| w.group(id) == g).unwrap_or(0)
}

/// One generation's line in `metrics.jsonl` (agent-steps and wall time added by the loop).
fn log_line(e: u64, g: &es::Generation, w: &dyn World) -> Value {
    let fitness: Vec<f64> = g
        .played
        .iter()
        .map(|p| p.group_returns.iter().sum::<f64>() / p.group_returns.len().max(1) as f64)
        .collect();
    let mut line = json!({
        "episode": e,
        "fitness": fitness.iter().sum::<f64>() / fitness.len() as f64,
        "spread": g.spread,
    });
    add_figures(&mut line, w, g.played.iter().map(|p| p.figures.as_slice()));
    line
}

/// Every figure of the world into an episode's line, the mean over the copies that computed it
/// (the headline always, NaN where none did; another figure only where one did: the queue
/// world's fairness figures are not computed in training).
fn add_figures<'a>(line: &mut Value, w: &dyn World, copies: impl Iterator<Item = &'a [f64]> + Clone) {
    let head = w.headline();
    for (k, m) in w.metrics().iter().enumerate() {
        let values: Vec<f64> = copies.clone().filter_map(|f| f.get(k).copied()).filter(|x| x.is_finite()).collect();
        if values.is_empty() && k != head {
            continue;
        }
        let mean = if values.is_empty() {
            f64::NAN
        } else {
            values.iter().sum::<f64>() / values.len() as f64
        };
        line[m.key] = json!(mean);
    }
}

/// The figures of an episode's line in `metrics.jsonl` a sweep's pruner may follow (and
/// TensorBoard draws): the mean fitness over the copies played (the groups' mean returns),
/// the world's headline, and ES's spread of fitnesses or PPO's losses.
pub fn generation_keys(w: &dyn World, kind: LearnerKind) -> Vec<&'static str> {
    let head = w.metrics()[w.headline()].key;
    let mut keys = match kind {
        LearnerKind::Es | LearnerKind::Fixed | LearnerKind::Uniform => vec!["fitness", head, "spread"],
        LearnerKind::Hedge if w.scenario().is_none() => vec!["fitness", head, "entropy"],
        // The learners of the one training rollout.
        _ => vec!["fitness", head, "entropy", "actor_loss", "critic_loss", "reward_spread"],
    };
    // The world's other figures, each episode's mean over its copies (absent from a line
    // where no copy computed one).
    keys.extend(w.metrics().iter().map(|m| m.key).filter(|k| *k != head));
    keys
}

/// The shape of a run's `summary.json` in `w` trained by `kind` (a run group's with `group`),
/// its numbers zero: what a sweep's objective may name.
pub fn summary_shape(w: &dyn World, group: bool, kind: LearnerKind) -> Value {
    let selfish = (w.reads_actions() && !w.shares_reward()).then_some("selfish");
    let against = std::iter::once("uniform").chain(w.named_actions().iter().copied()).chain(selfish);
    if group {
        let mut shape = json!({
            "replicates": [],
            "vs_best_fixed_per_replicate": [],
            "vs_best_fixed_iqm": 0.0,
            "vs_best_fixed_ci95": [0.0, 0.0],
            "share_improving": 0.0,
        });
        for name in against {
            shape[format!("vs_{name}_per_replicate")] = json!([]);
            shape[format!("vs_{name}_iqm")] = json!(0.0);
            shape[format!("vs_{name}_ci95")] = json!([0.0, 0.0]);
        }
        if let Some(k) = compatibility_key(w) {
            shape[k] = json!({"mean": 0.0, "ci95": 0.0});
        }
        let zero = crate::report::stats::Replicates::of(&[0.0], 0);
        shape["vs_baseline"] = json!({"sampled": zero, "greedy": zero});
        return shape;
    }
    let figures = Value::Object(
        w.metrics()
            .iter()
            .map(|m| (m.key.to_string(), json!({"mean": 0.0, "ci95": 0.0})))
            .collect(),
    );
    let mut shape = json!({
        "world": "", "mechanism": "", "learner": "", "episodes": 0, "train_seconds": 0.0,
        "agent_steps": 0, "agent_steps_per_second": 0.0, "eval_seeds": 0, "headline": "", "better": "",
        "eval": figures,
        "references": {"best_fixed": {"level": 0.0, "eval": figures}, "uniform": {"eval": figures}},
        "vs_best_fixed": {"mean": 0.0, "ci95": 0.0},
        "vs_uniform": {"mean": 0.0, "ci95": 0.0},
        "held_out": [],
        "held_out_best_fixed": [],
        "last_episode": last_episode_shape(w, kind),
    });
    if let Some(k) = compatibility_key(w) {
        shape[k] = json!({"mean": 0.0, "ci95": 0.0});
    }
    for name in w.named_actions() {
        shape["references"][*name] = json!({"eval": figures});
        shape[format!("vs_{name}")] = json!({"mean": 0.0, "ci95": 0.0});
    }
    if w.reads_actions() && !w.shares_reward() {
        shape["references"]["selfish"] = json!({"spec": "", "converged": false, "passes": 0, "eval": figures});
        shape["vs_selfish"] = json!({"mean": 0.0, "ci95": 0.0});
    }
    shape
}

/// The keys `last_episode` may hold (the last line of `metrics.jsonl`, as the queue stack's
/// summary has it): the episode's number, agent-steps and wall time and every figure of
/// [`generation_keys`] (one no copy computed is absent from the line, so an objective naming
/// it finds no number there); null for a learner that does not train (what the run writes,
/// so an objective there is refused before any trial runs). The shape is the base file's
/// learner's: a sweep over `learner.kind` checks its objective against that one, as it does
/// its pruner's figure.
fn last_episode_shape(w: &dyn World, kind: LearnerKind) -> Value {
    if !learns(kind) {
        return Value::Null;
    }
    let mut last = json!({"episode": 0, "agent_steps": 0, "wall_time": 0.0});
    for key in generation_keys(w, kind) {
        last[key] = json!(0.0);
    }
    // Hedge over the episode counts the replays it played (`Trainer::episode`).
    if kind == LearnerKind::Hedge && w.scenario().is_none() {
        last["episodes_played"] = json!(0);
    }
    last
}

/// `eval_<headline>` (`eval_welfare` in the queue world), where no other key of a run's
/// summary has that name.
fn compatibility_key(w: &dyn World) -> Option<String> {
    let k = format!("eval_{}", w.metrics()[w.headline()].key);
    (k != "eval_seeds").then_some(k)
}

/// What the held-out evaluation and its references gave.
struct Judged {
    learned: Vec<Played>,
    best_level: usize,
    best: Vec<Played>,
    uniform: Vec<Played>,
    /// Every agent at each of the world's named actions ([`World::named_actions`]), in order.
    named: Vec<Vec<Played>>,
    /// Where best responses per group stop, from the best fixed level on the selection seeds
    /// (the selfish equilibrium under each agent's own reward: `mtf analyze`'s), and its
    /// held-out play; `None` in a world whose mechanism ignores the actions or whose agents
    /// share one reward ([`World::shares_reward`]).
    selfish: Option<(env::worlds::selfish::Selfish, Vec<Played>)>,
}

/// A copy of `w` whose figures include the fairness replays ([`World::set_fairness`]): the
/// trained policy's held-out figures carry them (the queue stack's `eval` and `eval_sampled`
/// do), the references do not (their searches and baselines pay only for the headline's).
fn with_fairness(w: &dyn World) -> Box<dyn World> {
    let mut copy = w.fork();
    copy.set_fairness(true);
    copy
}

/// The held-out evaluation of `policy` and its references on the same seeds.
fn judge(exp: &SeamExperiment, policy: &dyn RowPolicy) -> Judged {
    let w = exp.world.as_ref();
    let (root, t) = (exp.root(), exp.train.threads);
    let seeds = episode_seeds(root, exp.train.eval_seeds);
    // The best fixed level and the selfish search pick on selection seeds: as many as the
    // held-out ones in the worlds the queue stack also trains (`World::scenario`: its
    // references, so a run's numbers do not move when the queue world's default stack flips
    // to this one); elsewhere between 2 and 8 (the market's and the Gavel world's searches
    // replay every level on each).
    let picks = if w.scenario().is_some() {
        exp.train.eval_seeds
    } else {
        exp.train.eval_seeds.clamp(2, 8)
    };
    let select = selection_seeds(root, picks);
    let levels = w.levels().len();
    let best_level = super::best_level(w, &select, t);
    Judged {
        learned: evaluate(with_fairness(w).as_ref(), policy, &seeds, t),
        best_level,
        best: evaluate(w, &Fixed::new(vec![best_level]), &seeds, t),
        uniform: evaluate(w, &Uniform::of(w), &seeds, t),
        named: (0..w.named_actions().len())
            .map(|j| evaluate(w, &Fixed::new(vec![levels + j]), &seeds, t))
            .collect(),
        selfish: (w.reads_actions() && !w.shares_reward()).then(|| {
            let found = env::worlds::selfish::selfish(w, best_level, &select, t);
            let played = evaluate(w, &Fixed::new(found.levels.clone()), &seeds, t);
            (found, played)
        }),
    }
}

/// The figures as a JSON object (`{key: {mean, ci95}}`).
fn figures_json(w: &dyn World, played: &[Played]) -> Value {
    let stats = summarise(played, w.metrics());
    Value::Object(
        w.metrics()
            .iter()
            .zip(stats)
            .map(|(m, s)| (m.key.to_string(), json!({"mean": s.mean, "ci95": s.ci95})))
            .collect(),
    )
}

/// A paired improvement (positive is better) of the headline, as JSON.
fn improvement(w: &dyn World, a: &[Played], b: &[Played]) -> Stat {
    let head = w.headline();
    let d = paired(a, b, head);
    Stat {
        mean: d.mean * sign(w.metrics()[head].better) + 0.0, // no -0.000 for a tie under lower-is-better
        ci95: d.ci95,
    }
}

/// What a run of this module produced (summary.json as a value, and the lines it prints).
#[derive(Debug, Clone)]
pub struct SeamTrained {
    /// The run directory.
    pub dir: PathBuf,
    /// `summary.json`.
    pub summary: Value,
    /// The console report.
    pub report: String,
    /// Whether `TrainSpec::on_episode` stopped it before the end (no summary then).
    pub stopped: bool,
}

/// Train (or resume) a run, or a run group, in a world behind the seam.
pub fn execute(spec: &crate::TrainSpec) -> crate::error::Result<SeamTrained> {
    if let Some(path) = &spec.resume {
        if crate::train::group::is_group(path) {
            return resume_group(path, spec);
        }
        return resume(path, spec);
    }
    let config = spec
        .config
        .as_ref()
        .ok_or_else(|| user("give --config FILE (or --resume RUN_DIR)"))?;
    let mut set = spec.set.clone();
    if let Some(s) = spec.seed {
        set.push(format!("seed={s}"));
    }
    if let Some(r) = spec.replicates {
        set.push(format!("train.replicates={r}"));
    }
    let mut exp = SeamExperiment::load(config, &set)?;
    if let Some(t) = spec.threads {
        exp.train.threads = t;
    }
    crate::train::memory::check(&exp.memory(), "this training run")?;
    let name = spec.name.clone().unwrap_or_else(|| run::stem(config).to_string());
    let dir = RunDir::create(spec.out.as_deref(), &name)?;
    if exp.train.replicates > 1 {
        run::write_atomic(&dir.config(), exp.to_toml().as_bytes())?;
        return train_group(exp, dir, spec);
    }
    run::write_atomic(&dir.config(), exp.to_toml().as_bytes())?;
    train_run_from(exp, dir, 0, spec)
}

fn train_group(exp: SeamExperiment, dir: RunDir, spec: &crate::TrainSpec) -> crate::error::Result<SeamTrained> {
    let r = exp.train.replicates;
    let text = exp.to_toml();
    let threads = spec.threads.unwrap_or(exp.train.threads).max(1);
    // Every replicate's config checked and written, and its checkpoint read, before any trains.
    let mut todo = Vec::new();
    for k in 0..r {
        let rdir = dir.replicate(k);
        std::fs::create_dir_all(&rdir).map_err(|e| run::io_error(&rdir, "creating", e))?;
        let mut one = SeamExperiment::from_table(
            text.parse().map_err(|e| failed(format!("re-reading the config: {e}")))?,
            &dir.config(),
        )?;
        one.train.replicates = 1;
        one.train.replicate = k as u64;
        one.train.threads = threads;
        let rd = RunDir::open(&rdir)?;
        // The group's config.toml edited since: refused unless allowed, and an allowed change
        // reaches the replicate (a complete replicate was skipped whatever the group said).
        let want = one.to_toml();
        if let Ok(own) = std::fs::read_to_string(rd.config()) {
            crate::train::refuse_changes(
                &dir.config(),
                &own,
                &want,
                &spec.allow_config_change,
                &format!("replicate-{k}'s config.toml"),
            )?;
        }
        run::write_atomic(&rd.config(), want.as_bytes())?;
        let start = restore_or_zero(&rd, &one, &spec.allow_config_change)?;
        if !rd.summary().exists() || start < one.train.episodes {
            todo.push((one, rd, start));
        }
    }
    let stopped = if threads > 1 && todo.len() > 1 {
        side_by_side(todo, threads, spec)?
    } else {
        let mut stopped = None;
        for (one, rd, start) in todo {
            let done = train_run_from(one, rd, start, spec)?;
            if done.stopped {
                stopped = Some(done);
                break;
            }
        }
        stopped
    };
    match stopped {
        Some(done) => Ok(done),
        None => summarise_group(&dir),
    }
}

/// Train replicates at once on min(threads, replicates) workers of their own (each replicate
/// on its worker's share of the threads: its results do not depend on how many); a stop
/// (replicate 0's hook, `spec.stop`, or a replicate that failed) stops every replicate at its
/// next episode, checkpoint written, and starts no other. One progress bar counts every
/// replicate's episodes. Returns a stopped replicate's outcome, if one stopped.
///
/// The workers are plain threads ([`env::par::on_workers`]), not a rayon pool: a rayon worker
/// blocked in a replicate's own pool would take up a queued replicate inside it, holding more
/// replicates in memory than the estimate counts and suspending the first one (whose hook a
/// sweep's pruner reads) until the nested one ends.
fn side_by_side(
    todo: Vec<(SeamExperiment, RunDir, u64)>,
    threads: usize,
    spec: &crate::TrainSpec,
) -> crate::error::Result<Option<SeamTrained>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let workers = threads.min(todo.len()).max(1);
    let total: u64 = todo.iter().map(|(one, _, start)| one.train.episodes.saturating_sub(*start)).sum();
    let bar = crate::train::progress_bar(total, "replicates: episode {pos}/{len} [{bar:30}] ETA {eta}", spec.quiet);
    let halted = Arc::new(AtomicBool::new(false));
    let outer = spec.stop.clone();
    let stop = {
        let (bar, halted, outer) = (bar.clone(), Arc::clone(&halted), outer.clone());
        // Asked after every episode of every replicate: the shared bar's tick.
        crate::train::StopFlag(Arc::new(move || {
            bar.inc(1);
            halted.load(Ordering::Relaxed) || outer.as_ref().is_some_and(|s| (s.0)())
        }))
    };
    let hook = spec.on_episode.clone().map(|h| {
        let halted = Arc::clone(&halted);
        crate::train::EpisodeHook(Arc::new(move |log: &crate::train::EpisodeLog| {
            let halt = (h.0)(log)?;
            if halt {
                halted.store(true, Ordering::Relaxed);
            }
            Ok(halt)
        }))
    });
    let each = crate::TrainSpec {
        quiet: true,
        stop: Some(stop),
        on_episode: hook,
        ..spec.clone()
    };
    let outcomes = env::par::on_workers(workers, todo, |worker, k, (mut one, rd, start): (SeamExperiment, RunDir, u64)| {
        if halted.load(Ordering::Relaxed) || outer.as_ref().is_some_and(|s| (s.0)()) {
            // Not started: the group is stopped before this replicate trained.
            return Ok(SeamTrained {
                dir: rd.path().to_path_buf(),
                summary: Value::Null,
                report: format!("stopped before replicate {k} trained\n"),
                stopped: true,
            });
        }
        // The threads shared out, the remainder to the first workers.
        one.train.threads = (threads / workers + usize::from(worker < threads % workers)).max(1);
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| train_run_from(one, rd, start, &each)));
        // A replicate that failed (or panicked) stops the others (its error is the command's).
        if !matches!(done, Ok(Ok(_))) {
            halted.store(true, Ordering::Relaxed);
        }
        done.unwrap_or_else(|payload| std::panic::resume_unwind(payload))
    });
    bar.finish_and_clear();
    let mut stopped = None;
    for done in outcomes {
        let done = done?;
        if done.stopped && stopped.is_none() {
            stopped = Some(done);
        }
    }
    Ok(stopped)
}

fn resume_group(path: &Path, spec: &crate::TrainSpec) -> crate::error::Result<SeamTrained> {
    let dir = RunDir::open(path)?;
    let mut exp = SeamExperiment::load(&dir.config(), &crate::train::run_config_sets(&dir.config()))?;
    if let Some(t) = spec.threads {
        exp.train.threads = t;
    }
    train_group(exp, dir, spec)
}

/// The episodes a run's checkpoint covers (0 without one); its config changed since only at
/// `allowed` keys.
fn restore_or_zero(dir: &RunDir, exp: &SeamExperiment, allowed: &[String]) -> crate::error::Result<u64> {
    let latest = dir.latest_checkpoint();
    if !latest.exists() {
        return Ok(0);
    }
    let bytes = run::read_regular(&latest, 1 << 32)?;
    let decoded = crate::train::checkpoint::decode(&latest, &bytes)?;
    if let Some(recorded) = decoded.config {
        crate::train::refuse_changes(&dir.config(), recorded, &exp.to_toml(), allowed, "its checkpoint")?;
    }
    Ok(decoded.episodes)
}

fn resume(path: &Path, spec: &crate::TrainSpec) -> crate::error::Result<SeamTrained> {
    let dir = RunDir::open(path)?;
    let mut exp = SeamExperiment::load(&dir.config(), &crate::train::run_config_sets(&dir.config()))?;
    if let Some(t) = spec.threads {
        exp.train.threads = t;
    }
    let start = restore_or_zero(&dir, &exp, &spec.allow_config_change)?;
    if dir.summary().exists() && start >= exp.train.episodes {
        let summary = crate::train::log::read_json(&dir.summary())?;
        return Ok(SeamTrained {
            dir: path.to_path_buf(),
            report: format!("{}: the run is complete; nothing to resume\n", path.display()),
            summary,
            stopped: false,
        });
    }
    train_run_from(exp, dir, start, spec)
}

/// Train generations `start..` of a run whose config is written, then judge it.
fn train_run_from(exp: SeamExperiment, dir: RunDir, start: u64, spec: &crate::TrainSpec) -> crate::error::Result<SeamTrained> {
    match train_episodes(&exp, &dir, start, spec)? {
        Outcome::Stopped(t) => Ok(t),
        Outcome::Done(done) => judge_run(&exp, &dir, done),
    }
}

/// How [`train_episodes`] ended: stopped by its hook or a signal (its checkpoint written), or
/// every episode trained.
enum Outcome {
    Stopped(SeamTrained),
    Done(Finished),
}

/// A run whose episodes are all trained, before it is judged.
struct Finished {
    learner: Trainer,
    /// Agent-steps trained on (the run's, resumed ones included).
    steps: u64,
    train_seconds: f64,
    /// Episodes (ES: generations) this invocation trained.
    trained: u64,
    tb: crate::run::tb::EventWriter,
    resolved: toml::Table,
}

/// The training loop: an episode (ES: a generation) at a time, each logged to metrics.jsonl
/// and TensorBoard and checkpointed, from `start` (a resumed run's checkpoint restored).
fn train_episodes(exp: &SeamExperiment, dir: &RunDir, start: u64, spec: &crate::TrainSpec) -> crate::error::Result<Outcome> {
    let w = exp.world.as_ref();
    let headline = w.metrics()[w.headline()].key;
    let mut learner = Trainer::fresh(exp);
    let config_text = exp.to_toml();
    let mut steps = 0u64;
    if start > 0 {
        let latest = dir.latest_checkpoint();
        let bytes = run::read_regular(&latest, 1 << 32)?;
        learner.restore(&latest, crate::train::checkpoint::decode(&latest, &bytes)?.learner)?;
        crate::train::log::truncate_metrics(&dir.metrics(), start)?;
        steps = last_steps(&dir.metrics())?;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(exp.train.threads)
        .build()
        .map_err(|e| failed(format!("starting {} threads: {e}", exp.train.threads)))?;
    let mut tb = crate::run::tb::EventWriter::create(&dir.tb())?;
    let mut resolved: toml::Table = config_text
        .parse()
        .map_err(|e| failed(format!("re-reading the resolved config: {e}")))?;
    // The values the run trains with, `auto` decided (PPO's critic, share and entropy).
    if let (Some(section), Some(toml::Value::Table(learner))) = (
        exp.learner.chosen().resolved_section(&SeamShape::of(w), exp.train.episodes),
        resolved.get_mut("learner"),
    ) {
        learner.insert(exp.learner.kind.name().to_string(), section);
    }
    tb.hparams(
        &resolved,
        &dir.path().file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default(),
    )?;
    let ckpts = dir.checkpoints();
    std::fs::create_dir_all(&ckpts).map_err(|e| run::io_error(&ckpts, "creating", e))?;
    let started = Instant::now();
    let unit = unit(exp.learner.kind);
    let progress = crate::train::Progress::new(exp.train.episodes, start, spec.quiet, unit);
    let total = if learns(exp.learner.kind) { exp.train.episodes } else { start };
    let root = exp.training_seed();
    let keys = generation_keys(w, exp.learner.kind);
    for e in start..total {
        let t0 = Instant::now();
        let (mut line, played) = learner.episode(exp, root, e, &pool);
        if let Some(what) = learner.non_finite() {
            return Err(failed(format!(
                "{}: training diverged in {unit} {}: {what}; the checkpoint of {unit} {e} kept. Lower learner.{}.{}",
                dir.path().display(),
                e + 1,
                exp.learner.kind.name(),
                match exp.learner.kind {
                    LearnerKind::Es => "lr or sigma",
                    LearnerKind::ActorCritic => "actor_lr or critic_lr",
                    LearnerKind::Hedge => "eta",
                    _ => "lr",
                }
            )));
        }
        steps += played;
        line["agent_steps"] = json!(steps);
        line["wall_time"] = json!(t0.elapsed().as_secs_f64());
        run::append_line(&dir.metrics(), &line.to_string())?;
        for key in &keys {
            let tag = match *key {
                "fitness" => "charts/fitness".to_string(),
                "spread" => "es/spread".to_string(),
                "entropy" | "actor_loss" | "critic_loss" => format!("losses/{key}"),
                k => format!("charts/{k}"),
            };
            // A figure no copy computed this episode has no point.
            if line.get(*key).is_some() || *key == headline {
                tb.scalar(&tag, line[*key].as_f64().unwrap_or(f64::NAN) as f32, steps)?;
            }
        }
        let done = e + 1;
        let bytes = crate::train::checkpoint::encode(done, &config_text, &learner.save()?);
        run::write_atomic(&dir.latest_checkpoint(), &bytes)?;
        if done % exp.train.checkpoint_every == 0 || done == exp.train.episodes {
            run::write_atomic(&dir.kept_checkpoint(done), &bytes)?;
        }
        progress.tick(done, &format!("{headline} {:.3}", line[headline].as_f64().unwrap_or(f64::NAN)));
        let hook = spec.on_episode.as_ref().filter(|_| exp.train.replicate == 0);
        // A sweep's pruner (replicate 0's generations), its SIGTERM or a stale trial (any
        // replicate's) stops the run here, its checkpoint written.
        let halt = match hook {
            Some(h) => (h.0)(&hook_log(e, &line, &keys))?,
            None => false,
        } || spec.stop.as_ref().is_some_and(|s| (s.0)());
        if halt {
            progress.finish();
            return Ok(Outcome::Stopped(SeamTrained {
                dir: dir.path().to_path_buf(),
                summary: Value::Null,
                report: format!("stopped after {unit} {done}\n"),
                stopped: true,
            }));
        }
    }
    progress.finish();
    Ok(Outcome::Done(Finished {
        learner,
        steps,
        train_seconds: started.elapsed().as_secs_f64(),
        trained: total.saturating_sub(start),
        tb,
        resolved,
    }))
}

/// What a learner's loop counts: ES's generations, everyone else's episodes.
fn unit(kind: LearnerKind) -> &'static str {
    if kind == LearnerKind::Es {
        "generation"
    } else {
        "episode"
    }
}

/// Judge a trained run on the held-out seeds against its references, and write its summary
/// (summary.json, TensorBoard's summary scalars) and console report.
fn judge_run(exp: &SeamExperiment, dir: &RunDir, done: Finished) -> crate::error::Result<SeamTrained> {
    let Finished {
        learner,
        steps,
        train_seconds,
        trained,
        mut tb,
        resolved,
    } = done;
    let w = exp.world.as_ref();
    let head = w.headline();
    let headline = w.metrics()[head].key;
    let hedge = match &learner {
        Trainer::Hedge(h) => Some(hedge_json(h, w)),
        _ => None,
    };
    let (policy, greedy): (Box<dyn RowPolicy>, _) = if learns(exp.learner.kind) {
        let trained = learner.trained(exp)?;
        let greedy = trained.greedy();
        (trained.policy(), greedy)
    } else {
        (learner.policy(exp)?, None)
    };
    let j = judge(exp, policy.as_ref());
    let vs_best = improvement(w, &j.learned, &j.best);
    let vs_uniform = improvement(w, &j.learned, &j.uniform);
    let level = w.levels()[j.best_level];
    let mut summary = json!({
        "world": env::registry::world_name(&resolved),
        "mechanism": w.mechanism(),
        "learner": exp.learner.kind.name(),
        "episodes": exp.train.episodes,
        "train_seconds": train_seconds,
        "agent_steps": steps,
        "agent_steps_per_second": steps as f64 / train_seconds.max(1e-9),
        "eval_seeds": exp.train.eval_seeds,
        "headline": headline,
        "better": if sign(w.metrics()[head].better) > 0.0 { "higher" } else { "lower" },
        "eval": figures_json(w, &j.learned),
        "references": {
            "best_fixed": {"level": level, "eval": figures_json(w, &j.best)},
            "uniform": {"eval": figures_json(w, &j.uniform)},
        },
        "vs_best_fixed": {"mean": vs_best.mean, "ci95": vs_best.ci95},
        "vs_uniform": {"mean": vs_uniform.mean, "ci95": vs_uniform.ci95},
        "held_out": j.learned.iter().map(|p| p.figures[head]).collect::<Vec<f64>>(),
        "held_out_best_fixed": j.best.iter().map(|p| p.figures[head]).collect::<Vec<f64>>(),
    });
    // The headline again under the queue stack's name for it (`eval_welfare`: its sweeps'
    // default objective; TensorBoard's `summary/eval_<headline>`), as the run is scored: the
    // flip moves the queue world's sweeps here (issue 38), where `eval` is as trained.
    if let Some(k) = compatibility_key(w) {
        summary[k] = summary["eval"][headline].clone();
    }
    let mut named_lines = String::new();
    for (name, played) in w.named_actions().iter().zip(&j.named) {
        let vs = improvement(w, &j.learned, played);
        summary["references"][*name] = json!({"eval": figures_json(w, played)});
        summary[format!("vs_{name}")] = json!({"mean": vs.mean, "ci95": vs.ci95});
        named_lines += &format!("{:<31} {}\n", format!("vs every agent at `{name}`:"), vs.signed_pm(3));
    }
    if let Some((found, played)) = &j.selfish {
        let vs = improvement(w, &j.learned, played);
        let spec = super::group_spec(&found.levels, w);
        summary["references"]["selfish"] =
            json!({"spec": spec, "converged": found.converged, "passes": found.passes, "eval": figures_json(w, played)});
        summary["vs_selfish"] = json!({"mean": vs.mean, "ci95": vs.ci95});
        let stopped = if found.converged { "" } else { ", not converged" };
        named_lines += &format!("{:<31} {} ({spec}{stopped})\n", "vs the selfish equilibrium:", vs.signed_pm(3));
    }
    // The last training episode's line (null where nothing trained: a fixed level, uniform
    // play), where the queue stack's sweeps read `last_episode.welfare`.
    summary["last_episode"] = if learns(exp.learner.kind) {
        last_line(&dir.metrics())?.unwrap_or(Value::Null)
    } else {
        Value::Null
    };
    let greedy_line = greedy_row(exp, &j, greedy.as_deref(), &mut summary);
    if let Some(h) = &hedge {
        summary["hedge"] = h.clone();
    }
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let eval = summarise(&j.learned, w.metrics())[head];
    for (tag, v) in [
        (format!("summary/eval_{headline}"), eval.mean),
        ("summary/vs_best_fixed".into(), vs_best.mean),
        ("summary/vs_uniform".into(), vs_uniform.mean),
    ] {
        tb.scalar(&tag, v as f32, steps)?;
    }
    tb.hparams_end(true)?;
    let m = &w.metrics()[head];
    let learned = hedge.as_ref().map_or(String::new(), |h| {
        let groups = h["groups"].as_array().map(Vec::as_slice).unwrap_or_default();
        let each: Vec<String> = groups
            .iter()
            .map(|g| {
                format!(
                    "{} {} (p {:.2})",
                    g["name"].as_str().unwrap_or("?"),
                    g["level"],
                    g["probability"].as_f64().unwrap_or(f64::NAN)
                )
            })
            .collect();
        format!("Hedge's heaviest level per group: {}\n", each.join(", "))
    });
    let unit = unit(exp.learner.kind);
    let report = format!(
        "trained {trained} {unit}s ({}) in {train_seconds:.1} s, {steps} agent-steps; held-out {} {} over {} seeds\n\
         vs the best fixed level ({level}): {} ({}; positive is better)\n\
         vs uniform random play:        {}\n\
         {greedy_line}{named_lines}{learned}run directory: {}\nTensorBoard:   tensorboard --logdir {}\n",
        exp.learner.kind.name(),
        m.label,
        eval.pm(3),
        exp.train.eval_seeds,
        vs_best.signed_pm(3),
        verdict(vs_best),
        vs_uniform.signed_pm(3),
        dir.path().display(),
        dir.tb().display(),
    );
    Ok(SeamTrained {
        dir: dir.path().to_path_buf(),
        summary,
        report,
        stopped: false,
    })
}

/// A policy that draws its actions is judged drawing them, as it trained; its argmax is a
/// second row (`greedy` in `summary.json`, and the console line returned), marked where the
/// policy is near-uniform (its argmax is then noise). Its entropy share goes into `summary`
/// whenever the policy says it.
fn greedy_row(exp: &SeamExperiment, j: &Judged, greedy: Option<&dyn RowPolicy>, summary: &mut Value) -> String {
    let w = exp.world.as_ref();
    let head = w.headline();
    let entropy = mean_entropy_share(&j.learned);
    let near_uniform = entropy.is_some_and(|e| e > env::metrics::spec::NEAR_UNIFORM);
    if let Some(e) = entropy {
        summary["entropy_share"] = json!(e);
        summary["near_uniform"] = json!(near_uniform);
    }
    let Some(g) = greedy else { return String::new() };
    let played = evaluate(
        with_fairness(w).as_ref(),
        g,
        &episode_seeds(exp.root(), exp.train.eval_seeds),
        exp.train.threads,
    );
    let vs = improvement(w, &played, &j.best);
    summary["greedy"] = json!({
        "eval": figures_json(w, &played),
        "vs_best_fixed": {"mean": vs.mean, "ci95": vs.ci95},
        "held_out": played.iter().map(|p| p.figures[head]).collect::<Vec<f64>>(),
    });
    let note = if near_uniform { crate::train::NEAR_UNIFORM_NOTE } else { "" };
    format!(
        "{:<31} {} (held-out {}){note}\n",
        "greedy (argmax) vs best fixed:",
        vs.signed_pm(3),
        summarise(&played, w.metrics())[head].pm(3),
    )
}

/// Hedge's weights in `summary.json`: per group its heaviest level and that level's
/// probability, the distribution (last iterate) and the time-averaged play; and the unit.
fn hedge_json(h: &EpisodeHedge, w: &dyn World) -> Value {
    let levels = w.levels();
    let groups: Vec<Value> = w
        .group_names()
        .iter()
        .enumerate()
        .map(|(g, name)| {
            let p = h.probabilities(g);
            let best = h.greedy()[g];
            json!({
                "name": name,
                "level": levels[best],
                "probability": p[best],
                "probabilities": p,
                "time_averaged": h.time_averaged(g),
            })
        })
        .collect();
    json!({"groups": groups, "levels": levels, "unit": h.unit, "updates": h.updates})
}

/// A generation's line as the episode log a sweep's hook reads (the figures only).
fn hook_log(e: u64, line: &Value, keys: &[&str]) -> crate::train::EpisodeLog {
    let figures = keys
        .iter()
        .map(|&k| (k.to_string(), line[k].as_f64().unwrap_or(f64::NAN)))
        .collect();
    crate::train::EpisodeLog::of_figures(e, figures, line["wall_time"].as_f64().unwrap_or(0.0))
}

/// Where an improvement's CI puts it.
pub fn verdict(s: Stat) -> &'static str {
    crate::train::verdict_as(s, "better, significant", "worse, significant")
}

/// The last logged generation's line of `metrics.jsonl` at `path` (none before the first).
fn last_line(path: &Path) -> crate::error::Result<Option<Value>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = run::read_text(path, 1 << 30)?;
    Ok(text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str::<Value>(l).ok()))
}

/// The agent-steps of the last logged generation.
fn last_steps(path: &Path) -> crate::error::Result<u64> {
    Ok(last_line(path)?.and_then(|v| v["agent_steps"].as_u64()).unwrap_or(0))
}

/// A run group's summary over its replicates: each replicate's paired improvement over the
/// best fixed level (mean over the held-out seeds), their IQM, bootstrap CI and probability
/// of improvement; and the same IQM and CI over uniform play and every named-action
/// reference (`vs_uniform_iqm`, `vs_own_ci95`, ...).
fn summarise_group(dir: &RunDir) -> crate::error::Result<SeamTrained> {
    let mut replicates = Vec::new();
    // Every `vs_*` improvement of the replicates' summaries, in the first one's order.
    let mut against: Vec<(String, Vec<f64>)> = Vec::new();
    // Each replicate's argmax against the best fixed level, where every replicate has one,
    // and how many of them are near-uniform.
    let (mut greedy, mut near_uniform) = (Some(Vec::new()), 0);
    // Each replicate's held-out headline as scored (`eval_<headline>`, as a run group's of the
    // queue stack holds its welfare), under its name.
    let (mut head_key, mut heads) = (None::<String>, Vec::new());
    for r in crate::train::group::replicates(dir.path())? {
        let s = crate::train::log::read_json(&RunDir::at(&r).summary())?;
        if let Some(h) = s["headline"].as_str() {
            heads.push(s["eval"][h]["mean"].as_f64().unwrap_or(f64::NAN));
            head_key.get_or_insert_with(|| format!("eval_{h}"));
        }
        let g = s["greedy"]["vs_best_fixed"]["mean"].as_f64();
        greedy = greedy.zip(g).map(|(mut all, g)| {
            all.push(g);
            all
        });
        near_uniform += usize::from(s["near_uniform"].as_bool() == Some(true));
        if against.is_empty() {
            against = s
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| k.starts_with("vs_") && v.get("mean").is_some())
                .map(|(k, _)| (k.clone(), Vec::new()))
                .collect();
            against.sort_by_key(|(k, _)| k != "vs_best_fixed");
        }
        for (key, scores) in &mut against {
            scores.push(s[key.as_str()]["mean"].as_f64().unwrap_or(f64::NAN));
        }
        replicates.push(r.display().to_string());
    }
    let Some((_, scores)) = against.iter().find(|(k, _)| k == "vs_best_fixed") else {
        return Err(crate::error::run_dir(dir.path(), "a run group without replicates"));
    };
    use crate::report::stats;
    let iqm = stats::iqm(scores);
    let ci = stats::bootstrap_ci(&[scores], stats::iqm, 7);
    let p = scores.iter().filter(|&&s| s > 0.0).count() as f64 / scores.len() as f64;
    let mut summary = json!({
        "replicates": replicates,
        "vs_best_fixed_per_replicate": scores,
        "vs_best_fixed_iqm": iqm,
        "vs_best_fixed_ci95": ci,
        "share_improving": p,
    });
    // The queue stack's group key for the same scores (its sweeps' `vs_baseline.sampled.iqm`):
    // as trained, and the argmax where the replicates have one (else as trained: a policy
    // that does not draw is its own argmax).
    let greedy_scores = greedy.as_ref().filter(|g| g.len() == scores.len()).unwrap_or(scores);
    summary["vs_baseline"] = json!({
        "sampled": stats::Replicates::of(scores, 7),
        "greedy": stats::Replicates::of(greedy_scores, 7),
    });
    if let Some(k) = head_key.filter(|k| k != "eval_seeds" && heads.len() == scores.len()) {
        let stat = env::eval::Stat::of(&heads);
        summary[k] = json!({"mean": stat.mean, "ci95": stat.ci95});
    }
    let mut others = String::new();
    for (key, s) in against.iter().filter(|(k, _)| k != "vs_best_fixed") {
        let (i, c) = (stats::iqm(s), stats::bootstrap_ci(&[s], stats::iqm, 7));
        summary[format!("{key}_per_replicate")] = json!(s);
        summary[format!("{key}_iqm")] = json!(i);
        summary[format!("{key}_ci95")] = json!(c);
        let name = key.trim_start_matches("vs_");
        let what = if name == "uniform" {
            "uniform random play".to_string()
        } else if name == "selfish" {
            "the selfish equilibrium".to_string()
        } else {
            format!("every agent at `{name}`")
        };
        others += &format!("improvement over {what}: IQM {i:+.3} [{:+.3}, {:+.3}]\n", c[0], c[1]);
    }
    if let Some(g) = greedy.filter(|g| !g.is_empty()) {
        let (i, c) = (stats::iqm(&g), stats::bootstrap_ci(&[&g], stats::iqm, 7));
        summary["vs_best_fixed_greedy_per_replicate"] = json!(g);
        summary["vs_best_fixed_greedy_iqm"] = json!(i);
        summary["vs_best_fixed_greedy_ci95"] = json!(c);
        summary["near_uniform_replicates"] = json!(near_uniform);
        let note = if near_uniform > 0 {
            format!(
                " ({near_uniform} of {} replicates near-uniform: their greedy figures are argmaxes of noise)",
                g.len()
            )
        } else {
            String::new()
        };
        others += &format!(
            "greedy (argmax) over the best fixed level: IQM {i:+.3} [{:+.3}, {:+.3}]{note}\n",
            c[0], c[1]
        );
    }
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&summary)?.as_bytes())?;
    let report = format!(
        "{} replicates; improvement over the best fixed level (positive is better): IQM {iqm:+.3} [{:+.3}, {:+.3}], {} of {} replicates above it\n{others}run group: {}\n",
        scores.len(),
        ci[0],
        ci[1],
        scores.iter().filter(|&&s| s > 0.0).count(),
        scores.len(),
        dir.path().display()
    );
    Ok(SeamTrained {
        dir: dir.path().to_path_buf(),
        summary,
        report,
        stopped: false,
    })
}

#[cfg(test)]
mod tests;

//! A market file's `[learner]` and `[train]` sections: what `mtf train` learns the `learn =
//! true` tenants' bids with, and how long; defaults tuned on the market (each with the
//! measurement that chose it) and the checks (the learners' own, and the market's limits).

use crate::learners::{LearnerKind, LearnerSection, SeamShape};
use env::config::ConfigError;
use env::market::MarketFile;
use serde::{Deserialize, Serialize};

/// `[learner]` of a market file: the learner registry's section, as in every world (`kind` and
/// every learner's own keys; defaults tuned on the market in [`MarketTraining::of`]), and the
/// levels.
#[derive(Clone, Debug, PartialEq)]
pub struct MarketLearner {
    /// The registry's section: `kind` (`hedge` by default here; `ppo`, `es`, `actor_critic`, or
    /// any learner added to the registry that builds from the world's shape) and the learners'
    /// own sections.
    pub section: LearnerSection,
    /// The bid factors (under MTF the thresholds) a learner chooses among (default: 0.5 to 1.5
    /// by 0.1 under the auctions, 0 to 1 by 0.1 under MTF).
    pub levels: Vec<f64>,
}

impl MarketLearner {
    /// The section as TOML, with its levels (the run's resolved config).
    pub fn to_table(&self) -> std::result::Result<toml::Table, String> {
        let mut t = toml::Table::try_from(&self.section).map_err(|e| e.to_string())?;
        t.insert(
            "levels".into(),
            toml::Value::Array(self.levels.iter().map(|&x| toml::Value::Float(x)).collect()),
        );
        Ok(t)
    }
}

/// `[train]` of a market file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MarketTrain {
    /// Training episodes per replicate.
    pub episodes: u64,
    /// Training replicates (seeds): the learned figures are stated over them.
    pub replicates: usize,
    /// Evaluation seeds (the same for every replicate).
    pub eval_seeds: usize,
    /// Market seeds a PPO episode learns from, each played by `learner.ppo.group` copies (ES
    /// uses `2 x learner.es.pairs`). Default 1, with PPO's default group of 8: with one copy
    /// PPO's one decisive round (the job's arrival) is one sample in 30 per update, and on the
    /// first-price duel (`agents/tests/cli_market_train.rs`) it stayed at its initial level in
    /// 300 episodes; 8 copies on 8 seeds found the best bid in 9 of 10 replicates (one stayed
    /// at 1.0), 8 copies of one seed with group-relative advantages in 10 of 10 (issue 41; the
    /// same copies, the same time).
    pub envs: usize,
    /// Also measure, for every common level, the most one learning tenant gains by deviating
    /// from it alone (`summary.json`'s `deviations`): which common levels are equilibria of the
    /// learners' selfish game. Costs levels x learning tenants x levels x evaluation seeds
    /// episodes.
    pub deviations: bool,
}

impl Default for MarketTrain {
    fn default() -> Self {
        Self {
            episodes: 100,
            replicates: 3,
            eval_seeds: 5,
            envs: 1,
            deviations: false,
        }
    }
}

/// The `[learner]` and `[train]` sections of a market file.
#[derive(Clone, Debug, PartialEq)]
pub struct MarketTraining {
    /// `[learner]`.
    pub learner: MarketLearner,
    /// `[train]`.
    pub train: MarketTrain,
}

/// The sections as read, before the market's defaults.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Sections {
    learner: LearnerSection,
    #[serde(default)]
    train: MarketTrain,
}

impl MarketTraining {
    /// The sections of `file` (named `path` in errors), checked; default levels filled in.
    pub fn of(file: &MarketFile, path: &str) -> std::result::Result<Self, ConfigError> {
        // `levels` is the market's own key (read by `action_levels`); the rest of `[learner]`
        // is the registry's section, over the market's defaults (its world's, each with the
        // measurement that chose it: `env::market::world::RUN_DEFAULTS`).
        let mut learner = file.learner.clone().unwrap_or_default();
        learner.remove("levels");
        let mut table = toml::Table::new();
        table.insert("learner".into(), toml::Value::Table(learner));
        if let Some(v) = &file.train {
            table.insert("train".into(), toml::Value::Table(v.clone()));
        }
        env::config::merge_under(&env::market::world::run_defaults(), &mut table);
        let sections: Sections = env::config::from_table(path, table)?;
        let t = Self {
            learner: MarketLearner {
                section: sections.learner,
                levels: env::market::game::action_levels(file, path)?,
            },
            train: sections.train,
        };
        if matches!(t.learner.section.kind, LearnerKind::Fixed | LearnerKind::Uniform) {
            return Err(ConfigError {
                file: path.into(),
                key: "learner.kind".into(),
                problem: format!(
                    "`{}` learns nothing: a market run reports uniform play and every common level itself; use hedge, ppo, es or actor_critic",
                    t.learner.section.kind.name()
                ),
            });
        }
        t.check(file, path)?;
        Ok(t)
    }

    fn check(&self, file: &MarketFile, path: &str) -> std::result::Result<(), ConfigError> {
        let err = |key: &str, problem: String| ConfigError {
            file: path.to_string(),
            key: key.to_string(),
            problem,
        };
        let (l, t) = (&self.learner.section, &self.train);
        if let Some(eta) = l.hedge.eta.filter(|&eta| !(eta.is_finite() && eta > 0.0 && eta <= 100.0)) {
            return Err(err("learner.hedge.eta", format!("must be in (0, 100], got {eta}")));
        }
        // The learners' own bounds first (before the market's limits that name their keys).
        l.ppo.check(&err)?;
        l.es.check(&err)?;
        // The market's own limit on the copies an episode plays (as train.envs x group below).
        if 2 * l.es.pairs > 512 {
            return Err(err(
                "learner.es.pairs",
                format!("must be at most 256 (512 market copies), got {}", l.es.pairs),
            ));
        }
        if !(1..=1_000_000).contains(&t.episodes) {
            return Err(err("train.episodes", format!("must be in [1, 1000000], got {}", t.episodes)));
        }
        if !(1..=64).contains(&t.replicates) {
            return Err(err("train.replicates", format!("must be in [1, 64], got {}", t.replicates)));
        }
        if !(1..=1000).contains(&t.eval_seeds) {
            return Err(err("train.eval_seeds", format!("must be in [1, 1000], got {}", t.eval_seeds)));
        }
        if !(1..=256).contains(&t.envs) {
            return Err(err("train.envs", format!("must be in [1, 256], got {}", t.envs)));
        }
        if let Some((g, key)) = l.chosen().group().filter(|&(g, _)| t.envs.saturating_mul(g) > 256) {
            return Err(err(
                key,
                format!("train.envs x group must be at most 256 copies, got {} x {g}", t.envs),
            ));
        }
        if !(1..=256).contains(&l.ppo.group) || t.envs * l.ppo.group > 256 {
            return Err(err(
                "learner.ppo.group",
                format!(
                    "must be in [1, 256], with train.envs x group at most 256 copies, got {} x {}",
                    t.envs, l.ppo.group
                ),
            ));
        }
        env::market::world::check_learners(file, path)?;
        // The learners' own checks against the market's shape (its learning tenants, one actor
        // per group, its observation read whole), as in every world: each section for its own
        // values, the one that runs for what the market cannot give it. Last: the market is
        // whole by now.
        let table = env::market::world::resolved(file).map_err(|p| err("market", p))?;
        let world = env::market::world::MarketWorld::learners(file.clone(), self.learner.levels.clone(), table);
        let shape = SeamShape::persistent(&world, super::Learners::of(&file.at_seed(file.seed), file).class);
        l.validate(&shape, &err)
    }
}

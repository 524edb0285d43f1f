//! A toy world behind the seam: agents that come and go, each round choosing a level and
//! paid `1 - (level - target)^2` plus noise, where the target is its group's. The best fixed
//! level of a group is the level nearest its target, known in closed form: what the seam's
//! tests train towards and check every door with (train, resume, compare, export, Python).
//!
//! Agent i is present from round `i % stagger` to the end of the episode, so the live set
//! grows; agents of even index are group 0, odd group 1. Its whole config is `[env]`:
//! `world = "bandit"`, `agents`, `rounds`, `targets` (one per group), `noise`, `stagger`,
//! `levels`.

use super::api::{check_actions, Better, Figures, Layout, Report, StepError, World, WorldMetric};
use crate::config::{ActionKind, ConfigError};
use crate::rng::{names, stream, unit};
use rand::rngs::SmallRng;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file: `seed` and `[env]` (and `[learner]`, `[train]` for `agents`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BanditFile {
    /// Root seed.
    #[serde(default = "one")]
    pub seed: u64,
    /// The world.
    pub env: BanditEnv,
    /// `[learner]` (read by `agents`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner: Option<toml::Table>,
    /// `[train]` (read by `agents`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<toml::Table>,
}

fn one() -> u64 {
    1
}

/// `[env]`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BanditEnv {
    /// `"bandit"`.
    pub world: String,
    /// Agents.
    #[serde(default = "four")]
    pub agents: usize,
    /// Rounds per episode.
    #[serde(default = "twenty")]
    pub rounds: u32,
    /// Each group's target level (group g = agent index mod the number of targets).
    #[serde(default = "targets")]
    pub targets: Vec<f64>,
    /// Standard deviation of the reward noise (uniform noise of that deviation).
    #[serde(default = "noise")]
    pub noise: f64,
    /// Agent i joins in round `i % stagger`.
    #[serde(default = "two")]
    pub stagger: u32,
    /// The levels.
    #[serde(default = "levels")]
    pub levels: Vec<f64>,
}

fn four() -> usize {
    4
}
fn twenty() -> u32 {
    20
}
fn two() -> u32 {
    2
}
fn targets() -> Vec<f64> {
    vec![0.3, 0.7]
}
/// The largest reward noise (standard deviation).
const MAX_NOISE: f64 = 1e6;

fn noise() -> f64 {
    0.1
}
fn levels() -> Vec<f64> {
    (0..=10).map(|k| f64::from(k) / 10.0).collect()
}

/// The figures: mean reward per agent-round, and the share of rounds at the group's best level.
pub const METRICS: &[WorldMetric] = &[
    WorldMetric {
        key: "reward",
        label: "mean reward per agent-round",
        better: Better::Higher,
        decimals: 4,
        shown: true,
    },
    WorldMetric {
        key: "at_best",
        label: "share of plays at the best level",
        better: Better::Higher,
        decimals: 3,
        shown: true,
    },
];

/// Build from a config table (the registry's constructor).
pub fn build(table: toml::Table, path: &Path) -> Result<Box<dyn World>, ConfigError> {
    let file: BanditFile = super::api::section(table, path)?;
    let err = |key: &str, problem: String| ConfigError {
        file: path.display().to_string(),
        key: key.into(),
        problem,
    };
    let e = &file.env;
    if !(1..=10_000).contains(&e.agents) {
        return Err(err("env.agents", format!("must be in [1, 10000], got {}", e.agents)));
    }
    if !(1..=1_000_000).contains(&e.rounds) {
        return Err(err("env.rounds", format!("must be in [1, 1e6], got {}", e.rounds)));
    }
    if e.targets.is_empty() || e.targets.iter().any(|t| !t.is_finite()) {
        return Err(err("env.targets", "needs at least one finite target".into()));
    }
    // Bounded so that rewards, their sums over an episode and their squares stay finite (1e308
    // gave NaN rewards, a NaN verdict and metrics mtf curves could not read).
    if !(e.noise.is_finite() && (0.0..=MAX_NOISE).contains(&e.noise)) {
        return Err(err("env.noise", format!("must be in [0, {MAX_NOISE:e}], got {}", e.noise)));
    }
    if e.stagger == 0 || e.stagger > e.rounds {
        return Err(err("env.stagger", format!("must be in [1, rounds], got {}", e.stagger)));
    }
    if e.levels.is_empty() || e.levels.len() > 64 || e.levels.iter().any(|l| !(0.0..=1.0).contains(l)) {
        return Err(err("env.levels", "needs 1 to 64 levels in [0, 1]".into()));
    }
    Ok(Box::new(Bandit::new(file)))
}

/// The toy world (module docs).
pub struct Bandit {
    file: BanditFile,
    layout: Layout,
    rng: SmallRng,
    round: u32,
    live: Vec<usize>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    acted: Vec<usize>,
    total: f64,
    plays: f64,
    best_plays: f64,
    over: bool,
}

impl Bandit {
    /// A world for a checked file.
    pub fn new(file: BanditFile) -> Self {
        let mut b = Self {
            layout: Layout {
                names: vec!["group".into(), "time".into()],
                low: vec![0.0, 0.0],
                high: vec![1.0, 1.0],
            },
            rng: stream(0, names::BANDIT, 0),
            round: 0,
            live: Vec::new(),
            rewards: Vec::new(),
            terminated: Vec::new(),
            acted: Vec::new(),
            total: 0.0,
            plays: 0.0,
            best_plays: 0.0,
            over: true,
            file,
        };
        b.reset(b.file.seed);
        b
    }

    /// Group g's best level index (nearest its target; ties the lower).
    pub fn best_level(&self, g: usize) -> usize {
        let t = self.file.env.targets[g];
        let l = &self.file.env.levels;
        (0..l.len())
            .min_by(|&a, &b| (l[a] - t).abs().total_cmp(&(l[b] - t).abs()))
            .expect("levels")
    }

    fn groups(&self) -> usize {
        self.file.env.targets.len()
    }

    fn admit(&mut self) {
        let e = &self.file.env;
        self.live = (0..e.agents).filter(|&i| (i as u32 % e.stagger) <= self.round).collect();
    }
}

impl World for Bandit {
    fn reset(&mut self, seed: u64) {
        self.rng = stream(seed, names::BANDIT, 0);
        self.round = 0;
        self.total = 0.0;
        self.plays = 0.0;
        self.best_plays = 0.0;
        self.over = false;
        self.admit();
    }

    fn live(&self) -> &[usize] {
        if self.over {
            &[]
        } else {
            &self.live
        }
    }

    fn possible(&self) -> usize {
        self.file.env.agents
    }

    fn agent_name(&self, id: usize) -> String {
        format!("agent_{id}")
    }

    fn group(&self, id: usize) -> usize {
        id % self.groups()
    }

    fn group_names(&self) -> Vec<String> {
        (0..self.groups()).map(|g| format!("group_{g}")).collect()
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn observe(&mut self, out: &mut [f32]) {
        let g = self.groups().max(2) - 1;
        let t = self.round as f32 / self.file.env.rounds as f32;
        for (row, &id) in out.chunks_exact_mut(2).zip(&self.live) {
            row[0] = (id % self.groups()) as f32 / g as f32;
            row[1] = t;
        }
    }

    fn levels(&self) -> &[f64] {
        &self.file.env.levels
    }

    fn action_kind(&self) -> ActionKind {
        ActionKind::Threshold
    }

    fn step(&mut self, actions: &[usize]) -> Result<Report<'_>, StepError> {
        if self.over {
            return Err(StepError::Done);
        }
        check_actions(&self.live, self.file.env.levels.len(), actions)?;
        self.acted.clone_from(&self.live);
        self.rewards.clear();
        let noise = self.file.env.noise * 3f64.sqrt();
        for (&id, &a) in self.live.iter().zip(actions) {
            let g = id % self.groups();
            let level = self.file.env.levels[a];
            let u = unit(rand::Rng::next_u64(&mut self.rng));
            let r = 1.0 - (level - self.file.env.targets[g]).powi(2) + noise * (2.0 * u - 1.0);
            self.rewards.push(r);
            self.total += r;
            self.plays += 1.0;
            self.best_plays += f64::from(u8::from(a == self.best_level(g)));
        }
        self.round += 1;
        let truncated = self.round >= self.file.env.rounds;
        self.terminated.clear();
        self.terminated.resize(self.acted.len(), false);
        if truncated {
            self.over = true;
        } else {
            self.admit();
        }
        Ok(Report {
            agents: &self.acted,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated,
        })
    }

    fn max_rounds(&self) -> Option<u32> {
        Some(self.file.env.rounds)
    }

    fn metrics(&self) -> &'static [WorldMetric] {
        METRICS
    }

    fn figures(&self) -> Figures {
        vec![self.total / self.plays.max(1.0), self.best_plays / self.plays.max(1.0)]
    }

    fn fork(&self) -> Box<dyn World> {
        Box::new(Bandit::new(self.file.clone()))
    }

    fn config(&self) -> toml::Table {
        let mut file = self.file.clone();
        file.learner = None;
        file.train = None;
        toml::Table::try_from(&file).expect("a bandit config serialises")
    }
}

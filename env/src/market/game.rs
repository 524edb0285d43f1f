//! The market as a multi-agent environment: every tenant an agent choosing, each round, a level
//! (its bid factor on its break-even prices, or under MTF its threshold) from
//! [`Market::observe`]'s features, rewarded with its utility's change (money). This is what the
//! Python package's `parallel_env` steps for a market file (PettingZoo's parallel API); `mtf
//! train`'s market learners drive [`Market`] directly because they act for the learning tenants
//! only.
//!
//! Episodes: `reset(seed)` plays the market of that seed ([`MarketFile::at_seed`]: the groups
//! expanded, the job sizes drawn from it). A tenant's level matters only when it decides (it
//! arrives, waits, or reached a checkpoint: observation feature 3); before its job arrives it
//! acts all the same. A tenant whose job finished is terminated; when the rounds run out the
//! others are truncated.

use super::{Market, MarketFile, MarketMetrics, MarketRound, Place, Pricing};
use crate::config::ConfigError;
use crate::worlds::api::{check_actions, StepError};

/// Most levels an agent chooses among.
pub const MAX_LEVELS: usize = 64;
/// Largest bid factor: ten times the break-even price.
pub const MAX_FACTOR: f64 = 10.0;

/// The levels the tenants choose among: the file's `learner.levels`, or by default 0.5 to 1.5
/// by 0.1 (bid factors, the economic agent at 1) under the auctions and 0 to 1 by 0.1
/// (thresholds) under MTF. Errors name `path` and the key.
pub fn action_levels(file: &MarketFile, path: &str) -> Result<Vec<f64>, ConfigError> {
    let err = |problem: String| ConfigError {
        file: path.to_string(),
        key: "learner.levels".into(),
        problem,
    };
    let mtf = file.mechanism.kind == Pricing::Mtf;
    let levels: Vec<f64> = match file.learner.as_ref().and_then(|l| l.get("levels")) {
        None => {
            let (lo, hi) = if mtf { (0, 10) } else { (5, 15) };
            return Ok((lo..=hi).map(|k| f64::from(k) / 10.0).collect());
        }
        Some(toml::Value::Array(xs)) => xs
            .iter()
            .map(|x| match x {
                toml::Value::Float(f) => Ok(*f),
                toml::Value::Integer(i) => Ok(*i as f64),
                other => Err(err(format!("{other} is not a number"))),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(err(format!("expected an array of numbers, got {other}"))),
    };
    let max = if mtf { 1.0 } else { MAX_FACTOR };
    // One file's levels serve every mechanism `mtf compare --mechanisms` puts it under: the
    // auctions' bid factors above 1 are no MTF threshold (a utility share above 1 is never met),
    // so MTF keeps the levels in [0, 1] (three-types.toml's 0.0..1.5 are its 0.0..1.0).
    let levels: Vec<f64> = if mtf && levels.iter().any(|x| *x <= 1.0) {
        levels.into_iter().filter(|x| !(*x > 1.0)).collect()
    } else {
        levels
    };
    if levels.is_empty() || levels.len() > MAX_LEVELS {
        return Err(err(format!("needs 1 to {MAX_LEVELS} levels, got {}", levels.len())));
    }
    if let Some(x) = levels.iter().find(|x| !(x.is_finite() && (0.0..=max).contains(*x))) {
        let what = if mtf { "a threshold" } else { "a bid factor" };
        return Err(err(format!("{x} is not {what} in [0, {max}]")));
    }
    if levels.windows(2).any(|w| w[0] >= w[1]) {
        return Err(err("must be strictly increasing".into()));
    }
    Ok(levels)
}

/// One tenant's part of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TenantStep {
    /// Its utility's change this round (money: value of work finished minus what it paid).
    pub reward: f64,
    /// Its job finished this round.
    pub terminated: bool,
    /// The episode's rounds ran out with its job unfinished.
    pub truncated: bool,
}

/// The market of a file as a parallel multi-agent environment (module docs).
pub struct MarketGame {
    raw: MarketFile,
    levels: Vec<f64>,
    names: Vec<String>,
    everyone: Vec<usize>,
    dim: usize,
    market: Market,
    file: MarketFile,
    rounds: Vec<MarketRound>,
    obs: Vec<f32>,
    factors: Vec<f64>,
    utility: Vec<f64>,
    steps: Vec<TenantStep>,
    over: bool,
}

impl MarketGame {
    /// An environment over an unexpanded file ([`MarketFile::load_unexpanded`]) whose agents
    /// choose among `levels` ([`action_levels`]). It starts at the file's seed.
    pub fn new(raw: MarketFile, levels: Vec<f64>) -> Self {
        let file = raw.at_seed(raw.seed);
        let names = file.market.tenants.iter().map(|t| t.name.clone()).collect();
        let n = file.market.tenants.len();
        let dim = Market::obs_dim(file.market.types.len());
        let mut g = Self {
            market: Market::new(file.clone()),
            file,
            raw,
            levels,
            names,
            everyone: (0..n).collect(),
            dim,
            rounds: Vec::new(),
            obs: vec![0.0; n * dim],
            factors: vec![0.0; n],
            utility: vec![0.0; n],
            steps: Vec::new(),
            over: false,
        };
        g.observe();
        g
    }

    /// The file it plays, unexpanded.
    pub fn raw(&self) -> &MarketFile {
        &self.raw
    }

    /// Agents (tenants, groups expanded: `name#1`, `name#2`, ...), in the order of every array.
    pub fn agents(&self) -> &[String] {
        &self.names
    }

    /// Features per observation ([`Market::obs_dim`]).
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The value of each action.
    pub fn levels(&self) -> &[f64] {
        &self.levels
    }

    /// `"threshold"` under MTF, else `"bid"`.
    pub fn kind(&self) -> &'static str {
        if self.raw.mechanism.kind == Pricing::Mtf {
            "threshold"
        } else {
            "bid"
        }
    }

    /// The episode's most rounds.
    pub fn max_rounds(&self) -> u32 {
        self.raw.env.rounds
    }

    /// Each tenant's MTF weight.
    pub fn weights(&self) -> Vec<f64> {
        self.file.market.tenants.iter().map(|t| t.weight).collect()
    }

    /// The current episode's market file (groups expanded, sizes drawn).
    pub fn file(&self) -> &MarketFile {
        &self.file
    }

    /// Observations, `[agent][feature]` row-major.
    pub fn observations(&self) -> &[f32] {
        &self.obs
    }

    /// Rounds played this episode.
    pub fn rounds(&self) -> &[MarketRound] {
        &self.rounds
    }

    /// Whether the episode is over.
    pub fn over(&self) -> bool {
        self.over
    }

    /// The factor (or threshold) each tenant played last step.
    pub fn factors(&self) -> &[f64] {
        &self.factors
    }

    /// Each tenant's utility so far.
    pub fn utility(&self) -> &[f64] {
        &self.utility
    }

    /// Each tenant's part of the last step.
    pub fn last_steps(&self) -> &[TenantStep] {
        &self.steps
    }

    /// The market as it stands (its totals, utilities, places).
    pub fn market(&self) -> &Market {
        &self.market
    }

    /// Where tenant i's job is now.
    pub fn place(&self, i: usize) -> Place {
        self.market.place(i)
    }

    fn observe(&mut self) {
        let d = self.dim;
        for i in 0..self.names.len() {
            self.market.observe(i, &mut self.obs[i * d..(i + 1) * d]);
        }
    }

    /// Start the episode of `seed`.
    pub fn reset(&mut self, seed: u64) {
        self.file = self.raw.at_seed(seed);
        self.market = Market::new(self.file.clone());
        self.rounds.clear();
        self.utility.fill(0.0);
        self.factors.fill(0.0);
        self.steps.clear();
        self.over = false;
        self.observe();
    }

    /// Play one round with each tenant's level index; returns each tenant's reward and flags.
    /// An error (wrong count, an index out of range, a finished episode) changes nothing: the
    /// seam's typed [`StepError`].
    pub fn step(&mut self, actions: &[usize]) -> Result<&[TenantStep], StepError> {
        let n = self.names.len();
        if self.over {
            return Err(StepError::Done);
        }
        check_actions(&self.everyone, self.levels.len(), actions)?;
        let factors: Vec<f64> = actions.iter().map(|&a| self.levels[a]).collect();
        debug_assert_eq!(factors.len(), n);
        Ok(self.step_factors(&factors))
    }

    /// [`MarketGame::step`] with every tenant's factor (or threshold) given as a number, not a
    /// level (a tenant playing its own factor, as the market's non-learning tenants do).
    /// Panics on a finished episode or a wrong count (the callers check both).
    pub fn step_factors(&mut self, factors: &[f64]) -> &[TenantStep] {
        let n = self.names.len();
        assert!(
            !self.over && factors.len() == n,
            "step_factors: one factor per tenant, before the end"
        );
        self.factors.clear();
        self.factors.extend_from_slice(factors);
        let was_done: Vec<bool> = (0..n).map(|i| self.market.place(i) == Place::Done).collect();
        let record = self.market.step(&self.factors);
        self.rounds.push(record);
        self.over = self.market.done();
        self.steps.clear();
        for i in 0..n {
            let u = self.market.utility(i);
            let done = self.market.place(i) == Place::Done;
            self.steps.push(TenantStep {
                reward: u - self.utility[i],
                terminated: done && !was_done[i],
                truncated: self.over && !done,
            });
            self.utility[i] = u;
        }
        self.observe();
        &self.steps
    }

    /// The episode's figures so far.
    pub fn metrics(&self) -> MarketMetrics {
        MarketMetrics::compute(&self.file, &self.rounds, &self.market.totals())
    }
}

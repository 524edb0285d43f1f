//! The market behind the world seam ([`crate::worlds::World`]): every tenant an agent, live
//! from the episode's start until its job finishes (a tenant whose job has not arrived yet
//! acts all the same, as in [`MarketGame`]), grouped by its file entry (a `count` group's
//! tenants share a group; the groups are the entries that have an agent), rewarded with its utility's change, and the episode's figures
//! from [`super::MarketMetrics`]. It plays exactly what [`MarketGame`] plays (a finished
//! tenant's factor is never read). [`MarketWorld::learners`] is the market `mtf train` learns
//! in: only the learning tenants are agents, the others play their own factors; the registry
//! builds it for every file that marks a tenant `learn = true`.

use super::game::{action_levels, MarketGame};
use super::{Market, MarketFile, Place, Pricing};
use crate::config::{ActionKind, ConfigError};
use crate::worlds::api::{check_actions, Better, Figures, Layout, Record, Report, StepError, World, WorldMetric};
use std::path::Path;

/// The market's figures after its `utility`, in [`World::figures`] order (money in the file's
/// unit): the same where every tenant is an agent and in the learners' market.
macro_rules! market_metrics {
    ($utility:expr) => {
        &[
            $utility,
            WorldMetric {
                key: "welfare",
                label: "value of the finished work",
                better: Better::Higher,
                decimals: 2,
                shown: true,
            },
            WorldMetric {
                key: "revenue",
                label: "paid for auctioned accelerators",
                better: Better::Higher,
                decimals: 2,
                shown: true,
            },
            WorldMetric {
                key: "on_demand_spend",
                label: "paid on demand",
                better: Better::Lower,
                decimals: 2,
                shown: true,
            },
            WorldMetric {
                key: "finished",
                label: "jobs finished",
                better: Better::Higher,
                decimals: 0,
                shown: true,
            },
            WorldMetric {
                key: "migrations",
                label: "moves of running jobs",
                better: Better::Lower,
                decimals: 0,
                shown: false,
            },
            WorldMetric {
                key: "work_lost",
                label: "work units lost to evictions and moves",
                better: Better::Lower,
                decimals: 2,
                shown: false,
            },
        ]
    };
}

/// The market's figures where every tenant is an agent: `utility` is the tenants' total.
pub const METRICS: &[WorldMetric] = market_metrics!(WorldMetric {
    key: "utility",
    label: "utility, all tenants (value of finished work minus payments)",
    better: Better::Higher,
    decimals: 2,
    shown: true,
});

/// [`METRICS`] in the learners' market ([`MarketWorld::learners`]): `utility` is the learning
/// tenants' mean, what they learn for (the others play their own factors), as the market's
/// `mtf train` stated it before it moved behind the seam; the other figures are the whole
/// market's.
pub const LEARNER_METRICS: &[WorldMetric] = market_metrics!(WorldMetric {
    key: "utility",
    label: "utility of a learning tenant (mean; value of finished work minus payments)",
    better: Better::Higher,
    decimals: 2,
    shown: true,
});

/// What a run in the market starts from ([`World::run_defaults`]), under a file's own keys:
/// each default with the measurement that chose it.
pub const RUN_DEFAULTS: &str = r#"
[learner]
# Full-information Hedge over a level per group, held for the job.
kind = "hedge"

[learner.ppo]
# One decisive round (a launch table at arrival or at a checkpoint) followed by many that
# change nothing: Monte Carlo advantages (lambda 1) credit it with the whole return. On the
# first-price duel, before finished copies stopped feeding PPO stale observations, PPO found
# the best bid in 4 of 6 replicates at lambda 0.95 and 6 of 6 at 1; since that fix (and
# gamma 1) both find it in 6 of 6.
gae_lambda = 1.0
# On three-types.toml under first price (inference learning, 300 episodes) PPO at the queue
# world's lr 0.0005 left the local peak at bid factor 0.5 in 0 of 3 replicates (utility
# 0.38); at 0.005 3 of 5 learned a state-dependent bid worth 2.02-2.04, above the best common
# level's 1.46, and 2 stayed at 0.5 (configs/sweeps/market-ppo.toml: 0.0052 and 0.0068 gave
# 2 of 3 and 1 of 3); the duel reaches its 0.9 in 3 of 3 at both.
lr = 0.005
# The evaluation counts utility undiscounted, and an episode ends when its jobs do.
gamma = 1.0
# The market's PPO defaults (the duel's 10 of 10, docs/market.md) were measured with the
# actor's head at its old scale 1; the queue world's 0.03 is not measured here.
head_scale = 1.0

[learner.es]
# ES's population acts greedily, and a group's utility is flat in its parameters except where
# the argmax changes level: at sigma 0.05 ES found the duel's best bid in 4 of 10 replicates
# (100 generations), at 0.2 in 10 of 10.
sigma = 0.2

[learner.hedge]
# A constant rate on a group's mean utility over its tenants' job worth (the market's return
# unit). Hedge is scored as it plays, drawing its level: on the duel (30 episodes, one learner
# whose levels differ by 1/20 of its worth) the best bid's probability is 0.26 at 0.5 (sampled
# utility 10.5 against the best level's 11), 0.80 at 2, 0.997 at 5; three-types.toml's
# inference services reach 0.96-0.98 at 0.5 and 1.0 at 5 (3 replicates each, 2026-11-29).
eta = 5.0

[learner.actor_critic]
# The market's whole observation (SPEC 4's features are the queue world's).
features = "all"

[train]
episodes = 100
replicates = 3
eval_seeds = 5
"#;

/// [`RUN_DEFAULTS`] as a table.
pub fn run_defaults() -> toml::Table {
    RUN_DEFAULTS.parse().expect("the market's run defaults parse")
}

/// Peak bytes per (tenant, round) of a market episode kept whole: its records, and, for `mtf
/// simulate`'s round log, their JSON lines as well. Measured on three-types.toml with jobs that
/// never finish (32 tenants, 3 types; 3,000 and 30,000 rounds): 348 bytes a tenant-round with
/// the JSON lines, 137 without (behind the seam, 2026-11-29: 135 MiB peak at 30,000 rounds,
/// 140 bytes a tenant-round); the per-round part (prices, the price figure) from the duel (2
/// tenants, 2 types): 2.4 KiB a round with both.
pub const TENANT_ROUND_JSON: u64 = 400;
/// [`TENANT_ROUND_JSON`] without the JSON lines.
pub const TENANT_ROUND: u64 = 160;
/// The per-round part of [`TENANT_ROUND_JSON`].
pub const ROUND: u64 = 2560;

/// What an episode of `file` keeps at peak with `per_tenant_round` bytes a tenant-round
/// ([`TENANT_ROUND`], [`TENANT_ROUND_JSON`]), by the keys that size it.
pub fn episode_bytes(file: &MarketFile, per_tenant_round: u64) -> (String, u64) {
    let rounds = u64::from(file.env.rounds);
    let tenants = file.market.tenants.len() as u64;
    let per_round = ROUND.saturating_add(tenants.saturating_mul(per_tenant_round));
    (
        "env.rounds x market.tenants (the episode's per-round records)".to_string(),
        rounds.saturating_mul(per_round),
    )
}

/// The smallest job worth (value x work) of a learning tenant: its rewards are divided by it.
pub const MIN_WORTH: f64 = 1e-6;

/// What a file that marks learners must hold for the market they learn in
/// ([`MarketWorld::learners`]): a learning tenant, each with a value and a worth its rewards
/// can be divided by, arriving inside the episode.
pub fn check_learners(file: &MarketFile, path: &str) -> Result<(), ConfigError> {
    let err = |key: String, problem: String| ConfigError {
        file: path.to_string(),
        key,
        problem,
    };
    if let Some((i, t)) = file.market.tenants.iter().enumerate().find(|(_, t)| t.learn && t.value <= 0.0) {
        return Err(err(
            format!("market.tenants[{i}].value"),
            format!(
                "{}: a learning tenant needs a value > 0 (its rewards are utility over its job's worth)",
                t.name
            ),
        ));
    }
    // Asked of the tenants the entries expand to: an entry with learn = true and count = 0 has
    // no tenant (PPO then divided by zero learners).
    let learning: u64 = file.market.tenants.iter().filter(|t| t.learn).map(|t| u64::from(t.count)).sum();
    if learning == 0 {
        return Err(err(
            "market.tenants".into(),
            "no tenant learns (no entry with learn = true has a count above 0): mtf train learns those tenants' bids against the others"
                .into(),
        ));
    }
    for (i, tn) in file.market.tenants.iter().enumerate().filter(|(_, t)| t.learn && t.count > 0) {
        // A learner that never arrives learned nothing and reported its level as NaN.
        if tn.arrival >= file.env.rounds {
            return Err(err(
                format!("market.tenants[{i}].arrival"),
                format!(
                    "{}: learns but arrives in round {}, after the episode's {} rounds: it would never bid",
                    tn.name, tn.arrival, file.env.rounds
                ),
            ));
        }
        // Rewards are utility over the job's worth (value x work): a worth near 0 made them
        // overflow f32 and PPO "diverge" (work = 1e-100), blaming the learning rate.
        let worth = tn.value * if tn.work_trace.is_some() { 1.0 } else { tn.work };
        if worth < MIN_WORTH {
            return Err(err(
                format!("market.tenants[{i}].work"),
                format!(
                    "{}: a learning tenant's job worth (value x work = {worth:e}) must be at least {MIN_WORTH:e}: its rewards are its utility over that worth",
                    tn.name
                ),
            ));
        }
    }
    Ok(())
}

/// The market's one named action ([`World::named_actions`]).
const OWN: &[&str] = &["own"];

/// The market as a [`World`] (module docs).
pub struct MarketWorld {
    game: MarketGame,
    table: toml::Table,
    layout: Layout,
    /// The groups' names: the file's entries that have an agent.
    groups: Vec<String>,
    /// Each agent's group (its entry's index among `groups`).
    group_of: Vec<usize>,
    /// The tenant each agent id is: every tenant, or ([`MarketWorld::learners`]) the learning
    /// ones.
    acting: Vec<usize>,
    /// Whether the tenants that are not agents play their own factors (else they are none).
    pinned: bool,
    /// Whether an agent's reward is over its job's value (`value x work`).
    per_value: bool,
    scale: Vec<f64>,
    factors: Vec<f64>,
    /// Each tenant's own factor (its file entry's), what the named action `own` plays.
    own: Vec<f64>,
    live: Vec<usize>,
    acted: Vec<usize>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
}

impl MarketWorld {
    /// The market of an unexpanded file whose tenants choose among `levels`, every tenant an
    /// agent; `table` is the file's resolved text ([`World::config`]).
    pub fn new(raw: MarketFile, levels: Vec<f64>, table: toml::Table) -> Self {
        let n = raw.at_seed(raw.seed).market.tenants.len();
        Self::with_agents(raw, levels, table, (0..n).collect(), false)
    }

    /// The market as `mtf train` learns in it: the agents are the tenants with `learn = true`
    /// (in order), the others play their own factors, an agent's reward is its utility's
    /// change over its job's value (`value x work`), so jobs of any size weigh alike, and
    /// every agent is live until the market's episode ends (a finished tenant's level is
    /// unread, as before it arrives; it is terminated at the end, the others truncated).
    pub fn learners(raw: MarketFile, levels: Vec<f64>, table: toml::Table) -> Self {
        let file = raw.at_seed(raw.seed);
        let who = (0..file.market.tenants.len()).filter(|&i| file.market.tenants[i].learn).collect();
        Self::with_agents(raw, levels, table, who, true)
    }

    fn with_agents(raw: MarketFile, levels: Vec<f64>, table: toml::Table, acting: Vec<usize>, training: bool) -> Self {
        let types: Vec<String> = raw.market.types.iter().map(|t| t.name.clone()).collect();
        let (low, high) = Market::observe_bounds(types.len());
        let layout = Layout {
            names: Market::observe_names(&types),
            low,
            high,
        };
        // The groups are the file's entries that have an agent, in file order (the learners'
        // market: the learning entries; an entry of count 0 has none): every group has an
        // actor to train and export.
        let entry: Vec<usize> = {
            let file = raw.at_seed(raw.seed);
            acting.iter().map(|&i| file.market.tenants[i].group).collect()
        };
        let mut used = entry.clone();
        used.sort_unstable();
        used.dedup();
        let group_of = entry
            .iter()
            .map(|e| used.binary_search(e).expect("an entry with an agent"))
            .collect();
        let groups = used.iter().map(|&e| raw.market.tenants[e].name.clone()).collect();
        let game = MarketGame::new(raw, levels);
        let n = acting.len();
        let mut w = Self {
            game,
            table,
            layout,
            groups,
            group_of,
            acting,
            pinned: training,
            per_value: training,
            scale: Vec::new(),
            factors: Vec::new(),
            own: Vec::new(),
            live: Vec::with_capacity(n),
            acted: Vec::with_capacity(n),
            rewards: Vec::with_capacity(n),
            terminated: Vec::with_capacity(n),
        };
        w.begin();
        w
    }

    /// The game it plays (the market's own records: rounds, places, prices).
    pub fn game(&self) -> &MarketGame {
        &self.game
    }

    /// The tenant agent `id` is.
    pub fn tenant(&self, id: usize) -> usize {
        self.acting[id]
    }

    /// The episode's per-agent scales and the live agents.
    fn begin(&mut self) {
        let file = self.game.file();
        self.scale = self
            .acting
            .iter()
            .map(|&i| {
                let t = &file.market.tenants[i];
                if self.per_value {
                    (t.value * t.work).max(f64::MIN_POSITIVE)
                } else {
                    1.0
                }
            })
            .collect();
        self.own = file.actions();
        self.factors = if self.pinned {
            self.own.clone()
        } else {
            vec![self.game.levels()[0]; file.market.tenants.len()]
        };
        self.refresh_live();
    }

    /// The live agents: until the end, every agent whose job is not done; in the learners'
    /// market every agent (a finished tenant acts on, unread, as one not yet arrived does),
    /// so the episode runs until the market's does.
    fn refresh_live(&mut self) {
        self.live.clear();
        if !self.game.over() {
            let (game, acting) = (&self.game, &self.acting);
            let all = self.pinned;
            self.live
                .extend((0..acting.len()).filter(|&id| all || game.place(acting[id]) != Place::Done));
        }
    }
}

/// Build from a config table (the registry's constructor): the file's checks, then its levels
/// (`learner.levels`, [`action_levels`]).
pub fn build(table: toml::Table, path: &Path) -> Result<Box<dyn World>, ConfigError> {
    let raw = MarketFile::from_table_at(table, path)?;
    let levels = action_levels(&raw, &path.display().to_string())?;
    let resolved = resolved(&raw).map_err(|problem| ConfigError {
        file: path.display().to_string(),
        key: "market".into(),
        problem,
    })?;
    // A file that marks learners is the market `mtf train` learns in, wherever it is played
    // (Python, the seam's commands): its agents are the learning tenants, the others play
    // their own factors. A file that marks none makes every tenant an agent.
    let learns = raw.market.tenants.iter().any(|t| t.learn);
    if learns {
        check_learners(&raw, &path.display().to_string())?;
    }
    Ok(Box::new(if learns {
        MarketWorld::learners(raw, levels, resolved)
    } else {
        MarketWorld::new(raw, levels, resolved)
    }))
}

/// A market file's resolved text ([`World::config`]): traces read into sizes, catalog speeds
/// filled in, so the text builds the same market from any directory.
pub fn resolved(raw: &MarketFile) -> Result<toml::Table, String> {
    toml::Table::try_from(raw).map_err(|e| format!("cannot be written back as TOML: {e}"))
}

impl World for MarketWorld {
    fn reset(&mut self, seed: u64) {
        self.game.reset(seed);
        self.begin();
    }

    fn live(&self) -> &[usize] {
        &self.live
    }

    fn possible(&self) -> usize {
        self.acting.len()
    }

    /// Every tenant, agent or not: a copy's memory grows with the market's tenants.
    fn cells(&self) -> usize {
        self.game.file().market.tenants.len()
    }

    /// The episode's per-round records ([`episode_bytes`]).
    fn memory(&self) -> Vec<(String, u64)> {
        vec![episode_bytes(self.game.file(), TENANT_ROUND)]
    }

    fn agent_name(&self, id: usize) -> String {
        self.game.agents()[self.acting[id]].clone()
    }

    fn group(&self, id: usize) -> usize {
        self.group_of[id]
    }

    fn group_names(&self) -> Vec<String> {
        self.groups.clone()
    }

    fn weight(&self, id: usize) -> f64 {
        self.game.file().market.tenants[self.acting[id]].weight
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn observe(&mut self, out: &mut [f32]) {
        let d = self.layout.dim();
        let obs = self.game.observations();
        for (row, &id) in out.chunks_exact_mut(d).zip(&self.live) {
            let i = self.acting[id];
            row.copy_from_slice(&obs[i * d..(i + 1) * d]);
        }
    }

    /// The tenant's features after the round it left in (its job done, or the rounds out),
    /// and after every later round: they still move (deadline slack, prices).
    fn last_observation(&mut self, id: usize, out: &mut [f32]) -> bool {
        let (d, i) = (self.layout.dim(), self.acting[id]);
        out.copy_from_slice(&self.game.observations()[i * d..(i + 1) * d]);
        true
    }

    fn levels(&self) -> &[f64] {
        self.game.levels()
    }

    /// `own`: the tenant's own factor (its file entry's `bid_factor`, under MTF its
    /// `threshold`), what the economic agent plays.
    fn named_actions(&self) -> &'static [&'static str] {
        OWN
    }

    fn action_kind(&self) -> ActionKind {
        if self.game.raw().mechanism.kind == Pricing::Mtf {
            ActionKind::Threshold
        } else {
            ActionKind::Bid
        }
    }

    fn step(&mut self, actions: &[usize]) -> Result<Report<'_>, StepError> {
        if self.live.is_empty() {
            return Err(StepError::Done);
        }
        let levels = self.game.levels();
        check_actions(&self.live, levels.len() + OWN.len(), actions)?;
        for (&id, &a) in self.live.iter().zip(actions) {
            let i = self.acting[id];
            self.factors[i] = levels.get(a).copied().unwrap_or(self.own[i]);
        }
        self.game.step_factors(&self.factors);
        let (game, over) = (&self.game, self.game.over());
        let steps = game.last_steps();
        self.acted.clear();
        self.rewards.clear();
        self.terminated.clear();
        for &id in &self.live {
            let s = steps[self.acting[id]];
            self.acted.push(id);
            self.rewards.push(if self.per_value { s.reward / self.scale[id] } else { s.reward });
            // The learners' market: an agent leaves with everyone, at the end.
            let finished = if self.pinned {
                over && game.place(self.acting[id]) == Place::Done
            } else {
                s.terminated
            };
            self.terminated.push(finished);
        }
        self.refresh_live();
        Ok(Report {
            agents: &self.acted,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: self.game.over() && self.terminated.iter().any(|t| !t),
        })
    }

    /// Where the tenant's job is (`absent`, `waiting`, `on_demand`, `auctioned`, `done`), the
    /// type it ran on last round and the price it paid, its progress and tokens then, the level
    /// it played and its utility so far.
    fn info(&self, id: usize) -> Record {
        let i = self.acting[id];
        let g = &self.game;
        let last = g.rounds().last().map(|r| &r.tenants[i]);
        let types = &g.file().market.types;
        vec![
            ("place", g.place(i).name().into()),
            ("type", last.and_then(|t| t.ty).map(|ty| types[ty].name.clone()).into()),
            ("price", last.map_or(0.0, |t| t.price).into()),
            ("progress", last.map_or(0.0, |t| t.progress).into()),
            ("tokens", last.map_or(0.0, |t| t.tokens).into()),
            ("level", g.factors()[i].into()),
            ("utility", g.utility()[i].into()),
        ]
    }

    fn record(&self) -> serde_json::Value {
        serde_json::to_value(self.game.metrics()).expect("market metrics serialise")
    }

    fn story(&self) -> Option<crate::worlds::Story> {
        let metrics = self.game.metrics();
        Some(crate::worlds::Story {
            text: super::story::text(self.game.file(), self.game.rounds(), &metrics),
            figures: super::story::series(self.game.file(), &metrics),
        })
    }

    /// The market's round record (a line of `mtf simulate`'s `rounds.jsonl`).
    fn round_record(&self) -> Option<serde_json::Value> {
        self.game
            .rounds()
            .last()
            .map(|r| serde_json::to_value(r).expect("a market round serialises"))
    }

    fn keeps_round_records(&self) -> bool {
        true
    }

    fn max_rounds(&self) -> Option<u32> {
        Some(self.game.max_rounds())
    }

    fn metrics(&self) -> &'static [WorldMetric] {
        if self.pinned {
            LEARNER_METRICS
        } else {
            METRICS
        }
    }

    fn figures(&self) -> Figures {
        let m = self.game.metrics();
        let utility = if self.pinned {
            self.acting.iter().map(|&i| m.utility[i]).sum::<f64>() / self.acting.len().max(1) as f64
        } else {
            m.utility.iter().sum()
        };
        vec![
            utility,
            m.welfare,
            m.revenue,
            m.on_demand_spend,
            m.finished as f64,
            f64::from(m.migrations),
            m.work_lost,
        ]
    }

    fn fork(&self) -> Box<dyn World> {
        Box::new(MarketWorld::with_agents(
            self.game.raw().clone(),
            self.game.levels().to_vec(),
            self.table.clone(),
            self.acting.clone(),
            self.pinned,
        ))
    }

    fn config(&self) -> toml::Table {
        self.table.clone()
    }

    fn mechanism(&self) -> Option<String> {
        Some(self.game.raw().mechanism.kind.name().to_string())
    }

    /// `mechanism.kind`: second price, first price or MTF with unit demand.
    fn select_mechanism(&self, name: &str) -> Result<String, String> {
        let known = [Pricing::SecondPrice, Pricing::FirstPrice, Pricing::Mtf].map(Pricing::name);
        if known.contains(&name) {
            Ok(format!("mechanism.kind=\"{name}\""))
        } else {
            Err(format!("unknown mechanism `{name}` for the market (known: {})", known.join(", ")))
        }
    }

    /// The market's defaults ([`RUN_DEFAULTS`]).
    fn run_defaults(&self) -> toml::Table {
        run_defaults()
    }

    /// A file with no size range or drawn trace start plays the same episode on every seed.
    fn varies_with_seed(&self) -> bool {
        self.game.raw().draws_from_seed()
    }

    /// As `mtf train` learns in it ([`MarketWorld::learners`]), an agent's return is its
    /// utility over its job's worth: 1 is the job's whole value.
    fn return_unit(&self) -> Option<f64> {
        self.per_value.then_some(1.0)
    }
}

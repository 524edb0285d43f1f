//! The market behind the world seam ([`crate::worlds::World`]): every tenant an agent, live
//! from the episode's start until its job finishes (a tenant whose job has not arrived yet
//! acts all the same, as in [`MarketGame`]), grouped by its file entry (a `count` group's
//! tenants share a group), rewarded with its utility's change, and the episode's figures
//! from [`super::MarketMetrics`]. It plays exactly what [`MarketGame`] plays: the tenants
//! whose jobs finished get level 0, which the exchange never reads.

use super::game::{action_levels, MarketGame};
use super::{Market, MarketFile, Place, Pricing};
use crate::config::{ActionKind, ConfigError};
use crate::worlds::{check_actions, Better, Figures, Layout, Record, Report, StepError, World, WorldMetric};
use std::path::Path;

/// The market's figures, in [`World::figures`] order (money in the file's unit).
pub const METRICS: &[WorldMetric] = &[
    WorldMetric {
        key: "utility",
        label: "utility, all tenants (value of finished work minus payments)",
        better: Better::Higher,
        decimals: 2,
        shown: true,
    },
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
];

/// The market as a [`World`] (module docs).
pub struct MarketWorld {
    game: MarketGame,
    table: toml::Table,
    layout: Layout,
    groups: Vec<String>,
    live: Vec<usize>,
    all_actions: Vec<usize>,
    acted: Vec<usize>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
}

impl MarketWorld {
    /// The market of an unexpanded file whose tenants choose among `levels`; `table` is the
    /// file's resolved text ([`World::config`]).
    pub fn new(raw: MarketFile, levels: Vec<f64>, table: toml::Table) -> Self {
        let types: Vec<String> = raw.market.types.iter().map(|t| t.name.clone()).collect();
        let (low, high) = Market::observe_bounds(types.len());
        let layout = Layout {
            names: Market::observe_names(&types),
            low,
            high,
        };
        let groups = raw.market.tenants.iter().map(|t| t.name.clone()).collect();
        let game = MarketGame::new(raw, levels);
        let n = game.agents().len();
        let mut w = Self {
            game,
            table,
            layout,
            groups,
            live: Vec::with_capacity(n),
            all_actions: vec![0; n],
            acted: Vec::with_capacity(n),
            rewards: Vec::with_capacity(n),
            terminated: Vec::with_capacity(n),
        };
        w.refresh_live();
        w
    }

    /// The game it plays (the market's own records: rounds, places, prices).
    pub fn game(&self) -> &MarketGame {
        &self.game
    }

    fn refresh_live(&mut self) {
        self.live.clear();
        if !self.game.over() {
            let n = self.game.agents().len();
            self.live.extend((0..n).filter(|&i| self.game.place(i) != Place::Done));
        }
    }
}

/// Build from a config table (the registry's constructor): the file's checks, then its levels
/// (`learner.levels`, [`action_levels`]).
pub fn build(table: toml::Table, path: &Path) -> Result<Box<dyn World>, ConfigError> {
    let raw = MarketFile::from_table_at(table, path)?;
    let levels = action_levels(&raw, &path.display().to_string())?;
    // The resolved text: traces read into sizes, catalog speeds filled in, so the text builds
    // the same market from any directory.
    let resolved = toml::Table::try_from(&raw).map_err(|e| ConfigError {
        file: path.display().to_string(),
        key: "market".into(),
        problem: format!("cannot be written back as TOML: {e}"),
    })?;
    Ok(Box::new(MarketWorld::new(raw, levels, resolved)))
}

impl World for MarketWorld {
    fn reset(&mut self, seed: u64) {
        self.game.reset(seed);
        self.refresh_live();
    }

    fn live(&self) -> &[usize] {
        &self.live
    }

    fn possible(&self) -> usize {
        self.game.agents().len()
    }

    fn agent_name(&self, id: usize) -> String {
        self.game.agents()[id].clone()
    }

    fn group(&self, id: usize) -> usize {
        self.game.file().market.tenants[id].group
    }

    fn group_names(&self) -> Vec<String> {
        self.groups.clone()
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn observe(&mut self, out: &mut [f32]) {
        let d = self.layout.dim();
        let obs = self.game.observations();
        for (row, &i) in out.chunks_exact_mut(d).zip(&self.live) {
            row.copy_from_slice(&obs[i * d..(i + 1) * d]);
        }
    }

    /// The tenant's features after the round it left in (its job done, or the rounds out).
    fn last_observation(&mut self, id: usize, out: &mut [f32]) -> bool {
        let d = self.layout.dim();
        out.copy_from_slice(&self.game.observations()[id * d..(id + 1) * d]);
        true
    }

    fn levels(&self) -> &[f64] {
        self.game.levels()
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
        check_actions(&self.live, self.game.levels().len(), actions)?;
        self.all_actions.fill(0);
        for (&i, &a) in self.live.iter().zip(actions) {
            self.all_actions[i] = a;
        }
        let steps = self
            .game
            .step(&self.all_actions)
            .expect("the actions were checked and the episode is not over");
        self.acted.clear();
        self.rewards.clear();
        self.terminated.clear();
        for &i in &self.live {
            self.acted.push(i);
            self.rewards.push(steps[i].reward);
            self.terminated.push(steps[i].terminated);
        }
        self.refresh_live();
        Ok(Report {
            agents: &self.acted,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: self.game.over() && self.terminated.iter().any(|t| !t),
        })
    }

    fn weight(&self, id: usize) -> f64 {
        self.game.file().market.tenants[id].weight
    }

    /// Where the tenant's job is (`absent`, `waiting`, `on_demand`, `auctioned`, `done`), the
    /// type it ran on last round and the price it paid, its progress and tokens then, the level
    /// it played and its utility so far.
    fn info(&self, id: usize) -> Record {
        let g = &self.game;
        let last = g.rounds().last().map(|r| &r.tenants[id]);
        let types = &g.file().market.types;
        vec![
            ("place", g.place(id).name().into()),
            ("type", last.and_then(|t| t.ty).map(|ty| types[ty].name.clone()).into()),
            ("price", last.map_or(0.0, |t| t.price).into()),
            ("progress", last.map_or(0.0, |t| t.progress).into()),
            ("tokens", last.map_or(0.0, |t| t.tokens).into()),
            ("level", g.factors()[id].into()),
            ("utility", g.utility()[id].into()),
        ]
    }

    fn record(&self) -> serde_json::Value {
        serde_json::to_value(self.game.metrics()).expect("market metrics serialise")
    }

    fn metrics(&self) -> &'static [WorldMetric] {
        METRICS
    }

    fn figures(&self) -> Figures {
        let m = self.game.metrics();
        vec![
            m.utility.iter().sum(),
            m.welfare,
            m.revenue,
            m.on_demand_spend,
            m.finished as f64,
            f64::from(m.migrations),
            m.work_lost,
        ]
    }

    fn fork(&self) -> Box<dyn World> {
        Box::new(MarketWorld::new(
            self.game.raw().clone(),
            self.game.levels().to_vec(),
            self.table.clone(),
        ))
    }

    fn config(&self) -> toml::Table {
        self.table.clone()
    }

    fn mechanism(&self) -> Option<String> {
        Some(self.game.raw().mechanism.kind.name().to_string())
    }
}

//! The queue and valuation worlds behind the world seam ([`crate::worlds::World`]): the
//! [`ClusterEnv`] of a scenario, every agent live for the whole episode (nothing terminates
//! early, SPEC 2.9; every agent is truncated when the rounds run out), grouped by weight class,
//! its observation named feature by feature ([`observation_names`]), and the episode's figures
//! read off [`EpisodeMetrics`] through the one metric specification ([`Metric`]).

use crate::config::{ActionKind, ConfigError, Scenario, ScenarioFile, World as Kind};
use crate::metrics::{EpisodeMetrics, Metric};
use crate::world::{observation_names, ClusterEnv};
use crate::worlds::api::{Better, Figures, Layout, Record, Report, StepError, World, WorldMetric};
use std::path::Path;

const fn figure(key: &'static str, label: &'static str, better: Better, decimals: usize) -> WorldMetric {
    WorldMetric {
        key,
        label,
        better,
        decimals,
        shown: true,
    }
}

/// The queue world's figures, in [`World::figures`] order (keys of [`Metric`]).
pub const QUEUE_METRICS: &[WorldMetric] = &[
    figure("welfare", "welfare (weighted mean of agents' jobs/round)", Better::Higher, 3),
    figure("throughput", "throughput (jobs/round)", Better::Higher, 3),
    figure("dropped", "dropped (jobs/round)", Better::Lower, 3),
    figure("rejected", "rejected (jobs/round)", Better::Lower, 3),
    figure("mean_wait", "mean wait (rounds)", Better::Lower, 3),
    figure("backlog", "backlog (jobs/agent)", Better::Lower, 3),
    figure("reward", "reward (per agent-round)", Better::Higher, 4),
    figure("tokens_spent", "tokens spent (per round)", Better::Lower, 3),
    figure("jain", "Jain's index of throughput over weight", Better::Higher, 4),
    figure("paid_share", "accelerator-rounds bought (share)", Better::Higher, 3),
    // Computed only where the command asks for them (`World::set_fairness`: compare and
    // simulate), as the queue world's own compare does.
    figure("phi_min", "phi min (sharing incentive: >= 1 holds)", Better::Higher, 3),
    figure("phi_median", "phi median", Better::Higher, 3),
    WorldMetric {
        shown: false,
        ..figure("si_violations", "SI violations (agents)", Better::Lower, 2)
    },
    figure("ef_violations", "EF violations (pairs)", Better::Lower, 2),
    figure("pareto", "Pareto-improvable rounds (share)", Better::Lower, 3),
];

/// A world's figures for a scenario of weight classes `classes`. The queue world's are
/// [`QUEUE_METRICS`] with, after welfare, each class's jobs a round per agent (`throughput_w1`,
/// ...: the columns and CSV keys of the queue world's own tables), and last each class's mean
/// threshold (`threshold_w1`, ...: the queue stack's `threshold_by_weight`, what a training
/// curve of the levels reads; not a column of the tables). The valuation world's are
/// [`VALUATION_METRICS`] and last each class's mean bid factor (`bid_factor_w1`, ...: the
/// queue stack's `bid_factor_by_weight`, hidden likewise).
///
/// A world's figures are `&'static` (every command holds them past the world); these depend on
/// the scenario, so each set of classes is built once per process and kept (a few hundred
/// bytes a set, however many worlds and forks are made of it).
fn scenario_metrics(world: Kind, classes: &[f64]) -> &'static [WorldMetric] {
    type Built = Vec<(Kind, Vec<u64>, &'static [WorldMetric])>;
    static BUILT: std::sync::Mutex<Built> = std::sync::Mutex::new(Vec::new());
    let key: Vec<u64> = classes.iter().map(|w| w.to_bits()).collect();
    let mut built = BUILT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, _, m)) = built.iter().find(|(k, c, _)| *k == world && *c == key) {
        return m;
    }
    let kept = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let (mut all, prefix, level) = match world {
        Kind::Queues => {
            let mut all = vec![QUEUE_METRICS[0]];
            all.extend(classes.iter().map(|w| {
                figure(
                    kept(format!("{CLASS_PREFIX}{w}")),
                    kept(format!("jobs/round per agent, w={w}")),
                    Better::Higher,
                    3,
                )
            }));
            all.extend_from_slice(&QUEUE_METRICS[1..]);
            (all, THRESHOLD_PREFIX, "mean threshold")
        }
        Kind::Valuations => (VALUATION_METRICS.to_vec(), BID_FACTOR_PREFIX, "mean bid factor"),
    };
    all.extend(classes.iter().map(|w| WorldMetric {
        shown: false,
        ..figure(kept(format!("{prefix}{w}")), kept(format!("{level}, w={w}")), Better::Higher, 3)
    }));
    let m: &'static [WorldMetric] = Box::leak(all.into_boxed_slice());
    built.push((world, key, m));
    m
}

/// The cluster schedulers the thesis compares MTF with: `mtf analyze`'s default baselines in
/// the queue and valuation worlds.
pub const BASELINES: [&str; 3] = ["stride", "gandiva_fair", "themis"];

/// The key prefix of a weight class's jobs a round per agent.
const CLASS_PREFIX: &str = "throughput_w";

/// The key prefix of a weight class's mean threshold.
const THRESHOLD_PREFIX: &str = "threshold_w";

/// The key prefix of a weight class's mean bid factor (the valuation world).
const BID_FACTOR_PREFIX: &str = "bid_factor_w";

/// The valuation world's leading figures (SPEC 8), in [`World::figures`] order (each weight
/// class's mean bid factor follows: `scenario_metrics`).
pub const VALUATION_METRICS: &[WorldMetric] = &[
    figure("revenue_per_item", "revenue (per item)", Better::Higher, 4),
    figure("surplus_per_bidder_item", "surplus (per bidder per item)", Better::Higher, 4),
    figure("sold_share", "items sold (share)", Better::Higher, 4),
    figure("reward", "reward (per agent-round)", Better::Higher, 4),
];

/// A scenario's [`ClusterEnv`] as a [`World`] (module docs).
pub struct QueueWorld {
    env: ClusterEnv,
    table: toml::Table,
    layout: Layout,
    classes: Vec<f64>,
    groups: Vec<usize>,
    everyone: Vec<usize>,
    terminated: Vec<bool>,
    rewards: Vec<f64>,
    metrics: &'static [WorldMetric],
    /// Whether a round was played since `reset` (infos describe it, else the pending round).
    stepped: bool,
    /// Whether the figures include the fairness replays (`World::set_fairness`).
    fairness: bool,
}

impl QueueWorld {
    /// The world of a validated scenario.
    pub fn new(sc: Scenario) -> Self {
        let env = ClusterEnv::new(sc.clone());
        let space = env.observation_space(0);
        let layout = Layout {
            names: observation_names(&sc),
            low: space.low,
            high: space.high,
        };
        let groups = sc.class_of_agents();
        let metrics = scenario_metrics(sc.file.env.world, &sc.weight_classes());
        let table = sc.to_toml().parse().expect("a scenario's TOML parses");
        let n = sc.n();
        Self {
            env,
            table,
            layout,
            classes: sc.weight_classes(),
            groups,
            everyone: (0..n).collect(),
            terminated: vec![false; n],
            rewards: Vec::with_capacity(n),
            metrics,
            stepped: false,
            fairness: false,
        }
    }

    /// The environment it plays (its infos, totals and round records).
    pub fn env(&self) -> &ClusterEnv {
        &self.env
    }

    /// The environment, to set what it records and computes (training copies).
    pub fn env_mut(&mut self) -> &mut ClusterEnv {
        &mut self.env
    }
}

/// Build from a config table (the registry's constructor for `queues` and `valuations`).
pub fn build(table: toml::Table, path: &Path) -> Result<Box<dyn World>, ConfigError> {
    Ok(Box::new(QueueWorld::new(ScenarioFile::from_table_at(table, path)?)))
}

impl World for QueueWorld {
    fn scenario(&self) -> Option<&crate::config::Scenario> {
        Some(self.env.scenario())
    }

    fn budgets(&self) -> Option<&[f64]> {
        Some(self.env.budgets())
    }

    fn mechanism_round(&self) -> Option<crate::worlds::MechanismRound<'_>> {
        Some(crate::worlds::MechanismRound {
            next_budgets: self.env.budgets(),
            input: self.env.last_input(),
            bid_values: self.env.last_bid_values(),
            allocation: self.env.last_allocation(),
            rewards: self.env.last_rewards(),
        })
    }

    fn reset(&mut self, seed: u64) {
        self.env.reset(seed);
        self.stepped = false;
    }

    fn live(&self) -> &[usize] {
        if self.env.agents().is_empty() {
            &[]
        } else {
            &self.everyone
        }
    }

    fn possible(&self) -> usize {
        self.env.n()
    }

    fn agent_name(&self, id: usize) -> String {
        self.env.possible_agents()[id].clone()
    }

    fn group(&self, id: usize) -> usize {
        self.groups[id]
    }

    fn group_names(&self) -> Vec<String> {
        self.classes.iter().map(|w| format!("w{w}")).collect()
    }

    fn weight(&self, id: usize) -> f64 {
        self.env.scenario().agents[id].weight
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn observe(&mut self, out: &mut [f32]) {
        if !self.live().is_empty() {
            out.copy_from_slice(self.env.observations().data);
        }
    }

    fn observed(&self) -> Option<&[f32]> {
        (!self.live().is_empty()).then(|| self.env.observations().data)
    }

    /// The observation buffer after the last round (what the queue world's own API returns at
    /// the truncation).
    fn last_observation(&mut self, id: usize, out: &mut [f32]) -> bool {
        out.copy_from_slice(self.env.observations().get(id));
        true
    }

    fn feature_block(&self, name: &str) -> Option<std::ops::Range<usize>> {
        let sc = self.env.scenario();
        let dim = self.layout.dim();
        match name {
            "spec" => Some(0..crate::world::spec_features(sc.m())),
            "by_type" if sc.file.env.observe_by_type => Some(dim - crate::world::by_type_features(sc)..dim),
            _ => None,
        }
    }

    fn levels(&self) -> &[f64] {
        self.env.levels()
    }

    fn action_kind(&self) -> ActionKind {
        self.env.action_kind()
    }

    fn step(&mut self, actions: &[usize]) -> Result<Report<'_>, StepError> {
        let step = self.env.step(actions)?;
        let truncated = step.truncations.iter().any(|&t| t);
        self.stepped = true;
        self.rewards.clear();
        self.rewards.extend_from_slice(step.rewards);
        Ok(Report {
            agents: &self.everyone,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated,
        })
    }

    fn info(&self, id: usize) -> Record {
        let x = if self.stepped {
            self.env.last_infos()[id]
        } else {
            self.env.pending_infos()[id]
        };
        vec![
            ("arrived", x.arrived.into()),
            ("rejected", x.rejected.into()),
            ("dropped", x.dropped.into()),
            ("served", x.served.into()),
            ("backlog", x.backlog.into()),
            ("won", x.won.into()),
            ("spent", x.spent.into()),
            ("budget", x.budget.into()),
            ("level", x.threshold.into()),
        ]
    }

    /// docs/AGENTS.md's request, as the queue stack's `agent:` sends it (`export::drive`): SPEC
    /// 4's state (the observation's first 1 + m features) and the budget itself.
    fn agent_request(&self, id: usize) -> Option<serde_json::Value> {
        let o = self.env.observations().get(id);
        let utilities: Vec<f64> = o[1..crate::world::spec_features(self.env.m())]
            .iter()
            .map(|&u| f64::from(u))
            .collect();
        Some(serde_json::json!({
            "budget": f64::from(o[0]),
            "utilities": utilities,
            "tokens": self.env.budgets()[id],
        }))
    }

    fn record(&self) -> serde_json::Value {
        serde_json::to_value(EpisodeMetrics::compute(&self.env, self.fairness)).expect("episode metrics serialise")
    }

    fn max_rounds(&self) -> Option<u32> {
        Some(self.env.scenario().file.env.rounds)
    }

    fn cells(&self) -> usize {
        self.env.n().saturating_mul(self.env.m())
    }

    fn set_recording(&mut self, on: bool) {
        self.env.set_recording(on);
    }

    fn metrics(&self) -> &'static [WorldMetric] {
        self.metrics
    }

    fn baselines(&self) -> &'static [&'static str] {
        &BASELINES
    }

    /// The queue and valuation worlds' learner where a file names none: the thesis's
    /// actor-critic, as their own commands train (the seam's default elsewhere is ES).
    fn run_defaults(&self) -> toml::Table {
        let mut learner = toml::Table::new();
        learner.insert("kind".into(), "actor_critic".into());
        [("learner".to_string(), toml::Value::Table(learner))].into_iter().collect()
    }

    /// Welfare in the queue world; in the valuation world the surplus per bidder per item, as
    /// its own tables lead with (SPEC 8: what the bidders' learning is judged by).
    fn headline(&self) -> usize {
        match self.env.scenario().file.env.world {
            Kind::Queues => 0,
            Kind::Valuations => 1,
        }
    }

    fn figures(&self) -> Figures {
        let m = EpisodeMetrics::compute(&self.env, self.fairness);
        let (mut class, mut level_class) = (0, 0);
        // A weight class's mean of a per-agent figure, in class order (as eval::Summary
        // reduces them).
        let of_class = |per_agent: &[f64], class: usize| {
            let (sum, count) = self
                .groups
                .iter()
                .zip(per_agent)
                .filter(|(&g, _)| g == class)
                .fold((0.0, 0usize), |(s, c), (_, &t)| (s + t, c + 1));
            sum / count as f64
        };
        self.metrics
            .iter()
            .map(|f| match Metric::named(f.key) {
                Some(spec) => (spec.of)(&m).unwrap_or(f64::NAN),
                // The valuation world's mean bid factor is its mean level, as the queue
                // stack's `bid_factor_by_weight` reads it (EpisodeMetrics::threshold).
                None if f.key.starts_with(THRESHOLD_PREFIX) || f.key.starts_with(BID_FACTOR_PREFIX) => {
                    level_class += 1;
                    of_class(&m.threshold, level_class - 1)
                }
                None => {
                    debug_assert!(f.key.starts_with(CLASS_PREFIX), "{} is a figure of the specification", f.key);
                    class += 1;
                    of_class(&m.throughput, class - 1)
                }
            })
            .collect()
    }

    fn set_fairness(&mut self, on: bool) {
        self.fairness = on;
    }

    fn fork(&self) -> Box<dyn World> {
        let mut copy = QueueWorld::new(self.env.scenario().clone());
        copy.fairness = self.fairness;
        Box::new(copy)
    }

    fn config(&self) -> toml::Table {
        self.table.clone()
    }

    fn mechanism(&self) -> Option<String> {
        Some(self.env.scenario().file.mechanism.name.clone())
    }

    fn reads_actions(&self) -> bool {
        scheduler::registry::reads_actions(&self.env.scenario().file.mechanism.name)
    }

    fn agents_stay(&self) -> bool {
        true
    }

    fn shares_reward(&self) -> bool {
        self.env.scenario().file.env.reward == crate::config::Reward::Welfare
    }
}

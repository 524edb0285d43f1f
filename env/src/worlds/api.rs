//! The seam's trait and its types: what a world is ([`World`]), its observation layout, its
//! figures, a step's report and errors. Everything else in `env` that is a world (the queue
//! world's seam, the market's, Gavel's, the bandit) builds on this file; the registry in
//! [`super`] builds on them.

use crate::config::ActionKind;

/// A round as the mechanism saw and settled it: what re-running it with another agent's
/// level needs ([`World::mechanism_round`]).
#[derive(Clone, Copy)]
pub struct MechanismRound<'a> {
    /// Budgets at the start of the next round.
    pub next_budgets: &'a [f64],
    /// The round input the mechanism saw.
    pub input: &'a scheduler::RoundInput,
    /// The bids at bid factor 1 (auctions; empty otherwise).
    pub bid_values: &'a [f64],
    /// The allocation it made.
    pub allocation: &'a scheduler::Allocation,
    /// Every agent's reward of the round, by id (what a learner that learns as it plays
    /// is paid: `mtf compare`'s `hedge`).
    pub rewards: &'a [f64],
}

/// A world's observation layout: one name and bounds per feature.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Feature names, in row order.
    pub names: Vec<String>,
    /// Lower bounds.
    pub low: Vec<f32>,
    /// Upper bounds (may be infinite).
    pub high: Vec<f32>,
}

impl Layout {
    /// Features per row.
    pub fn dim(&self) -> usize {
        self.names.len()
    }

    /// Whether `row` fits the layout (length, finite, within bounds).
    pub fn contains(&self, row: &[f32]) -> bool {
        row.len() == self.dim()
            && row
                .iter()
                .zip(&self.low)
                .zip(&self.high)
                .all(|((x, lo), hi)| x.is_finite() && x >= lo && x <= hi)
    }
}

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Higher is better (welfare, utilisation).
    Higher,
    /// Lower is better (completion times).
    Lower,
}

/// One figure of a world's episodes.
#[derive(Clone, Copy, Debug)]
pub struct WorldMetric {
    /// Its key in `summary.json`, tables and sweep objectives.
    pub key: &'static str,
    /// Its label and unit in tables.
    pub label: &'static str,
    /// Which way is better.
    pub better: Better,
    /// Decimals tables show it with.
    pub decimals: usize,
    /// Whether console tables show it (every figure is in the CSV and JSON).
    pub shown: bool,
}

/// An episode's figures: one value per entry of the world's [`World::metrics`], in order
/// (NaN where the episode could not compute one).
pub type Figures = Vec<f64>;

/// An agent's round record ([`World::info`]): named numbers, strings or nulls, in order (a
/// list, not a map: it is built every round for every agent a Python step returns).
pub type Record = Vec<(&'static str, serde_json::Value)>;

/// Values over the rounds (or another axis) that a world's story draws: one figure, a line
/// per named series.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// The figure's file stem (`prices` writes `prices.png` and `.svg`).
    pub name: String,
    /// Its title.
    pub title: String,
    /// The x axis's label.
    pub x: String,
    /// The y axis's label.
    pub y: String,
    /// The x values.
    pub xs: Vec<f64>,
    /// Per line: its name and one value per x.
    pub lines: Vec<(String, Vec<f64>)>,
}

/// An episode as its world tells it ([`World::story`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Story {
    /// Text for the console (markdown).
    pub text: String,
    /// Figures to draw.
    pub figures: Vec<Series>,
}

/// What one step reports (slices over the agents that acted, in `live` order before the step).
#[derive(Debug)]
pub struct Report<'a> {
    /// The agents that acted.
    pub agents: &'a [usize],
    /// Their rewards.
    pub rewards: &'a [f64],
    /// Whether each left the world in this step (its job finished).
    pub terminated: &'a [bool],
    /// Whether the episode ran out of rounds with agents still present (they are truncated).
    pub truncated: bool,
}

/// A step that cannot be played.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    /// Not one action per live agent.
    #[error("expected {expected} actions (one per live agent), got {got}")]
    Count {
        /// Live agents.
        expected: usize,
        /// Actions given.
        got: usize,
    },
    /// An action outside the levels.
    #[error("agent {agent}: action {action} is outside Discrete({levels})")]
    OutOfSpace {
        /// The agent's id.
        agent: usize,
        /// The action.
        action: usize,
        /// Number of levels.
        levels: usize,
    },
    /// Stepping a finished episode.
    #[error("the episode is over: call reset")]
    Done,
}

/// A multi-agent world behind the seam (module docs).
pub trait World: Send {
    /// Start an episode: every random number of it comes from `seed`.
    fn reset(&mut self, seed: u64);

    /// The agents that act this round, by id, ascending. Empty once the episode is over.
    fn live(&self) -> &[usize];

    /// Agent ids of this episode are below this.
    fn possible(&self) -> usize;

    /// Agent `id`'s name (PettingZoo's agent string).
    fn agent_name(&self, id: usize) -> String;

    /// Agent `id`'s group.
    fn group(&self, id: usize) -> usize;

    /// The groups' names (`group` indexes them).
    fn group_names(&self) -> Vec<String>;

    /// Agent `id`'s weight (its share of the tokens under MTF; 1 where the world has none).
    fn weight(&self, _id: usize) -> f64 {
        1.0
    }

    /// The observation layout.
    fn layout(&self) -> &Layout;

    /// The live agents' observations, `live().len()` rows of `layout().dim()`, into `out`.
    fn observe(&mut self, out: &mut [f32]);

    /// The live agents' observations as the world holds them, when it keeps them as one
    /// buffer in `live` order (the queue world's): the episode driver then reads them there
    /// instead of copying them with `observe`. `None` (default) otherwise.
    fn observed(&self) -> Option<&[f32]> {
        None
    }

    /// Every agent's row (`possible` rows of the layout) into `out`: a live agent's
    /// observation, another's [`World::last_observation`], or where there is none `blank`
    /// (zeros when `None`). `scratch` holds the live rows (the caller's, reused between rounds).
    /// What the training rollout and Python's batched adapter fill their rows with.
    fn observe_every(&mut self, out: &mut [f32], blank: Option<&[f32]>, scratch: &mut Vec<f32>) {
        let dim = self.layout().dim();
        let live = self.live().len();
        if live * dim == out.len() {
            // Everyone is live (ids 0..possible, ascending): the rows are the observation.
            self.observe(out);
            return;
        }
        scratch.resize(live * dim, 0.0);
        self.observe(scratch);
        let mut at = 0;
        for id in 0..out.len() / dim {
            let row = &mut out[id * dim..(id + 1) * dim];
            if self.live().get(at) == Some(&id) {
                row.copy_from_slice(&scratch[at * dim..(at + 1) * dim]);
                at += 1;
            } else if !self.last_observation(id, row) {
                match blank {
                    Some(b) => row.copy_from_slice(b),
                    None => row.fill(0.0),
                }
            }
        }
    }

    /// Agent `id`'s observation after the step in which it left (terminated, or truncated at
    /// the episode's end), into `out` (one row), when the world has one: PettingZoo returns it
    /// as the agent's last observation (what a value bootstraps from at a truncation).
    /// Returns false (default) when it has none.
    fn last_observation(&mut self, _id: usize, _out: &mut [f32]) -> bool {
        false
    }

    /// Where the layout's block of features named `name` sits in each row (`start..end`), for
    /// a learner that reads it alone (the queue world's SPEC 4 `spec` block, and its `by_type`
    /// block where observed). `None` (default): no such block; learners read the whole row.
    fn feature_block(&self, _name: &str) -> Option<std::ops::Range<usize>> {
        None
    }

    /// The action levels (action k sets `levels()[k]`).
    fn levels(&self) -> &[f64];

    /// Actions past the level grid that the world plays for an agent by a rule of its own,
    /// action `levels().len() + j` being `named_actions()[j]` (the market's `own`: the
    /// tenant's own factor from its file entry, which need not be on the grid). They are
    /// references and named policies (`fixed:own`), never a learner's or Python's choice:
    /// the action space stays the levels. Default: none.
    fn named_actions(&self) -> &'static [&'static str] {
        &[]
    }

    /// What a level sets.
    fn action_kind(&self) -> ActionKind;

    /// Play one round with one level index per live agent (in `live` order).
    fn step(&mut self, actions: &[usize]) -> Result<Report<'_>, StepError>;

    /// The most rounds an episode has, when the world fixes it (the queue world's and the
    /// market's `env.rounds`); `None` where episodes end otherwise (Gavel's: when every job is
    /// done).
    fn max_rounds(&self) -> Option<u32> {
        None
    }

    /// What a copy's memory grows with, in (agent, accelerator) cells: a batch of copies is
    /// refused before it is allocated when copies x cells passes mtf's cell limit. The agents
    /// by default; the queue world's agents x accelerators.
    fn cells(&self) -> usize {
        self.possible()
    }

    /// What one episode of the world holds at its peak beyond the process's floor, by the
    /// config key that sizes each part, in bytes: what `--max-memory` checks a command against
    /// before it plays (times the episodes it plays at once). Default: nothing that grows with
    /// the config (Gavel's world peaked at 13 MiB with 200,000 generated jobs as with 2,000;
    /// the bandit's is a few vectors).
    fn memory(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// The rounds an episode can play, as the config sizes them, for an estimate of what a
    /// learner keeping every round holds (`--max-memory`; PPO's rollout). Default:
    /// [`World::max_rounds`]; `None` where only a safety cap bounds an episode (Gavel's
    /// `env.max_rounds`, 10^7 by default: no estimate from it).
    fn episode_rounds(&self) -> Option<u32> {
        self.max_rounds()
    }

    /// Whether the world keeps what its episode figures are computed from beyond the round
    /// (the queue world's per-round logs, which grow with every round). A batch that never
    /// reads figures turns it off; default: nothing to turn off.
    fn set_recording(&mut self, _on: bool) {}

    /// Whether the episode's figures include those that replay it (the queue world's fairness
    /// figures: φ, sharing-incentive and envy-freeness violations, Pareto): what a comparison
    /// and a trained policy's held-out evaluation show, not what training's episodes or its
    /// references (their searches and held-out baselines) pay for. Off by default, those figures NaN then
    /// (tables show `-`); a fork keeps the setting. Default: nothing to turn on.
    fn set_fairness(&mut self, _on: bool) {}

    /// Whether the episode is over.
    fn done(&self) -> bool {
        self.live().is_empty()
    }

    /// The scenario a round re-runs under, where the world's rounds are SPEC 4's (the queue
    /// and valuation worlds): its mechanism, tokens and reward are what Hedge per budget
    /// state and difference rewards re-run a round with. Default: none (no round re-runs).
    fn scenario(&self) -> Option<&crate::config::Scenario> {
        None
    }

    /// Each agent's tokens by id at the start of the round about to be played (the queue
    /// world's budgets; after the last round, the final ones). Default: none.
    fn budgets(&self) -> Option<&[f64]> {
        None
    }

    /// The round just played as its mechanism saw and settled it (SPEC 4's round record,
    /// where [`World::scenario`] is given). Default: none.
    fn mechanism_round(&self) -> Option<MechanismRound<'_>> {
        None
    }

    /// Agent `id`'s record of the round just played (PettingZoo's `infos`), named values;
    /// after `reset`, what it knows of the round it observes. Default: nothing.
    fn info(&self, _id: usize) -> Record {
        Record::new()
    }

    /// What an external agent process (`agent:PATH` naming a plain executable, docs/AGENTS.md)
    /// reads for live agent `id` this round, where the world keeps a protocol of its own: then
    /// one process per agent, started as `--agent ID`, is sent this object. The queue and
    /// valuation worlds keep theirs (`{budget, utilities, tokens}`), so a script written for
    /// them is the same policy on either stack. `None`, the default: one process per group,
    /// each live agent's observation row sent as `{"world": row}`. Asked after `reset`; a
    /// world answers for every live agent, every round, or for none.
    fn agent_request(&self, _id: usize) -> Option<serde_json::Value> {
        None
    }

    /// The round just played as the world records it (the market: every type's price, where
    /// each tenant ran and what it paid): a line of `mtf simulate`'s `rounds.jsonl`. Default:
    /// none (no round log).
    fn round_record(&self) -> Option<serde_json::Value> {
        None
    }

    /// Whether [`World::round_record`] gives a record after each round played with
    /// `set_recording(true)` (`mtf simulate` writes `rounds.jsonl` only then; the conformance
    /// tests hold the two to each other). Default: no.
    fn keeps_round_records(&self) -> bool {
        false
    }

    /// The episode just played as the world tells it (`mtf simulate`'s first seed, played with
    /// `set_recording(true)`): text for the console and figures (the market: its rounds'
    /// prices and where each tenant ran, then its totals; the price per type). Default: none.
    fn story(&self) -> Option<Story> {
        None
    }

    /// The episode's whole record so far (per-agent figures, prices, ...: what `mtf simulate
    /// --json` shows of an episode of the world). Default: the figures by key.
    fn record(&self) -> serde_json::Value {
        let figures = self.figures();
        serde_json::Value::Object(
            self.metrics()
                .iter()
                .zip(figures)
                .map(|(m, v)| (m.key.to_string(), serde_json::json!(v)))
                .collect(),
        )
    }

    /// The world's figures, in the order of [`World::figures`].
    fn metrics(&self) -> &'static [WorldMetric];

    /// The episode's figures so far (final once `done`).
    fn figures(&self) -> Figures;

    /// The figure tables lead with, and which way it is better.
    fn headline(&self) -> usize {
        0
    }

    /// An independent copy at the start of an episode (for parallel evaluation).
    fn fork(&self) -> Box<dyn World>;

    /// The world's resolved config (`seed`, `[env]`, `[mechanism]`; paths absolute): building
    /// it again gives the same world, so a run directory's `config.toml` replays it.
    fn config(&self) -> toml::Table;

    /// The mechanism's name, if it has one (tables name their rows with it).
    fn mechanism(&self) -> Option<String> {
        None
    }

    /// The `--set` override that makes this world's config run mechanism `name` (the
    /// commands' `--mechanism` and `--mechanisms`), or why it cannot (naming the known ones).
    /// Default: `mechanism.name`, a name of the scheduler's registry (Gavel's world, the
    /// bandit); the market's is `mechanism.kind`.
    fn select_mechanism(&self, name: &str) -> Result<String, String> {
        if scheduler::registry::NAMES.contains(&name) {
            Ok(format!("mechanism.name=\"{name}\""))
        } else {
            Err(format!(
                "unknown mechanism `{name}` (known: {})",
                scheduler::registry::NAMES.join(", ")
            ))
        }
    }

    /// Whether the agents' actions can change anything (false under a mechanism that ignores
    /// them: a table shows one row for every policy then).
    fn reads_actions(&self) -> bool {
        true
    }

    /// Whether every agent acts every round until the episode ends, all of them leaving at
    /// once (the queue and valuation worlds': SPEC 2.9, nobody terminates early): learners may
    /// then keep a critic per agent and read every agent's row (PPO's central critic), and
    /// the training rollout's rounds carry no mask of who acted. Default false: agents arrive
    /// and leave (Gavel's jobs), or the world's learners were tuned pooled per group (the
    /// market, whose tenants do stay: its PPO defaults and `docs/market.md` tables come from
    /// the pooled learner, so it keeps it).
    fn agents_stay(&self) -> bool {
        false
    }

    /// Whether every agent is paid one shared reward (a welfare reward): best responses to it
    /// are a team's, not selfish ones, so no selfish equilibrium is reported. Default: no.
    fn shares_reward(&self) -> bool {
        false
    }

    /// Whether another seed gives another episode. A world replaying one trace under a
    /// mechanism without draws does not: its episodes are the same on every seed, so there is
    /// no spread over seeds to state, and commands play it once and say so.
    fn varies_with_seed(&self) -> bool {
        true
    }

    /// The `[learner]` and `[train]` defaults of a run in this world, under the file's own
    /// keys (a table with either or both; per learner section, key by key): defaults tuned on
    /// the world, as the market's PPO learning rate or its Hedge. Default: none (the
    /// learners' own defaults).
    fn run_defaults(&self) -> toml::Table {
        toml::Table::new()
    }

    /// The mechanisms `mtf analyze` places beside the levels where `--baselines` names none
    /// (each played at the best fixed level). Default: none.
    fn baselines(&self) -> &'static [&'static str] {
        &[]
    }

    /// The natural unit of one agent's return over an episode, when the world has one (the
    /// market `mtf train` learns in: utility over the job's worth, so 1 is a whole job's
    /// value): what a learner comparing returns across episodes (Hedge behind the seam)
    /// divides them by. `None`: the learner fixes its own.
    fn return_unit(&self) -> Option<f64> {
        None
    }
}

/// Check one action per live agent, each inside the levels (`levels`: their count, and the
/// world's [`World::named_actions`] after them where it plays those).
pub fn check_actions(live: &[usize], levels: usize, actions: &[usize]) -> Result<(), StepError> {
    if actions.len() != live.len() {
        return Err(StepError::Count {
            expected: live.len(),
            got: actions.len(),
        });
    }
    if let Some(p) = actions.iter().position(|&a| a >= levels) {
        return Err(StepError::OutOfSpace {
            agent: live[p],
            action: actions[p],
            levels,
        });
    }
    Ok(())
}

/// Deserialize a world's config from its table, naming the file and key on error.
pub fn section<T: serde::de::DeserializeOwned>(table: toml::Table, path: &std::path::Path) -> Result<T, crate::config::ConfigError> {
    crate::config::from_table(&path.display().to_string(), table)
}

/// A boxed world is a world (every method, the provided ones included, is the box's own):
/// what is generic over `W: World` (the training rollout) takes the worlds the registry
/// builds.
impl World for Box<dyn World> {
    fn reset(&mut self, seed: u64) {
        (**self).reset(seed)
    }
    fn live(&self) -> &[usize] {
        (**self).live()
    }
    fn possible(&self) -> usize {
        (**self).possible()
    }
    fn cells(&self) -> usize {
        (**self).cells()
    }
    fn set_recording(&mut self, on: bool) {
        (**self).set_recording(on)
    }
    fn set_fairness(&mut self, on: bool) {
        (**self).set_fairness(on)
    }
    fn scenario(&self) -> Option<&crate::config::Scenario> {
        (**self).scenario()
    }
    fn budgets(&self) -> Option<&[f64]> {
        (**self).budgets()
    }
    fn mechanism_round(&self) -> Option<MechanismRound<'_>> {
        (**self).mechanism_round()
    }
    fn agent_name(&self, id: usize) -> String {
        (**self).agent_name(id)
    }
    fn group(&self, id: usize) -> usize {
        (**self).group(id)
    }
    fn group_names(&self) -> Vec<String> {
        (**self).group_names()
    }
    fn weight(&self, id: usize) -> f64 {
        (**self).weight(id)
    }
    fn layout(&self) -> &Layout {
        (**self).layout()
    }
    fn observe(&mut self, out: &mut [f32]) {
        (**self).observe(out)
    }
    fn observed(&self) -> Option<&[f32]> {
        (**self).observed()
    }
    fn observe_every(&mut self, out: &mut [f32], blank: Option<&[f32]>, scratch: &mut Vec<f32>) {
        (**self).observe_every(out, blank, scratch)
    }
    fn last_observation(&mut self, id: usize, out: &mut [f32]) -> bool {
        (**self).last_observation(id, out)
    }
    fn feature_block(&self, name: &str) -> Option<std::ops::Range<usize>> {
        (**self).feature_block(name)
    }
    fn levels(&self) -> &[f64] {
        (**self).levels()
    }
    fn named_actions(&self) -> &'static [&'static str] {
        (**self).named_actions()
    }
    fn action_kind(&self) -> ActionKind {
        (**self).action_kind()
    }
    fn step(&mut self, actions: &[usize]) -> Result<Report<'_>, StepError> {
        (**self).step(actions)
    }
    fn max_rounds(&self) -> Option<u32> {
        (**self).max_rounds()
    }
    fn done(&self) -> bool {
        (**self).done()
    }
    fn info(&self, id: usize) -> Record {
        (**self).info(id)
    }
    fn record(&self) -> serde_json::Value {
        (**self).record()
    }
    fn metrics(&self) -> &'static [WorldMetric] {
        (**self).metrics()
    }
    fn figures(&self) -> Figures {
        (**self).figures()
    }
    fn headline(&self) -> usize {
        (**self).headline()
    }
    fn fork(&self) -> Box<dyn World> {
        (**self).fork()
    }
    fn config(&self) -> toml::Table {
        (**self).config()
    }
    fn mechanism(&self) -> Option<String> {
        (**self).mechanism()
    }
    fn reads_actions(&self) -> bool {
        (**self).reads_actions()
    }
    fn shares_reward(&self) -> bool {
        (**self).shares_reward()
    }
    fn agents_stay(&self) -> bool {
        (**self).agents_stay()
    }
    fn select_mechanism(&self, name: &str) -> Result<String, String> {
        (**self).select_mechanism(name)
    }
    fn varies_with_seed(&self) -> bool {
        (**self).varies_with_seed()
    }
    fn return_unit(&self) -> Option<f64> {
        (**self).return_unit()
    }
    fn baselines(&self) -> &'static [&'static str] {
        (**self).baselines()
    }
    fn run_defaults(&self) -> toml::Table {
        (**self).run_defaults()
    }
    fn memory(&self) -> Vec<(String, u64)> {
        (**self).memory()
    }
    fn episode_rounds(&self) -> Option<u32> {
        (**self).episode_rounds()
    }
    fn round_record(&self) -> Option<serde_json::Value> {
        (**self).round_record()
    }
    fn keeps_round_records(&self) -> bool {
        (**self).keeps_round_records()
    }
    fn story(&self) -> Option<Story> {
        (**self).story()
    }
    fn agent_request(&self, id: usize) -> Option<serde_json::Value> {
        (**self).agent_request(id)
    }
}

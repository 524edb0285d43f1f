//! The LaissezCloud market as a world (Harith and Kaufmann, "It's the People, Not the
//! Placement"; issue 29): tenants run long jobs on heterogeneous accelerators, submit a launch
//! table (a maximum price per hour for each auctioned accelerator type), the exchange clears a
//! price per type from its base price and the outstanding bids, running jobs keep their
//! accelerator while their bid stands, and a job moves only at its checkpoints (losing the work
//! since its last checkpoint plus a restart delay when it moves at any other time).
//!
//! This module is the world's core: the scenario file, the exchange (second and first price,
//! and MTF with tokens on the same arrivals), the paper's economic agent as the fixed policy (a
//! bid factor per tenant, 1 = break-even), the episode's records and figures
//! ([`MarketMetrics`]), and [`game`]: the market as a parallel multi-agent environment (what
//! Python's `parallel_env` steps). `mtf simulate` runs a market file, `mtf compare` its
//! mechanisms under fixed policies, `mtf train` learns bids in it. By default the exchange
//! clears the auctioned types one by one; `mechanism.clearing = "joint"` clears them in one
//! assignment ([`Clearing::Joint`], [`assign`]).
//!
//! # The round (one round = `market.round_hours` hours)
//! 1. Jobs arriving this round wait for an accelerator.
//! 2. Tenants at a decision point (waiting, or their job wrote a checkpoint last round) refresh
//!    their launch table: for each auctioned type t, `factor x break-even(t)`, capped at what the
//!    work is worth per hour there (`value x speed(t)`) and at the budget left for one round.
//!    `break-even(t)` is the cheapest alternative's cost per unit of work times the speed on t:
//!    `min over a != t of price(a) x speed(t) / speed(a)`, over the alternatives the tenant can
//!    have now — on-demand types at their base price, auctioned types with a free accelerator
//!    at their base price, and the type it runs on at the price it pays. With no alternative
//!    it bids what the work is worth. Other tenants' tables stand as they were.
//! 3. The exchange clears the auctioned types in config order (with `mechanism.clearing =
//!    "joint"`, all at once: [`Clearing::Joint`]; the rest of this step is the same). Type t's candidates are the
//!    tenants bidding at least its base price that hold or reserve one of its accelerators, or
//!    have not won an accelerator this round and hold or reserve none of another type (unless
//!    at a decision point, where they may move): one accelerator per tenant. The `count`
//!    highest bids win (ties: holders first, then the lower tenant index). Second price: the
//!    type's price is `max(base, the highest bid on t of a tenant not winning it)` —
//!    outstanding bids of tenants running elsewhere count, so a tenant that moved away still
//!    sets the price of the type it left — and a holder pays it, or its own bid if lower;
//!    first price: its own bid. A loser holding one of t's accelerators is evicted (the
//!    work since its last checkpoint is lost). A winner at a decision point moves now; one
//!    running elsewhere keeps running there and the accelerator is reserved for it (idle,
//!    unpaid) until its next checkpoint.
//! 4. Tenants with no accelerator run on the on-demand type with the lowest cost per unit of
//!    work they can afford and that their work is worth, or wait.
//! 5. Jobs run at their type's speed (none during a restart delay, paid all the same), pay the
//!    round's price (a tenant whose budget cannot pay it stops, back to its checkpoint), write a checkpoint each time their progress passes a multiple of
//!    `checkpoint`, and finish when it reaches `work`: the tenant earns `value x work` then
//!    (`late_value x work` when it finishes `deadline` or more rounds after its arrival).
//!
//! Decision taken here where the paper's example is silent: it never says why B first bids
//! against the Trainium rather than the L4 and later against the L4; here the L4 is held by a
//! third tenant C at first and becomes free when C finishes (the example config).

mod assign;
pub mod game;

pub use assign::assign;
use assign::ASSIGN_UNIT;

use crate::config::{from_table, read_table, ConfigError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Largest money amount, value per unit of work, bid factor, token total or weight.
const MAX_MONEY: f64 = 1e9;
/// Largest speed (work units per hour) and round length (hours).
const MAX_SPEED: f64 = 1e6;
/// Largest job size and checkpoint interval (work units).
const MAX_WORK: f64 = 1e12;
/// Most tenants (summed over groups) and most auctioned accelerators.
const MAX_TENANTS: u64 = 100_000;
/// Most tenant-rounds an episode records, and most (tenant, accelerator) pairs (MTF's
/// preference lists).
const MAX_RECORDS: u64 = 10_000_000;

/// Tolerance on work units: progress within it of a checkpoint or the job's size has reached it.
const EPS: f64 = 1e-9;

/// A market scenario file (`env.world = "market"`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketFile {
    /// Root seed (the market's arrivals are given; kept for the run directory).
    #[serde(default = "one")]
    pub seed: u64,
    /// `world = "market"` and the episode's rounds.
    pub env: MarketEnv,
    /// How the exchange prices.
    #[serde(default)]
    pub mechanism: MarketMechanism,
    /// Types and tenants.
    pub market: MarketSection,
    /// `[learner]`: what `mtf train` learns the `learn = true` tenants' bids with (read by
    /// `agents::train::market`; the market itself ignores it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner: Option<toml::Table>,
    /// `[train]`: episodes, replicates and evaluation seeds of `mtf train` (read by
    /// `agents::train::market`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<toml::Table>,
    /// Its groups expanded and sizes drawn ([`MarketFile::expanded`]): a second expansion
    /// would lose the groups and ignore a new seed.
    #[serde(skip)]
    pub expanded: bool,
}

fn one() -> u64 {
    1
}

/// The `[env]` section of a market file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketEnv {
    /// Must be `"market"`.
    pub world: String,
    /// Rounds in the episode.
    pub rounds: u32,
}

/// The `[mechanism]` section of a market file.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketMechanism {
    /// `second_price` (default), `first_price` or `mtf`.
    #[serde(default)]
    pub kind: Pricing,
    /// MTF's token total (split by the tenants' weights).
    #[serde(default = "hundred")]
    pub total_tokens: f64,
    /// How the auctions clear the auctioned types: `per_type` (default: one type after the
    /// other, in config order) or `joint` (one assignment over all types, [`assign`]).
    #[serde(default)]
    pub clearing: Clearing,
}

/// How the auctions clear several auctioned types.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Clearing {
    /// Type by type in config order: a type's `count` highest bids win, its price the highest
    /// bid of a tenant not winning it (or its base price). A tenant that won a type does not
    /// compete for the next, so the outcome depends on the order.
    #[default]
    PerType,
    /// One assignment of tenants to types maximising the bids' surplus over the base prices
    /// (each tenant at most one accelerator, each type at most its `count`); a type's price is
    /// its base price plus what one more accelerator of it would add to that surplus (the
    /// least Walrasian prices: every winner prefers its type at these prices, and with one
    /// type this is the highest losing bid). Second price charges it, first price the bid.
    /// Costs a shortest-path search per accelerator assigned.
    Joint,
}

impl Default for MarketMechanism {
    fn default() -> Self {
        Self {
            kind: Pricing::default(),
            total_tokens: hundred(),
            clearing: Clearing::default(),
        }
    }
}

fn hundred() -> f64 {
    100.0
}

/// Who gets an auctioned accelerator, and what a tenant pays per hour for it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pricing {
    /// The highest bid of a tenant not holding the type, or its base price.
    #[default]
    SecondPrice,
    /// Its own bid.
    FirstPrice,
    /// Most-Token-First with unit demand (see [`Market`]'s MTF round); the type's base price.
    Mtf,
}

/// The `[market]` section.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketSection {
    /// Hours per round.
    #[serde(default = "one_hour")]
    pub round_hours: f64,
    /// Accelerator types, in the order the exchange clears them.
    pub types: Vec<TypeSpec>,
    /// Tenants, one job each.
    pub tenants: Vec<TenantSpec>,
}

fn one_hour() -> f64 {
    1.0
}

/// An accelerator type.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeSpec {
    /// Its name.
    pub name: String,
    /// Base (reserve) price, money per hour.
    pub base_price: f64,
    /// Accelerators of this type (ignored on demand).
    #[serde(default = "one_u32")]
    pub count: u32,
    /// Sold at its base price to anyone, without limit (a cloud's on-demand offer).
    #[serde(default)]
    pub on_demand: bool,
}

fn one_u32() -> u32 {
    1
}

/// A tenant and its job.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantSpec {
    /// Its name.
    pub name: String,
    /// Round its job arrives.
    #[serde(default)]
    pub arrival: u32,
    /// The job's size in work units (with `work_max`, the smallest; with `work_trace`, not
    /// given).
    #[serde(default)]
    pub work: f64,
    /// Job sizes from a trace: a file (relative to the market file: one size per line, the
    /// first comma-separated column, an optional header line) or the sizes inline. Copy j of
    /// the entry takes entry `start + j` (wrapping), `start` being `trace_start` or, without
    /// it, drawn from the file's seed (stream `market-trace`), so episodes play different
    /// stretches of the trace. A file is read once and kept inline: a run's `config.toml`
    /// carries the sizes it played.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_trace: Option<WorkTrace>,
    /// Where copy 0 starts in `work_trace` (default: drawn from the seed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_start: Option<u64>,
    /// With it, each tenant's size is drawn uniformly in `[work, work_max]` from the file's
    /// seed (stream `market-work`, one draw per tenant in file order after groups expand).
    #[serde(default)]
    pub work_max: Option<f64>,
    /// Rounds after its arrival within which the job must finish to earn `value` per unit of
    /// work; later it earns `late_value` per unit (default: no deadline).
    #[serde(default)]
    pub deadline: Option<u32>,
    /// Money per unit of work of a job finished after its deadline (default 0).
    #[serde(default)]
    pub late_value: f64,
    /// Work units per hour on each type (config order); or from `application`.
    #[serde(default)]
    pub speeds: Vec<f64>,
    /// An application of the Gemmini catalog (SPEC 1, thesis Table 5.1: `resnet_conv`,
    /// `resnet_matmul`, `mobilenet_conv`, `mobilenet_ws`) instead of `speeds`: every type of the
    /// market must then be a catalog type (`gemmini_2ghz`, `gemmini_3ghz`), and the speed on
    /// each is its catalog throughput times `speed_scale`. Filled in at load time (a run's
    /// `config.toml` keeps the speeds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    /// Work units per hour per unit of catalog throughput (with `application`; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_scale: Option<f64>,
    /// Work units between checkpoints.
    pub checkpoint: f64,
    /// Rounds a moved job restarts before it progresses again.
    #[serde(default)]
    pub restart_rounds: u32,
    /// Money per work unit, earned when the job finishes.
    pub value: f64,
    /// Money it can spend (default: unlimited).
    #[serde(default)]
    pub budget: Option<f64>,
    /// Its bids over its break-even prices (the economic agent: 1).
    #[serde(default = "one_f64")]
    pub bid_factor: f64,
    /// Its weight: its share of MTF's tokens.
    #[serde(default = "one_f64")]
    pub weight: f64,
    /// Its MTF threshold: it buys only accelerators of at least this utility (speed over its
    /// best speed).
    #[serde(default)]
    pub threshold: f64,
    /// Tenants like this one (more than one: named `name#1`, `name#2`, ...; default 1).
    #[serde(default = "one_u32")]
    pub count: u32,
    /// Rounds between the arrivals of its copies (copy j arrives at `arrival + j x spacing`).
    #[serde(default)]
    pub arrival_spacing: u32,
    /// Its bid factor (under MTF its threshold) is learned by `mtf train`; the others play
    /// their own (the economic agent at `bid_factor = 1`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub learn: bool,
    /// The entry of the file's tenant list it comes from (set when groups expand): tenants
    /// of one entry share a learned policy.
    #[serde(skip)]
    pub group: usize,
}

fn one_f64() -> f64 {
    1.0
}

/// Most entries of a job-size trace.
const MAX_TRACE: usize = 1_000_000;

/// A tenant entry's job sizes from a trace ([`TenantSpec::work_trace`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a trace file's path (a string) or the job sizes (an array of numbers)"
)]
pub enum WorkTrace {
    /// A file, relative to the market file (read at load time).
    File(String),
    /// The sizes.
    Sizes(Vec<f64>),
}

/// The sizes in a trace file's text: one per line (the first comma-separated column), blank
/// lines and a leading byte-order mark skipped, a first line with letters skipped (a header).
fn parse_trace(text: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (k, line) in text.lines().enumerate() {
        let cell = line.split(',').next().unwrap_or("").trim();
        if cell.is_empty() {
            continue;
        }
        match cell.parse::<f64>() {
            Ok(x) => out.push(x),
            // A header names its column: a first line with letters.
            Err(_) if k == 0 && cell.chars().any(char::is_alphabetic) => continue,
            Err(_) => return Err(format!("line {}: `{cell}` is not a job size", k + 1)),
        }
        if out.len() > MAX_TRACE {
            return Err(format!("more than {MAX_TRACE} sizes"));
        }
    }
    Ok(out)
}

impl MarketFile {
    /// Read and check a market file; `overrides` are `--set key=value` as for scenarios.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        Ok(Self::load_unexpanded(path, overrides)?.expanded())
    }

    /// Read and check a market file, its groups not yet expanded (and sizes not yet drawn):
    /// [`MarketFile::at_seed`] makes the market of any seed from it.
    pub fn load_unexpanded(path: &Path, overrides: &[String]) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
        let table = read_table(path, overrides)?;
        let mut f: Self = from_table(&file, table)?;
        f.catalog_speeds(&file)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        for (i, t) in f.market.tenants.iter_mut().enumerate() {
            if let Some(WorkTrace::File(name)) = &t.work_trace {
                let at = dir.join(name);
                let sizes = crate::config::read_text(&at, 64 << 20)
                    .and_then(|text| parse_trace(&text))
                    .map_err(|problem| ConfigError {
                        file: file.clone(),
                        key: format!("market.tenants[{i}].work_trace"),
                        problem: format!("{}: {problem}", at.display()),
                    })?;
                t.work_trace = Some(WorkTrace::Sizes(sizes));
            }
        }
        f.check(&file)?;
        Ok(f)
    }

    /// Speeds from the Gemmini catalog for the tenants that name an `application`.
    fn catalog_speeds(&mut self, file: &str) -> Result<(), ConfigError> {
        let catalog = crate::config::Catalog::default();
        let types: Vec<String> = self.market.types.iter().map(|t| t.name.clone()).collect();
        for (i, t) in self.market.tenants.iter_mut().enumerate() {
            let Some(app) = t.application.take() else { continue };
            let err = |k: &str, problem: String| ConfigError {
                file: file.to_string(),
                key: format!("market.tenants[{i}].{k}"),
                problem,
            };
            if !t.speeds.is_empty() {
                return Err(err("application", "gives the speeds: leave speeds out".into()));
            }
            let a = catalog.applications.iter().position(|x| *x == app).ok_or_else(|| {
                err(
                    "application",
                    format!("`{app}` is not in the Gemmini catalog ({:?})", catalog.applications),
                )
            })?;
            let scale = t.speed_scale.take().unwrap_or(1.0);
            if !(scale.is_finite() && scale > 0.0 && scale <= MAX_SPEED) {
                return Err(err("speed_scale", format!("must be in (0, {MAX_SPEED:e}], got {scale}")));
            }
            t.speeds = types
                .iter()
                .map(|name| {
                    let c = catalog.types.iter().position(|x| x == name).ok_or_else(|| {
                        err(
                            "application",
                            format!(
                                "type `{name}` is not a Gemmini catalog type ({:?}): give speeds instead",
                                catalog.types
                            ),
                        )
                    })?;
                    Ok(catalog.throughput[a][c] * scale)
                })
                .collect::<Result<_, ConfigError>>()?;
        }
        Ok(())
    }

    /// The market of `seed` from an unexpanded file: its groups expanded and its job sizes
    /// drawn from that seed (training episodes and evaluation seeds differ only there).
    pub fn at_seed(&self, seed: u64) -> Self {
        assert!(!self.expanded, "MarketFile::at_seed takes an unexpanded file (load_unexpanded)");
        Self { seed, ..self.clone() }.expanded()
    }

    /// Each tenant's own action: its bid factor, or under MTF its threshold.
    pub fn actions(&self) -> Vec<f64> {
        let mtf = self.mechanism.kind == Pricing::Mtf;
        self.market
            .tenants
            .iter()
            .map(|t| if mtf { t.threshold } else { t.bid_factor })
            .collect()
    }

    /// Every tenant group (`count` > 1) as its tenants, one job each.
    pub fn expanded(mut self) -> Self {
        self.expanded = true;
        if self
            .market
            .tenants
            .iter()
            .all(|t| t.count == 1 && t.work_max.is_none() && t.work_trace.is_none())
        {
            for (g, t) in self.market.tenants.iter_mut().enumerate() {
                t.group = g;
            }
            return self;
        }
        // Where each trace entry starts: its trace_start, or drawn from the seed in entry order.
        let mut draws = crate::rng::stream(self.seed, "market-trace", 0);
        let starts: Vec<u64> = self
            .market
            .tenants
            .iter()
            .map(|t| match &t.work_trace {
                Some(WorkTrace::Sizes(s)) if !s.is_empty() => t
                    .trace_start
                    .unwrap_or_else(|| (crate::rng::unit(rand::Rng::next_u64(&mut draws)) * s.len() as f64) as u64),
                _ => 0,
            })
            .collect();
        let starts = &starts;
        let entries = std::mem::take(&mut self.market.tenants);
        self.market.tenants = entries
            .into_iter()
            .enumerate()
            .flat_map(|(g, mut t)| {
                // The copies carry their size, not the trace (a long trace times many copies
                // would be cloned into each).
                let trace = t.work_trace.take();
                (0..t.count).map(move |j| TenantSpec {
                    work: match &trace {
                        Some(WorkTrace::Sizes(s)) if !s.is_empty() => s[((starts[g] + u64::from(j)) % s.len() as u64) as usize],
                        _ => t.work,
                    },
                    trace_start: None,
                    name: if t.count == 1 {
                        t.name.clone()
                    } else {
                        format!("{}#{}", t.name, j + 1)
                    },
                    arrival: t.arrival.saturating_add(j.saturating_mul(t.arrival_spacing)),
                    count: 1,
                    arrival_spacing: 0,
                    group: g,
                    ..t.clone()
                })
            })
            .collect();
        let mut rng = crate::rng::stream(self.seed, "market-work", 0);
        for t in &mut self.market.tenants {
            if let Some(max) = t.work_max.take() {
                t.work += (max - t.work) * crate::rng::unit(rand::Rng::next_u64(&mut rng));
            }
        }
        self
    }

    /// Every key's bounds, naming the first one out of them.
    pub fn check(&self, file: &str) -> Result<(), ConfigError> {
        let err = |key: String, problem: String| ConfigError {
            file: file.to_string(),
            key,
            problem,
        };
        // Bounded so that bids, prices and payments stay finite: a tenant's worth per hour is
        // value x speed, at most 1e15.
        let positive = |v: f64, max: f64| v.is_finite() && v > 0.0 && v <= max;
        let money = |v: f64| v.is_finite() && (0.0..=MAX_MONEY).contains(&v);
        if self.env.world != "market" {
            return Err(err(
                "env.world".into(),
                format!("must be \"market\" in a market file, got {:?}", self.env.world),
            ));
        }
        if self.env.rounds == 0 || self.env.rounds > crate::config::limits::MAX_ROUNDS {
            return Err(err(
                "env.rounds".into(),
                format!("must be in [1, {}], got {}", crate::config::limits::MAX_ROUNDS, self.env.rounds),
            ));
        }
        if !money(self.mechanism.total_tokens) {
            return Err(err(
                "mechanism.total_tokens".into(),
                format!("must be in [0, {MAX_MONEY:e}], got {}", self.mechanism.total_tokens),
            ));
        }
        let m = &self.market;
        if !positive(m.round_hours, MAX_SPEED) {
            return Err(err(
                "market.round_hours".into(),
                format!("must be in (0, {MAX_SPEED:e}], got {}", m.round_hours),
            ));
        }
        if m.types.is_empty() || m.types.len() > 64 {
            return Err(err("market.types".into(), format!("needs 1 to 64 types, got {}", m.types.len())));
        }
        let tenants: u64 = m.tenants.iter().map(|t| u64::from(t.count)).sum();
        if tenants <= MAX_TENANTS {
            // Names key every per-tenant table (Python's dicts, policy files): the names the
            // entries expand to (`name`, or `name#1`... for a group) must all differ.
            let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
            for (k, t) in m.tenants.iter().enumerate() {
                let names: Vec<String> = if t.count == 1 {
                    vec![t.name.clone()]
                } else {
                    (1..=t.count).map(|j| format!("{}#{j}", t.name)).collect()
                };
                for name in names {
                    if let Some(first) = seen.insert(name.clone(), k) {
                        return Err(err(
                            format!("market.tenants[{k}].name"),
                            format!("`{name}` is also a tenant of entry {first}: every tenant (a group's copies are `name#1`, `name#2`, ...) needs its own name"),
                        ));
                    }
                }
            }
        }
        if tenants == 0 || tenants > MAX_TENANTS {
            return Err(err(
                "market.tenants".into(),
                format!("needs 1 to {MAX_TENANTS} tenants (counts summed), got {tenants}"),
            ));
        }
        if tenants * u64::from(self.env.rounds) > MAX_RECORDS {
            return Err(err(
                "env.rounds".into(),
                format!(
                    "{} rounds x {tenants} tenants = {} tenant-rounds kept in the episode's records, at most {MAX_RECORDS:e}",
                    self.env.rounds,
                    tenants * u64::from(self.env.rounds)
                ),
            ));
        }
        self.check_names(file)?;
        let mut units = 0u64;
        for (t, ty) in m.types.iter().enumerate() {
            if !money(ty.base_price) {
                return Err(err(
                    format!("market.types[{t}].base_price"),
                    format!("must be in [0, {MAX_MONEY:e}], got {}", ty.base_price),
                ));
            }
            if !ty.on_demand && ty.count == 0 {
                return Err(err(format!("market.types[{t}].count"), "must be >= 1 for an auctioned type".into()));
            }
            if !ty.on_demand {
                units += u64::from(ty.count);
            }
        }
        if units > MAX_TENANTS || units * tenants > MAX_RECORDS {
            return Err(err(
                "market.types".into(),
                format!("{units} auctioned accelerators for {tenants} tenants: at most {MAX_TENANTS} accelerators and {MAX_RECORDS:e} tenant-accelerator pairs"),
            ));
        }
        for (i, tn) in m.tenants.iter().enumerate() {
            let key = |k: &str| format!("market.tenants[{i}].{k}");
            if tn.speeds.len() != m.types.len() {
                return Err(err(
                    key("speeds"),
                    format!("has {} entries, expected one per type ({})", tn.speeds.len(), m.types.len()),
                ));
            }
            if let Some(t) = tn.speeds.iter().position(|s| !positive(*s, MAX_SPEED)) {
                return Err(err(
                    format!("market.tenants[{i}].speeds[{t}]"),
                    format!("must be in (0, {MAX_SPEED:e}], got {}", tn.speeds[t]),
                ));
            }
            if tn.speed_scale.is_some() {
                return Err(err(key("speed_scale"), "needs an application".into()));
            }
            if tn.trace_start.is_some() && tn.work_trace.is_none() {
                return Err(err(key("trace_start"), "needs a work_trace".into()));
            }
            match &tn.work_trace {
                None if !positive(tn.work, MAX_WORK) => {
                    return Err(err(key("work"), format!("must be in (0, {MAX_WORK:e}], got {}", tn.work)));
                }
                None => {}
                Some(WorkTrace::File(_)) => {
                    return Err(err(key("work_trace"), "a trace file is read by MarketFile::load".into()));
                }
                Some(WorkTrace::Sizes(sizes)) => {
                    if tn.work != 0.0 || tn.work_max.is_some() {
                        return Err(err(key("work_trace"), "gives the sizes: leave work and work_max out".into()));
                    }
                    if sizes.is_empty() || sizes.len() > MAX_TRACE {
                        return Err(err(key("work_trace"), format!("needs 1 to {MAX_TRACE} sizes, got {}", sizes.len())));
                    }
                    if let Some(j) = sizes.iter().position(|&x| !positive(x, MAX_WORK)) {
                        return Err(err(
                            format!("market.tenants[{i}].work_trace[{j}]"),
                            format!("must be in (0, {MAX_WORK:e}], got {}", sizes[j]),
                        ));
                    }
                }
            }
            if !positive(tn.checkpoint, MAX_WORK) {
                return Err(err(
                    key("checkpoint"),
                    format!("must be in (0, {MAX_WORK:e}], got {}", tn.checkpoint),
                ));
            }
            if let Some(max) = tn.work_max.filter(|&x| !(x.is_finite() && x >= tn.work && x <= MAX_WORK)) {
                return Err(err(
                    key("work_max"),
                    format!("must be in [work = {}, {MAX_WORK:e}], got {max}", tn.work),
                ));
            }
            if !positive(tn.weight, MAX_MONEY) {
                return Err(err(key("weight"), format!("must be in (0, {MAX_MONEY:e}], got {}", tn.weight)));
            }
            if !(0.0..=1.0).contains(&tn.threshold) {
                return Err(err(key("threshold"), format!("must be in [0, 1], got {}", tn.threshold)));
            }
            if tn.late_value > tn.value || !money(tn.late_value) {
                return Err(err(
                    key("late_value"),
                    format!("must be in [0, value = {}], got {}", tn.value, tn.late_value),
                ));
            }
            if tn.deadline == Some(0) {
                return Err(err(key("deadline"), "must be at least 1 round".into()));
            }
            for (k, v) in [
                ("value", tn.value),
                ("bid_factor", tn.bid_factor),
                ("budget", tn.budget.unwrap_or(0.0)),
            ] {
                if !money(v) {
                    return Err(err(key(k), format!("must be in [0, {MAX_MONEY:e}], got {v}")));
                }
            }
        }
        Ok(())
    }

    /// Names printed in one-line tables and keying policy files: types distinct, every name
    /// printable.
    fn check_names(&self, file: &str) -> Result<(), ConfigError> {
        let err = |key: String, problem: String| ConfigError {
            file: file.to_string(),
            key,
            problem,
        };
        let m = &self.market;
        // Type names head the tables' price columns and key policy files: they must differ
        // (two "A10" columns were accepted), and names are printed in one-line tables.
        let printable = |s: &str| !s.trim().is_empty() && !s.chars().any(char::is_control);
        for (t, ty) in m.types.iter().enumerate() {
            if !printable(&ty.name) {
                return Err(err(
                    format!("market.types[{t}].name"),
                    format!("{:?}: needs a name, without control characters", ty.name),
                ));
            }
            if let Some(first) = m.types[..t].iter().position(|o| o.name == ty.name) {
                return Err(err(
                    format!("market.types[{t}].name"),
                    format!("`{}` is also type {first}: every type needs its own name", ty.name),
                ));
            }
        }
        for (k, tn) in m.tenants.iter().enumerate() {
            if !printable(&tn.name) {
                return Err(err(
                    format!("market.tenants[{k}].name"),
                    format!("{:?}: needs a name, without control characters", tn.name),
                ));
            }
        }
        Ok(())
    }
}

/// Where a tenant's job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// Not arrived yet.
    Absent,
    /// Arrived, no accelerator.
    Waiting,
    /// On an on-demand type.
    OnDemand(usize),
    /// On an auctioned accelerator (its index).
    Unit(usize),
    /// Finished.
    Done,
}

/// One tenant's state.
#[derive(Clone, Debug)]
struct Tenant {
    place: Place,
    progress: f64,
    last_checkpoint: f64,
    decide: bool,
    restart_left: u32,
    bids: Vec<f64>,
    reserved: Option<usize>,
    spent: f64,
    earned: f64,
    lost: f64,
    migrations: u32,
    finished: Option<u32>,
    ran_before: bool,
    /// Price per hour it paid last round (its current type's price in its launch table).
    paying: f64,
}

/// An auctioned accelerator.
#[derive(Clone, Copy, Debug)]
struct Unit {
    ty: usize,
    holder: Option<usize>,
    reserved: Option<usize>,
}

/// What one tenant did in one round.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantRound {
    /// Where it ran (or waited) this round.
    pub place: Place,
    /// The type it ran on (`None`: waiting, absent or done).
    pub ty: Option<usize>,
    /// The accelerator reserved for it, if any.
    pub reserved: Option<usize>,
    /// Price per hour it paid this round.
    pub price: f64,
    /// Work done at the round's end.
    pub progress: f64,
    /// Its MTF tokens at the round's end (under MTF).
    pub tokens: f64,
    /// Its launch table after this round's refresh.
    pub bids: Vec<f64>,
}

/// One round of the market.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MarketRound {
    /// Per type: the exchange price (auctioned: what its holders pay under second price, or
    /// the base price with no competing bid; on demand: the base price).
    pub prices: Vec<f64>,
    /// Per tenant.
    pub tenants: Vec<TenantRound>,
}

/// Totals of an episode per tenant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantTotals {
    /// Money paid.
    pub spent: f64,
    /// Value of its finished work.
    pub earned: f64,
    /// Work units lost to evictions and moves.
    pub lost: f64,
    /// Moves of a running job to another accelerator.
    pub migrations: u32,
    /// Work done.
    pub progress: f64,
    /// Round its job finished.
    pub finished: Option<u32>,
}

/// The market world: the exchange and the tenants' jobs, round by round.
pub struct Market {
    file: MarketFile,
    units: Vec<Unit>,
    tenants: Vec<Tenant>,
    round: u32,
    prices: Vec<f64>,
    /// MTF's token budgets and its round-robin turn.
    tokens: Vec<f64>,
    turn: usize,
}

impl Market {
    /// A fresh market for a checked file.
    pub fn new(file: MarketFile) -> Self {
        let m = &file.market;
        let units = m
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.on_demand)
            .flat_map(|(ty, t)| {
                (0..t.count).map(move |_| Unit {
                    ty,
                    holder: None,
                    reserved: None,
                })
            })
            .collect();
        let tenants = m
            .tenants
            .iter()
            .map(|_| Tenant {
                place: Place::Absent,
                progress: 0.0,
                last_checkpoint: 0.0,
                decide: false,
                restart_left: 0,
                bids: vec![0.0; m.types.len()],
                reserved: None,
                spent: 0.0,
                earned: 0.0,
                lost: 0.0,
                migrations: 0,
                finished: None,
                ran_before: false,
                paying: 0.0,
            })
            .collect();
        let prices = m.types.iter().map(|t| t.base_price).collect();
        let total_w: f64 = m.tenants.iter().map(|t| t.weight).sum();
        let tokens = m.tenants.iter().map(|t| t.weight * file.mechanism.total_tokens / total_w).collect();
        Self {
            file,
            units,
            tenants,
            round: 0,
            prices,
            tokens,
            turn: 0,
        }
    }

    /// Tenants.
    pub fn n(&self) -> usize {
        self.tenants.len()
    }

    /// Whether the episode is over (its rounds played, or every job finished).
    pub fn done(&self) -> bool {
        self.round >= self.file.env.rounds || self.tenants.iter().all(|t| t.place == Place::Done)
    }

    /// The round about to be played.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// Each tenant's totals so far.
    pub fn totals(&self) -> Vec<TenantTotals> {
        self.tenants
            .iter()
            .map(|t| TenantTotals {
                spent: t.spent,
                earned: t.earned,
                lost: t.lost,
                migrations: t.migrations,
                progress: t.progress,
                finished: t.finished,
            })
            .collect()
    }

    /// Whether tenant i's job is in the market now (arrived, not finished).
    pub fn active(&self, i: usize) -> bool {
        !matches!(self.tenants[i].place, Place::Absent | Place::Done)
    }

    /// Where tenant i's job is.
    pub fn place(&self, i: usize) -> Place {
        self.tenants[i].place
    }

    /// Tenant i's quasi-linear utility so far: the value of its finished work minus what it
    /// paid.
    pub fn utility(&self, i: usize) -> f64 {
        self.tenants[i].earned - self.tenants[i].spent
    }

    /// Length of [`Market::observe`]'s features with `types` accelerator types.
    pub fn obs_dim(types: usize) -> usize {
        6 + 3 * types
    }

    /// Names of [`Market::observe`]'s features, for `types` (named) accelerator types.
    pub fn observe_names(types: &[String]) -> Vec<String> {
        let mut v: Vec<String> = [
            "active",
            "work_left",
            "since_checkpoint",
            "decides",
            "deadline_slack",
            "budget_left",
        ]
        .map(String::from)
        .to_vec();
        for t in types {
            v.extend([format!("price_over_base:{t}"), format!("runs_on:{t}"), format!("speed_share:{t}")]);
        }
        v
    }

    /// What a learned bid policy sees of tenant i before the round is played, each feature
    /// in [-1, 10] (prices over base prices capped at 10, the rest in [-1, 1]): whether its job is in the market (or arrives this round); the share
    /// of its work left; its work since its last checkpoint over the checkpoint interval;
    /// whether it decides this round (it arrives, waits, or is at a checkpoint: its launch
    /// table changes only then); its deadline's slack over the deadline (1 without one); its
    /// budget left over its budget (1 without one); then per type the last price over the
    /// base price, whether it runs there, and its speed there over its best speed.
    pub fn observe(&self, i: usize, out: &mut [f32]) {
        let spec = &self.file.market;
        let (tn, t) = (&spec.tenants[i], &self.tenants[i]);
        let arriving = t.place == Place::Absent && tn.arrival == self.round;
        let active = self.active(i) || arriving;
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let age = f64::from(self.round.saturating_sub(tn.arrival));
        let best = tn.speeds.iter().copied().fold(0.0, f64::max);
        let on = self.running(i, None).map(|(ty, _)| ty);
        out[0] = flag(active);
        out[1] = ((tn.work - t.progress) / tn.work).clamp(0.0, 1.0) as f32;
        out[2] = ((t.progress - t.last_checkpoint) / tn.checkpoint).clamp(0.0, 1.0) as f32;
        out[3] = flag(arriving || t.place == Place::Waiting || (t.decide && self.active(i)));
        out[4] = tn
            .deadline
            .map_or(1.0, |d| ((f64::from(d) - age) / f64::from(d.max(1))).clamp(-1.0, 1.0)) as f32;
        out[5] = tn
            .budget
            .map_or(1.0, |b| if b > 0.0 { ((b - t.spent) / b).clamp(0.0, 1.0) } else { 0.0 }) as f32;
        for (ty, ts) in spec.types.iter().enumerate() {
            let at = 6 + 3 * ty;
            out[at] = if ts.base_price > 0.0 {
                (self.prices[ty] / ts.base_price).min(10.0) as f32
            } else {
                1.0
            };
            out[at + 1] = flag(on == Some(ty));
            out[at + 2] = if best > 0.0 { (tn.speeds[ty] / best) as f32 } else { 0.0 };
        }
    }

    /// The episode under the file's bid factors (the economic agent at 1).
    pub fn run(file: MarketFile) -> (Vec<MarketRound>, Vec<TenantTotals>) {
        let factors = file.actions();
        let mut market = Self::new(file);
        let mut rounds = Vec::new();
        while !market.done() {
            rounds.push(market.step(&factors));
        }
        (rounds, market.totals())
    }

    /// The type of what tenant i runs on, and the price it pays there (`pay`: this round's
    /// price on an auctioned accelerator; without it, last round's).
    fn running(&self, i: usize, pay: Option<f64>) -> Option<(usize, f64)> {
        match self.tenants[i].place {
            Place::OnDemand(t) => Some((t, self.file.market.types[t].base_price)),
            Place::Unit(c) => Some((self.units[c].ty, pay.unwrap_or(self.tenants[i].paying))),
            _ => None,
        }
    }

    /// Tenant i's launch table: `factor` times its break-even prices, capped (module docs).
    fn launch_table(&self, i: usize, factor: f64) -> Vec<f64> {
        let spec = &self.file.market;
        let tn = &spec.tenants[i];
        let s = &tn.speeds;
        let here = self.running(i, None);
        let free: Vec<bool> = (0..spec.types.len())
            .map(|t| spec.types[t].on_demand || self.units.iter().any(|u| u.ty == t && u.holder.is_none() && u.reserved.is_none()))
            .collect();
        let cap_budget = tn
            .budget
            .map_or(f64::INFINITY, |b| (b - self.tenants[i].spent).max(0.0) / spec.round_hours);
        (0..spec.types.len())
            .map(|t| {
                if spec.types[t].on_demand {
                    return 0.0;
                }
                let worth = tn.value * s[t];
                let mut be = f64::INFINITY;
                for a in (0..spec.types.len()).filter(|&a| a != t) {
                    let price = match here {
                        Some((h, p)) if h == a => Some(p),
                        _ if free[a] => Some(spec.types[a].base_price),
                        _ => None,
                    };
                    if let Some(p) = price {
                        be = be.min(p * s[t] / s[a]);
                    }
                }
                (factor * be.min(worth)).min(worth).min(cap_budget)
            })
            .collect()
    }

    /// Play one round with each tenant's bid factor; returns the round's record.
    pub fn step(&mut self, factors: &[f64]) -> MarketRound {
        assert_eq!(factors.len(), self.n(), "one bid factor per tenant");
        let r = self.round;
        let n = self.n();
        // One copy of the section per round, lent to the phases (they change self).
        let spec = self.file.market.clone();
        // 1. Arrivals.
        for (i, t) in self.tenants.iter_mut().enumerate() {
            if t.place == Place::Absent && spec.tenants[i].arrival == r {
                t.place = Place::Waiting;
                t.decide = true;
            }
            if t.place == Place::Waiting {
                t.decide = true;
            }
        }
        // 2. Launch tables at decision points (auctions).
        let mtf = self.file.mechanism.kind == Pricing::Mtf;
        for i in 0..n {
            if self.tenants[i].decide && !mtf {
                self.tenants[i].bids = self.launch_table(i, factors[i]);
            }
        }
        // 3. The exchange.
        let mut pay: Vec<Option<f64>> = vec![None; n];
        if mtf {
            self.mtf_round(factors, &mut pay);
        } else {
            self.auction_round(&spec, &mut pay);
        }
        // 4. On demand for those left without an accelerator.
        self.on_demand(&spec);
        // 5. Service, payment, checkpoints, completion.
        let record = self.serve(&spec, &pay);
        self.round += 1;
        record
    }

    /// Step 3 under the auctions: the exchange clears the auctioned types (module docs), and
    /// `pay` gets what each tenant on an auctioned accelerator pays per hour.
    fn auction_round(&mut self, spec: &MarketSection, pay: &mut [Option<f64>]) {
        let n = self.n();
        let active = |t: &Tenant| matches!(t.place, Place::Waiting | Place::OnDemand(_) | Place::Unit(_));
        let mut won_new = vec![false; n];
        let joint = (self.file.mechanism.clearing == Clearing::Joint).then(|| self.joint_clearing());
        for ty in (0..spec.types.len()).filter(|&t| !spec.types[t].on_demand) {
            let base = spec.types[ty].base_price;
            let mine: Vec<usize> = (0..self.units.len()).filter(|&c| self.units[c].ty == ty).collect();
            let claim = |i: usize, units: &[Unit]| {
                mine.iter()
                    .copied()
                    .find(|&c| units[c].holder == Some(i) || units[c].reserved == Some(i))
            };
            // One accelerator per tenant: a tenant holding or reserving one of another type
            // competes here only at a decision point (where it may move), and a tenant that won
            // a new one this round does not compete again.
            let elsewhere = |i: usize, units: &[Unit]| {
                let t = &self.tenants[i];
                matches!(t.place, Place::Unit(u) if units[u].ty != ty) || t.reserved.is_some_and(|u| units[u].ty != ty)
            };
            let (winners, price) = match &joint {
                Some((assigned, prices)) => ((0..n).filter(|&i| assigned[i] == Some(ty)).collect::<Vec<usize>>(), prices[ty]),
                None => {
                    let mut cands: Vec<(f64, bool, usize)> = (0..n)
                        .filter(|&i| active(&self.tenants[i]))
                        .filter_map(|i| {
                            let b = self.tenants[i].bids[ty];
                            let holds = claim(i, &self.units).is_some();
                            let free_to_bid = !won_new[i] && (self.tenants[i].decide || !elsewhere(i, &self.units));
                            (b > 0.0 && b >= base && (holds || free_to_bid)).then_some((b, holds, i))
                        })
                        .collect();
                    cands.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
                    cands.truncate(mine.len());
                    let winners: Vec<usize> = cands.iter().map(|c| c.2).collect();
                    let price = (0..n)
                        .filter(|&i| active(&self.tenants[i]) && !winners.contains(&i))
                        .map(|i| self.tenants[i].bids[ty])
                        .fold(base, f64::max);
                    (winners, price)
                }
            };
            self.prices[ty] = price;
            // Losers lose their claims on this type.
            for &c in &mine {
                if let Some(h) = self.units[c].holder.filter(|h| !winners.contains(h)) {
                    self.units[c].holder = None;
                    let t = &mut self.tenants[h];
                    t.lost += t.progress - t.last_checkpoint;
                    t.progress = t.last_checkpoint;
                    t.place = Place::Waiting;
                }
                if let Some(h) = self.units[c].reserved.filter(|h| !winners.contains(h)) {
                    self.units[c].reserved = None;
                    self.tenants[h].reserved = None;
                }
            }
            for &i in &winners {
                let c = match claim(i, &self.units) {
                    Some(c) => c,
                    None => {
                        won_new[i] = true;
                        let c = mine
                            .iter()
                            .copied()
                            .find(|&c| self.units[c].holder.is_none() && self.units[c].reserved.is_none())
                            .expect("as many winners as accelerators, losers evicted");
                        if let Some(old) = self.tenants[i].reserved.take() {
                            self.units[old].reserved = None;
                        }
                        self.units[c].reserved = Some(i);
                        self.tenants[i].reserved = Some(c);
                        c
                    }
                };
                // A reserved accelerator is taken at a decision point (or by a tenant not running).
                let t = &self.tenants[i];
                let running_elsewhere = matches!(t.place, Place::OnDemand(_)) || matches!(t.place, Place::Unit(u) if u != c);
                if self.units[c].reserved == Some(i) && (!running_elsewhere || t.decide) {
                    self.move_to(i, c);
                }
            }
        }
        // What each tenant on an auctioned accelerator pays: its type's price, never more than
        // its own bid (second price), or its own bid (first price). A reserved, idle
        // accelerator costs nothing.
        for i in 0..n {
            if let Place::Unit(c) = self.tenants[i].place {
                let ty = self.units[c].ty;
                let bid = self.tenants[i].bids[ty];
                pay[i] = Some(match self.file.mechanism.kind {
                    Pricing::FirstPrice => bid,
                    Pricing::SecondPrice | Pricing::Mtf => self.prices[ty].min(bid),
                });
            }
        }
    }

    /// Step 4: tenants left without an accelerator run on the on-demand type with the lowest
    /// cost per unit of work they can afford and their work is worth, or wait.
    fn on_demand(&mut self, spec: &MarketSection) {
        let n = self.n();
        for i in 0..n {
            if self.tenants[i].place != Place::Waiting {
                continue;
            }
            let tn = &spec.tenants[i];
            let left = tn.budget.map_or(f64::INFINITY, |b| b - self.tenants[i].spent);
            let best = (0..spec.types.len())
                .filter(|&t| spec.types[t].on_demand)
                .filter(|&t| {
                    let p = spec.types[t].base_price;
                    p <= tn.value * tn.speeds[t] && p * spec.round_hours <= left + EPS
                })
                .min_by(|&a, &b| (spec.types[a].base_price / tn.speeds[a]).total_cmp(&(spec.types[b].base_price / tn.speeds[b])));
            if let Some(t) = best {
                self.start(i, Place::OnDemand(t));
            }
        }
    }

    /// Step 5: jobs run, pay `pay` (or on demand their type's base price), write checkpoints
    /// and finish; the round's record.
    fn serve(&mut self, spec: &MarketSection, pay: &[Option<f64>]) -> MarketRound {
        let (r, n) = (self.round, self.n());
        let mut record = MarketRound {
            prices: self.prices.clone(),
            tenants: Vec::with_capacity(n),
        };
        for (ty, p) in record.prices.iter_mut().enumerate() {
            if spec.types[ty].on_demand {
                *p = spec.types[ty].base_price;
            }
        }
        for i in 0..n {
            let mut running = self.running(i, pay[i]);
            // A tenant that cannot pay for the round stops (its job waits, rolled back to its
            // checkpoint): budgets bind.
            if let (Some((_, price)), Some(budget)) = (running, spec.tenants[i].budget) {
                if self.tenants[i].spent + price * spec.round_hours > budget + EPS {
                    if let Place::Unit(c) = self.tenants[i].place {
                        self.units[c].holder = None;
                    }
                    let t = &mut self.tenants[i];
                    t.lost += t.progress - t.last_checkpoint;
                    t.progress = t.last_checkpoint;
                    t.place = Place::Waiting;
                    running = None;
                }
            }
            let t = &mut self.tenants[i];
            t.decide = false;
            let mut paid = 0.0;
            if let Some((ty, price)) = running {
                paid = price;
                t.paying = price;
                t.spent += price * spec.round_hours;
                if t.restart_left > 0 {
                    t.restart_left -= 1;
                } else {
                    let tn = &spec.tenants[i];
                    let before = t.progress;
                    t.progress = (t.progress + tn.speeds[ty] * spec.round_hours).min(tn.work);
                    let k = tn.checkpoint;
                    let passed = ((t.progress + EPS) / k).floor();
                    if passed > ((before + EPS) / k).floor() {
                        t.last_checkpoint = (passed * k).min(t.progress);
                        t.decide = true;
                    }
                    if t.progress >= tn.work - EPS {
                        // Finished in round r: on time if r - arrival < deadline.
                        let late = tn.deadline.is_some_and(|d| r - tn.arrival >= d);
                        t.earned += if late { tn.late_value } else { tn.value } * tn.work;
                        t.finished = Some(r);
                    }
                }
            }
            record.tenants.push(TenantRound {
                place: t.place,
                ty: running.map(|(ty, _)| ty),
                reserved: t.reserved,
                price: paid,
                progress: t.progress,
                tokens: self.tokens[i],
                bids: t.bids.clone(),
            });
        }
        for i in 0..n {
            if self.tenants[i].finished == Some(r) {
                if let Place::Unit(c) = self.tenants[i].place {
                    self.units[c].holder = None;
                }
                if let Some(c) = self.tenants[i].reserved.take() {
                    self.units[c].reserved = None;
                }
                self.tenants[i].place = Place::Done;
                self.tenants[i].bids.fill(0.0);
            }
        }
        record
    }

    /// [`Clearing::Joint`]: each tenant's assigned type (or none) and each auctioned type's
    /// price. A tenant may take type t if it bids at least t's base price and holds or reserves
    /// one of t's accelerators, or is at a decision point, or holds and reserves nothing of
    /// another type (as per type). A bid at the base price may win; at equal bids holders win.
    fn joint_clearing(&self) -> (Vec<Option<usize>>, Vec<f64>) {
        let spec = &self.file.market;
        let auctioned: Vec<usize> = (0..spec.types.len()).filter(|&t| !spec.types[t].on_demand).collect();
        let n = self.n();
        let weights: Vec<Vec<Option<f64>>> = (0..n)
            .map(|i| {
                let t = &self.tenants[i];
                let active = matches!(t.place, Place::Waiting | Place::OnDemand(_) | Place::Unit(_));
                let claim_ty = match t.place {
                    Place::Unit(u) => Some(self.units[u].ty),
                    _ => None,
                }
                .or(t.reserved.map(|u| self.units[u].ty));
                auctioned
                    .iter()
                    .map(|&ty| {
                        let (b, base) = (t.bids[ty], spec.types[ty].base_price);
                        let holds = claim_ty == Some(ty);
                        let free = t.decide || claim_ty.is_none();
                        (active && b > 0.0 && b >= base && (holds || free)).then(|| b - base)
                    })
                    .collect()
            })
            .collect();
        let caps: Vec<usize> = auctioned.iter().map(|&ty| spec.types[ty].count as usize).collect();
        // Who wins: a bid at the base price wins as per type (every allowed pair one unit more),
        // and at equal bids holders keep their accelerators (one unit more again).
        let claim = |i: usize| match self.tenants[i].place {
            Place::Unit(u) => Some(self.units[u].ty),
            _ => self.tenants[i].reserved.map(|u| self.units[u].ty),
        };
        let tied: Vec<Vec<Option<f64>>> = weights
            .iter()
            .enumerate()
            .map(|(i, row)| {
                row.iter()
                    .zip(&auctioned)
                    .map(|(x, &ty)| x.map(|x| x + ASSIGN_UNIT * if claim(i) == Some(ty) { 2.0 } else { 1.0 }))
                    .collect()
            })
            .collect();
        let (assigned, _) = assign(&tied, &caps);
        // The prices from the bids alone: the marginals do not depend on which best assignment
        // was chosen.
        let (_, marginal) = assign(&weights, &caps);
        let mut prices = self.prices.clone();
        for (k, &ty) in auctioned.iter().enumerate() {
            prices[ty] = spec.types[ty].base_price + marginal[k];
        }
        (assigned.into_iter().map(|a| a.map(|k| auctioned[k])).collect(), prices)
    }

    /// The MTF round (SPEC 3.1 with unit demand: a tenant has one job, so one accelerator
    /// satisfies it). Offered: the free accelerators and those whose holder is at a decision
    /// point; claimants: the tenants waiting or at a decision point (the others keep running
    /// where they are). A claimant's utility for an accelerator is its speed there over its
    /// best speed on any type; its preference, decreasing utility then lower index;
    /// `thresholds[i]` its threshold. Paid phase: the richest claimant (ties: cyclic order from
    /// the turn) with a budget >= 1 and an offered accelerator of utility >= its threshold takes
    /// its favourite such one for a token; the tokens spent go back to every tenant by weight;
    /// free phase: the claimants still without one, cyclically from the turn, take their
    /// favourite accelerator left. A holder at its checkpoint that does not get its own
    /// accelerator back is evicted (it then runs on demand or waits). Money: the base price.
    fn mtf_round(&mut self, thresholds: &[f64], pay: &mut [Option<f64>]) {
        let spec = self.file.market.clone();
        let (n, m) = (self.n(), self.units.len());
        let claimant: Vec<bool> = self
            .tenants
            .iter()
            .map(|t| t.place == Place::Waiting || (t.decide && matches!(t.place, Place::OnDemand(_) | Place::Unit(_))))
            .collect();
        let mut open: Vec<bool> = self.units.iter().map(|u| u.holder.is_none_or(|h| claimant[h])).collect();
        let types: Vec<usize> = self.units.iter().map(|u| u.ty).collect();
        let utility = |i: usize, c: usize| {
            let s = &spec.tenants[i].speeds;
            s[types[c]] / s.iter().copied().fold(0.0, f64::max)
        };
        let prefs: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                let mut p: Vec<usize> = if claimant[i] { (0..m).collect() } else { Vec::new() };
                p.sort_by(|&a, &b| utility(i, b).total_cmp(&utility(i, a)).then(a.cmp(&b)));
                p
            })
            .collect();
        let order: Vec<usize> = (0..n).map(|k| (self.turn + k) % n).collect();
        let mut got: Vec<Option<usize>> = vec![None; n];
        let mut spent = 0.0;
        loop {
            let tokens = &self.tokens;
            let pick = order
                .iter()
                .copied()
                .filter(|&i| claimant[i] && got[i].is_none() && tokens[i] >= 1.0)
                .filter_map(|i| {
                    let c = prefs[i]
                        .iter()
                        .copied()
                        .find(|&c| open[c] && utility(i, c) >= thresholds[i] && utility(i, c) > 0.0)?;
                    Some((i, c))
                })
                // The first of the largest budgets in cyclic order.
                .reduce(|a, b| if tokens[b.0] > tokens[a.0] { b } else { a });
            let Some((i, c)) = pick else { break };
            open[c] = false;
            got[i] = Some(c);
            self.tokens[i] -= 1.0;
            spent += 1.0;
        }
        let total_w: f64 = spec.tenants.iter().map(|t| t.weight).sum();
        for (b, t) in self.tokens.iter_mut().zip(&spec.tenants) {
            *b += spent * t.weight / total_w;
        }
        for &i in &order {
            if claimant[i] && got[i].is_none() {
                if let Some(c) = prefs[i].iter().copied().find(|&c| open[c]) {
                    open[c] = false;
                    got[i] = Some(c);
                }
            }
        }
        self.turn = (self.turn + 1) % n;
        // Holders at their checkpoint that lost their accelerator, then the moves.
        for c in 0..m {
            if let Some(h) = self.units[c].holder.filter(|&h| claimant[h] && got[h] != Some(c)) {
                self.units[c].holder = None;
                let t = &mut self.tenants[h];
                t.lost += t.progress - t.last_checkpoint;
                t.progress = t.last_checkpoint;
                t.place = Place::Waiting;
            }
        }
        for i in 0..n {
            if let Some(c) = got[i] {
                if self.units[c].holder != Some(i) {
                    self.move_to(i, c);
                }
                pay[i] = Some(spec.types[types[c]].base_price);
            }
        }
        for (ty, p) in self.prices.iter_mut().enumerate() {
            *p = spec.types[ty].base_price;
        }
    }

    /// Per tenant, the accelerators it holds or has reserved (for invariant checks).
    pub fn claims(&self) -> Vec<usize> {
        let mut k = vec![0; self.n()];
        for u in &self.units {
            for i in [u.holder, u.reserved].into_iter().flatten() {
                k[i] += 1;
            }
        }
        k
    }

    /// Tenant i takes accelerator c (reserved for it): a move when its job ran elsewhere.
    fn move_to(&mut self, i: usize, c: usize) {
        if let Place::Unit(old) = self.tenants[i].place {
            self.units[old].holder = None;
        }
        self.units[c].reserved = None;
        self.units[c].holder = Some(i);
        self.tenants[i].reserved = None;
        self.start(i, Place::Unit(c));
    }

    /// Tenant i's job starts at `place`: a move (the work since its checkpoint lost, a restart
    /// delay) if it ran before, here or after an eviction.
    fn start(&mut self, i: usize, place: Place) {
        let restart = self.file.market.tenants[i].restart_rounds;
        let t = &mut self.tenants[i];
        if t.ran_before {
            t.migrations += 1;
            t.lost += t.progress - t.last_checkpoint;
            t.progress = t.last_checkpoint;
            t.restart_left = restart;
        }
        t.ran_before = true;
        t.place = place;
    }
}

/// An episode's figures: what the exchange sold, what tenants paid for their work and what
/// the work was worth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MarketMetrics {
    /// Rounds played.
    pub rounds: u32,
    /// Per type: the share of its accelerator-rounds a job ran on (auctioned types; `None` on
    /// demand, which has no fixed size). Reserved, idle accelerators count as unused.
    pub utilisation: Vec<Option<f64>>,
    /// Per type: job-rounds run on it.
    pub job_rounds: Vec<u64>,
    /// Money paid for auctioned accelerators.
    pub revenue: f64,
    /// Money paid on demand.
    pub on_demand_spend: f64,
    /// Per tenant: money paid per unit of work done (`None` before any work).
    pub cost_per_work: Vec<Option<f64>>,
    /// Per tenant: the value of its finished work minus what it paid (quasi-linear).
    pub utility: Vec<f64>,
    /// Moves of running jobs, all tenants.
    pub migrations: u32,
    /// Work units lost to evictions and moves, all tenants.
    pub work_lost: f64,
    /// Value of the finished work, all tenants.
    pub welfare: f64,
    /// Jobs finished.
    pub finished: usize,
    /// Per type, per round: the exchange price.
    pub prices: Vec<Vec<f64>>,
}

impl MarketMetrics {
    /// The figures of an episode of `file` from its rounds and totals ([`Market::run`]).
    pub fn compute(file: &MarketFile, rounds: &[MarketRound], totals: &[TenantTotals]) -> Self {
        let types = &file.market.types;
        let hours = file.market.round_hours;
        let mut job_rounds = vec![0u64; types.len()];
        let (mut revenue, mut on_demand_spend) = (0.0, 0.0);
        for r in rounds {
            for t in &r.tenants {
                if let Some(ty) = t.ty {
                    job_rounds[ty] += 1;
                    if types[ty].on_demand {
                        on_demand_spend += t.price * hours;
                    } else {
                        revenue += t.price * hours;
                    }
                }
            }
        }
        let played = rounds.len() as f64;
        Self {
            rounds: rounds.len() as u32,
            utilisation: types
                .iter()
                .zip(&job_rounds)
                .map(|(t, &j)| (!t.on_demand).then(|| j as f64 / (f64::from(t.count) * played.max(1.0))))
                .collect(),
            job_rounds,
            revenue,
            on_demand_spend,
            cost_per_work: totals.iter().map(|t| (t.progress > 0.0).then(|| t.spent / t.progress)).collect(),
            utility: totals.iter().map(|t| t.earned - t.spent).collect(),
            migrations: totals.iter().map(|t| t.migrations).sum(),
            work_lost: totals.iter().map(|t| t.lost).sum(),
            welfare: totals.iter().map(|t| t.earned).sum(),
            finished: totals.iter().filter(|t| t.finished.is_some()).count(),
            prices: (0..types.len()).map(|ty| rounds.iter().map(|r| r.prices[ty]).collect()).collect(),
        }
    }
}

/// Whether the TOML file at `path` is a market file (`env.world = "market"`); false when it
/// cannot be read or parsed (the scenario reader then says why).
pub fn is_market_file(path: &Path) -> bool {
    crate::config::read_text(path, crate::config::limits::MAX_CONFIG_BYTES)
        .ok()
        .and_then(|text| text.parse::<toml::Table>().ok())
        .and_then(|t| t.get("env")?.get("world")?.as_str().map(|w| w == "market"))
        .unwrap_or(false)
}

#[cfg(test)]
mod tests;

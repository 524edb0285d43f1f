//! The market scenario file: its sections, their defaults and limits, job-size traces, and the
//! checks a file passes before a [`super::Market`] is built from it.

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
pub(super) const EPS: f64 = 1e-9;

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
    /// `[learner]`: what `mtf train` learns the `learn = true` tenants' bids with (read by the
    /// learner registry behind the seam, `agents::worlds::train`; the market itself reads only
    /// its `levels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner: Option<toml::Table>,
    /// `[train]`: episodes, replicates and evaluation seeds of `mtf train` (read by
    /// `agents::worlds::train`).
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

impl Pricing {
    /// Its name in the file (`mechanism.kind`).
    pub fn name(self) -> &'static str {
        match self {
            Pricing::SecondPrice => "second_price",
            Pricing::FirstPrice => "first_price",
            Pricing::Mtf => "mtf",
        }
    }
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
        Self::from_table_at(read_table(path, overrides)?, path)
    }

    /// [`MarketFile::load_unexpanded`] from a parsed table (overrides applied) of the file at
    /// `path` (trace files are relative to it; messages name it).
    pub fn from_table_at(table: toml::Table, path: &Path) -> Result<Self, ConfigError> {
        let file = path.display().to_string();
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

    /// Whether the seed draws anything of an episode ([`Self::expanded`]'s draws): a size
    /// range (`work_max`) or a trace's starting entry (`work_trace` without `trace_start`).
    /// Without either, every seed plays the same episode under the same actions.
    pub fn draws_from_seed(&self) -> bool {
        self.market
            .tenants
            .iter()
            .any(|t| t.work_max.is_some() || (t.work_trace.is_some() && t.trace_start.is_none()))
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
        let err = bad(file);
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
        let tenants = self.check_tenant_count(file)?;
        self.check_names(file)?;
        self.check_types(file, tenants)?;
        for (i, tn) in m.tenants.iter().enumerate() {
            check_tenant(file, i, tn, m.types.len())?;
        }
        Ok(())
    }

    /// The tenants' count (summed over entries), bounded, and their names distinct.
    fn check_tenant_count(&self, file: &str) -> Result<u64, ConfigError> {
        let err = bad(file);
        let m = &self.market;
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
        Ok(tenants)
    }

    /// The accelerator types' prices and counts, bounded for `tenants` tenants.
    fn check_types(&self, file: &str, tenants: u64) -> Result<(), ConfigError> {
        let err = bad(file);
        let m = &self.market;
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
        Ok(())
    }

    /// Names printed in one-line tables and keying policy files: types distinct, every name
    /// printable.
    fn check_names(&self, file: &str) -> Result<(), ConfigError> {
        let err = bad(file);
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

/// A key of `file` out of bounds.
fn bad(file: &str) -> impl Fn(String, String) -> ConfigError + '_ {
    move |key, problem| ConfigError {
        file: file.to_string(),
        key,
        problem,
    }
}

// Bounded so that bids, prices and payments stay finite: a tenant's worth per hour is value x
// speed, at most 1e15.
fn positive(v: f64, max: f64) -> bool {
    v.is_finite() && v > 0.0 && v <= max
}

fn money(v: f64) -> bool {
    v.is_finite() && (0.0..=MAX_MONEY).contains(&v)
}

/// Tenant entry `i`'s keys in bounds (`types`: the market's accelerator types).
fn check_tenant(file: &str, i: usize, tn: &TenantSpec, types: usize) -> Result<(), ConfigError> {
    let err = bad(file);
    let key = |k: &str| format!("market.tenants[{i}].{k}");
    if tn.speeds.len() != types {
        return Err(err(
            key("speeds"),
            format!("has {} entries, expected one per type ({})", tn.speeds.len(), types),
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
    Ok(())
}

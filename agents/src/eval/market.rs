//! `mtf simulate` on a market file (`env.world = "market"`, issue 29): one episode of the
//! LaissezCloud exchange ([`env::market`]); its arrivals are given, so one episode is the
//! answer. A run directory with `config.toml`, `rounds.jsonl` (who ran where and paid what,
//! each round), `summary.json` (the figures), `prices.png` / `.svg` (the price per type) and
//! `cost_per_work.png` / `.svg` (what each tenant paid per unit of work).

use crate::error::user;
use crate::run;
use env::eval::Stat;
use env::market::{Market, MarketFile, MarketMetrics, MarketRound, Place, TenantTotals};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What a market simulation produced; `summary.json` is it as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct MarketRun {
    /// The run directory.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The config file.
    pub config: String,
    /// `second_price`, `first_price` or `mtf`.
    pub mechanism: String,
    /// The bid factors (under MTF, thresholds) played, per tenant.
    pub bid_factors: Vec<f64>,
    /// Type names.
    pub types: Vec<String>,
    /// Tenant names.
    pub tenants: Vec<String>,
    /// The episode's figures.
    pub metrics: MarketMetrics,
    /// Per tenant.
    pub totals: Vec<TenantTotals>,
    /// Every round.
    #[serde(skip)]
    pub rounds: Vec<MarketRound>,
    /// The type of every auctioned accelerator (numbered type by type).
    #[serde(skip)]
    pub unit_types: Vec<usize>,
}

/// Run the market in `config` (with `--set` overrides) under `policy` (`None`: the file's bid
/// factors, or under MTF thresholds; `fixed:X`: X for every tenant) and write its run directory.
pub fn simulate_market(config: &Path, set: &[String], policy: Option<&str>, out: Option<&Path>) -> crate::error::Result<MarketRun> {
    let file = MarketFile::load(config, set)?;
    let factors: Vec<f64> = match policy {
        None => file.actions(),
        Some(p) => {
            let x = p
                .strip_prefix("fixed:")
                .and_then(|x| x.parse::<f64>().ok())
                .filter(|x| x.is_finite() && *x >= 0.0 && (*x <= 1.0 || file.mechanism.kind != env::market::Pricing::Mtf))
                .ok_or_else(|| {
                    user(format!(
                        "--policy {p}: a market file plays fixed:X (every tenant's bid factor >= 0, or under mtf its threshold in [0, 1]) or, without --policy, its tenants' own"
                    ))
                })?;
            vec![x; file.market.tenants.len()]
        }
    };
    let stem = config.file_stem().and_then(|s| s.to_str()).unwrap_or("market");
    let dir = run::RunDir::create(out, &format!("simulate-{stem}"))?;
    run::write_atomic(&dir.config(), toml::to_string(&file).map_err(|e| user(format!("{e}")))?.as_bytes())?;
    let mut market = Market::new(file.clone());
    let mut rounds = Vec::new();
    while !market.done() {
        rounds.push(market.step(&factors));
    }
    let totals = market.totals();
    let metrics = MarketMetrics::compute(&file, &rounds, &totals);
    let mut lines = String::new();
    for (r, round) in rounds.iter().enumerate() {
        let mut v = serde_json::to_value(round)?;
        v["round"] = r.into();
        lines.push_str(&serde_json::to_string(&v)?);
        lines.push('\n');
    }
    run::write_atomic(&dir.path().join("rounds.jsonl"), lines.as_bytes())?;
    let types: Vec<String> = file.market.types.iter().map(|t| t.name.clone()).collect();
    let xs: Vec<f64> = (0..rounds.len()).map(|r| r as f64).collect();
    let series: Vec<(String, Vec<Stat>)> = types
        .iter()
        .zip(&metrics.prices)
        .map(|(name, p)| (name.clone(), p.iter().map(|&mean| Stat { mean, ci95: f64::NAN }).collect()))
        .collect();
    crate::report::plots::lines(
        dir.path(),
        "prices",
        "Exchange price per accelerator type",
        "round",
        "price per hour",
        &xs,
        false,
        &series,
    )?;
    // What each tenant paid per unit of work done (tenants in file order; 0 before any work).
    let xs: Vec<f64> = (1..=metrics.cost_per_work.len()).map(|i| i as f64).collect();
    let cost: Vec<Stat> = metrics
        .cost_per_work
        .iter()
        .map(|c| Stat {
            mean: c.unwrap_or(0.0),
            ci95: f64::NAN,
        })
        .collect();
    crate::report::plots::lines(
        dir.path(),
        "cost_per_work",
        "Money paid per unit of work, per tenant",
        "tenant (file order)",
        "cost per unit of work",
        &xs,
        false,
        &[("cost per unit of work".to_string(), cost)],
    )?;
    let out = MarketRun {
        dir: dir.path().to_path_buf(),
        config: config.display().to_string(),
        mechanism: serde_json::to_value(file.mechanism.kind)?.as_str().unwrap_or("").to_string(),
        bid_factors: factors,
        types,
        tenants: file.market.tenants.iter().map(|t| t.name.clone()).collect(),
        metrics,
        totals,
        rounds,
        unit_types: file
            .market
            .types
            .iter()
            .enumerate()
            .filter(|(_, t)| !t.on_demand)
            .flat_map(|(ty, t)| std::iter::repeat_n(ty, t.count as usize))
            .collect(),
    };
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&out)?.as_bytes())?;
    Ok(out)
}

/// Rounds and tenants up to which the report prints every round.
const TABLE_ROUNDS: usize = 60;
const TABLE_TENANTS: usize = 12;

impl std::fmt::Display for MarketRun {
    /// The report `mtf simulate` prints for a market.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = &self.metrics;
        writeln!(
            f,
            "mtf simulate: {} (market), {}, {} tenants, {} rounds",
            self.config,
            self.mechanism,
            self.tenants.len(),
            m.rounds
        )?;
        if self.rounds.len() <= TABLE_ROUNDS && self.tenants.len() <= TABLE_TENANTS {
            let head: Vec<String> = self
                .types
                .iter()
                .map(|t| format!("{t} price"))
                .chain(self.tenants.iter().cloned())
                .collect();
            writeln!(f, "| round | {} |", head.join(" | "))?;
            writeln!(f, "|---|{}", "---|".repeat(head.len()))?;
            for (r, round) in self.rounds.iter().enumerate() {
                let cells: Vec<String> = round
                    .prices
                    .iter()
                    .map(|p| format!("{p:.4}"))
                    .chain(round.tenants.iter().map(|t| {
                        let at = match (t.place, t.ty) {
                            (Place::Absent, _) => "-".to_string(),
                            (Place::Done, _) => "done".to_string(),
                            (_, Some(ty)) => format!("{} at {:.4}", self.types[ty], t.price),
                            _ => "waiting".to_string(),
                        };
                        match t.reserved {
                            Some(c) => format!("{at} ({} reserved)", self.types[self.unit_types[c]]),
                            None => at,
                        }
                    }))
                    .collect();
                writeln!(f, "| {r} | {} |", cells.join(" | "))?;
            }
        }
        writeln!(
            f,
            "welfare (value of finished work) {:.4}, {} of {} jobs finished; revenue {:.4}, on demand {:.4}; {} migrations, {:.4} work units lost",
            m.welfare,
            m.finished,
            self.tenants.len(),
            m.revenue,
            m.on_demand_spend,
            m.migrations,
            m.work_lost
        )?;
        let util: Vec<String> = self
            .types
            .iter()
            .zip(&m.utilisation)
            .filter_map(|(t, u)| u.map(|u| format!("{t} {u:.3}")))
            .collect();
        writeln!(f, "utilisation: {}", util.join(", "))?;
        if self.tenants.len() <= TABLE_TENANTS {
            for (i, name) in self.tenants.iter().enumerate() {
                let cost = m.cost_per_work[i].map_or("-".into(), |c| format!("{c:.4}"));
                writeln!(f, "{name}: cost per unit of work {cost}, utility {:.4}", m.utility[i])?;
            }
        }
        writeln!(f, "run directory: {}", self.dir.display())
    }
}

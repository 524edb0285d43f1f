//! `mtf simulate` on a market file (`env.world = "market"`, issue 29): one episode of the
//! LaissezCloud exchange ([`env::market`]); its arrivals are given, so one episode is the
//! answer. A run directory with `config.toml`, `rounds.jsonl` (who ran where and paid what,
//! each round), `summary.json` (the figures), `prices.png` / `.svg` (the price per type) and
//! `cost_per_work.png` / `.svg` (what each tenant paid per unit of work).

use crate::error::user;
use crate::run;
use crate::train::market::TrainedMarket;
use env::eval::Stat;
use env::market::{Market, MarketFile, MarketMetrics, MarketRound, TenantTotals};
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
    /// The file as played.
    #[serde(skip)]
    pub file: MarketFile,
}

/// Run the market in `config` (with `--set` overrides) under `policy` (`None`: the file's bid
/// factors, or under MTF thresholds; `fixed:X`: X for every tenant) and write its run directory.
pub fn simulate_market(config: &Path, set: &[String], policy: Option<&str>, out: Option<&Path>) -> crate::error::Result<MarketRun> {
    let file = MarketFile::load(config, set)?;
    let factors = actions(&file, policy, "--policy")?;
    crate::train::memory::check(&crate::train::memory::market_evaluation(&file, true), "this simulation")?;
    let dir = run::RunDir::create(out, &format!("simulate-{}", run::stem(config)))?;
    run::write_atomic(&dir.config(), toml::to_string(&file).map_err(|e| user(format!("{e}")))?.as_bytes())?;
    let (rounds, totals, metrics) = play(&file, &factors);
    let mut lines = String::new();
    for (r, round) in rounds.iter().enumerate() {
        let mut v = serde_json::to_value(round)?;
        v["round"] = r.into();
        lines.push_str(&serde_json::to_string(&v)?);
        lines.push('\n');
    }
    run::write_atomic(&dir.path().join("rounds.jsonl"), lines.as_bytes())?;
    let types: Vec<String> = file.market.types.iter().map(|t| t.name.clone()).collect();
    for s in env::market::story::series(&file, &metrics) {
        crate::report::plots::world_series(dir.path(), &s)?;
    }
    let out = MarketRun {
        dir: dir.path().to_path_buf(),
        config: config.display().to_string(),
        mechanism: kind_name(&file)?,
        bid_factors: factors,
        types,
        tenants: file.market.tenants.iter().map(|t| t.name.clone()).collect(),
        metrics,
        totals,
        rounds,
        file,
    };
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&out)?.as_bytes())?;
    Ok(out)
}

/// Each tenant's action under `policy` (`None` or `own`: the file's own; `fixed:X`: X for
/// everyone: a bid factor >= 0, under MTF a threshold in [0, 1]); `flag` names the option in
/// errors.
fn actions(file: &MarketFile, policy: Option<&str>, flag: &str) -> crate::error::Result<Vec<f64>> {
    let Some(p) = policy.filter(|p| *p != "own") else {
        return Ok(file.actions());
    };
    let x = p
        .strip_prefix("fixed:")
        .and_then(|x| x.parse::<f64>().ok())
        .filter(|x| x.is_finite() && *x >= 0.0 && (*x <= 1.0 || file.mechanism.kind != env::market::Pricing::Mtf))
        .ok_or_else(|| {
            user(format!(
                "{flag} {p}: a market file plays fixed:X (every tenant's bid factor >= 0, or under mtf its threshold in [0, 1]), own (its tenants' own) or, in mtf compare, run:DIR (a trained market run's learners, greedy) and sampled:run:DIR (drawing)"
            ))
        })?;
    Ok(vec![x; file.market.tenants.len()])
}

/// One episode: its rounds, the tenants' totals and the figures.
fn play(file: &MarketFile, actions: &[f64]) -> (Vec<MarketRound>, Vec<TenantTotals>, MarketMetrics) {
    let (market, rounds) = Market::play(file.clone(), actions, true, |_, _| {});
    let totals = market.totals();
    let metrics = MarketMetrics::compute(file, &rounds, &totals);
    (rounds, totals, metrics)
}

/// `cost_per_work.png` / `.svg` in `dir`: what each tenant paid per unit of work done, one
/// line per episode (tenants in file order; 0 before any work).
fn cost_figure(dir: &Path, episodes: &[(String, &MarketMetrics)]) -> crate::error::Result<Vec<crate::report::plots::Figure>> {
    let n = episodes.first().map_or(0, |(_, m)| m.cost_per_work.len());
    let xs: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let series: Vec<(String, Vec<Stat>)> = episodes
        .iter()
        .map(|(label, m)| {
            let cost = m
                .cost_per_work
                .iter()
                .map(|c| Stat {
                    mean: c.unwrap_or(0.0),
                    ci95: f64::NAN,
                })
                .collect();
            (label.clone(), cost)
        })
        .collect();
    crate::report::plots::lines(
        dir,
        "cost_per_work",
        "Money paid per unit of work, per tenant",
        "tenant (file order)",
        "cost per unit of work",
        &xs,
        false,
        &series,
    )
}

/// One row of a market comparison: a mechanism and a policy on the file's arrivals.
#[derive(Debug, Clone, Serialize)]
pub struct MarketRow {
    /// `second_price`, `first_price` or `mtf`.
    pub mechanism: String,
    /// `fixed:X` or `own`.
    pub policy: String,
    /// The episode's figures.
    pub metrics: MarketMetrics,
    /// The tenants' summed utility (value of finished work minus payments).
    pub utility: f64,
    /// Mean over tenants with work done of their cost per unit of work.
    pub mean_cost_per_work: f64,
    /// A trained run's actors played greedily whose entropy where tenants decide is above
    /// `env::metrics::spec::NEAR_UNIFORM` of the largest: the row is an argmax of noise (its
    /// `sampled:run:` row is what they learned).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub near_uniform: bool,
}

/// A market comparison: every mechanism under every policy, on the same arrivals.
#[derive(Debug, Clone, Serialize)]
pub struct MarketComparison {
    /// The run directory.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The config file.
    pub config: String,
    /// Type names.
    pub types: Vec<String>,
    /// The rows, mechanism by mechanism.
    pub rows: Vec<MarketRow>,
}

/// `mtf compare` on a market file: each mechanism (`second_price`, `first_price`, `mtf`;
/// default the file's) under each policy (`fixed:X`, `own`, `run:DIR`: the learning tenants of
/// a trained market run acting greedily, the others at their own factors, a row per replicate
/// named `run:DIR#r`, marked near-uniform where its actors are; `sampled:run:DIR`: its actors
/// drawing their levels as they trained), one episode each (the arrivals
/// are the file's). A run directory with `config.toml`, `summary.json` (the rows),
/// `table.md`, and `cost_per_work.png` and `utilisation.png` with one line per row.
pub fn compare_market(
    config: &Path,
    set: &[String],
    policies: &[String],
    mechanisms: &[String],
    out: Option<&Path>,
) -> crate::error::Result<MarketComparison> {
    let base = MarketFile::load(config, set)?;
    crate::train::memory::check(&crate::train::memory::market_evaluation(&base, false), "this comparison")?;
    let kinds: Vec<String> = if mechanisms.is_empty() {
        vec![kind_name(&base)?]
    } else {
        mechanisms.to_vec()
    };
    let mut rows = Vec::new();
    for kind in &kinds {
        let mut with = set.to_vec();
        with.push(format!("mechanism.kind=\"{kind}\""));
        let raw = MarketFile::load_unexpanded(config, &with)?;
        let file = raw.at_seed(raw.seed);
        for policy in policies {
            let mut episodes = Vec::new();
            let (sampled, spec) = match policy.strip_prefix("sampled:") {
                Some(rest) if rest.starts_with("run:") => (true, rest),
                _ => (false, policy.as_str()),
            };
            if let Some(run) = spec.strip_prefix("run:") {
                let trained = trained_run(Path::new(run), &file, &format!("--policies {policy}"))?;
                let mut world = trained.world(&raw)?;
                for r in 0..trained.policies.replicates.len() {
                    let mut acting = trained.acting(r, sampled);
                    env::worlds::play(&mut world, &mut acting, raw.seed);
                    let (market, rounds) = (world.game().market(), world.game().rounds());
                    // A greedy row of actors that learned little is an argmax of noise: marked.
                    let noise = !sampled && acting.entropy_share().is_some_and(|e| e > env::metrics::spec::NEAR_UNIFORM);
                    let metrics = MarketMetrics::compute(&file, rounds, &market.totals());
                    episodes.push((format!("{policy}#{r}"), metrics, noise));
                }
            } else {
                let (_, _, metrics) = play(&file, &actions(&file, Some(policy), "--policies")?);
                episodes.push((policy.clone(), metrics, false));
            }
            for (name, metrics, near_uniform) in episodes {
                let costs: Vec<f64> = metrics.cost_per_work.iter().flatten().copied().collect();
                rows.push(MarketRow {
                    mechanism: kind.clone(),
                    policy: name,
                    utility: metrics.utility.iter().sum(),
                    mean_cost_per_work: costs.iter().sum::<f64>() / costs.len().max(1) as f64,
                    metrics,
                    near_uniform,
                });
            }
        }
    }
    let dir = run::RunDir::create(out, &format!("compare-{}", run::stem(config)))?;
    run::write_atomic(&dir.config(), toml::to_string(&base).map_err(|e| user(format!("{e}")))?.as_bytes())?;
    let label = |r: &MarketRow| format!("{} {}", r.mechanism, r.policy);
    cost_figure(dir.path(), &rows.iter().map(|r| (label(r), &r.metrics)).collect::<Vec<_>>())?;
    let auctioned: Vec<usize> = (0..base.market.types.len()).filter(|&t| !base.market.types[t].on_demand).collect();
    // One bar per (row, auctioned type), coloured by type.
    let mut names = Vec::new();
    let mut stats = Vec::new();
    for r in &rows {
        for (k, &t) in auctioned.iter().enumerate() {
            names.push(format!("{}: {}", label(r), base.market.types[t].name));
            stats.push((
                Stat {
                    mean: r.metrics.utilisation[t].unwrap_or(0.0),
                    ci95: f64::NAN,
                },
                k,
            ));
        }
    }
    let key: Vec<(&str, usize)> = auctioned
        .iter()
        .enumerate()
        .map(|(k, &t)| (base.market.types[t].name.as_str(), k))
        .collect();
    crate::report::plots::per_row_values(
        dir.path(),
        "utilisation",
        &names,
        "Utilisation per auctioned type",
        "share of accelerator-rounds used",
        &stats,
        &key,
        "One episode per row, on the file's arrivals (job sizes drawn once from its seed): no error bar.",
    )?;
    let out = MarketComparison {
        dir: dir.path().to_path_buf(),
        config: config.display().to_string(),
        types: base.market.types.iter().map(|t| t.name.clone()).collect(),
        rows,
    };
    run::write_atomic(&dir.path().join("table.md"), format!("{out}").as_bytes())?;
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&out)?.as_bytes())?;
    Ok(out)
}

/// The trained market run in `dir` for `flag` (`--policies run:DIR`, `--run DIR`: how errors
/// name it) on `file`: its learning tenants
/// must be tenants of `file`, and its levels of the same kind (bid factors, or MTF thresholds).
pub(crate) fn trained_run(dir: &Path, file: &MarketFile, flag: &str) -> crate::error::Result<TrainedMarket> {
    let trained = TrainedMarket::load(dir).map_err(|e| user(format!("{flag}: {e}")))?;
    let names = trained.names();
    // The policies act for this file's learning tenants (MarketWorld::learners): they must be
    // the run's, by index and name.
    let learners: Vec<usize> = (0..file.market.tenants.len()).filter(|&i| file.market.tenants[i].learn).collect();
    let same = learners == trained.who
        && trained
            .who
            .iter()
            .zip(&names)
            .all(|(&i, n)| file.market.tenants.get(i).is_some_and(|t| &t.name == n))
        && file.market.types.len() == trained.raw.market.types.len();
    if !same {
        return Err(user(format!(
            "{flag}: the run's learning tenants ({}) and types are not this market's (its learn = true tenants and types must be the run's)",
            names.join(", ")
        )));
    }
    let mtf = file.mechanism.kind == env::market::Pricing::Mtf;
    if mtf != trained.thresholds() {
        let (have, want) = if mtf {
            ("bid factors", "thresholds")
        } else {
            ("thresholds", "bid factors")
        };
        return Err(user(format!(
            "{flag}: the run learned {have}, and {} plays {want}; compare it under a mechanism of its kind",
            kind_name(file)?
        )));
    }
    Ok(trained)
}

/// The mechanism's name as the config spells it.
fn kind_name(file: &MarketFile) -> crate::error::Result<String> {
    Ok(serde_json::to_value(file.mechanism.kind)?.as_str().unwrap_or("").to_string())
}

impl std::fmt::Display for MarketComparison {
    /// The comparison's table (markdown).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let util_head: Vec<String> = self
            .types
            .iter()
            .zip(self.rows.first().map(|r| r.metrics.utilisation.clone()).unwrap_or_default())
            .filter_map(|(t, u)| u.map(|_| format!("{t} utilisation")))
            .collect();
        writeln!(
            f,
            "| mechanism | policy | rounds | jobs finished | welfare | tenants' utility | revenue | on demand | migrations | work lost | {} | mean cost per unit of work |",
            util_head.join(" | ")
        )?;
        writeln!(f, "|---|---|{}", "---:|".repeat(9 + util_head.len()))?;
        for r in &self.rows {
            let m = &r.metrics;
            let util: Vec<String> = m.utilisation.iter().flatten().map(|u| format!("{u:.3}")).collect();
            writeln!(
                f,
                "| {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.2} | {} | {:.3} |",
                r.mechanism,
                if r.near_uniform {
                    format!("{} (near-uniform)", r.policy)
                } else {
                    r.policy.clone()
                },
                m.rounds,
                m.finished,
                m.welfare,
                r.utility,
                m.revenue,
                m.on_demand_spend,
                m.migrations,
                m.work_lost,
                util.join(" | "),
                r.mean_cost_per_work
            )?;
        }
        Ok(())
    }
}

impl std::fmt::Display for MarketRun {
    /// The report `mtf simulate` prints for a market: the market's story of the episode
    /// (`env::market::story`, which the seam's simulate prints too).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "mtf simulate: {} (market), {}, {} tenants, {} rounds",
            self.config,
            self.mechanism,
            self.tenants.len(),
            self.metrics.rounds
        )?;
        write!(f, "{}", env::market::story::text(&self.file, &self.rounds, &self.metrics))?;
        writeln!(f, "run directory: {}", self.dir.display())
    }
}

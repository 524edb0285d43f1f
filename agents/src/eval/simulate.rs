//! `mtf simulate`: evaluation episodes without learning; a metrics table (mean and 95% CI over
//! seeds) and a run directory.

use crate::config::Source;
use crate::error::user;
use crate::run;
use env::config::Scenario;
use env::config::World;
use env::eval::{Stat, Summary};
use env::metrics::{EpisodeMetrics, Family};
use serde::Serialize;
use std::path::PathBuf;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimulateSpec {
    /// The scenario's source.
    pub source: Source,
    /// Mechanism override.
    pub mechanism: Option<String>,
    /// The policy, as [`crate::eval::policies`] reads it (e.g. `fixed:0.3`).
    pub policy: String,
    /// Episodes (seeds derived from the root seed).
    pub seeds: usize,
    /// Worker threads (results do not depend on it).
    pub threads: usize,
    /// Run directory (default `runs/simulate-<config stem>-<timestamp>`).
    pub out: Option<PathBuf>,
}

/// What a simulation produced; `summary.json` is [`Simulated::file`] as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Simulated {
    /// The run directory.
    #[serde(skip)]
    pub dir: PathBuf,
    /// The scenario it ran.
    #[serde(skip)]
    pub scenario: Scenario,
    /// The config file.
    pub config: String,
    /// The mechanism.
    pub mechanism: String,
    /// The policy spec.
    pub policy: String,
    /// Root seed.
    pub root_seed: u64,
    /// Every episode's seed.
    pub episode_seeds: Vec<u64>,
    /// Worker threads.
    pub threads: usize,
    /// The figures, mean and 95% CI over episodes.
    #[serde(flatten)]
    pub summary: Summary,
    /// Above `env::metrics::ENVY_EXACT_AGENTS` agents: the first episode's sampled envy pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envy_sample: Option<env::metrics::EnvySample>,
}

/// Run the evaluation episodes and write the run directory: `config.toml`, `metrics.jsonl`
/// (one line per episode), `summary.json`.
pub fn simulate(spec: &SimulateSpec) -> crate::error::Result<Simulated> {
    if spec.seeds == 0 {
        return Err(user("--seeds must be at least 1"));
    }
    let scenario = spec.source.load(spec.mechanism.as_deref())?;
    crate::train::memory::check(&crate::train::memory::evaluation(&scenario, spec.threads), "this simulation")?;
    let policy = crate::eval::policies::Named::parse(&spec.policy, &scenario)?;
    let seeds = env::eval::episode_seeds(scenario.file.seed, spec.seeds);
    let dir = run::RunDir::create(spec.out.as_deref(), &format!("simulate-{}", spec.source.stem()))?;
    run::write_atomic(&dir.config(), scenario.to_toml().as_bytes())?;
    let episodes = policy.evaluate(&scenario, &seeds, spec.threads)?;
    run::write_atomic(&dir.metrics(), &jsonl(&seeds, &episodes, |_| {})?)?;
    let out = Simulated {
        config: spec.source.config.display().to_string(),
        mechanism: scenario.file.mechanism.name.clone(),
        policy: spec.policy.clone(),
        root_seed: scenario.file.seed,
        threads: spec.threads,
        summary: Summary::of(&scenario, &episodes),
        envy_sample: episodes
            .first()
            .and_then(|e| e.fairness.as_ref())
            .and_then(|f| f.envy_sample.clone()),
        episode_seeds: seeds,
        dir: dir.path().to_path_buf(),
        scenario,
    };
    run::write_atomic(&dir.summary(), serde_json::to_string_pretty(&out)?.as_bytes())?;
    Ok(out)
}

/// `metrics.jsonl`: one line per episode, its metrics with its `seed`, and whatever `extra` adds.
pub fn jsonl(seeds: &[u64], episodes: &[EpisodeMetrics], extra: impl Fn(&mut serde_json::Value)) -> crate::error::Result<Vec<u8>> {
    let mut lines = String::new();
    for (seed, m) in seeds.iter().zip(episodes) {
        let mut v = serde_json::to_value(m)?;
        v["seed"] = (*seed).into();
        extra(&mut v);
        lines.push_str(&serde_json::to_string(&v)?);
        lines.push('\n');
    }
    Ok(lines.into_bytes())
}

impl std::fmt::Display for Simulated {
    /// The report `mtf simulate` prints.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "mtf simulate: {}, mechanism {}, policy {}, {} seeds",
            self.config,
            self.mechanism,
            self.policy,
            self.episode_seeds.len()
        )?;
        f.write_str(&table(&self.summary))?;
        if let Some(note) = env::eval::trace_note(&self.scenario, self.episode_seeds.len()) {
            writeln!(f, "{note}")?;
        }
        if let Some(s) = &self.envy_sample {
            writeln!(
                f,
                "EF violations estimated from {} sampled ordered pairs per episode ({} per agent: above {} agents not every pair is replayed), standard error {:.0} pairs",
                s.pairs,
                env::metrics::ENVY_SAMPLE_PER_AGENT,
                env::metrics::ENVY_EXACT_AGENTS,
                s.ef_violations_se
            )?;
        }
        writeln!(f, "run directory: {}", self.dir.display())
    }
}

/// The metrics table: one row per figure (`env::metrics::METRICS`, in its order, with its
/// families), mean and 95% CI. The valuation world (SPEC 8) has no jobs: its table leaves the
/// job figures out.
pub fn table(s: &Summary) -> String {
    let world = if s.stat("revenue_per_item").is_some() {
        World::Valuations
    } else {
        World::Queues
    };
    let mut rows: Vec<(String, Stat)> = Vec::new();
    for (m, st) in s.present() {
        let Some(label) = m.label else { continue };
        if m.world.is_some_and(|w| w != world) {
            continue;
        }
        rows.push((label.to_string(), st));
        match m.then {
            Some(Family::ThroughputByWeight) => {
                rows.extend(
                    s.throughput_by_weight
                        .iter()
                        .map(|(w, st)| (format!("  per agent, weight {w}"), *st)),
                );
            }
            Some(Family::BidFactors) => {
                rows.extend(
                    s.bid_factor
                        .iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, st)| (format!("  bid factor, agent {i}"), *st)),
                );
            }
            None => {}
        }
    }
    let w = rows.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0).max(30);
    let mut out = format!("{:<w$} {:>12} {:>12}\n", "metric", "mean", "95% CI +-");
    let one_seed = rows.iter().any(|(_, st)| !st.has_ci());
    for (name, st) in rows {
        let ci = if st.has_ci() { format!("{:.4}", st.ci95) } else { "-".into() };
        out.push_str(&format!("{name:<w$} {:>12.4} {ci:>12}\n", st.mean));
    }
    if one_seed {
        out.push_str(&format!("{}\n", env::eval::ONE_SEED_NOTE));
    }
    out
}

//! The episode log: one line per training episode in `metrics.jsonl` and TensorBoard scalars
//! on one step axis (the episode), and reading the log back (resume, learning curves).

use crate::error::user;
use crate::learners::Losses;
use crate::run;
use env::metrics::EpisodeMetrics;
use serde::Serialize;
use std::path::Path;

/// Metric names (one step axis: the episode).
pub mod tags {
    /// Weighted social welfare.
    pub const WELFARE: &str = "charts/welfare";
    /// Mean reward per agent per round.
    pub const REWARD: &str = "charts/mean_reward";
    /// Total throughput.
    pub const THROUGHPUT: &str = "charts/throughput";
    /// Jobs dropped per round.
    pub const DROPPED: &str = "charts/dropped";
    /// Tokens spent per round.
    pub const TOKENS: &str = "mechanism/tokens_spent";
    /// Mean threshold of a weight class (suffix `/w<weight>`).
    pub const THRESHOLD: &str = "charts/threshold";
    /// Actor loss.
    pub const ACTOR: &str = "losses/actor";
    /// Critic loss.
    pub const CRITIC: &str = "losses/critic";
    /// Policy entropy.
    pub const ENTROPY: &str = "losses/entropy";
    /// Hedge's counterfactual reward spread (not a loss: what its update learns from).
    pub const REWARD_SPREAD: &str = "learner/reward_spread";
    /// Environment steps per second.
    pub const SPS: &str = "perf/steps_per_second";
}

/// One episode's log line.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct EpisodeLog {
    /// Episode index (0-based).
    pub episode: u64,
    /// Weighted social welfare.
    pub welfare: f64,
    /// Mean reward per agent per round.
    pub mean_reward: f64,
    /// Total throughput (jobs/round).
    pub throughput: f64,
    /// Jobs dropped per round.
    pub dropped: f64,
    /// Tokens spent per round.
    pub tokens_spent: f64,
    /// Mean threshold per weight class: (weight, mean).
    pub threshold_by_weight: Vec<(f64, f64)>,
    /// Mean actor loss per round.
    pub actor_loss: f64,
    /// Mean critic loss per round.
    pub critic_loss: f64,
    /// Mean policy entropy.
    pub entropy: f64,
    /// Mean counterfactual reward spread per round (Hedge; 0 for other learners). Absent from
    /// logs written before it existed.
    #[serde(default)]
    pub reward_spread: f64,
    /// Seconds the episode took.
    pub wall_time: f64,
}

/// Largest `metrics.jsonl` read back on resume.
pub(super) const MAX_METRICS_BYTES: u64 = 1 << 30;

/// One episode's log line from its metrics and losses.
pub(super) fn episode_log(e: u64, m: &EpisodeMetrics, losses: Losses, secs: f64, weights: &[f64], classes: &[f64]) -> EpisodeLog {
    let n = weights.len();
    EpisodeLog {
        episode: e,
        welfare: m.welfare,
        mean_reward: m.reward.iter().sum::<f64>() / n as f64,
        throughput: m.throughput.iter().sum(),
        dropped: m.dropped.iter().sum::<u64>() as f64 / f64::from(m.rounds.max(1)),
        tokens_spent: m.spent.iter().sum(),
        threshold_by_weight: classes
            .iter()
            .map(|&w| {
                let idx: Vec<usize> = (0..n).filter(|&i| weights[i] == w).collect();
                (w, idx.iter().map(|&i| m.threshold[i]).sum::<f64>() / idx.len() as f64)
            })
            .collect(),
        actor_loss: losses.actor,
        critic_loss: losses.critic,
        entropy: losses.entropy,
        reward_spread: losses.reward_spread,
        wall_time: secs,
    }
}

/// An episode's scalars into TensorBoard (one step axis: the episode).
pub(super) fn write_scalars(tb: &mut crate::run::tb::EventWriter, log: &EpisodeLog, rounds: u32) -> crate::Result<()> {
    let e = log.episode;
    for (tag, v) in [
        (tags::WELFARE, log.welfare),
        (tags::REWARD, log.mean_reward),
        (tags::THROUGHPUT, log.throughput),
        (tags::DROPPED, log.dropped),
        (tags::TOKENS, log.tokens_spent),
        (tags::ACTOR, log.actor_loss),
        (tags::CRITIC, log.critic_loss),
        (tags::ENTROPY, log.entropy),
        (tags::REWARD_SPREAD, log.reward_spread),
        (tags::SPS, f64::from(rounds) / log.wall_time.max(1e-9)),
    ] {
        tb.scalar(tag, v as f32, e)?;
    }
    for (w, t) in &log.threshold_by_weight {
        tb.scalar(&format!("{}/w{w}", tags::THRESHOLD), *t as f32, e)?;
    }
    tb.flush()
}

/// A JSON file of the run, naming it in every error.
pub(super) fn read_json(path: &Path) -> crate::Result<serde_json::Value> {
    serde_json::from_str(&run::read_text(path, MAX_METRICS_BYTES)?).map_err(|e| user(format!("{}: {e}", path.display())))
}

/// The last episode line of a metrics file.
pub(super) fn last_logged(path: &Path) -> crate::Result<Option<EpisodeLog>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = run::read_text(path, MAX_METRICS_BYTES)?;
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        None => Ok(None),
        Some(line) => serde_json::from_str(line)
            .map(Some)
            .map_err(|e| user(format!("{}: last line is not an episode record: {e}", path.display()))),
    }
}

/// The training welfare of a run's logged episodes (`metrics.jsonl`), in episode order.
pub fn logged_welfare(dir: &Path) -> crate::Result<Vec<f64>> {
    let path = dir.join("metrics.jsonl");
    let text = run::read_text(&path, MAX_METRICS_BYTES)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(k, line)| {
            serde_json::from_str::<EpisodeLog>(line)
                .map(|e| e.welfare)
                .map_err(|e| user(format!("{}: line {} is not an episode record: {e}", path.display(), k + 1)))
        })
        .collect()
}

/// Keep only the first `episodes` lines of a metrics file (the episodes a checkpoint covers):
/// a resumed run redoes the rest.
pub(super) fn truncate_metrics(path: &Path, episodes: u64) -> crate::Result<()> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(());
    }
    let text = run::read_text(path, MAX_METRICS_BYTES)?;
    let kept: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(episodes as usize).collect();
    let mut out = kept.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    run::write_atomic(path, out.as_bytes())
}

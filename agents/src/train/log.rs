//! The episode log: one line per training episode in `metrics.jsonl` and TensorBoard scalars
//! on one step axis (the episode), and reading the log back (resume, learning curves).

use crate::error::user;
use crate::learners::Losses;
use crate::run;
use env::metrics::spec::WELFARE;
use env::metrics::EpisodeMetrics;
use env::metrics::{Metric, METRICS};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// TensorBoard tags of what training logs besides the episode's figures (whose tags are in
/// `env::metrics::METRICS`), on one step axis: the episode.
pub mod tags {
    /// Mean threshold of a weight class (suffix `/w<weight>`).
    pub const THRESHOLD: &str = "charts/threshold";
    /// Mean bid factor of a weight class (suffix `/w<weight>`), in the valuation world.
    pub const BID_FACTOR: &str = "charts/bid_factor";
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

/// One episode's log line. Written with the figures in `env::metrics::METRICS`'s order after
/// the episode; read back keeping the figures it knows and requiring welfare.
#[derive(Debug, Clone)]
pub struct EpisodeLog {
    /// Episode index (0-based).
    pub episode: u64,
    /// The figures training logs every episode (those of `env::metrics::METRICS` with a
    /// TensorBoard tag: welfare, reward, throughput, drops, tokens spent), by key.
    pub figures: BTreeMap<String, f64>,
    /// Mean level per weight class: (weight, mean): a threshold, or a bid factor in the
    /// valuation world (`bids`).
    pub threshold_by_weight: Vec<(f64, f64)>,
    /// Whether the levels are bid factors (logged as `bid_factor_by_weight`).
    pub bids: bool,
    /// Mean actor loss per round.
    pub actor_loss: f64,
    /// Mean critic loss per round.
    pub critic_loss: f64,
    /// Mean policy entropy.
    pub entropy: f64,
    /// Mean counterfactual reward spread per round (Hedge; 0 for other learners). Absent from
    /// logs written before it existed.
    pub reward_spread: f64,
    /// Seconds the episode took.
    pub wall_time: f64,
}

impl EpisodeLog {
    /// A log of figures alone (another world's episode, as a sweep's pruner reads it).
    pub fn of_figures(episode: u64, figures: BTreeMap<String, f64>, wall_time: f64) -> Self {
        Self {
            episode,
            figures,
            threshold_by_weight: Vec::new(),
            bids: false,
            actor_loss: 0.0,
            critic_loss: 0.0,
            entropy: 0.0,
            reward_spread: 0.0,
            wall_time,
        }
    }
}

/// The fields of a log line besides the figures, as written.
#[derive(Serialize, Deserialize)]
struct Rest {
    #[serde(default)]
    threshold_by_weight: Option<Vec<(f64, f64)>>,
    #[serde(default)]
    bid_factor_by_weight: Option<Vec<(f64, f64)>>,
    actor_loss: f64,
    critic_loss: f64,
    entropy: f64,
    #[serde(default)]
    reward_spread: f64,
    wall_time: f64,
}

impl Serialize for EpisodeLog {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("episode", &self.episode)?;
        for m in METRICS {
            if let Some(v) = self.figures.get(m.key) {
                map.serialize_entry(m.key, v)?;
            }
        }
        let levels = if self.bids { "bid_factor_by_weight" } else { "threshold_by_weight" };
        map.serialize_entry(levels, &self.threshold_by_weight)?;
        map.serialize_entry("actor_loss", &self.actor_loss)?;
        map.serialize_entry("critic_loss", &self.critic_loss)?;
        map.serialize_entry("entropy", &self.entropy)?;
        map.serialize_entry("reward_spread", &self.reward_spread)?;
        map.serialize_entry("wall_time", &self.wall_time)?;
        map.end()
    }
}

/// The key logs written before the figures were named once used for `reward`.
const OLD_REWARD_KEY: &str = "mean_reward";

impl EpisodeLog {
    /// A logged figure by its key (`env::metrics::METRICS`).
    pub fn get(&self, key: &str) -> Option<f64> {
        self.figures.get(key).copied()
    }

    /// The world's headline figure: weighted welfare, or the surplus per bidder per item in the
    /// valuation world.
    pub fn headline(&self) -> f64 {
        if self.bids {
            self.get("surplus_per_bidder_item").unwrap_or(f64::NAN)
        } else {
            self.welfare()
        }
    }

    /// Weighted social welfare.
    pub fn welfare(&self) -> f64 {
        self.get(WELFARE.key).unwrap_or(f64::NAN)
    }

    /// The keys of the figures every episode logs.
    pub fn keys() -> Vec<&'static str> {
        Metric::keys(|m| m.tag.is_some())
    }

    /// The keys of the figures an episode of `world` logs.
    pub fn keys_of(world: env::config::World) -> Vec<&'static str> {
        Metric::keys(|m| m.tag.is_some() && m.world.is_none_or(|w| w == world))
    }

    /// One line of `metrics.jsonl`, read back: the figures of `env::metrics::METRICS` it holds
    /// (welfare required; lines written before `reward` was named so call it `mean_reward`),
    /// and the rest; other keys are passed over.
    pub fn from_json(line: &str) -> serde_json::Result<EpisodeLog> {
        use serde::de::Error;
        let mut v: serde_json::Map<String, serde_json::Value> = serde_json::from_str(line)?;
        if let Some(r) = v.remove(OLD_REWARD_KEY) {
            v.entry("reward").or_insert(r);
        }
        let mut figures = BTreeMap::new();
        for m in METRICS {
            if let Some(x) = v.remove(m.key) {
                let x = x.as_f64().ok_or_else(|| Error::custom(format!("`{}` is not a number", m.key)))?;
                figures.insert(m.key.to_string(), x);
            }
        }
        if !figures.contains_key(WELFARE.key) && !figures.contains_key("surplus_per_bidder_item") {
            return Err(Error::custom(
                "no `welfare` (nor, in the valuation world, `surplus_per_bidder_item`)",
            ));
        }
        let episode = v
            .remove("episode")
            .and_then(|e| e.as_u64())
            .ok_or_else(|| Error::custom("no `episode` number"))?;
        let rest: Rest = serde_json::from_value(serde_json::Value::Object(v))?;
        let bids = rest.bid_factor_by_weight.is_some();
        let levels = rest
            .bid_factor_by_weight
            .or(rest.threshold_by_weight)
            .ok_or_else(|| Error::custom("no `threshold_by_weight` (nor `bid_factor_by_weight`)"))?;
        Ok(EpisodeLog {
            episode,
            figures,
            threshold_by_weight: levels,
            bids,
            actor_loss: rest.actor_loss,
            critic_loss: rest.critic_loss,
            entropy: rest.entropy,
            reward_spread: rest.reward_spread,
            wall_time: rest.wall_time,
        })
    }
}

/// Largest `metrics.jsonl` read back on resume.
pub(super) const MAX_METRICS_BYTES: u64 = 1 << 30;

/// One episode's log line from its metrics and losses.
pub(super) fn episode_log(e: u64, m: &EpisodeMetrics, losses: Losses, secs: f64, weights: &[f64], classes: &[f64]) -> EpisodeLog {
    let n = weights.len();
    // The episode's own world's figures: the valuation world has no jobs (no welfare).
    let world = if m.auction.is_some() {
        env::config::World::Valuations
    } else {
        env::config::World::Queues
    };
    EpisodeLog {
        episode: e,
        figures: METRICS
            .iter()
            .filter(|f| f.tag.is_some() && f.world.is_none_or(|w| w == world))
            .filter_map(|f| Some((f.key.to_string(), (f.of)(m)?)))
            .collect(),
        bids: m.auction.is_some(),
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
/// `agent_steps` is the run's agent-steps (agents x rounds x environment copies) to the end of
/// this episode: every figure is also written against it (`agent_steps/...`), so learners
/// whose episodes hold different numbers of copies (an ES generation, PPO's seed groups)
/// compare by samples.
pub(super) fn write_scalars(
    tb: &mut crate::run::tb::EventWriter,
    log: &EpisodeLog,
    rounds: u32,
    agent_steps: u64,
) -> crate::error::Result<()> {
    let e = log.episode;
    for f in METRICS {
        if let (Some(tag), Some(v)) = (f.tag, log.get(f.key)) {
            tb.scalar(tag, v as f32, e)?;
            let name = tag.rsplit('/').next().unwrap_or(tag);
            tb.scalar(&format!("agent_steps/{name}"), v as f32, agent_steps)?;
        }
    }
    for (tag, v) in [
        (tags::ACTOR, log.actor_loss),
        (tags::CRITIC, log.critic_loss),
        (tags::ENTROPY, log.entropy),
        (tags::REWARD_SPREAD, log.reward_spread),
        (tags::SPS, f64::from(rounds) / log.wall_time.max(1e-9)),
    ] {
        tb.scalar(tag, v as f32, e)?;
    }
    let levels = if log.bids { tags::BID_FACTOR } else { tags::THRESHOLD };
    for (w, t) in &log.threshold_by_weight {
        tb.scalar(&format!("{levels}/w{w}"), *t as f32, e)?;
    }
    tb.flush()
}

/// A JSON file of the run, naming it in every error.
pub(crate) fn read_json(path: &Path) -> crate::error::Result<serde_json::Value> {
    serde_json::from_str(&run::read_text(path, MAX_METRICS_BYTES)?).map_err(|e| user(format!("{}: {e}", path.display())))
}

/// The last episode line of a metrics file.
pub(super) fn last_logged(path: &Path) -> crate::error::Result<Option<EpisodeLog>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = run::read_text(path, MAX_METRICS_BYTES)?;
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        None => Ok(None),
        Some(line) => EpisodeLog::from_json(line)
            .map(Some)
            .map_err(|e| user(format!("{}: last line is not an episode record: {e}", path.display()))),
    }
}

/// The training welfare of a run's logged episodes (`metrics.jsonl`), in episode order (the
/// surplus per bidder per item in the valuation world).
pub fn logged_welfare(dir: &Path) -> crate::error::Result<Vec<f64>> {
    logged_figure(dir, None).map(|(values, _)| values)
}

/// Every logged episode's `key` figure of a run (`None`: the world's headline, welfare or the
/// surplus), in episode order, and whether the run is the valuation world's (its episodes log
/// bid factors).
pub fn logged_figure(dir: &Path, key: Option<&str>) -> crate::error::Result<(Vec<f64>, bool)> {
    let path = run::RunDir::at(dir).metrics();
    let text = run::read_text(&path, MAX_METRICS_BYTES)?;
    let mut bids = false;
    let mut values = Vec::new();
    for (k, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let log =
            EpisodeLog::from_json(line).map_err(|e| user(format!("{}: line {} is not an episode record: {e}", path.display(), k + 1)))?;
        bids = log.bids;
        values.push(match key {
            None => log.headline(),
            Some(m) => log
                .get(m)
                .ok_or_else(|| user(format!("{}: line {} has no `{m}`", path.display(), k + 1)))?,
        });
    }
    Ok((values, bids))
}

/// Keep only the first `episodes` lines of a metrics file (the episodes a checkpoint covers):
/// a resumed run redoes the rest.
pub(crate) fn truncate_metrics(path: &Path, episodes: u64) -> crate::error::Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_line_from_hand_made_metrics_round_trips_and_old_lines_read() {
        let m = EpisodeMetrics {
            rounds: 4,
            throughput: vec![1.0, 2.0, 6.0],
            reward: vec![0.5, 1.0, 1.5],
            threshold: vec![0.2, 0.4, 0.9],
            spent: vec![1.0, 1.0, 2.0],
            dropped: vec![2, 0, 6],
            welfare: 3.0,
            ..Default::default()
        };
        let losses = Losses {
            actor: 0.25,
            entropy: 2.0,
            ..Losses::default()
        };
        let log = episode_log(9, &m, losses, 1.5, &[1.0, 1.0, 4.0], &[1.0, 4.0]);
        assert_eq!(log.welfare(), 3.0);
        assert_eq!(log.get("throughput"), Some(9.0));
        assert_eq!(log.get("dropped"), Some(2.0), "8 jobs over 4 rounds");
        assert_eq!(log.get("reward"), Some(1.0));
        assert_eq!(log.get("tokens_spent"), Some(4.0));
        assert_eq!(log.threshold_by_weight, vec![(1.0, 0.30000000000000004), (4.0, 0.9)]);
        assert_eq!((log.actor_loss, log.entropy, log.episode), (0.25, 2.0, 9));
        let line = serde_json::to_string(&log).unwrap();
        let back = EpisodeLog::from_json(&line).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), line);
        // A line written before `reward` was named once.
        let old = line.replace("\"reward\"", "\"mean_reward\"");
        assert_eq!(EpisodeLog::from_json(&old).unwrap().get("reward"), Some(1.0));
    }

    #[test]
    fn truncation_keeps_the_episodes_a_checkpoint_covers() {
        let dir = std::env::temp_dir().join(format!("mtf-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("metrics.jsonl");
        let line = |e: u64| {
            let m = EpisodeMetrics {
                rounds: 1,
                throughput: vec![1.0],
                reward: vec![1.0],
                threshold: vec![0.5],
                spent: vec![0.0],
                dropped: vec![0],
                welfare: e as f64 * 10.0,
                ..Default::default()
            };
            serde_json::to_string(&episode_log(e, &m, Losses::default(), 0.0, &[1.0], &[1.0])).unwrap()
        };
        std::fs::write(&path, (0..5).map(|e| line(e) + "\n").collect::<String>()).unwrap();
        truncate_metrics(&path, 3).unwrap();
        assert_eq!(logged_welfare(&dir).unwrap(), vec![0.0, 10.0, 20.0]);
        assert_eq!(last_logged(&path).unwrap().unwrap().episode, 2);
        std::fs::write(&path, "{not json\n").unwrap();
        assert!(last_logged(&path)
            .unwrap_err()
            .to_string()
            .contains("last line is not an episode record"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! A market run's checkpoint (`checkpoints/latest.ckpt`, written after every training
//! episode): the finished replicates and the one in progress, so `--resume` goes on exactly.
//! When every replicate has finished it holds them all and nothing in progress: the run's
//! policies (what `mtf compare run:DIR`, `mtf analyze --run` and `mtf export` read; issue 38's
//! one policy file, which replaced `policy.json`).

use super::{MarketReplicate, MarketScore};
use crate::error::Result;
use crate::learners::episode_hedge::EpisodeHedge;
use crate::learners::Learner;
use crate::train::market_policy::GroupPolicies;
use serde::{Deserialize, Serialize};

/// Where a market run starts: from nothing, or from its checkpoint.
#[derive(Serialize, Deserialize)]
pub(super) struct Restart {
    /// The config file the run was started with (`summary.json` names it).
    pub(super) config: String,
    /// The finished replicates.
    pub(super) done: Vec<SavedReplicate>,
    /// The replicate in progress: its training episodes' scores so far.
    pub(super) curve: Vec<MarketScore>,
    /// Training episodes of the replicate in progress done (the checkpoint's count).
    #[serde(skip)]
    pub(super) episodes: u64,
    /// Its learner's state (Hedge, PPO, ES).
    #[serde(skip)]
    pub(super) learner: Vec<u8>,
}

/// A finished replicate as its checkpoint keeps it.
#[derive(Clone, Serialize, Deserialize)]
pub(super) struct SavedReplicate {
    seed: u64,
    eval: MarketScore,
    /// Absent in checkpoints written before market runs scored sampled play: scored again
    /// when the run resumes.
    #[serde(default)]
    pub(super) sampled: Option<MarketScore>,
    #[serde(default)]
    entropy_share: Option<f64>,
    levels: Vec<f64>,
    pub(super) curve: Vec<MarketScore>,
    pub(super) policy: GroupPolicies,
}

impl Restart {
    pub(super) fn fresh(config: String) -> Self {
        Self {
            config,
            done: Vec::new(),
            curve: Vec::new(),
            episodes: 0,
            learner: Vec::new(),
        }
    }

    /// The checkpoint's payload: the JSON's length (u64), the JSON, the learner's bytes.
    pub(super) fn encode(&self) -> Result<Vec<u8>> {
        let json = serde_json::to_vec(self)?;
        let mut out = Vec::with_capacity(8 + json.len() + self.learner.len());
        out.extend((json.len() as u64).to_le_bytes());
        out.extend(&json);
        out.extend(&self.learner);
        Ok(out)
    }

    /// Every replicate finished, none in progress: the run's last checkpoint.
    pub(super) fn finished(config: String, done: Vec<SavedReplicate>) -> Self {
        Self {
            done,
            ..Self::fresh(config)
        }
    }

    /// Whether every one of `replicates` has finished (the last checkpoint).
    pub(super) fn is_finished(&self, replicates: usize) -> bool {
        self.done.len() == replicates && self.curve.is_empty() && self.episodes == 0
    }

    pub(super) fn read(episodes: u64, bytes: &[u8], replicates: usize) -> std::result::Result<Self, String> {
        let bad = |what: &str| format!("not a market run's checkpoint ({what})");
        let len = bytes.get(..8).ok_or_else(|| bad("too short"))?;
        let len = u64::from_le_bytes(len.try_into().expect("8 bytes")) as usize;
        let json = bytes
            .get(8..8usize.saturating_add(len))
            .ok_or_else(|| bad("its header overruns it"))?;
        let mut r: Restart = serde_json::from_slice(json).map_err(|e| bad(&e.to_string()))?;
        r.episodes = episodes;
        let in_progress = r.done.len() < replicates && r.curve.len() as u64 == episodes;
        if !in_progress && !r.is_finished(replicates) {
            return Err(bad("its replicates or episodes disagree with the run"));
        }
        r.learner = bytes[8 + len..].to_vec();
        Ok(r)
    }
}

/// What a replicate's checkpoint holds of its learner.
pub(super) enum LearnerState<'a> {
    Hedge(&'a EpisodeHedge),
    Learner(&'a dyn Learner),
}

impl From<&MarketReplicate> for SavedReplicate {
    fn from(r: &MarketReplicate) -> Self {
        Self {
            seed: r.seed,
            eval: r.eval,
            sampled: r.sampled,
            entropy_share: r.entropy_share,
            levels: r.levels.clone(),
            curve: r.curve.clone(),
            policy: r.policy.clone(),
        }
    }
}

impl From<SavedReplicate> for MarketReplicate {
    fn from(r: SavedReplicate) -> Self {
        Self {
            seed: r.seed,
            eval: r.eval,
            sampled: r.sampled,
            entropy_share: r.entropy_share,
            levels: r.levels,
            curve: r.curve,
            policy: r.policy,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved() -> SavedReplicate {
        SavedReplicate {
            seed: 1,
            eval: MarketScore::default(),
            sampled: None,
            entropy_share: None,
            levels: vec![0.9],
            curve: vec![MarketScore::default(); 2],
            policy: GroupPolicies::Constant { levels: vec![4] },
        }
    }

    #[test]
    fn a_finished_checkpoint_holds_every_replicate_and_nothing_in_progress() {
        let bytes = Restart::finished("c.toml".into(), vec![saved(), saved()]).encode().unwrap();
        let r = Restart::read(0, &bytes, 2).unwrap();
        assert!(r.is_finished(2));
        assert_eq!(r.done[1].policy, GroupPolicies::Constant { levels: vec![4] });
        // Its replicates are the run's, no more and no fewer, and none is in progress.
        assert!(Restart::read(0, &bytes, 1).is_err());
        assert!(!Restart::read(0, &bytes, 3).unwrap().is_finished(3));
        let mut going = Restart::finished("c.toml".into(), vec![saved(), saved()]);
        going.curve = vec![MarketScore::default()];
        assert!(Restart::read(1, &going.encode().unwrap(), 2).is_err());
        // In progress: the episodes the checkpoint counts are the curve's.
        let mut going = Restart::finished("c.toml".into(), vec![saved()]);
        going.curve = vec![MarketScore::default(); 3];
        let bytes = going.encode().unwrap();
        assert!(!Restart::read(3, &bytes, 2).unwrap().is_finished(2));
        assert!(Restart::read(2, &bytes, 2).is_err());
    }
}

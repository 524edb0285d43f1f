//! A market run's trained policies (`policy.json` in its run directory): what `mtf compare
//! --policies run:DIR` plays for the learning tenants and `mtf export` ships.
//!
//! Per replicate, per learning group: Hedge's greedy level (a factor kept for the whole job), or
//! PPO's / ES's actor (one tanh hidden layer, the layout of [`crate::learners::nets::actor_logits`])
//! on [`Market::observe`]'s features, played greedily.

use crate::error::{user, Result};
use crate::run;
use env::market::{Market, MarketFile, MarketRound, Pricing};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The file's name in a run directory.
pub const POLICY_FILE: &str = "policy.json";

/// One replicate's policy per learning group.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "form", rename_all = "snake_case", deny_unknown_fields)]
pub enum GroupPolicies {
    /// A level index per group, whatever it observes (Hedge).
    Constant {
        /// Per group.
        levels: Vec<usize>,
    },
    /// An actor per group (PPO, ES).
    Actor {
        /// Hidden width.
        hidden: usize,
        /// Per group: the actor's numbers.
        weights: Vec<Vec<f32>>,
    },
}

/// `policy.json`: every replicate's policies and what they act on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarketPolicies {
    /// The levels (bid factors, or MTF thresholds) the policies choose among.
    pub levels: Vec<f64>,
    /// Features per observation ([`Market::obs_dim`]).
    pub dim: usize,
    /// Learning groups, by name (the file's tenant entries with `learn = true`).
    pub groups: Vec<String>,
    /// Per replicate.
    pub replicates: Vec<GroupPolicies>,
}

impl MarketPolicies {
    /// Check the shapes a player relies on; `what` names the file in errors.
    pub fn check(&self, what: &str) -> Result<()> {
        let bad = |p: String| Err(user(format!("{what}: {p}")));
        let k = self.levels.len();
        if k == 0 || self.levels.iter().any(|l| !l.is_finite()) {
            return bad("levels must be finite numbers, at least one".into());
        }
        if self.dim == 0 || self.dim > env::market::Market::obs_dim(64) || self.groups.is_empty() || self.replicates.is_empty() {
            return bad("needs a dimension, groups and replicates".into());
        }
        let g = self.groups.len();
        for (r, p) in self.replicates.iter().enumerate() {
            match p {
                GroupPolicies::Constant { levels } => {
                    if levels.len() != g || levels.iter().any(|&l| l >= k) {
                        return bad(format!("replicates[{r}]: needs a level index below {k} per group ({g})"));
                    }
                }
                GroupPolicies::Actor { hidden, weights } => {
                    let max = crate::learners::limits::MAX_HIDDEN;
                    if !(1..=max).contains(hidden) {
                        return bad(format!("replicates[{r}]: hidden {hidden} is outside [1, {max}]"));
                    }
                    let len = self.dim * hidden + hidden + hidden * k + k;
                    if weights.len() != g || weights.iter().any(|w| w.len() != len || w.iter().any(|x| !x.is_finite())) {
                        return bad(format!(
                            "replicates[{r}]: needs {g} actors of {len} finite numbers (hidden {hidden})"
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// Write `policy.json` into a run directory.
    pub fn write(&self, dir: &run::RunDir) -> Result<()> {
        run::write_atomic(&dir.file(POLICY_FILE), serde_json::to_string(self)?.as_bytes())
    }
}

/// A trained market run, read back: its config (unexpanded), its policies, and who learned.
pub struct TrainedMarket {
    /// The run's market file, unexpanded.
    pub raw: MarketFile,
    /// The policies.
    pub policies: MarketPolicies,
    /// Learning tenants (indices in the expanded market) and each one's group.
    pub who: Vec<usize>,
    /// Each learning tenant's group (index into `policies.groups`).
    pub class: Vec<usize>,
}

impl TrainedMarket {
    /// Read the run in `dir` (its `config.toml` and `policy.json`).
    pub fn load(dir: &Path) -> Result<Self> {
        let rd = run::RunDir::at(dir);
        let config = rd.config();
        if !env::registry::is_market_file(&config) {
            return Err(user(format!(
                "{}: not a market run (its config.toml is not a market file)",
                dir.display()
            )));
        }
        let raw = MarketFile::load_unexpanded(&config, &[])?;
        let path = rd.file(POLICY_FILE);
        if !path.is_file() {
            return Err(user(format!(
                "{}: missing; the run did not finish, or was trained before market runs kept their policies (train it again)",
                path.display()
            )));
        }
        let text = run::read_regular(&path, run::MAX_TEXT)?;
        let what = path.display().to_string();
        let policies: MarketPolicies = serde_json::from_slice(&text).map_err(|e| user(format!("{what}: {e}")))?;
        policies.check(&what)?;
        let file = raw.at_seed(raw.seed);
        let mut groups: Vec<usize> = file.market.tenants.iter().filter(|t| t.learn).map(|t| t.group).collect();
        groups.dedup();
        let names: Vec<&str> = groups.iter().map(|&g| raw.market.tenants[g].name.as_str()).collect();
        let levels = env::market::game::action_levels(&raw, &config.display().to_string())?;
        if levels != policies.levels {
            return Err(user(format!(
                "{what}: its levels {:?} are not the run's config.toml's learner.levels {levels:?}",
                policies.levels
            )));
        }
        if names != policies.groups || policies.dim != Market::obs_dim(raw.market.types.len()) {
            return Err(user(format!(
                "{what}: its groups {:?} and dimension {} do not match the run's config.toml ({names:?}, {})",
                policies.groups,
                policies.dim,
                Market::obs_dim(raw.market.types.len())
            )));
        }
        let who: Vec<usize> = (0..file.market.tenants.len()).filter(|&i| file.market.tenants[i].learn).collect();
        let class = who
            .iter()
            .map(|&i| groups.iter().position(|&g| g == file.market.tenants[i].group).expect("a group"))
            .collect();
        Ok(Self { raw, policies, who, class })
    }

    /// Whether its levels are MTF thresholds (else bid factors).
    pub fn thresholds(&self) -> bool {
        self.raw.mechanism.kind == Pricing::Mtf
    }

    /// The learning tenants' names in the run's market (groups expanded).
    pub fn names(&self) -> Vec<String> {
        let file = self.raw.at_seed(self.raw.seed);
        self.who.iter().map(|&i| file.market.tenants[i].name.clone()).collect()
    }

    /// Play one episode of `file` (the same tenants as the run's), the learning tenants acting
    /// greedily with replicate `r`'s policies, the others at `actions`: the market at the end
    /// and its rounds.
    pub fn play(&self, file: &MarketFile, actions: &[f64], r: usize) -> (Market, Vec<MarketRound>) {
        let p = &self.policies;
        let (d, k) = (p.dim, p.levels.len());
        let (mut obs, mut hidden, mut logits) = (vec![0f32; d], Vec::new(), vec![0f32; k]);
        Market::play(file.clone(), actions, true, |market, a| {
            for (&i, &c) in self.who.iter().zip(&self.class) {
                let level = match &p.replicates[r] {
                    GroupPolicies::Constant { levels } => levels[c],
                    GroupPolicies::Actor { hidden: h, weights } => {
                        market.observe(i, &mut obs);
                        crate::learners::nets::actor_logits(&weights[c], (d, *h, k), &obs, &mut hidden, &mut logits);
                        crate::learners::argmax(logits.iter().map(|&l| f64::from(l)))
                    }
                };
                a[i] = p.levels[level];
            }
        })
    }
}

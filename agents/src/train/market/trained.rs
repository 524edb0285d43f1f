//! A finished market run read back (`mtf compare run:DIR`, `mtf analyze --run`, `mtf export`):
//! its config and the policies its last checkpoint holds.

use crate::error::{user, Result};
use crate::run;
use crate::train::market_policy::{market_world, MarketActing, MarketPolicies};
use env::market::world::MarketWorld;
use env::market::{Market, MarketFile, Pricing};
use std::path::Path;

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
    /// Read the finished run in `dir`: its `config.toml` and the policies its last checkpoint
    /// holds.
    pub fn load(dir: &Path) -> Result<Self> {
        let config = run::RunDir::at(dir).config();
        if env::registry::stack_of(&config) != env::registry::Stack::Market {
            return Err(user(format!(
                "{}: not a market run (its config.toml is not a market file)",
                dir.display()
            )));
        }
        let raw = MarketFile::load_unexpanded(&config, &[])?;
        let replicates = super::trained_policies(dir)?;
        let file = raw.at_seed(raw.seed);
        let mut groups: Vec<usize> = file.market.tenants.iter().filter(|t| t.learn).map(|t| t.group).collect();
        groups.dedup();
        let policies = MarketPolicies {
            levels: env::market::game::action_levels(&raw, &config.display().to_string())?,
            dim: Market::obs_dim(raw.market.types.len()),
            groups: groups.iter().map(|&g| raw.market.tenants[g].name.clone()).collect(),
            replicates,
        };
        // The checkpoint's checksum and its config's text were checked; its policies' shapes
        // are checked here, as a player relies on them.
        policies.check(&run::RunDir::at(dir).latest_checkpoint().display().to_string())?;
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

    /// Its market for `raw` (the run's file, or it under another mechanism: the same
    /// tenants), the learning tenants its agents ([`MarketWorld::learners`]).
    pub fn world(&self, raw: &MarketFile) -> Result<MarketWorld> {
        market_world(raw, &self.policies.levels)
    }

    /// The learning tenants under replicate `r`'s policies, played greedily or (`sampled`)
    /// drawing from the actors' softmax.
    pub fn acting(&self, r: usize, sampled: bool) -> MarketActing<'_> {
        MarketActing::new(&self.policies.replicates[r], &self.class, &self.policies.levels, sampled)
    }
}

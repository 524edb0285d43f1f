//! The one place that maps mechanism names to constructors.

use crate::auction::{Auction, Pricing};
use crate::gandiva::GandivaFair;
pub use crate::input::Leftovers;
use crate::max_throughput::MaxThroughput;
use crate::mtf::Mtf;
use crate::round_robin::RoundRobin;
use crate::static_partition::StaticPartition;
use crate::stride::Stride;
use crate::themis::{Themis, DEFAULT_FAIRNESS};
use crate::Mechanism;

/// Every mechanism name, in the order tables and benchmarks list them.
pub const NAMES: &[&str] = &[
    "mtf",
    "round_robin",
    "static_partition",
    "stride",
    "stride_per_accelerator",
    "gandiva_fair",
    "themis",
    "max_throughput",
    "second_price",
    "first_price",
    "isolated",
    "fifo",
    "fifo_perf",
    "max_min_fairness",
    "max_min_fairness_perf",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "max_sum_throughput_perf",
];

/// Gavel's policies (`crate::gavel`): they place jobs, and need the round's `jobs` fields.
pub const GAVEL: &[&str] = &[
    "isolated",
    "fifo",
    "fifo_perf",
    "max_min_fairness",
    "max_min_fairness_perf",
    "finish_time_fairness",
    "finish_time_fairness_perf",
    "max_sum_throughput_perf",
];

/// The mechanisms that take bids (SPEC 8) rather than thresholds.
pub const AUCTIONS: &[&str] = &["second_price", "first_price"];

/// Whether mechanism `name` takes bids (an agent's action is a bid factor, not a threshold).
pub fn takes_bids(name: &str) -> bool {
    AUCTIONS.contains(&name)
}

/// Whether mechanism `name` reads the agents' actions (thresholds or bids) at all. The others
/// (the baselines but MTF) allocate from demands, weights and their own state alone, so every
/// policy gives the same episodes under them (a property test checks it).
pub fn reads_actions(name: &str) -> bool {
    name == "mtf" || takes_bids(name)
}

/// Mechanism parameters that are not part of a round (configurable per experiment).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Themis's fairness knob f in [0, 1].
    pub fairness: f64,
    /// The free phase of MTF and the auctions.
    pub leftovers: Leftovers,
    /// The seed of Gavel's own random draws (its agnostic policies'), `crate::gavel::Gavel::new`.
    pub gavel_seed: u64,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            fairness: DEFAULT_FAIRNESS,
            leftovers: Leftovers::RoundRobin,
            gavel_seed: 0,
        }
    }
}

/// An unknown mechanism name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown mechanism `{0}` (known: {list})", list = NAMES.join(", "))]
pub struct UnknownMechanism(pub String);

/// Build a mechanism by name.
pub fn build(name: &str, params: &Params) -> Result<Box<dyn Mechanism>, UnknownMechanism> {
    Ok(match name {
        "mtf" => Box::new(Mtf::with_leftovers(params.leftovers)),
        "round_robin" => Box::new(RoundRobin::default()),
        "static_partition" => Box::new(StaticPartition::default()),
        "stride" => Box::new(Stride::per_agent()),
        "stride_per_accelerator" => Box::new(Stride::per_accelerator()),
        "gandiva_fair" => Box::new(GandivaFair::default()),
        "themis" => Box::new(Themis::new(params.fairness)),
        "max_throughput" => Box::new(MaxThroughput::default()),
        "second_price" => Box::new(Auction::new(Pricing::SecondPrice, params.leftovers)),
        "first_price" => Box::new(Auction::new(Pricing::FirstPrice, params.leftovers)),
        other => match crate::gavel::policy::Kind::from_name(other) {
            Some(kind) => Box::new(crate::gavel::Gavel::new(kind, params.gavel_seed)),
            None => return Err(UnknownMechanism(other.to_string())),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_builds_under_its_own_name() {
        for &name in NAMES {
            assert_eq!(build(name, &Params::default()).unwrap().name(), name);
        }
        let e = build("mft", &Params::default()).err().unwrap().to_string();
        assert!(e.starts_with("unknown mechanism `mft` (known: mtf, "), "{e}");
    }
}

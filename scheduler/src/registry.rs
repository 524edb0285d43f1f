//! The one place that maps mechanism names to constructors.

use crate::gandiva::GandivaFair;
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
];

/// Mechanism parameters that are not part of a round (configurable per experiment).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Themis's fairness knob f in [0, 1].
    pub fairness: f64,
    /// MTF leftovers drawn by weight (SPEC 7) instead of round robin; needs `draws`.
    pub weighted_leftovers: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            fairness: DEFAULT_FAIRNESS,
            weighted_leftovers: false,
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
        "mtf" if params.weighted_leftovers => Box::new(Mtf::with_weighted_leftovers()),
        "mtf" => Box::new(Mtf::new()),
        "round_robin" => Box::new(RoundRobin::default()),
        "static_partition" => Box::new(StaticPartition::default()),
        "stride" => Box::new(Stride::per_agent()),
        "stride_per_accelerator" => Box::new(Stride::per_accelerator()),
        "gandiva_fair" => Box::new(GandivaFair::default()),
        "themis" => Box::new(Themis::new(params.fairness)),
        "max_throughput" => Box::new(MaxThroughput::default()),
        other => return Err(UnknownMechanism(other.to_string())),
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

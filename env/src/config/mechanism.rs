//! The `[mechanism]` section and what an agent's action sets under it.

use super::error_in;
use super::{limits, ConfigError, EnvSection, World};
use serde::{Deserialize, Serialize};

/// What an agent's action sets: its threshold (MTF and the baselines) or its bid factor (the
/// auctions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    /// A threshold level (`env.threshold_levels`).
    Threshold,
    /// A bid factor (`env.bid_levels`): bids are factor x `value_scale` x utility.
    Bid,
}

impl ActionKind {
    /// The name in exported agents' manifests and messages: `threshold` or `bid`.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Threshold => "threshold",
            ActionKind::Bid => "bid",
        }
    }

    /// What its levels are called in messages: `threshold levels` or `bid levels`.
    pub fn levels_name(self) -> &'static str {
        match self {
            ActionKind::Threshold => "threshold levels",
            ActionKind::Bid => "bid levels",
        }
    }
}

/// What happens to the accelerators nobody bought: the scheduler's rule, spelled the same in
/// configs (`mechanism.leftovers`) as in round inputs.
pub use scheduler::Leftovers;
/// The `[mechanism]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MechanismSection {
    /// Registry name (see `scheduler::registry::NAMES`).
    pub name: String,
    /// Token total T (MTF).
    pub total_tokens: f64,
    /// MTF leftovers rule.
    pub leftovers: Leftovers,
    /// Themis fairness knob f.
    pub fairness: f64,
}

impl MechanismSection {
    /// The mechanism parameters this section sets (for [`scheduler::registry::build`]).
    pub fn params(&self) -> scheduler::registry::Params {
        scheduler::registry::Params {
            fairness: self.fairness,
            leftovers: self.leftovers,
            ..scheduler::registry::Params::default()
        }
    }
}

impl Default for MechanismSection {
    fn default() -> Self {
        Self {
            name: "mtf".into(),
            total_tokens: 100.0,
            leftovers: Leftovers::RoundRobin,
            fairness: scheduler::themis::DEFAULT_FAIRNESS,
        }
    }
}
/// The mechanism section: a registered name, a token total and fairness in range.
pub(super) fn check_mechanism(file: &str, mechanism: &MechanismSection) -> Result<(), ConfigError> {
    let err = error_in(file);
    let mech = mechanism;
    if !scheduler::registry::NAMES.contains(&mech.name.as_str()) {
        return Err(err(
            "mechanism.name",
            format!(
                "unknown mechanism `{}` (known: {})",
                mech.name,
                scheduler::registry::NAMES.join(", ")
            ),
        ));
    }
    if scheduler::gavel::is_gavel(&mech.name) {
        return Err(err(
            "mechanism.name",
            format!(
                "`{}` is one of Gavel's policies: it schedules jobs that arrive and finish (env.world = \"gavel\", configs/gavel/), not this world's agents",
                mech.name
            ),
        ));
    }
    if !(mech.total_tokens > 0.0 && mech.total_tokens <= limits::MAX_TOKENS) {
        return Err(err(
            "mechanism.total_tokens",
            format!("must be in (0, 1e12], got {}", mech.total_tokens),
        ));
    }
    if !(0.0..=1.0).contains(&mech.fairness) {
        return Err(err("mechanism.fairness", format!("must be in [0, 1], got {}", mech.fairness)));
    }
    Ok(())
}

/// The valuation world gives nothing away: unsold items must stay idle (SPEC 8).
pub(super) fn check_valuations(file: &str, e: &EnvSection, mech: &MechanismSection) -> Result<(), ConfigError> {
    if e.world == World::Valuations && mech.leftovers != Leftovers::Idle {
        return Err(error_in(file)(
            "mechanism.leftovers",
            "env.world = \"valuations\" needs leftovers = \"none\" (a free phase would give items to agents that bid nothing)".into(),
        ));
    }
    Ok(())
}

//! A fixed level for every agent: the baseline every learner is compared with. It learns
//! nothing; its policy is `env::policy::Fixed`.

use super::base::{ErrorIn, Exported, Init, Learner, LearnerConfig, Losses, Transition};
use env::config::{ConfigError, Scenario};
use env::policy::Fixed;
use serde::{Deserialize, Serialize};

/// `[learner.fixed]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixedConfig {
    /// The level (a threshold, or a bid factor under an auction): one of the scenario's levels.
    pub threshold: f64,
}

impl Default for FixedConfig {
    fn default() -> Self {
        Self { threshold: 0.5 }
    }
}

impl LearnerConfig for FixedConfig {
    fn validate(&self, sc: &Scenario, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        if chosen && sc.level_index(self.threshold).is_none() {
            return Err(err(
                "learner.fixed.threshold",
                format!(
                    "{} is not one of the {} {:?}",
                    self.threshold,
                    sc.action_kind().levels_name(),
                    sc.action_levels()
                ),
            ));
        }
        Ok(())
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        Box::new(Fixed {
            level: run.scenario.level_index(self.threshold).expect("a validated level"),
        })
    }

    fn exported(&self, sc: &Scenario) -> Exported {
        Exported::Constant {
            level: sc.level_index(self.threshold).unwrap_or(0),
        }
    }
}

/// A fixed level "learns" nothing.
impl Learner for Fixed {
    fn learn(&mut self, _t: &Transition<'_>) -> Losses {
        Losses::default()
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn load(&mut self, _bytes: &[u8]) -> crate::error::Result<()> {
        Ok(())
    }

    fn export_weights(&self, _agent: usize) -> crate::error::Result<Vec<f32>> {
        Ok(Vec::new())
    }
}

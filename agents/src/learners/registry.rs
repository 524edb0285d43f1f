//! The one registry of learner kinds.
//!
//! Each learner's config section (`[learner.<kind>]`) lives beside the learner it builds and
//! implements [`LearnerConfig`]: its checks, its construction, and the facts the rest of the
//! harness asks about it (the features it reads, how its policies export, whether it learns
//! from the rewards it is paid). The [`learners!`] list below is the only place that names
//! every kind: it makes the [`LearnerKind`] enum, the `[learner]` section's field per kind and
//! the dispatch from a kind to its section. Adding a learner is one file (its config and its
//! learner) and one line here (with its `pub mod` in `learners/mod.rs`); `agents/README.md` has
//! the recipe.

use super::base::{ErrorIn, Init, Learner, LearnerConfig};
use super::difference::Difference;
use super::world_shape::WorldShape;
use env::config::ConfigError;
use serde::{Deserialize, Serialize};

/// What the learners are paid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LearnerReward {
    /// The environment's reward (`env.reward`): each agent's own.
    Own,
    /// Difference rewards `D_i = G - G(agent i at learner.difference_default)` from one-round
    /// counterfactual re-runs of the mechanism ([`super::difference`]).
    Difference,
}

/// Makes [`LearnerKind`], the `[learner]` section and their dispatch from one list.
macro_rules! learners {
    ($( $(#[$doc:meta])* $kind:ident => $field:ident: $config:ty, )*) => {
        /// Which learner every agent runs.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum LearnerKind {
            $( $(#[$doc])* $kind, )*
        }

        impl LearnerKind {
            /// Every kind, in the registry's order.
            pub const ALL: &'static [LearnerKind] = &[$(LearnerKind::$kind),*];

            /// Its name in configs (`learner.kind`) and its section's (`[learner.<name>]`).
            pub fn name(self) -> &'static str {
                match self {
                    $(LearnerKind::$kind => stringify!($field),)*
                }
            }
        }

        /// `[learner]`: which learner, what it is paid, and every learner's own section.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub struct LearnerSection {
            /// Which learner.
            pub kind: LearnerKind,
            /// What the learners are paid: their own reward, or difference rewards.
            pub reward: LearnerReward,
            /// The level difference rewards compare each agent's action against.
            pub difference_default: f64,
            $( $(#[$doc])* pub $field: $config, )*
        }

        impl Default for LearnerSection {
            fn default() -> Self {
                Self {
                    kind: LearnerKind::ActorCritic,
                    reward: LearnerReward::Own,
                    difference_default: 0.0,
                    $( $field: <$config>::default(), )*
                }
            }
        }

        impl LearnerSection {
            /// The section of learner `kind`.
            pub fn config(&self, kind: LearnerKind) -> &dyn LearnerConfig {
                match kind {
                    $(LearnerKind::$kind => &self.$field,)*
                }
            }
        }
    };
}

learners! {
    /// A constant level for everyone ([`super::fixed`]).
    Fixed => fixed: super::fixed::FixedConfig,
    /// Hedge with one weight vector per budget state, thesis Algorithm 2 ([`super::hedge`]).
    Hedge => hedge: super::hedge::HedgeConfig,
    /// One-step actor-critic, thesis 4.2.2, with burn ([`super::actor_critic`]).
    ActorCritic => actor_critic: super::actor_critic::ActorCriticConfig,
    /// PPO (IPPO; MAPPO with `learner.ppo.critic = "central"`), with burn ([`super::ppo`]).
    Ppo => ppo: super::ppo::PpoConfig,
    /// Evolution strategies over the actors' parameters with common random numbers
    /// ([`super::es`]).
    Es => es: super::es::EsConfig,
    /// Every level with equal probability, every round: the floor a learner must beat
    /// ([`super::uniform`]).
    Uniform => uniform: super::uniform::UniformConfig,
}

impl LearnerSection {
    /// The run's learner's section.
    pub fn chosen(&self) -> &dyn LearnerConfig {
        self.config(self.kind)
    }

    /// Check every learner's section (so a typo in one not chosen is caught too) and the
    /// reward, against the shape of the world the run is in (any world's).
    pub fn validate(&self, sc: &dyn WorldShape, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        for &kind in LearnerKind::ALL {
            self.config(kind).validate(sc, kind == self.kind, err)?;
        }
        self.check_difference(sc, err)
    }

    /// `learner.reward = "difference"`: a learner that learns from the rewards it is given, a
    /// mechanism without state across rounds (the counterfactual re-run is then exact), a
    /// default that is one of the levels.
    fn check_difference(&self, sc: &dyn WorldShape, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        if self.reward != LearnerReward::Difference {
            return Ok(());
        }
        if !self.chosen().learns_from_rewards() {
            let learning: Vec<&str> = LearnerKind::ALL
                .iter()
                .filter(|k| self.config(**k).learns_from_rewards())
                .map(|k| k.name())
                .collect();
            return Err(err(
                "learner.reward",
                format!(
                    "difference rewards train {} (Hedge computes its own counterfactual reward for every level; fixed and uniform learn nothing)",
                    learning.join(" and ")
                ),
            ));
        }
        let Some(rerun) = sc.rerun() else {
            return Err(err(
                "learner.reward",
                "difference rewards re-run the mechanism on the round's record, which this world does not keep: use own (its world's reward)".into(),
            ));
        };
        let stateful = scheduler::registry::build(&rerun.mechanism, &rerun.params).map_or(true, |m| m.state().is_some());
        if stateful {
            return Err(err(
                "learner.reward",
                format!("difference rewards re-run the mechanism on the round's input, which `{}` does not fully determine (it keeps state across rounds); use mtf, second_price or first_price", rerun.mechanism),
            ));
        }
        if sc.level_index(self.difference_default).is_none() {
            return Err(err(
                "learner.difference_default",
                format!(
                    "{} is not one of the {} {:?}",
                    self.difference_default,
                    sc.action_kind().levels_name(),
                    sc.levels()
                ),
            ));
        }
        Ok(())
    }

    /// The environment copies a training episode of the chosen learner steps: its own number
    /// (an evolution strategy's population), or `envs` seeds times its copies per seed (its
    /// `group`, 1 for most).
    pub fn copies(&self, envs: usize) -> usize {
        let chosen = self.chosen();
        chosen
            .copies()
            .unwrap_or_else(|| envs.saturating_mul(chosen.group().map_or(1, |(g, _)| g)))
    }

    /// The learner population of a run: the chosen learner, paid difference rewards when
    /// configured.
    pub fn build(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let learner = self.chosen().init(run);
        match self.reward {
            LearnerReward::Own => learner,
            LearnerReward::Difference => Box::new(Difference::paying(learner, run.queue_scenario(), self.difference_default)),
        }
    }
}

//! Learners: [`Policy`] (the environment crate's one policy interface) picks every agent's
//! level, [`Learner`] updates from what happened. One value serves all n agents (the burn
//! learners batch them), but every agent's parameters and state are its own unless a learner
//! says it shares them (PPO's `share`).
//!
//! - [`base`]: [`Learner`], [`Transition`], [`Losses`], and [`LearnerConfig`] (what a learner's
//!   config section tells the harness: checks, construction, what it reads, how it exports).
//! - [`registry`]: the one list of learner kinds, each with its config section;
//!   [`world_shape`]: what a section is checked against, for every world.
//! - The learners: [`fixed`], [`uniform`], [`hedge`], [`actor_critic`], [`ppo`], [`es`];
//!   [`episode_hedge`] (Hedge over a level per group held for the episode, in any world behind
//!   the seam);
//!   [`difference`] pays any of them difference rewards.
//! - Their parts: [`nets`] (the stacked actor and critic networks both burn learners use),
//!   [`fused_adamw`] (their optimizer), [`parts`] (the framing of a saved state), [`wrap`]
//!   (wrappers that forward what they do not change).
//!
//! Nothing here does file I/O: the trainer (`train`) saves and loads the bytes.

pub mod actor_critic;
pub mod base;
pub mod difference;
pub mod episode_hedge;
pub mod es;
pub mod fixed;
pub mod fused_adamw;
pub mod hedge;
pub mod nets;
pub mod normalize;
pub mod parts;
pub mod ppo;
pub mod registry;
pub mod uniform;
pub mod world_shape;
pub mod wrap;

pub use base::*;
pub use registry::{LearnerKind, LearnerReward, LearnerSection};
pub use world_shape::{SeamShape, WorldShape};
pub use wrap::OnlineLearning;

//! The world seam: one trait for a multi-agent world whose agents may arrive and leave
//! (`api.rs`), and the worlds that live only behind it (Gavel's GPU cluster, the toy bandit).
//! The registry of every world and the one reader of `env.world` are [`crate::registry`].
//!
//! A [`World`] is PettingZoo's `ParallelEnv` in Rust: `reset(seed)`, the agents present now
//! (`live`, stable ids; `possible` bounds them), a declared observation [`Layout`] and each
//! live agent's row, `step(actions)` returning rewards, terminations and whether the episode
//! ran out, and the episode's figures from the world's own metric list ([`WorldMetric`]).
//! What is written against the trait (the training rollout, the seam's evaluation, comparison
//! and export, Python's `ParallelEnv` and batched adapter) holds a `Box<dyn World>` (or a
//! `W: World`) and never asks which world it is; only what builds one reads `env.world`.
//!
//! Agents belong to *groups* (a weight class, a tenant, every job): what a policy keeps per
//! agent it keeps per group, so a world whose agents are thousands of jobs that come and go
//! is played by one shared policy, and a world of a few fixed agents by one each.
//!
//! Every world implements it: the queue and valuation worlds (`crate::queue_world`), the
//! market (`crate::market::world`), Gavel's GPU cluster and the toy bandit. Adding a world:
//! one file implementing [`World`] (and its config section), and one entry in
//! [`crate::registry::REGISTRY`].

pub mod bandit;
pub mod gavel;
pub mod play;
pub mod selfish;

pub(crate) mod api;

pub use api::*;
pub use play::{play, Acting, Returns};

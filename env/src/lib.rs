//! placeholder
pub mod config;
pub mod queue;
pub mod rng;

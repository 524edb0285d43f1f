//! The hyperparameter sweeper (`mtf sweep`): search spaces and samplers ([`space`]).
pub mod space;

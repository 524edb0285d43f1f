//! The end-to-end tests, one binary (as ripgrep's `tests/tests.rs`): each module tests one
//! command or door through the built `mtf` and `mtf-agent` (with tiny budgets), or a library
//! piece end to end; [`common`] holds their shared helpers. `cargo test` builds and links this
//! once instead of once per file.

mod common;

mod auction_learners;
mod cli_analyze;
mod cli_compare;
mod cli_curves;
mod cli_export;
mod cli_flags;
mod cli_market_train;
mod cli_onnx;
mod cli_policies;
mod cli_schedule;
mod cli_simulate;
mod cli_sweep;
mod cli_train;
mod closed_output;
mod docs;
mod groups;
mod input_limits;
mod known_answers;
mod python;
mod readme;
mod recipes;
mod reliability;
mod slurm;
mod sweep_storages;
mod worlds;

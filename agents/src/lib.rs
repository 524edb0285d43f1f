//! Learners, training, sweeps and export for the MTF harness, and the `mtf` command.
//!
//! For now this crate holds the command-line front end; `mtf schedule` drives the
//! `scheduler` crate's mechanisms one round at a time:
//!
//! ```
//! let out = agents::schedule::schedule_json("mtf", r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
//!     "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#, None).unwrap();
//! assert!(out.starts_with(r#"{"owners":[1,0,1,1],"#));
//! ```

pub mod actor_critic;
pub mod cli;
pub mod compare;
pub mod config;
pub mod drive;
pub mod error;
pub mod export;
pub mod hedge;
pub mod learner;
pub mod plots;
pub mod reproduce;
pub mod run_dir;
pub mod runtime;
pub mod schedule;
pub mod simulate;
pub mod sweep;
pub mod tb;
pub mod train;

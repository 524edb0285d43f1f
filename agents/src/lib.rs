//! Learners, training, evaluation, sweeps and policy export for the MTF harness, and the `mtf`
//! command built on them.
//!
//! Data flow: policy -> learner -> trainer -> run directory -> reports.
//! - [`learner`]: `Policy` (acting: a level per agent from the observations) and `Learner`
//!   (updating from one round's `Transition`, which carries the environment's record of the
//!   round); [`hedge`] and [`actor_critic`] implement both; [`config`] reads an experiment
//!   (scenario + learner + training) and its documented limits.
//! - [`train`]: the trainer. It runs episodes on `env::world::ClusterEnv`, checkpoints the learner,
//!   evaluates on held-out seeds and returns a typed `Trained` outcome; the run directory is
//!   written through [`run_dir`] (atomic files, one writer's lock) and [`tb`] (TensorBoard).
//! - Reports: [`simulate`] (evaluation episodes), [`compare`] (policies x mechanisms on the same
//!   seeds), [`reproduce`] (the thesis's chapter 5), [`plots`]; [`sweep`] searches
//!   hyperparameters over training runs.
//! - Export: [`export`] writes a trained policy into a copy of the [`runtime`] binary;
//!   [`drive`] drives such binaries as agents.
//! - For the application (the `mtf` binary, whose command-line module is private to it):
//!   [`schedule`] (one mechanism round as JSON), [`error`] (exit status 2 for the user's
//!   errors).
//!
//! A short training run, and its outcome read back without touching the files:
//!
//! ```
//! use agents::train::{execute, TrainSpec};
//! let out = std::env::temp_dir().join(format!("mtf-doc-{}", std::process::id()));
//! let trained = execute(TrainSpec {
//!     config: Some("../configs/quickstart.toml".into()),
//!     set: ["learner.kind=hedge", "train.episodes=2", "env.rounds=20", "train.eval_seeds=1"]
//!         .map(String::from)
//!         .to_vec(),
//!     out: Some(out.clone()),
//!     quiet: true,
//!     ..TrainSpec::default()
//! })
//! .unwrap();
//! let welfare = trained.summary.unwrap()["eval_welfare"]["mean"].as_f64().unwrap();
//! assert!(welfare > 0.0);
//! std::fs::remove_dir_all(out).unwrap();
//! ```
//!
//! One round of a mechanism, as `mtf schedule` prints it:
//!
//! ```
//! let out = agents::schedule::schedule_json("mtf", r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
//!     "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#, None).unwrap();
//! assert!(out.starts_with(r#"{"owners":[1,0,1,1],"#));
//! ```

pub mod actor_critic;
pub mod checkpoint;
pub mod compare;
pub mod config;
pub mod drive;
pub mod error;
pub mod export;
pub mod hedge;
pub mod learner;
pub mod plots;
pub mod policies;
pub mod reproduce;
pub mod run_dir;
pub mod runtime;
pub mod schedule;
pub mod simulate;
pub mod sweep;
pub mod table;
pub mod tb;

pub use error::{Error, Result};
pub mod train;

//! Learners, training, evaluation, sweeps, reports and policy export for the MTF harness. The
//! `mtf` command is a thin application over this library (its modules are private to the
//! binary: flags, one call here, printing).
//!
//! Data flow: policy -> learner -> trainer -> run directory -> reports.
//! - Policy: `env::policy::Policy` is the one interface for whatever picks the agents' levels
//!   (re-exported in [`learner`], with the fixed threshold `Fixed`); [`policies`] reads the
//!   specs the commands take (`fixed:X`, `hedge`, `run:DIR`, `agent:PATH`).
//! - Learner: [`learner::Learner`] updates from one round's [`learner::Transition`] (the
//!   environment's record of the round); [`hedge`] and [`actor_critic`] implement it, each
//!   with its config beside it; [`config`] reads an experiment (scenario + learner + training)
//!   with its documented limits, and [`config::Source`] a scenario with overrides.
//! - Trainer: [`train`] runs episodes on `env::world::ClusterEnv` from a [`train::TrainSpec`],
//!   checkpoints the learner ([`checkpoint`]), evaluates on held-out seeds, and returns a typed
//!   [`train::Trained`]; [`sweep`] searches hyperparameters over such runs and reads each
//!   objective from the typed outcome.
//! - Run directory: [`run_dir`] (atomic files, one writer's lock, errors naming the file) and
//!   [`tb`] (TensorBoard event files).
//! - Reports: [`simulate`] (evaluation episodes), [`compare`] (policies x mechanisms on the same
//!   seeds), [`analyze`] (can learning help: headroom, best responses, the token scale),
//!   [`reproduce`] (the thesis's chapter 5); [`table`] is the one source of the
//!   comparison's markdown, CSV and [`plots`].
//! - Export: [`export`] writes a trained policy into a copy of the [`runtime`] binary;
//!   [`drive`] drives such binaries as agents. [`schedule`] runs one mechanism round as JSON.
//! - Checks against theory: [`theory`] trains learners against pinned opponents in SPEC 8's
//!   valuation world and measures what they earn.
//! - Errors: one [`Error`] type; [`Error::exit_code`] is 2 for the user's errors.
//!
//! A short training run, and its outcome read back without touching the files:
//!
//! ```
//! use agents::train::{execute, Outcome, TrainSpec};
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
//! let Outcome::Evaluated { eval, .. } = &trained.outcome else { panic!("not stopped early") };
//! assert!(eval.welfare().mean > 0.0);
//! // summary.json is a view of the same outcome.
//! assert_eq!(trained.summary.unwrap()["eval_welfare"]["mean"].as_f64(), Some(eval.welfare().mean));
//! std::fs::remove_dir_all(out).unwrap();
//! ```
//!
//! One round of a mechanism, as `mtf schedule` prints it:
//!
//! ```
//! let out = agents::eval::schedule::schedule_json("mtf", r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
//!     "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#, None).unwrap();
//! assert!(out.starts_with(r#"{"owners":[1,0,1,1],"#));
//! ```

pub mod config;
pub mod error;
pub mod eval;
pub mod experiments;
pub mod export;
pub mod learners;
pub mod report;
pub mod run;
pub mod sweep;
pub mod train;

pub use error::{Error, Result};

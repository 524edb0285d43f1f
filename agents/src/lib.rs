//! Learners, training, evaluation, sweeps, reports and policy export for the MTF harness. The
//! `mtf` command is a thin application over this library (its modules are private to the
//! binary: flags, one call here, printing).
//!
//! The folders follow the data flow: policy -> learner -> trainer -> run directory -> reports.
//! - [`learners`]: what picks the agents' levels ([`Policy`], the environment crate's one
//!   policy interface) and updates from what happened ([`Learner`]). One registry
//!   ([`learners::registry`]) lists the kinds — `fixed`, `uniform`, `hedge`, `actor_critic`,
//!   `ppo` — each with its config section beside it; [`learners::nets`] holds the stacked
//!   networks the burn learners share; [`learners::wrap`] the wrappers that forward what they do
//!   not change (sampled evaluation, pinned agents; difference rewards are one, in
//!   [`learners::difference`]). Nothing here reads or writes files.
//! - [`config`]: an experiment (scenario + `[learner]` + `[train]`) with its documented limits,
//!   and [`config::Source`], a scenario with overrides.
//! - [`train`]: a training run from a [`TrainSpec`] to a typed [`Trained`]: rollouts over
//!   environment copies, the episode log, checkpoints and exact resume, the held-out evaluation.
//! - [`run`]: run directories ([`run::RunDir`]: the layout, the one writer's lock), atomic
//!   writes, bounded reads, TensorBoard event files.
//! - [`eval`]: policies named by a spec (`fixed:X`, `hedge`, `run:DIR`, `sampled:run:DIR`,
//!   `agent:PATH`, `onnx:PATH`), evaluation episodes (`simulate`), policies x mechanisms on the same seeds
//!   (`compare`), whether learning can help (`analyze`), learners against auction theory
//!   (`theory`), one mechanism round as JSON (`schedule`).
//! - [`report`]: the comparison table (the one source of its markdown, CSV and figures),
//!   markdown tables, figures.
//! - [`sweep`]: the hyperparameter sweeper over training runs (samplers, pruners, SQLite and
//!   PostgreSQL studies).
//! - [`export`]: a trained policy as one executable ([`export::runtime`] is what it runs;
//!   [`export::drive`] drives such executables as agents).
//! - [`experiments`]: paper reproductions (the thesis's chapter 5).
//! - Errors: one [`Error`] type with typed variants; [`Error::exit_code`] is 2 for the user's
//!   errors.
//!
//! The figures every report shows are named once, in `env::metrics::METRICS`.
//!
//! A short training run, and its outcome read back without touching the files:
//!
//! ```
//! use agents::{execute, Outcome, TrainSpec};
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
//! A learner population built from an experiment and asked for every agent's level:
//!
//! ```
//! use agents::{Experiment, Policy};
//! let exp = Experiment::load("../configs/quickstart.toml".as_ref(), &["learner.kind=uniform".into()]).unwrap();
//! let mut learner = exp.build_learner();
//! let mut world = env::world::ClusterEnv::new(exp.scenario.clone());
//! world.reset(1);
//! let mut levels = vec![0; world.n()];
//! learner.begin_episode(1);
//! learner.act(world.observations(), world.budgets(), false, &mut levels);
//! assert!(levels.iter().all(|&l| l < exp.scenario.action_levels().len()));
//! ```
//!
//! One round of a mechanism, as `mtf schedule` prints it:
//!
//! ```
//! let out = agents::eval::schedule::schedule_json("mtf", r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
//!     "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#, None).unwrap();
//! assert!(out.starts_with(r#"{"owners":[1,0,1,1],"#));
//! ```
#![deny(missing_docs)]

pub mod config;
pub mod error;
pub mod eval;
pub mod experiments;
pub mod export;
pub mod learners;
pub mod out;
pub mod report;
pub mod run;
pub mod sweep;
pub mod train;
pub mod worlds;

pub use config::{Experiment, Source};
pub use error::{Error, Result};
pub use learners::{Learner, LearnerKind, LearnerSection, Losses, Policy, Transition};
pub use run::RunDir;
pub use train::{execute, Outcome, TrainSpec, Trained};

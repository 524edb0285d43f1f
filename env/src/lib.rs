//! The simulated world: Gemmini accelerators, Poisson job queues, and a multi-agent
//! environment in PettingZoo's parallel shape, composed with any mechanism of `scheduler`.
//!
//! Roles: [`config`] reads a scenario (TOML, `--set` overrides) into a validated
//! [`config::Scenario`]; [`world::ClusterEnv`] runs it round by round — arrivals, expiry,
//! observation, the agents' thresholds, allocation by the mechanism, service, rewards — with
//! every random number drawn from named streams of one seed ([`rng`]); [`metrics`] turns an
//! episode into the SPEC 5 figures (throughput, drops, welfare, sharing incentive, envy,
//! Pareto, Jain); [`policy::Policy`] is what picks the agents' levels, and [`eval`] runs it on
//! seeds in parallel.
//!
//! ```
//! use env::config::ScenarioFile;
//! let mut file = ScenarioFile::default();
//! file.env.rounds = 20;
//! let scenario = file.resolve(std::path::Path::new("example")).unwrap();
//! let mut world = env::world::ClusterEnv::new(scenario);
//! world.reset(7);
//! let actions = vec![5; world.n()]; // threshold level 0.5 for everyone
//! while !world.agents().is_empty() {
//!     let step = world.step(&actions).unwrap();
//!     assert!(step.rewards.iter().all(|r| *r >= 0.0));
//! }
//! let m = env::metrics::EpisodeMetrics::compute(&world, false);
//! assert!(m.welfare > 0.0);
//! ```

pub mod config;
pub mod eval;
pub mod market;
pub mod metrics;
pub mod par;
pub mod policy;
pub mod queue;
pub mod queue_world;
pub mod registry;
pub mod rng;
pub mod spaces;
pub mod world;
pub mod worlds;

//! Scenario configs: TOML with `--set key.path=value` overrides, read into raw structs that deny
//! unknown fields, then validated into a resolved [`Scenario`] with every default filled in.
//! Every error names the file, the key and the problem on one line.
//!
//! One file per part: [`env_section`] (`[env]`), [`mechanism`] (`[mechanism]`), [`limits`],
//! the checks that resolve them ([`checks`]), [`overrides`] (TOML and `--set`), [`trace`]
//! (arrival traces). Their items are re-exported here: `env::config::X` names every one.

use serde::{Deserialize, Serialize};
use std::path::Path;

mod checks;
pub mod env_section;
pub mod limits;
pub mod mechanism;
pub mod overrides;
pub mod trace;

pub use env_section::*;
pub use mechanism::{ActionKind, Leftovers, MechanismSection};
pub use overrides::{apply_override, blame_override, from_table, merge_under, read_table, read_text};
pub use trace::read_trace;

use checks::{check_arrival_rates, check_catalog, check_world, expand_agents, expand_cluster};
use mechanism::{check_mechanism, check_valuations};

/// Weights divided by the power of two at or below the largest one. Every quantity the
/// harness derives from weights is a ratio of weights, so results do not depend on their scale
/// (SPEC 5); dividing by a power of two changes no result bit (it is exact in binary floating
/// point), and weights of 1e308 or 1e-308 no longer overflow or underflow sums.
pub fn normalised_weights(weights: &[f64]) -> Vec<f64> {
    let max = weights.iter().copied().fold(f64::MIN_POSITIVE, f64::max);
    let scale = 2f64.powi(max.log2().floor() as i32);
    weights.iter().map(|w| w / scale).collect()
}

/// A config error: file, key path and problem.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {key}: {problem}")]
pub struct ConfigError {
    /// The config file (or `<string>`).
    pub file: String,
    /// The key path, e.g. `env.agents[1].weight`.
    pub key: String,
    /// What is wrong.
    pub problem: String,
}

/// A scenario file: seed, world and mechanism. Other crates nest these sections in their own
/// top-level config (see `agents`), so this type is also the schema of the `[env]` and
/// `[mechanism]` tables everywhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ScenarioFile {
    /// Root seed of every random stream.
    pub seed: u64,
    /// The world.
    pub env: EnvSection,
    /// The mechanism.
    pub mechanism: MechanismSection,
}

impl Default for ScenarioFile {
    fn default() -> Self {
        Self {
            seed: 1,
            env: EnvSection::default(),
            mechanism: MechanismSection::default(),
        }
    }
}

/// One agent, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentSpec {
    /// Weight.
    pub weight: f64,
    /// Application index in the catalog.
    pub app: usize,
    /// Queue load rho.
    pub load: f64,
}

/// A validated scenario with derived values: agents and accelerators expanded, caps resolved,
/// the trace loaded.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// As written (with defaults and overrides), for the run directory.
    pub file: ScenarioFile,
    /// Agents, expanded.
    pub agents: Vec<AgentSpec>,
    /// Accelerator type index per accelerator.
    pub accelerators: Vec<usize>,
    /// Queue cap per queue.
    pub queue_cap: u64,
    /// Deadline in rounds (`u32::MAX` for none).
    pub deadline: u32,
    /// Trace arrivals `[round][agent]` (trace mode).
    pub trace: Vec<Vec<u64>>,
}

/// Top-level sections of an experiment file that other crates own and validate (`agents`:
/// learners and training); a scenario read by itself skips them, and only them.
pub const FOREIGN_SECTIONS: &[&str] = &["learner", "train"];

impl ScenarioFile {
    /// Load a scenario file with overrides and validate it (sections in [`FOREIGN_SECTIONS`]
    /// are skipped; every other unknown key is an error).
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ConfigError> {
        let mut table = read_table(path, overrides)?;
        for k in FOREIGN_SECTIONS {
            table.remove(*k);
        }
        let file: ScenarioFile = from_table(&path.display().to_string(), table).map_err(|e| blame_override(e, overrides))?;
        file.resolve(path).map_err(|e| blame_override(e, overrides))
    }

    /// Read a parsed config table (overrides applied) of the file at `path` into a validated
    /// [`Scenario`], as [`ScenarioFile::load`] does (the world seam's constructor).
    pub fn from_table_at(mut table: toml::Table, path: &Path) -> Result<Scenario, ConfigError> {
        for k in FOREIGN_SECTIONS {
            table.remove(*k);
        }
        let file: ScenarioFile = from_table(&path.display().to_string(), table)?;
        file.resolve(path)
    }

    /// Validate into a [`Scenario`]; `path` names the file in errors and anchors the trace path.
    pub fn resolve(mut self, path: &Path) -> Result<Scenario, ConfigError> {
        let fname = path.display().to_string();
        let err = error_in(&fname);
        let e = &self.env;
        // In this order: what later checks rely on is checked first, and sizes are checked
        // before anything of that size is allocated.
        check_catalog(&fname, e)?;
        check_world(&fname, e)?;
        let (agents, m_total) = expand_agents(&fname, e)?;
        let accelerators = expand_cluster(&fname, e, m_total)?;
        check_mechanism(&fname, &self.mechanism)?;
        check_valuations(&fname, e, &self.mechanism)?;
        check_arrival_rates(&fname, e, &agents, m_total)?;
        let (arrivals, given) = (e.arrivals, e.trace.clone());
        let mut resolved_trace = None;
        let trace = match (arrivals, &given) {
            (Arrivals::Trace, None) => return Err(err("env.trace", "arrivals = \"trace\" needs a trace file".into())),
            (Arrivals::Trace, Some(p)) => {
                let full = if p.is_absolute() {
                    p.clone()
                } else {
                    path.parent().unwrap_or(Path::new(".")).join(p)
                };
                let scale = e.trace_time_scale.unwrap_or(1.0);
                if !(scale.is_finite() && scale > 0.0 && scale <= 1e6) {
                    return Err(err("env.trace_time_scale", format!("must be in (0, 1e6], got {scale}")));
                }
                let format = e.trace_format.unwrap_or_default();
                if e.trace_time_scale.is_some() && format != TraceFormat::Jobs {
                    return Err(err(
                        "env.trace_time_scale",
                        "scales a job log's submit times: set env.trace_format = \"jobs\" (a counts trace has one row per round)".into(),
                    ));
                }
                let rows = trace::read_trace_as(&full, agents.len(), format, scale).map_err(|problem| err("env.trace", problem))?;
                // Resolved once, stored absolute: a run's config.toml (in another folder) and
                // every later use of it (`run:`, export, --resume) read the same file.
                let full = std::fs::canonicalize(&full).map_err(|e| err("env.trace", format!("{}: {e}", full.display())))?;
                resolved_trace = Some(full);
                rows
            }
            _ => {
                for (key, set) in [
                    ("env.trace_format", e.trace_format.is_some()),
                    ("env.trace_time_scale", e.trace_time_scale.is_some()),
                    ("env.trace_start", e.trace_start.is_some()),
                ] {
                    if set {
                        return Err(err(key, "applies to arrivals = \"trace\" only".into()));
                    }
                }
                Vec::new()
            }
        };
        let queue_cap = e.queue_cap.unwrap_or(match e.queues {
            Queues::Central => 1000,
            Queues::PerAccelerator => 200,
        });
        let deadline = match e.deadline {
            Deadline::Rounds(r) => r,
            Deadline::None => u32::MAX,
        };
        if resolved_trace.is_some() {
            self.env.trace = resolved_trace;
        }
        Ok(Scenario {
            file: self,
            agents,
            accelerators,
            queue_cap,
            deadline,
            trace,
        })
    }
}

/// The index of `value` among `levels` (within 1e-9), if it is one of them: see
/// [`Scenario::level_index`].
pub fn level_index(levels: &[f64], value: f64) -> Option<usize> {
    levels.iter().position(|&l| (l - value).abs() < 1e-9)
}

/// A constructor of errors in `file`: `err(key, problem)`.
pub(super) fn error_in(file: &str) -> impl Fn(&str, String) -> ConfigError + '_ {
    move |key, problem| ConfigError {
        file: file.to_string(),
        key: key.to_string(),
        problem,
    }
}
impl Scenario {
    /// The distinct agent weights, ascending: the weight classes every per-class figure and
    /// per-class policy is indexed by.
    pub fn weight_classes(&self) -> Vec<f64> {
        let mut w: Vec<f64> = self.agents.iter().map(|a| a.weight).collect();
        w.sort_by(f64::total_cmp);
        w.dedup();
        w
    }

    /// Each agent's weight class: its weight's index in [`Scenario::weight_classes`].
    pub fn class_of_agents(&self) -> Vec<usize> {
        let classes = self.weight_classes();
        self.agents
            .iter()
            .map(|a| classes.iter().position(|&w| w == a.weight).expect("a weight is one of the classes"))
            .collect()
    }

    /// The resolved config as TOML (defaults filled in, overrides applied): enough to rerun.
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.file).expect("a scenario serialises")
    }

    /// Number of agents.
    pub fn n(&self) -> usize {
        self.agents.len()
    }

    /// Number of accelerators.
    pub fn m(&self) -> usize {
        self.accelerators.len()
    }

    /// What an agent's action sets under this scenario's mechanism.
    pub fn action_kind(&self) -> ActionKind {
        if scheduler::registry::takes_bids(&self.file.mechanism.name) {
            ActionKind::Bid
        } else {
            ActionKind::Threshold
        }
    }

    /// The levels an action indexes: threshold levels, or bid factors under an auction.
    pub fn action_levels(&self) -> &[f64] {
        match self.action_kind() {
            ActionKind::Threshold => &self.file.env.threshold_levels,
            ActionKind::Bid => &self.file.env.bid_levels,
        }
    }

    /// The index of the action level `value` (a threshold or a bid factor), if it is one: the
    /// one lookup every level written as a number (a config, a policy spec, an agent's reply)
    /// goes through. Levels are compared within 1e-9, so `0.3` finds the level `0.1 * 3`.
    pub fn level_index(&self, value: f64) -> Option<usize> {
        level_index(self.action_levels(), value)
    }
}

#[cfg(test)]
mod tests;

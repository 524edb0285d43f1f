//! A Gavel world's config file (`env.world = "gavel"`): the cluster, the jobs (a trace in
//! Gavel's format or Gavel's generator), the mechanism, the levels. Read raw with
//! `deny_unknown_fields`, then checked into a [`Resolved`] world description.

use super::data::{read_trace, Generator, Job, Table, MAX_JOBS};
use crate::config::{ActionKind, ConfigError, Leftovers};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The whole file. `[learner]` and `[train]` belong to `agents` and are kept as they are.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GavelFile {
    /// Root seed: generated jobs and every policy's draws come from it.
    #[serde(default = "one")]
    pub seed: u64,
    /// The world.
    pub env: GavelEnv,
    /// The mechanism.
    #[serde(default)]
    pub mechanism: GavelMechanism,
    /// `[learner]` (read by `agents`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub learner: Option<toml::Table>,
    /// `[train]` (read by `agents`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train: Option<toml::Table>,
}

fn one() -> u64 {
    1
}

/// `[env]` of a Gavel world.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GavelEnv {
    /// `"gavel"`.
    pub world: String,
    /// Gavel's throughput table (CSV: `job_type`, `scale_factor`, a column per GPU type);
    /// relative to the config file's folder.
    pub throughputs: String,
    /// A trace in Gavel's format (relative to the config file's folder), or `generate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Jobs from Gavel's generator instead of a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate: Option<Generate>,
    /// GPUs by type, in the order a round visits them (Gavel's: v100, p100, k80).
    pub cluster: Vec<GpuGroup>,
    /// Seconds per round (Gavel's 360).
    #[serde(default = "round_seconds")]
    pub round_seconds: f64,
    /// Job ids measured, `[first, end)` (Gavel's measurement window; the episode ends when
    /// they have all finished). Default: every job of the trace (or of `generate.jobs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<[u64; 2]>,
    /// Rounds after which an episode is cut short (truncated).
    #[serde(default = "max_rounds")]
    pub max_rounds: u64,
    /// Compute rho (each job's completion time over its time under `isolated` on the same
    /// jobs): one more simulation per episode.
    #[serde(default = "yes")]
    pub rho: bool,
    /// Threshold levels (MTF).
    #[serde(default = "threshold_levels")]
    pub threshold_levels: Vec<f64>,
    /// Bid factors (the auctions).
    #[serde(default = "bid_levels")]
    pub bid_levels: Vec<f64>,
    /// What a job is paid each round: its own time in the system, or the cluster's.
    #[serde(default, skip_serializing_if = "GavelReward::is_own")]
    pub reward: GavelReward,
}

/// A job's reward each round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GavelReward {
    /// Minus the hours it spent in the system during the round: its return is minus its
    /// completion time, what a selfish job minimises.
    #[default]
    Own,
    /// Minus the hours every job present spent in the system during the round, over the GPUs
    /// there are, paid to every job present: what the cluster's average completion time counts
    /// (by Little's law, the jobs present over time), the same for all.
    Welfare,
}

impl GavelReward {
    fn is_own(&self) -> bool {
        *self == GavelReward::Own
    }
}

/// One type of GPU in the cluster.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuGroup {
    /// Its column in the throughput table.
    #[serde(rename = "type")]
    pub kind: String,
    /// How many.
    pub count: usize,
}

/// `[env.generate]`: Gavel's job generator ([`Generator`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Generate {
    /// Arrival rate in jobs per hour (0: every job at time 0, a static trace).
    pub rate: f64,
    /// Jobs generated at most.
    pub jobs: u64,
    /// Multi-GPU jobs (scale factors 1/2/4/8 with probability 0.7/0.1/0.15/0.05).
    #[serde(default)]
    pub multi_gpu: bool,
}

/// `[mechanism]` of a Gavel world.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GavelMechanism {
    /// A mechanism of `scheduler::registry`: Gavel's policies, or MTF, the auctions and the
    /// baselines with jobs as agents.
    #[serde(default = "default_mechanism")]
    pub name: String,
    /// The seed of Gavel's own draws (its agnostic policies replay `random.Random(seed)`).
    #[serde(default)]
    pub gavel_seed: u64,
    /// Tokens a job brings, times its priority weight (MTF and the auctions): it arrives with
    /// them, spends them, receives its weight's share of what others spend while present,
    /// and takes what it holds when it finishes.
    #[serde(default = "tokens")]
    pub tokens_per_job: f64,
    /// The free phase of MTF and the auctions.
    #[serde(default)]
    pub leftovers: Leftovers,
}

impl Default for GavelMechanism {
    fn default() -> Self {
        Self {
            name: default_mechanism(),
            gavel_seed: 0,
            tokens_per_job: tokens(),
            leftovers: Leftovers::default(),
        }
    }
}

fn default_mechanism() -> String {
    "max_min_fairness_perf".into()
}
fn tokens() -> f64 {
    100.0
}
fn round_seconds() -> f64 {
    360.0
}
fn max_rounds() -> u64 {
    10_000_000
}
fn yes() -> bool {
    true
}
fn threshold_levels() -> Vec<f64> {
    (0..10).map(|k| f64::from(k) / 10.0).collect()
}
fn bid_levels() -> Vec<f64> {
    (0..=30).map(|k| f64::from(k) * 0.05).collect()
}

/// Where a Gavel world's jobs come from.
#[derive(Clone, Debug)]
pub enum Jobs {
    /// A trace, read once and shared by every copy of the world.
    Trace(Arc<Vec<Job>>),
    /// Gavel's generator: this many jobs at most.
    Generated {
        /// Jobs per hour.
        rate: f64,
        /// Jobs at most.
        jobs: u64,
        /// Multi-GPU jobs.
        multi_gpu: bool,
    },
}

/// A checked Gavel world description.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// The file as read (paths as written).
    pub file: GavelFile,
    /// The throughput table over the cluster's types.
    pub table: Arc<Table>,
    /// Jobs.
    pub jobs: Jobs,
    /// Each GPU's type (index into the cluster's types).
    pub gpu_types: Vec<usize>,
    /// The action levels and what they set.
    pub levels: Vec<f64>,
    /// Thresholds (MTF) or bid factors (the auctions).
    pub kind: ActionKind,
    /// The measured ids, `[first, end)`.
    pub window: (u64, u64),
}

/// Most GPUs in a cluster.
pub const MAX_GPUS: usize = 100_000;

impl GavelFile {
    /// Check a file read from `path` and load its table and trace. The paths it names are
    /// made absolute in the resolved file, so a run directory's copy of it replays the same
    /// files from anywhere.
    pub fn resolve(mut self, path: &Path) -> Result<Resolved, ConfigError> {
        let file_name = path.display().to_string();
        let err = |key: &str, problem: String| ConfigError {
            file: file_name.clone(),
            key: key.into(),
            problem,
        };
        let e = &self.env;
        check_cluster(e, &err)?;
        let (levels, kind) = levels(e, &self.mechanism.name, &err)?;
        let m = &self.mechanism;
        check_mechanism(m, &err)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let at = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_relative() {
                dir.join(p)
            } else {
                p.to_path_buf()
            }
        };
        let types: Vec<String> = e.cluster.iter().map(|g| g.kind.clone()).collect();
        let table = Table::read(&at(&e.throughputs), &types)?;
        let absolute = |p: PathBuf| std::fs::canonicalize(&p).unwrap_or(p).display().to_string();
        let (throughputs, trace) = (absolute(at(&e.throughputs)), e.trace.as_deref().map(|t| absolute(at(t))));
        let jobs = jobs(e, &m.name, &table, &at, &err)?;
        let total = match &jobs {
            Jobs::Trace(t) => t.len() as u64,
            Jobs::Generated { jobs, .. } => *jobs,
        };
        let window = match e.window {
            None => (0, total),
            Some([a, b]) if a < b && b <= total => (a, b),
            Some([a, b]) => {
                return Err(err(
                    "env.window",
                    format!("[{a}, {b}] is not a range of job ids within the {total} jobs ([first, end), first < end)"),
                ));
            }
        };
        let gpu_types = e
            .cluster
            .iter()
            .enumerate()
            .flat_map(|(k, g)| std::iter::repeat_n(k, g.count))
            .collect();
        self.env.throughputs = throughputs;
        self.env.trace = trace;
        Ok(Resolved {
            file: self,
            table: Arc::new(table),
            jobs,
            gpu_types,
            levels,
            kind,
            window,
        })
    }
}

/// A config check's error: `err(key, problem)` names the file.
type ErrorIn<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

/// The world's name, the cluster (each type once, 1 to [`MAX_GPUS`] GPUs in all), the round's
/// length and the episode's cap.
fn check_cluster(e: &GavelEnv, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
    if e.world != "gavel" {
        return Err(err("env.world", format!("expected \"gavel\", got \"{}\"", e.world)));
    }
    if e.cluster.is_empty() {
        return Err(err("env.cluster", "needs at least one GPU type".into()));
    }
    let mut gpus = 0usize;
    for (k, g) in e.cluster.iter().enumerate() {
        if g.count == 0 || g.count > MAX_GPUS {
            return Err(err(
                &format!("env.cluster[{k}].count"),
                format!("must be in [1, {MAX_GPUS}], got {}", g.count),
            ));
        }
        if e.cluster[..k].iter().any(|h| h.kind == g.kind) {
            return Err(err(&format!("env.cluster[{k}].type"), format!("`{}` is listed twice", g.kind)));
        }
        gpus += g.count;
    }
    if gpus > MAX_GPUS {
        return Err(err("env.cluster", format!("{gpus} GPUs, more than {MAX_GPUS}")));
    }
    if !(e.round_seconds.is_finite() && (1.0..=1e6).contains(&e.round_seconds)) {
        return Err(err(
            "env.round_seconds",
            format!("must be in [1, 1e6] seconds, got {}", e.round_seconds),
        ));
    }
    if !(1..=1_000_000_000).contains(&e.max_rounds) {
        return Err(err("env.max_rounds", format!("must be in [1, 1e9], got {}", e.max_rounds)));
    }
    Ok(())
}

/// The levels an action sets under `mechanism` (bid factors under an auction, else
/// thresholds), checked.
fn levels(e: &GavelEnv, mechanism: &str, err: &ErrorIn<'_>) -> Result<(Vec<f64>, ActionKind), ConfigError> {
    let (levels, kind) = if scheduler::registry::takes_bids(mechanism) {
        (e.bid_levels.clone(), ActionKind::Bid)
    } else {
        (e.threshold_levels.clone(), ActionKind::Threshold)
    };
    let (key, max) = match kind {
        ActionKind::Bid => ("env.bid_levels", crate::config::limits::MAX_BID_FACTOR),
        ActionKind::Threshold => ("env.threshold_levels", 1.0),
    };
    if levels.is_empty() || levels.len() > crate::config::limits::MAX_LEVELS {
        return Err(err(
            key,
            format!("needs 1 to {} levels, got {}", crate::config::limits::MAX_LEVELS, levels.len()),
        ));
    }
    if let Some(k) = levels.iter().position(|x| !(x.is_finite() && (0.0..=max).contains(x))) {
        return Err(err(&format!("{key}[{k}]"), format!("must be in [0, {max}], got {}", levels[k])));
    }
    Ok((levels, kind))
}

/// A mechanism of the registry that keeps no state per agent index (jobs come and go), and
/// its tokens per job.
fn check_mechanism(m: &GavelMechanism, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
    if scheduler::registry::build(&m.name, &scheduler::registry::Params::default()).is_err() {
        return Err(err(
            "mechanism.name",
            format!("unknown mechanism `{}` (known: {})", m.name, scheduler::registry::NAMES.join(", ")),
        ));
    }
    if m.name == "static_partition" || m.name == "stride_per_accelerator" {
        return Err(err(
            "mechanism.name",
            format!(
                "`{}` keeps state per agent index, and jobs come and go: not for a Gavel world",
                m.name
            ),
        ));
    }
    if !(m.tokens_per_job.is_finite() && (1.0..=1e9).contains(&m.tokens_per_job)) {
        return Err(err(
            "mechanism.tokens_per_job",
            format!("must be in [1, 1e9], got {}", m.tokens_per_job),
        ));
    }
    Ok(())
}

/// The jobs: a trace in Gavel's format (`at` resolves its path; multi-GPU jobs only under
/// Gavel's policies and where a type has the GPUs), or the generator's parameters.
fn jobs(e: &GavelEnv, mechanism: &str, table: &Table, at: &dyn Fn(&str) -> PathBuf, err: &ErrorIn<'_>) -> Result<Jobs, ConfigError> {
    let gavel = scheduler::gavel::is_gavel(mechanism);
    match (&e.trace, &e.generate) {
        (Some(_), Some(_)) => Err(err("env.generate", "give either env.trace or env.generate, not both".into())),
        (None, None) => Err(err("env.trace", "give a trace in Gavel's format, or env.generate".into())),
        (Some(t), None) => {
            let jobs = read_trace(&at(t), table)?;
            if let Some(k) = jobs.iter().position(|j| j.scale > 1) {
                if !gavel {
                    return Err(err(
                        "env.trace",
                        format!(
                            "job {k} runs on {} GPUs at once; `{mechanism}` cannot place a job on several GPUs (Gavel's policies can)",
                            jobs[k].scale
                        ),
                    ));
                }
            }
            let most = jobs.iter().map(|j| j.scale as usize).max().unwrap_or(1);
            if let Some(g) = e.cluster.iter().map(|g| g.count).max().filter(|&c| c < most) {
                return Err(err(
                    "env.cluster",
                    format!("a job needs {most} GPUs of one type at once; the largest type has {g}"),
                ));
            }
            Ok(Jobs::Trace(Arc::new(jobs)))
        }
        (None, Some(g)) => {
            if !(g.rate.is_finite() && (0.0..=1e6).contains(&g.rate)) {
                return Err(err(
                    "env.generate.rate",
                    format!("must be in [0, 1e6] jobs per hour, got {}", g.rate),
                ));
            }
            if !(1..=MAX_JOBS as u64).contains(&g.jobs) {
                return Err(err("env.generate.jobs", format!("must be in [1, {MAX_JOBS}], got {}", g.jobs)));
            }
            if g.multi_gpu && !gavel {
                return Err(err(
                    "env.generate.multi_gpu",
                    format!("`{mechanism}` cannot place a job on several GPUs (Gavel's policies can)"),
                ));
            }
            if g.multi_gpu && e.cluster.iter().map(|g| g.count).max().unwrap_or(0) < 8 {
                return Err(err("env.cluster", "multi-GPU jobs need up to 8 GPUs of one type at once".into()));
            }
            let _ = Generator::new(table, g.rate, g.multi_gpu, 0);
            if !table.rows.iter().any(|r| r.scale == 1 && r.tput[0] > 0.0) {
                return Err(err("env.throughputs", "no single-GPU job type to generate".into()));
            }
            Ok(Jobs::Generated {
                rate: g.rate,
                jobs: g.jobs,
                multi_gpu: g.multi_gpu,
            })
        }
    }
}

//! `mtf_env._native`: the Rust environment behind the `mtf_env` Python package.
//!
//! `mtf_env/__init__.py` builds the Python-facing API on:
//! - [`worlds::WorldEnv`]: one environment of any world (`env::worlds::World`: the queue and
//!   valuation worlds, the market, Gavel's GPU cluster, the toy bandit), the engine of the one
//!   `ParallelEnv` adapter (`WorldParallelEnv`; `MtfParallelEnv` and `MarketParallelEnv` are it);
//! - [`vector::WorldVecEnv`]: `num_envs` copies of any world stepped in parallel with the GIL
//!   released, NumPy arrays in and out, auto-reset at an episode's end (the one batched
//!   adapter, over the trait; the queue world's own engine went in issue 38);
//! - [`schedule`]: one mechanism round, JSON in and out, exactly `mtf schedule`.
//!
//! Every error is a `ValueError` carrying the Rust error's message: nothing here panics on
//! user input, so a bad config or action never takes the interpreter down.

mod vector;
mod worlds;

use env::config::{Scenario, ScenarioFile};
use env::rng::copy_seed;
use env::world::ClusterEnv;
use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray2, PyArray3};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, TryLockError};

fn value_error(msg: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(msg.to_string())
}

/// Peak bytes per (agent, accelerator) cell of an environment copy (`agents::train::memory`'s
/// measured figure: rates, utilities, the round's input and its pending copy).
const BYTES_PER_CELL: u128 = 48;

/// A batch of `num_envs` copies, each with `cells` (agent, accelerator) cells and `n` agents of
/// `dim` features, refused before anything is allocated when it cannot fit: past mtf's cell
/// limit a `ValueError`, past the machine's available memory a `MemoryError` (an allocation
/// failure would abort the interpreter instead).
pub(crate) fn check_batch(num_envs: usize, n: usize, cells: usize, dim: usize) -> PyResult<()> {
    let all = (num_envs as u128) * (cells as u128);
    let limit = env::config::limits::MAX_CELLS as u128;
    if all > limit {
        return Err(value_error(format!(
            "num_envs x agents x accelerators = {num_envs} x {cells} = {all} cells, more than the limit of {limit}: fewer copies"
        )));
    }
    // The copies, observations and final observations (f32), rewards, flags and infos, and
    // the records of an ended episode's last round (about 450 bytes an agent, every copy's at
    // once in the queue world, whose copies all end on the same round).
    let bytes = all * BYTES_PER_CELL + (num_envs as u128) * (n as u128) * ((dim as u128) * 8 + 96 + 512);
    if let Some(available) = available_memory() {
        if bytes > u128::from(available) {
            return Err(pyo3::exceptions::PyMemoryError::new_err(format!(
                "{num_envs} copies need about {:.1} GiB, and {:.1} GiB are available: fewer copies",
                bytes as f64 / (1u64 << 30) as f64,
                available as f64 / (1u64 << 30) as f64
            )));
        }
    }
    Ok(())
}

/// The machine's available memory (`MemAvailable` in /proc/meminfo), when it says.
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

fn load(config: &str, overrides: Vec<String>) -> PyResult<Scenario> {
    ScenarioFile::load(Path::new(config), &overrides).map_err(value_error)
}

/// What a scenario looks like from outside (`Env.spec`, `VecEnv.spec`).
#[pyclass(module = "mtf_env._native", frozen, get_all)]
#[derive(Clone)]
struct Shape {
    /// Agent names, in the order of every per-agent array.
    agents: Vec<String>,
    /// Features per observation.
    dim: usize,
    /// The value of each action (a threshold, or a bid factor in the auctions).
    levels: Vec<f64>,
    /// What an action sets: "threshold" or "bid".
    kind: &'static str,
    /// Bounds of an observation (`high` may be infinite).
    low: Vec<f32>,
    high: Vec<f32>,
    /// Rounds per episode (every episode ends by truncation after them).
    rounds: u32,
    /// Each agent's weight, as configured.
    weights: Vec<f64>,
}

fn obs_array<'py>(py: Python<'py>, data: &[f32], rows: usize, dim: usize) -> Bound<'py, PyArray2<f32>> {
    Array2::from_shape_vec((rows, dim), data.to_vec())
        .expect("observation buffer is rows x dim")
        .into_pyarray(py)
}

/// A batch's lock, refused instead of awaited when another thread holds it ([`VecEnv::batch`]).
fn try_batch<T>(m: &Mutex<T>) -> PyResult<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Ok(g),
        Err(TryLockError::WouldBlock) => Err(pyo3::exceptions::PyRuntimeError::new_err(
            "this VecEnv is in use by another thread: step it from one thread at a time (or give each thread its own)",
        )),
        Err(TryLockError::Poisoned(e)) => Err(value_error(e)),
    }
}

/// A batched environment's `num_envs` and `threads`, checked (one message for both engines).
fn check_copies(num_envs: usize, threads: Option<usize>) -> PyResult<()> {
    if num_envs == 0 || num_envs > 65_536 {
        return Err(value_error(format!("num_envs is {num_envs}, expected 1 to 65536")));
    }
    if threads == Some(0) {
        return Err(value_error("threads is 0, expected at least 1 (or None for one per core)"));
    }
    Ok(())
}

fn array3<'py>(py: Python<'py>, data: &[f32], e: usize, n: usize, d: usize) -> Bound<'py, PyArray3<f32>> {
    Array3::from_shape_vec((e, n, d), data.to_vec())
        .expect("buffer is copies x agents x features")
        .into_pyarray(py)
}

/// One round of `mechanism` on a SPEC 3 round (JSON text): the JSON `mtf schedule` prints.
#[pyfunction]
#[pyo3(signature = (mechanism, round_json, fairness = None))]
fn schedule(mechanism: &str, round_json: &str, fairness: Option<f64>) -> PyResult<String> {
    scheduler::json::schedule_json(mechanism, round_json, fairness).map_err(value_error)
}

/// Step one environment `rounds` times at level `level` in Rust alone (the speed benchmark's
/// reference: the environment's own rounds per second, no Python in the loop). Returns the
/// seconds it took.
#[pyfunction]
#[pyo3(signature = (config, overrides, rounds, level = 0))]
fn bench_rust(py: Python<'_>, config: &str, overrides: Vec<String>, rounds: u64, level: usize) -> PyResult<f64> {
    let mut world = ClusterEnv::new(load(config, overrides)?);
    world.set_recording(false);
    let actions = vec![level; world.n()];
    py.detach(|| {
        let t = std::time::Instant::now();
        let mut episode = 0;
        world.reset(copy_seed(1, 0, episode));
        for _ in 0..rounds {
            let s = world.step(&actions).map_err(value_error)?;
            if s.truncations.iter().any(|&t| t) {
                episode += 1;
                world.reset(copy_seed(1, 0, episode));
            }
        }
        Ok(t.elapsed().as_secs_f64())
    })
}

/// A batch of level indices `[num_envs, n_agents]`, checked before any copy steps.
fn batch_actions(a: numpy::ndarray::ArrayView2<'_, i64>, e: usize, n: usize, levels: usize) -> PyResult<Vec<usize>> {
    if a.shape() != [e, n] {
        return Err(value_error(format!(
            "actions have shape {:?}, expected [num_envs, n_agents] = [{e}, {n}]",
            a.shape()
        )));
    }
    if let Some(((k, i), &x)) = a.indexed_iter().find(|(_, &x)| x < 0 || x as u64 >= levels as u64) {
        return Err(value_error(format!("env {k}, agent {i}: action {x} is outside Discrete({levels})")));
    }
    Ok(a.iter().map(|&x| x as usize).collect())
}

/// The seed episode `episode` of copy `copy` plays after a reset with `seed` (copy 0's first
/// episode plays `seed` itself; later episodes follow from a copy's first seed).
#[pyfunction]
fn episode_seed(seed: u64, copy: u64, episode: u64) -> u64 {
    copy_seed(seed, copy, episode)
}

/// `mtf_env._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Shape>()?;
    m.add_class::<vector::WorldVecEnv>()?;
    m.add_class::<worlds::WorldShape>()?;
    m.add_class::<worlds::WorldEnv>()?;
    m.add_function(wrap_pyfunction!(worlds::is_seam_world, m)?)?;
    m.add_function(wrap_pyfunction!(worlds::world_name, m)?)?;
    m.add_function(wrap_pyfunction!(schedule, m)?)?;
    m.add_function(wrap_pyfunction!(bench_rust, m)?)?;
    m.add_function(wrap_pyfunction!(episode_seed, m)?)?;
    Ok(())
}

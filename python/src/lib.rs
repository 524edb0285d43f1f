//! `mtf_env._native`: the Rust environment behind the `mtf_env` Python package.
//!
//! `mtf_env/__init__.py` builds the Python-facing API on:
//! - [`worlds::WorldEnv`]: one environment of any world (`env::worlds::World`: the queue and
//!   valuation worlds, the market, Gavel's GPU cluster, the toy bandit), the engine of the one
//!   `ParallelEnv` adapter (`WorldParallelEnv`; `MtfParallelEnv` and `MarketParallelEnv` are it);
//! - [`VecEnv`]: `num_envs` copies of the queue world stepped in parallel with the GIL released,
//!   NumPy arrays in and out, auto-reset on truncation ([`vector::WorldVecEnv`] for every other
//!   world, over the trait);
//! - [`schedule`]: one mechanism round, JSON in and out, exactly `mtf schedule`.
//!
//! Every error is a `ValueError` carrying the Rust error's message: nothing here panics on
//! user input, so a bad config or action never takes the interpreter down.

mod vector;
mod worlds;

use env::config::{Scenario, ScenarioFile};
use env::rng::copy_seed;
use env::world::{ClusterEnv, Info};
use numpy::ndarray::{Array2, Array3};
use numpy::{IntoPyArray, PyArray2, PyArray3, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;
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
    // The copies, observations and final observations (f32), rewards, flags and infos.
    let bytes = all * BYTES_PER_CELL + (num_envs as u128) * (n as u128) * ((dim as u128) * 8 + 96);
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

impl Shape {
    fn of(world: &ClusterEnv) -> Self {
        let space = world.observation_space(0);
        Shape {
            agents: world.possible_agents().to_vec(),
            dim: space.dim(),
            levels: world.levels().to_vec(),
            kind: world.action_kind().as_str(),
            low: space.low,
            high: space.high,
            rounds: world.scenario().file.env.rounds,
            weights: world.scenario().agents.iter().map(|a| a.weight).collect(),
        }
    }
}

fn obs_array<'py>(py: Python<'py>, data: &[f32], rows: usize, dim: usize) -> Bound<'py, PyArray2<f32>> {
    Array2::from_shape_vec((rows, dim), data.to_vec())
        .expect("observation buffer is rows x dim")
        .into_pyarray(py)
}

/// `num_envs` environment copies stepped in parallel (the batched API's engine).
#[pyclass(module = "mtf_env._native")]
struct VecEnv {
    inner: Mutex<Batch>,
    shape: Shape,
    pool: rayon::ThreadPool,
}

impl VecEnv {
    /// The batch, if no other thread is using it. `reset` and `step` release the GIL while
    /// they hold the batch: a second thread that waited for the batch holding the GIL would
    /// keep the first from taking the GIL back (both hang), so it is refused instead.
    fn batch(&self) -> PyResult<MutexGuard<'_, Batch>> {
        try_batch(&self.inner)
    }
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

/// The copies and their buffers, `[copy][agent][feature]` row-major.
struct Batch {
    copies: Vec<Slot>,
    n: usize,
    dim: usize,
    obs: Vec<f32>,
    final_obs: Vec<f32>,
    rewards: Vec<f64>,
    truncations: Vec<bool>,
    infos: Vec<Info>,
    seeded: bool,
}

struct Slot {
    world: ClusterEnv,
    /// The batch's root seed and this copy's episode count: its next seed is
    /// `copy_seed(root, index, episode)`.
    root: u64,
    index: u64,
    episode: u64,
}

impl Slot {
    fn reset_into(&mut self, obs: &mut [f32], infos: &mut [Info]) {
        let seed = copy_seed(self.root, self.index, self.episode);
        self.episode += 1;
        let (o, inf) = self.world.reset(seed);
        obs.copy_from_slice(o.data);
        infos.copy_from_slice(inf);
    }
}

/// One copy's slice of every buffer.
struct Rows<'a> {
    obs: &'a mut [f32],
    final_obs: &'a mut [f32],
    rewards: &'a mut [f64],
    truncations: &'a mut [bool],
    infos: &'a mut [Info],
}

impl Batch {
    /// Run `f(copy index, copy, its rows)` on every copy: on the pool when it has several
    /// threads and there are several copies, else on the calling thread (handing work to a
    /// pool costs a cross-thread wake-up, tens of microseconds a step). Each copy only
    /// touches its own rows, so the result is the same either way.
    fn each<F>(&mut self, pool: &rayon::ThreadPool, f: F)
    where
        F: Fn(usize, &mut Slot, Rows<'_>) + Sync + Send,
    {
        let (n, d) = (self.n, self.dim);
        let Batch {
            copies,
            obs,
            final_obs,
            rewards,
            truncations,
            infos,
            ..
        } = self;
        macro_rules! rows {
            ($chunks:ident) => {
                obs.$chunks(n * d)
                    .zip(final_obs.$chunks(n * d))
                    .zip(rewards.$chunks(n))
                    .zip(truncations.$chunks(n))
                    .zip(infos.$chunks(n))
                    .map(|((((obs, final_obs), rewards), truncations), infos)| Rows {
                        obs,
                        final_obs,
                        rewards,
                        truncations,
                        infos,
                    })
            };
        }
        if pool.current_num_threads() == 1 || copies.len() == 1 {
            let rows = rows!(chunks_mut);
            copies.iter_mut().zip(rows).enumerate().for_each(|(k, (c, r))| f(k, c, r));
        } else {
            pool.install(|| {
                let rows = rows!(par_chunks_mut);
                copies.par_iter_mut().zip(rows).enumerate().for_each(|(k, (c, r))| f(k, c, r))
            });
        }
    }
}

/// Every info field as an array `[num_envs, n_agents]`.
fn info_arrays<'py>(py: Python<'py>, b: &Batch) -> PyResult<Bound<'py, PyDict>> {
    let (e, n) = (b.copies.len(), b.n);
    let d = PyDict::new(py);
    macro_rules! field {
        ($name:literal, $f:expr) => {
            d.set_item(
                $name,
                Array2::from_shape_vec((e, n), b.infos.iter().map($f).collect())
                    .expect("infos are copies x agents")
                    .into_pyarray(py),
            )?;
        };
    }
    field!("arrived", |x: &Info| x.arrived);
    field!("rejected", |x: &Info| x.rejected);
    field!("dropped", |x: &Info| x.dropped);
    field!("served", |x: &Info| x.served);
    field!("backlog", |x: &Info| x.backlog);
    field!("won", |x: &Info| x.won);
    field!("spent", |x: &Info| x.spent);
    field!("budget", |x: &Info| x.budget);
    field!("level", |x: &Info| x.threshold);
    Ok(d)
}

type StepArrays<'py> = (
    Bound<'py, PyArray3<f32>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<bool>>,
    Bound<'py, PyArray2<bool>>,
);

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

#[pymethods]
impl VecEnv {
    #[new]
    #[pyo3(signature = (config, num_envs, overrides = Vec::new(), threads = None))]
    fn new(config: &str, num_envs: usize, overrides: Vec<String>, threads: Option<usize>) -> PyResult<Self> {
        check_copies(num_envs, threads)?;
        let sc = load(config, overrides)?;
        check_batch(num_envs, sc.n(), sc.n().saturating_mul(sc.m()), env::world::observation_dim(&sc))?;
        let copies: Vec<Slot> = (0..num_envs)
            .map(|k| {
                let mut world = ClusterEnv::new(sc.clone());
                // The episode logs only feed the fairness replays of `mtf`'s metrics.
                world.set_recording(false);
                Slot {
                    world,
                    root: 0,
                    index: k as u64,
                    episode: 0,
                }
            })
            .collect();
        let shape = Shape::of(&copies[0].world);
        let n = shape.agents.len();
        let dim = shape.dim;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(0))
            .build()
            .map_err(value_error)?;
        Ok(VecEnv {
            inner: Mutex::new(Batch {
                obs: vec![0.0; num_envs * n * dim],
                final_obs: vec![0.0; num_envs * n * dim],
                rewards: vec![0.0; num_envs * n],
                truncations: vec![false; num_envs * n],
                infos: vec![Info::default(); num_envs * n],
                copies,
                n,
                dim,
                seeded: false,
            }),
            shape,
            pool,
        })
    }

    /// The scenario's agents, spaces and episode length.
    #[getter]
    fn spec(&self) -> Shape {
        self.shape.clone()
    }

    /// Number of environment copies.
    #[getter]
    fn num_envs(&self) -> PyResult<usize> {
        Ok(self.batch()?.copies.len())
    }

    /// Reset every copy from the root seed (copy k, episode e plays `copy_seed(seed, k, e)`):
    /// observations `[num_envs, n_agents, obs_dim]`.
    fn reset<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let mut guard = self.batch()?;
        let b = &mut *guard;
        py.detach(|| {
            b.each(&self.pool, |_, c, r| {
                c.root = seed;
                c.episode = 0;
                c.reset_into(r.obs, r.infos);
                r.truncations.fill(false);
            })
        });
        b.seeded = true;
        Ok(array3(py, &b.obs, b.copies.len(), b.n, b.dim))
    }

    /// Play one round in every copy: `(obs, rewards, terminations, truncations)`. A copy
    /// whose episode ends is reset at once (its next seed); the observation it ended on is
    /// in `final_obs`. Actions are checked before any copy steps, so a bad batch changes
    /// nothing.
    fn step<'py>(&self, py: Python<'py>, actions: PyReadonlyArray2<'py, i64>) -> PyResult<StepArrays<'py>> {
        let mut guard = self.batch()?;
        let b = &mut *guard;
        if !b.seeded {
            return Err(value_error("step before reset: call reset(seed) first"));
        }
        let (e, n, levels) = (b.copies.len(), b.n, self.shape.levels.len());
        let acts = batch_actions(actions.as_array(), e, n, levels)?;
        py.detach(|| {
            b.each(&self.pool, |k, c, r| {
                let s = c
                    .world
                    .step(&acts[k * n..(k + 1) * n])
                    .expect("actions checked, copies reset at truncation");
                r.rewards.copy_from_slice(s.rewards);
                r.truncations.copy_from_slice(s.truncations);
                r.infos.copy_from_slice(s.infos);
                r.obs.copy_from_slice(s.observations.data);
                if s.truncations.iter().any(|&t| t) {
                    r.final_obs.copy_from_slice(r.obs);
                    let mut scratch = vec![Info::default(); n];
                    c.reset_into(r.obs, &mut scratch);
                }
            })
        });
        let (e, n, d) = (b.copies.len(), b.n, b.dim);
        Ok((
            array3(py, &b.obs, e, n, d),
            Array2::from_shape_vec((e, n), b.rewards.clone())
                .expect("rewards are copies x agents")
                .into_pyarray(py),
            Array2::from_elem((e, n), false).into_pyarray(py),
            Array2::from_shape_vec((e, n), b.truncations.clone())
                .expect("truncations are copies x agents")
                .into_pyarray(py),
        ))
    }

    /// For each copy whose episode ended in the last step, the observation it ended on
    /// `[num_envs, n_agents, obs_dim]` (other rows: an earlier episode's, or zeros).
    #[getter]
    fn final_obs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let b = self.batch()?;
        Ok(array3(py, &b.final_obs, b.copies.len(), b.n, b.dim))
    }

    /// The last step's round record, one `[num_envs, n_agents]` array per field (arrived,
    /// rejected, dropped, served, backlog, won, spent, budget, level).
    fn infos<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = self.batch()?;
        info_arrays(py, &b)
    }
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
    m.add_class::<VecEnv>()?;
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

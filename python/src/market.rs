//! The market world (`env.world = "market"`) from Python: [`MarketVecEnv`], market copies
//! stepped in parallel (its `ParallelEnv` is the one adapter, `worlds::WorldEnv`).

use crate::{batch_actions, check_batch, value_error, Shape};
use env::market::game::{action_levels, MarketGame};
use env::market::MarketFile;
use numpy::{IntoPyArray, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::Mutex;

/// Whether `config` is a market file (`env.world = "market"`).
#[pyfunction]
pub(crate) fn is_market_file(config: &str) -> bool {
    env::market::is_market_file(Path::new(config))
}

/// One market copy of a [`MarketVecEnv`] and its seed sequence.
struct MarketSlot {
    game: MarketGame,
    root: u64,
    index: u64,
    episode: u64,
}

impl MarketSlot {
    fn reset(&mut self) {
        let seed = env::rng::copy_seed(self.root, self.index, self.episode);
        self.episode += 1;
        self.game.reset(seed);
    }
}

/// The copies and their buffers, `[copy][agent](feature)` row-major.
struct MarketBatch {
    copies: Vec<MarketSlot>,
    n: usize,
    dim: usize,
    obs: Vec<f32>,
    final_obs: Vec<f32>,
    rewards: Vec<f64>,
    terminations: Vec<bool>,
    truncations: Vec<bool>,
    seeded: bool,
}

/// `num_envs` market copies stepped in parallel, the GIL released (the batched API's engine
/// for market files).
#[pyclass(module = "mtf_env._native")]
pub(crate) struct MarketVecEnv {
    inner: Mutex<MarketBatch>,
    shape: Shape,
    pool: rayon::ThreadPool,
}

impl MarketVecEnv {
    /// The batch, if no other thread is using it (as [`crate::VecEnv`]'s).
    fn batch(&self) -> PyResult<std::sync::MutexGuard<'_, MarketBatch>> {
        crate::try_batch(&self.inner)
    }
}

type Arrays<'py> = (
    Bound<'py, numpy::PyArray3<f32>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<bool>>,
    Bound<'py, PyArray2<bool>>,
);

fn grid<'py, T: numpy::Element + Clone>(py: Python<'py>, data: &[T], e: usize, n: usize) -> Bound<'py, PyArray2<T>> {
    numpy::ndarray::Array2::from_shape_vec((e, n), data.to_vec())
        .expect("copies x agents")
        .into_pyarray(py)
}

fn cube<'py>(py: Python<'py>, data: &[f32], e: usize, n: usize, d: usize) -> Bound<'py, numpy::PyArray3<f32>> {
    numpy::ndarray::Array3::from_shape_vec((e, n, d), data.to_vec())
        .expect("copies x agents x features")
        .into_pyarray(py)
}

#[pymethods]
impl MarketVecEnv {
    #[new]
    #[pyo3(signature = (config, num_envs, overrides = Vec::new(), threads = None))]
    fn new(config: &str, num_envs: usize, overrides: Vec<String>, threads: Option<usize>) -> PyResult<Self> {
        if num_envs == 0 || num_envs > 65_536 {
            return Err(value_error(format!("num_envs is {num_envs}, expected 1 to 65536")));
        }
        if threads == Some(0) {
            return Err(value_error("threads is 0, expected at least 1 (or None for one per core)"));
        }
        let raw = MarketFile::load_unexpanded(Path::new(config), &overrides).map_err(value_error)?;
        let levels = action_levels(&raw, config).map_err(value_error)?;
        let game = MarketGame::new(raw, levels);
        let types = game.file().market.types.len();
        let (low, high) = env::market::Market::observe_bounds(types);
        let shape = Shape {
            agents: game.agents().to_vec(),
            dim: game.dim(),
            levels: game.levels().to_vec(),
            kind: game.kind(),
            low,
            high,
            rounds: game.max_rounds(),
            weights: game.weights(),
        };
        let n = shape.agents.len();
        check_batch(num_envs, n, n.saturating_mul(types), shape.dim)?;
        let copies: Vec<MarketSlot> = (0..num_envs)
            .map(|k| MarketSlot {
                game: MarketGame::new(game.raw().clone(), game.levels().to_vec()),
                root: 0,
                index: k as u64,
                episode: 0,
            })
            .collect();
        let (n, dim) = (shape.agents.len(), shape.dim);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(0))
            .build()
            .map_err(value_error)?;
        Ok(Self {
            inner: Mutex::new(MarketBatch {
                copies,
                n,
                dim,
                obs: vec![0.0; num_envs * n * dim],
                final_obs: vec![0.0; num_envs * n * dim],
                rewards: vec![0.0; num_envs * n],
                terminations: vec![false; num_envs * n],
                truncations: vec![false; num_envs * n],
                seeded: false,
            }),
            shape,
            pool,
        })
    }

    /// The market's agents, spaces and most rounds.
    #[getter]
    fn spec(&self) -> Shape {
        self.shape.clone()
    }

    /// Reset every copy (copy k, episode e plays `copy_seed(seed, k, e)`): `[num_envs, n, dim]`.
    fn reset<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<Bound<'py, numpy::PyArray3<f32>>> {
        let mut guard = self.batch()?;
        let b = &mut *guard;
        let (n, d) = (b.n, b.dim);
        py.detach(|| {
            self.pool.install(|| {
                use rayon::prelude::*;
                b.copies.par_iter_mut().zip(b.obs.par_chunks_mut(n * d)).for_each(|(c, o)| {
                    c.root = seed;
                    c.episode = 0;
                    c.reset();
                    o.copy_from_slice(c.game.observations());
                })
            })
        });
        b.seeded = true;
        b.terminations.fill(false);
        b.truncations.fill(false);
        Ok(cube(py, &b.obs, b.copies.len(), n, d))
    }

    /// One round in every copy: `(obs, rewards, terminations, truncations)`, each
    /// `[num_envs, n]` after obs. A copy whose episode is over (its rounds ran out, or every
    /// job finished) is reset at once; `final_obs` holds the observation it ended on. Actions
    /// are checked before any copy steps.
    fn step<'py>(&self, py: Python<'py>, actions: numpy::PyReadonlyArray2<'py, i64>) -> PyResult<Arrays<'py>> {
        let mut guard = self.batch()?;
        let b = &mut *guard;
        if !b.seeded {
            return Err(value_error("step before reset: call reset(seed) first"));
        }
        let (e, n, d, levels) = (b.copies.len(), b.n, b.dim, self.shape.levels.len());
        let acts = batch_actions(actions.as_array(), e, n, levels)?;
        let MarketBatch {
            copies,
            obs,
            final_obs,
            rewards,
            terminations,
            truncations,
            ..
        } = b;
        py.detach(|| {
            self.pool.install(|| {
                use rayon::prelude::*;
                copies
                    .par_iter_mut()
                    .zip(obs.par_chunks_mut(n * d))
                    .zip(final_obs.par_chunks_mut(n * d))
                    .zip(rewards.par_chunks_mut(n))
                    .zip(terminations.par_chunks_mut(n))
                    .zip(truncations.par_chunks_mut(n))
                    .enumerate()
                    .for_each(|(k, (((((c, o), fo), r), te), tr))| {
                        let steps = c
                            .game
                            .step(&acts[k * n..(k + 1) * n])
                            .expect("actions checked, copies reset when over");
                        for (i, s) in steps.iter().enumerate() {
                            r[i] = s.reward;
                            te[i] = s.terminated;
                            tr[i] = s.truncated;
                        }
                        o.copy_from_slice(c.game.observations());
                        if c.game.over() {
                            fo.copy_from_slice(o);
                            c.reset();
                            o.copy_from_slice(c.game.observations());
                        }
                    })
            })
        });
        Ok((
            cube(py, &b.obs, e, n, d),
            grid(py, &b.rewards, e, n),
            grid(py, &b.terminations, e, n),
            grid(py, &b.truncations, e, n),
        ))
    }

    /// For each copy whose episode ended in the last step, the observation it ended on.
    #[getter]
    fn final_obs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, numpy::PyArray3<f32>>> {
        let b = self.batch()?;
        Ok(cube(py, &b.final_obs, b.copies.len(), b.n, b.dim))
    }

    /// Each tenant's utility so far and the level it played last, `[num_envs, n]` each (a copy
    /// reset in the last step: its new episode's, zeros).
    fn infos<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = self.batch()?;
        let (e, n) = (b.copies.len(), b.n);
        let d = PyDict::new(py);
        let utility: Vec<f64> = b.copies.iter().flat_map(|c| c.game.utility().to_vec()).collect();
        let level: Vec<f64> = b.copies.iter().flat_map(|c| c.game.factors().to_vec()).collect();
        d.set_item("utility", grid(py, &utility, e, n))?;
        d.set_item("level", grid(py, &level, e, n))?;
        Ok(d)
    }
}

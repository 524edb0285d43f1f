//! Any world of `env::registry` batched (`mtf_env.VecEnv` on any config file): [`WorldVecEnv`],
//! `num_envs` copies stepped in parallel with the GIL released, over the one world trait (the
//! queue and valuation worlds' own engine was removed in issue 38). Copies keep no per-round
//! logs (`World::set_recording`): a batch reports no episode figures, and a queue-world copy's
//! logs grew with every round of an episode of any length.
//!
//! Rows are agent ids `0..possible`: a live agent's row is its observation; an agent not live
//! (not arrived, or gone) has the world's last observation of it, or a zero row clipped into
//! the layout, reward 0 and its action unread. `terminations` is True in the step an agent
//! leaves, `truncations` for the agents still present when the episode ends; a copy whose
//! episode ended resets at once, `final_obs` holding the rows it ended on.

use crate::{batch_actions, check_batch, try_batch, value_error, Shape};
use env::worlds::{Record, World};
use numpy::{IntoPyArray, PyArray2, PyArray3};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::Mutex;

/// One copy and its seed sequence.
struct Slot {
    world: Box<dyn World>,
    root: u64,
    index: u64,
    episode: u64,
    /// The live agents' rows, their actions, and who acted (reused every round).
    rows: Vec<f32>,
    acting: Vec<usize>,
    acted: Vec<usize>,
    /// Every agent's record of the round that ended the copy's episode in the last step (its
    /// reset replaced the world's own): what `infos()` gives for that step.
    ended: Option<Vec<Record>>,
}

impl Slot {
    fn reset(&mut self) {
        let seed = env::rng::copy_seed(self.root, self.index, self.episode);
        self.episode += 1;
        self.world.reset(seed);
        settle(self.world.as_mut());
    }

    /// Every agent's row into `out` (`possible` rows of `dim`).
    fn fill(&mut self, out: &mut [f32], blank: &[f32]) {
        self.world.observe_every(out, Some(blank), &mut self.rows);
    }
}

/// Play the rounds in which no agent is present (as the `ParallelEnv` does).
fn settle(w: &mut dyn World) {
    crate::worlds::settle(w).expect("a round with nobody present plays");
}

/// The copies and their buffers, `[copy][agent](feature)` row-major.
struct Batch {
    copies: Vec<Slot>,
    n: usize,
    dim: usize,
    obs: Vec<f32>,
    final_obs: Vec<f32>,
    rewards: Vec<f64>,
    terminations: Vec<bool>,
    truncations: Vec<bool>,
    seeded: bool,
}

/// `num_envs` copies of a world stepped in parallel, the GIL released (module docs).
#[pyclass(module = "mtf_env._native")]
pub(crate) struct WorldVecEnv {
    inner: Mutex<Batch>,
    shape: Shape,
    blank: Vec<f32>,
    pool: rayon::ThreadPool,
}

type Arrays<'py> = (
    Bound<'py, PyArray3<f32>>,
    Bound<'py, PyArray2<f64>>,
    Bound<'py, PyArray2<bool>>,
    Bound<'py, PyArray2<bool>>,
);

fn grid<'py, T: numpy::Element + Clone>(py: Python<'py>, data: &[T], e: usize, n: usize) -> Bound<'py, PyArray2<T>> {
    numpy::ndarray::Array2::from_shape_vec((e, n), data.to_vec())
        .expect("copies x agents")
        .into_pyarray(py)
}

#[pymethods]
impl WorldVecEnv {
    #[new]
    #[pyo3(signature = (config, num_envs, overrides = Vec::new(), threads = None))]
    fn new(config: &str, num_envs: usize, overrides: Vec<String>, threads: Option<usize>) -> PyResult<Self> {
        crate::check_copies(num_envs, threads)?;
        let world = env::registry::load(Path::new(config), &overrides).map_err(value_error)?;
        let layout = world.layout().clone();
        let n = world.possible();
        let shape = Shape {
            agents: (0..n).map(|i| world.agent_name(i)).collect(),
            dim: layout.dim(),
            levels: world.levels().to_vec(),
            kind: world.action_kind().as_str(),
            low: layout.low.clone(),
            high: layout.high.clone(),
            rounds: world.max_rounds().unwrap_or(0),
            weights: (0..n).map(|i| world.weight(i)).collect(),
        };
        check_batch(num_envs, n, world.cells(), shape.dim)?;
        let blank = layout.low.iter().zip(&layout.high).map(|(&lo, &hi)| 0f32.clamp(lo, hi)).collect();
        let copies: Vec<Slot> = (0..num_envs)
            .map(|k| Slot {
                world: {
                    let mut w = world.fork();
                    w.set_recording(false);
                    w
                },
                root: 0,
                index: k as u64,
                episode: 0,
                rows: Vec::new(),
                acting: Vec::new(),
                acted: Vec::new(),
                ended: None,
            })
            .collect();
        let dim = shape.dim;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads.unwrap_or(0))
            .build()
            .map_err(value_error)?;
        Ok(Self {
            inner: Mutex::new(Batch {
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
            blank,
            pool,
        })
    }

    /// The world's agents, spaces and most rounds (0 where episodes end otherwise).
    #[getter]
    fn spec(&self) -> Shape {
        self.shape.clone()
    }

    /// Reset every copy (copy k, episode e plays `copy_seed(seed, k, e)`): `[num_envs, n, dim]`.
    fn reset<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let mut guard = try_batch(&self.inner)?;
        let b = &mut *guard;
        let (n, d) = (b.n, b.dim);
        let blank = &self.blank;
        py.detach(|| {
            self.pool.install(|| {
                use rayon::prelude::*;
                b.copies.par_iter_mut().zip(b.obs.par_chunks_mut(n * d)).for_each(|(c, o)| {
                    c.root = seed;
                    c.episode = 0;
                    c.ended = None;
                    c.reset();
                    c.fill(o, blank);
                })
            })
        });
        b.seeded = true;
        b.terminations.fill(false);
        b.truncations.fill(false);
        Ok(crate::array3(py, &b.obs, b.copies.len(), n, d))
    }

    /// One round in every copy: `(obs, rewards, terminations, truncations)`, each
    /// `[num_envs, n]` after obs. A copy whose episode is over is reset at once; `final_obs`
    /// holds the rows it ended on. Actions are checked before any copy steps.
    fn step<'py>(&self, py: Python<'py>, actions: numpy::PyReadonlyArray2<'py, i64>) -> PyResult<Arrays<'py>> {
        let mut guard = try_batch(&self.inner)?;
        let b = &mut *guard;
        if !b.seeded {
            return Err(value_error("step before reset: call reset(seed) first"));
        }
        let (e, n, d, levels) = (b.copies.len(), b.n, b.dim, self.shape.levels.len());
        let acts = batch_actions(actions.as_array(), e, n, levels)?;
        let blank = &self.blank;
        let Batch {
            copies,
            obs,
            final_obs,
            rewards,
            terminations,
            truncations,
            ..
        } = b;
        let one = |k: usize, c: &mut Slot, o: &mut [f32], fo: &mut [f32], r: &mut [f64], te: &mut [bool], tr: &mut [bool]| {
            r.fill(0.0);
            te.fill(false);
            tr.fill(false);
            c.ended = None;
            let a = &acts[k * n..(k + 1) * n];
            c.acting.clear();
            c.acting.extend(c.world.live().iter().map(|&id| a[id]));
            let report = c.world.step(&c.acting).expect("actions checked, copies reset when over");
            c.acted.clear();
            for ((&id, &x), &t) in report.agents.iter().zip(report.rewards).zip(report.terminated) {
                r[id] = x;
                te[id] = t;
                c.acted.push(id);
            }
            settle(c.world.as_mut());
            let over = c.world.done();
            if over {
                // Still present when the episode ended: truncated.
                for &id in &c.acted {
                    tr[id] = !te[id];
                }
            }
            c.fill(o, blank);
            if over {
                fo.copy_from_slice(o);
                // Only at an episode's end: a round's records are not copied otherwise.
                c.ended = Some((0..n).map(|id| c.world.info(id)).collect());
                c.reset();
                c.fill(o, blank);
            }
        };
        // Each copy with its rows of every array, serial or in parallel.
        macro_rules! rows {
            ($iter:ident, $chunks:ident) => {
                copies
                    .$iter()
                    .zip(obs.$chunks(n * d))
                    .zip(final_obs.$chunks(n * d))
                    .zip(rewards.$chunks(n))
                    .zip(terminations.$chunks(n))
                    .zip(truncations.$chunks(n))
                    .enumerate()
                    .for_each(|(k, (((((c, o), fo), r), te), tr))| one(k, c, o, fo, r, te, tr))
            };
        }
        py.detach(|| {
            // On one thread (or one copy) in the caller's thread: handing every round to a
            // pool thread cost 10% more CPU on the queue world (issue 38's move of its VecEnv).
            if self.pool.current_num_threads() == 1 || e == 1 {
                rows!(iter_mut, chunks_mut);
                return;
            }
            self.pool.install(|| {
                use rayon::prelude::*;
                rows!(par_iter_mut, par_chunks_mut)
            })
        });
        Ok((
            crate::array3(py, &b.obs, e, n, d),
            grid(py, &b.rewards, e, n),
            grid(py, &b.terminations, e, n),
            grid(py, &b.truncations, e, n),
        ))
    }

    /// For each copy whose episode ended in the last step, the rows it ended on.
    #[getter]
    fn final_obs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray3<f32>>> {
        let b = try_batch(&self.inner)?;
        Ok(crate::array3(py, &b.final_obs, b.copies.len(), b.n, b.dim))
    }

    /// The agents' round records (`World::info`) as `[num_envs, n]` float64 arrays, one per
    /// numeric field (the market: `price`, `progress`, `tokens`, `level`, `utility`); a copy
    /// whose episode ended in the last step gives that episode's last round (as `final_obs`
    /// holds its rows), not its new episode's.
    fn infos<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let b = try_batch(&self.inner)?;
        let (e, n) = (b.copies.len(), b.n);
        let mut fields: Vec<(&'static str, Vec<f64>)> = Vec::new();
        for (k, c) in b.copies.iter().enumerate() {
            for id in 0..n {
                let record = match &c.ended {
                    Some(ended) => ended[id].clone(),
                    None => c.world.info(id),
                };
                for (key, v) in record {
                    let Some(x) = v.as_f64() else { continue };
                    let at = match fields.iter().position(|(f, _)| *f == key) {
                        Some(at) => at,
                        None => {
                            fields.push((key, vec![f64::NAN; e * n]));
                            fields.len() - 1
                        }
                    };
                    fields[at].1[k * n + id] = x;
                }
            }
        }
        let d = PyDict::new(py);
        for (key, xs) in fields {
            d.set_item(key, grid(py, &xs, e, n))?;
        }
        Ok(d)
    }
}

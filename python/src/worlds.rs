//! Every world (`env::worlds::World`: the queue and valuation worlds, the market, Gavel's GPU
//! cluster, the toy bandit) from Python: [`WorldEnv`], the engine of
//! `mtf_env.WorldParallelEnv`, the one `ParallelEnv` adapter (agents that arrive and leave, by
//! stable id).

use crate::{obs_array, value_error};
use env::worlds::World;
use numpy::PyArray2;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::Mutex;

/// What a world looks like from outside.
#[pyclass(module = "mtf_env._native", frozen, get_all)]
#[derive(Clone)]
pub(crate) struct WorldShape {
    /// Agent ids of an episode are below this; `agent_name(id)` names each.
    possible: usize,
    /// Features per observation, and their names.
    dim: usize,
    features: Vec<String>,
    /// The value of each action and what it sets ("threshold" or "bid").
    levels: Vec<f64>,
    kind: &'static str,
    /// Observation bounds (`high` may be infinite).
    low: Vec<f32>,
    high: Vec<f32>,
    /// The names of the world's figures (`figures()`), the headline first.
    metrics: Vec<String>,
    /// The most rounds an episode has (None where episodes end otherwise).
    rounds: Option<u32>,
}

/// One world behind the seam.
#[pyclass(module = "mtf_env._native")]
pub(crate) struct WorldEnv {
    world: Mutex<Box<dyn World>>,
    shape: WorldShape,
    /// The last observation of an agent the world has none for: zeros clipped into the layout.
    blank: Vec<f32>,
}

type Obs<'py> = Bound<'py, PyArray2<f32>>;

/// Play the rounds in which no agent is present (a Gavel world between arrivals): PettingZoo
/// reads an empty `agents` as the end of the episode, so such rounds are not handed out.
/// Nothing acts and nothing is rewarded in them; `mtf simulate` plays them the same way.
pub(crate) fn settle(w: &mut dyn World) -> PyResult<()> {
    while w.live().is_empty() && !w.done() {
        w.step(&[]).map_err(value_error)?;
    }
    Ok(())
}

fn live_obs<'py>(py: Python<'py>, w: &mut dyn World) -> (Vec<usize>, Obs<'py>) {
    let live = w.live().to_vec();
    let dim = w.layout().dim();
    let mut obs = vec![0.0f32; live.len() * dim];
    w.observe(&mut obs);
    let array = obs_array(py, &obs, live.len(), dim);
    (live, array)
}

#[pymethods]
impl WorldEnv {
    #[new]
    #[pyo3(signature = (config, overrides = Vec::new()))]
    fn new(config: &str, overrides: Vec<String>) -> PyResult<Self> {
        let world = env::registry::load(Path::new(config), &overrides).map_err(value_error)?;
        let layout = world.layout().clone();
        let head = world.headline();
        let mut metrics: Vec<String> = world.metrics().iter().map(|m| m.key.to_string()).collect();
        let headline = metrics.remove(head);
        metrics.insert(0, headline);
        let shape = WorldShape {
            possible: world.possible(),
            dim: layout.dim(),
            features: layout.names.clone(),
            levels: world.levels().to_vec(),
            kind: world.action_kind().as_str(),
            low: layout.low,
            high: layout.high,
            metrics,
            rounds: world.max_rounds(),
        };
        let blank = shape.low.iter().zip(&shape.high).map(|(&lo, &hi)| 0f32.clamp(lo, hi)).collect();
        Ok(Self {
            world: Mutex::new(world),
            shape,
            blank,
        })
    }

    /// The world's ids, spaces and figures.
    #[getter]
    fn spec(&self) -> WorldShape {
        self.shape.clone()
    }

    /// Agent `id`'s name.
    fn agent_name(&self, id: usize) -> PyResult<String> {
        let w = self.world.lock().map_err(value_error)?;
        if id >= w.possible() {
            return Err(value_error(format!("agent id {id} is not below {}", w.possible())));
        }
        Ok(w.agent_name(id))
    }

    /// Start the episode of `seed`: `(live ids, observations [live, dim] float32)`.
    fn reset<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<(Vec<usize>, Obs<'py>)> {
        let mut w = self.world.lock().map_err(value_error)?;
        w.reset(seed);
        settle(w.as_mut())?;
        Ok(live_obs(py, w.as_mut()))
    }

    /// One round with a level index per live agent (in the order `reset` or the last `step`
    /// listed them): `(acted ids, rewards, terminated, over, live ids, observations, ended
    /// ids, their last observations (None when none left), arrived ids, infos)`: an agent that
    /// left without a last observation of the world's gets a zero row clipped into the layout;
    /// `infos` are the acted agents' then the arrived ones' (live now, not among the acted).
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        &self,
        py: Python<'py>,
        actions: Vec<i64>,
    ) -> PyResult<(
        Vec<usize>,
        Vec<f64>,
        Vec<bool>,
        bool,
        Vec<usize>,
        Obs<'py>,
        Vec<usize>,
        Option<Obs<'py>>,
        Vec<usize>,
        Vec<Bound<'py, PyDict>>,
    )> {
        let mut w = self.world.lock().map_err(value_error)?;
        let k = w.levels().len();
        let live = w.live().to_vec();
        let actions = actions
            .iter()
            .zip(live.iter().chain(std::iter::repeat(&usize::MAX)))
            // The action space is the levels: a world's named actions past them (the market's
            // `own`) are mtf's references, not a Python agent's choice.
            .map(|(&a, &id)| {
                usize::try_from(a)
                    .ok()
                    .filter(|&a| a < k)
                    .ok_or_else(|| value_error(format!("agent {id}: action {a} is outside Discrete({k})")))
            })
            .collect::<PyResult<Vec<usize>>>()?;
        let (acted, rewards, terminated) = {
            let r = w.step(&actions).map_err(value_error)?;
            (r.agents.to_vec(), r.rewards.to_vec(), r.terminated.to_vec())
        };
        settle(w.as_mut())?;
        let over = w.done();
        let (live, obs) = live_obs(py, w.as_mut());
        let ended: Vec<usize> = if live == acted {
            Vec::new()
        } else {
            acted.iter().copied().filter(|i| live.binary_search(i).is_err()).collect()
        };
        let d = self.shape.dim;
        let mut last = vec![0.0f32; ended.len() * d];
        for (row, &id) in last.chunks_exact_mut(d).zip(&ended) {
            if !w.last_observation(id, row) {
                row.copy_from_slice(&self.blank);
            }
        }
        let last = (!ended.is_empty()).then(|| obs_array(py, &last, ended.len(), d));
        let arrived: Vec<usize> = if live.len() + ended.len() == acted.len() {
            Vec::new()
        } else {
            live.iter().copied().filter(|i| acted.binary_search(i).is_err()).collect()
        };
        let mut records = infos(py, w.as_ref(), &acted)?;
        records.extend(infos(py, w.as_ref(), &arrived)?);
        Ok((acted, rewards, terminated, over, live, obs, ended, last, arrived, records))
    }

    /// Agent `id`'s weight (its token share under MTF; 1 where the world has none).
    fn weight(&self, id: usize) -> PyResult<f64> {
        let w = self.world.lock().map_err(value_error)?;
        if id >= w.possible() {
            return Err(value_error(format!("agent id {id} is not below {}", w.possible())));
        }
        Ok(w.weight(id))
    }

    /// The round records (PettingZoo's `infos`) of the agents `ids`, one dict each.
    fn infos<'py>(&self, py: Python<'py>, ids: Vec<usize>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let w = self.world.lock().map_err(value_error)?;
        if let Some(&id) = ids.iter().find(|&&id| id >= w.possible()) {
            return Err(value_error(format!("agent id {id} is not below {}", w.possible())));
        }
        infos(py, w.as_ref(), &ids)
    }

    /// The episode's whole record so far (`World::record`), as JSON.
    fn record_json(&self) -> PyResult<String> {
        let w = self.world.lock().map_err(value_error)?;
        serde_json::to_string(&w.record()).map_err(value_error)
    }

    /// The episode's figures so far (final once it is over), by name.
    fn figures<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = self.world.lock().map_err(value_error)?;
        let d = PyDict::new(py);
        for (m, v) in w.metrics().iter().zip(w.figures()) {
            d.set_item(m.key, v)?;
        }
        Ok(d)
    }
}

/// The agents' round records, one dict each.
fn infos<'py>(py: Python<'py>, w: &dyn World, ids: &[usize]) -> PyResult<Vec<Bound<'py, PyDict>>> {
    ids.iter()
        .map(|&id| {
            let d = PyDict::new(py);
            for (k, v) in w.info(id) {
                d.set_item(k, to_py(py, &v)?)?;
            }
            Ok(d)
        })
        .collect()
}

/// A JSON value as the Python object `json.loads` would give (without the text round trip).
fn to_py<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use pyo3::types::PyList;
    use pyo3::IntoPyObjectExt;
    Ok(match v {
        serde_json::Value::Null => py.None().into_bound(py),
        serde_json::Value::Bool(b) => b.into_bound_py_any(py)?,
        serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u.into_bound_py_any(py)?,
            (None, Some(i)) => i.into_bound_py_any(py)?,
            _ => n.as_f64().unwrap_or(f64::NAN).into_bound_py_any(py)?,
        },
        serde_json::Value::String(s) => s.into_bound_py_any(py)?,
        serde_json::Value::Array(xs) => {
            let items = xs.iter().map(|x| to_py(py, x)).collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        serde_json::Value::Object(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any()
        }
    })
}

/// The world `config` declares with `overrides` (`--set` values) applied (`env.world`;
/// `queues` when absent or unreadable, so the environment's constructor names the problem).
#[pyfunction]
#[pyo3(signature = (config, overrides = Vec::new()))]
pub(crate) fn world_name(config: &str, overrides: Vec<String>) -> String {
    env::config::read_table(Path::new(config), &overrides).map_or_else(|_| "queues".to_string(), |t| env::registry::world_name(&t))
}

/// Whether `config` with `overrides` applied is driven by the seam's commands (a world behind
/// it, or a queue world's file saying `env.stack = "seam"`). The overrides count: before
/// 2026-12-06 they were ignored, so `--set env.stack=...` gave the file's answer.
#[pyfunction]
#[pyo3(signature = (config, overrides = Vec::new()))]
pub(crate) fn is_seam_world(config: &str, overrides: Vec<String>) -> bool {
    env::registry::stack_of(Path::new(config), &overrides) == env::registry::Stack::Seam
}

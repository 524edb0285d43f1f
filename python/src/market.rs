//! The market world (`env.world = "market"`) from Python: [`MarketEnv`], the engine of
//! `mtf_env.MarketParallelEnv` ([`env::market::game::MarketGame`] behind a mutex).

use crate::{obs_array, value_error, Shape};
use env::market::game::{action_levels, MarketGame};
use env::market::{MarketFile, Place};
use numpy::ndarray::Array1;
use numpy::{IntoPyArray, PyArray1, PyArray2};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::Path;
use std::sync::Mutex;

/// One market environment: every tenant an agent choosing a level each round.
#[pyclass(module = "mtf_env._native")]
pub(crate) struct MarketEnv {
    game: Mutex<MarketGame>,
    shape: Shape,
}

/// Bounds of [`env::market::Market::observe`]'s features: the deadline's slack may be
/// negative, a price over its base price is capped at 10, the rest are shares and flags.
fn bounds(types: usize) -> (Vec<f32>, Vec<f32>) {
    let mut low = vec![0.0, 0.0, 0.0, 0.0, -1.0, 0.0];
    let mut high = vec![1.0; 6];
    for _ in 0..types {
        low.extend([0.0, 0.0, 0.0]);
        high.extend([10.0, 1.0, 1.0]);
    }
    (low, high)
}

fn place_name(p: Place) -> &'static str {
    match p {
        Place::Absent => "absent",
        Place::Waiting => "waiting",
        Place::OnDemand(_) => "on_demand",
        Place::Unit(_) => "auctioned",
        Place::Done => "done",
    }
}

/// Each tenant's part of the last round (or, before any, its state): where it is, the type it
/// ran on, the price it paid, its progress, tokens, the level it played and its utility.
fn market_infos<'py>(py: Python<'py>, g: &MarketGame) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let last = g.rounds().last();
    let types = &g.file().market.types;
    (0..g.agents().len())
        .map(|i| {
            let d = PyDict::new(py);
            d.set_item("place", place_name(g.place(i)))?;
            let t = last.map(|r| &r.tenants[i]);
            d.set_item("type", t.and_then(|t| t.ty).map(|ty| types[ty].name.clone()))?;
            d.set_item("price", t.map_or(0.0, |t| t.price))?;
            d.set_item("progress", t.map_or(0.0, |t| t.progress))?;
            d.set_item("tokens", t.map_or(0.0, |t| t.tokens))?;
            d.set_item("level", g.factors()[i])?;
            d.set_item("utility", g.utility()[i])?;
            Ok(d)
        })
        .collect()
}

type Obs<'py> = Bound<'py, PyArray2<f32>>;

#[pymethods]
impl MarketEnv {
    #[new]
    #[pyo3(signature = (config, overrides = Vec::new()))]
    fn new(config: &str, overrides: Vec<String>) -> PyResult<Self> {
        let raw = MarketFile::load_unexpanded(Path::new(config), &overrides).map_err(value_error)?;
        let levels = action_levels(&raw, config).map_err(value_error)?;
        let game = MarketGame::new(raw, levels);
        let (low, high) = bounds(game.file().market.types.len());
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
        Ok(Self {
            game: Mutex::new(game),
            shape,
        })
    }

    /// The market's agents, spaces and most rounds.
    #[getter]
    fn spec(&self) -> Shape {
        self.shape.clone()
    }

    /// Start the episode of `seed`: `(observations [n, dim] float32, infos)`.
    fn reset<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<(Obs<'py>, Vec<Bound<'py, PyDict>>)> {
        let mut g = self.game.lock().map_err(value_error)?;
        g.reset(seed);
        let (n, d) = (g.agents().len(), g.dim());
        Ok((obs_array(py, g.observations(), n, d), market_infos(py, &g)?))
    }

    /// One round with every tenant's level index (finished tenants' are ignored):
    /// `(observations, rewards [n] float64, terminated [n] bool, truncated [n] bool, infos)`.
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        &self,
        py: Python<'py>,
        actions: Vec<i64>,
    ) -> PyResult<(Obs<'py>, Bound<'py, PyArray1<f64>>, Vec<bool>, Vec<bool>, Vec<Bound<'py, PyDict>>)> {
        let mut g = self.game.lock().map_err(value_error)?;
        let k = g.levels().len();
        let actions = actions
            .iter()
            .enumerate()
            .map(|(i, &a)| usize::try_from(a).map_err(|_| value_error(format!("agent {i}: action {a} is outside Discrete({k})"))))
            .collect::<PyResult<Vec<usize>>>()?;
        let steps = g.step(&actions).map_err(value_error)?.to_vec();
        let (n, d) = (g.agents().len(), g.dim());
        Ok((
            obs_array(py, g.observations(), n, d),
            Array1::from(steps.iter().map(|s| s.reward).collect::<Vec<_>>()).into_pyarray(py),
            steps.iter().map(|s| s.terminated).collect(),
            steps.iter().map(|s| s.truncated).collect(),
            market_infos(py, &g)?,
        ))
    }

    /// The episode's figures so far (what `mtf simulate` prints for a market), as JSON.
    fn metrics_json(&self) -> PyResult<String> {
        let g = self.game.lock().map_err(value_error)?;
        serde_json::to_string(&g.metrics()).map_err(value_error)
    }
}

/// Whether `config` is a market file (`env.world = "market"`).
#[pyfunction]
pub(crate) fn is_market_file(config: &str) -> bool {
    env::market::is_market_file(Path::new(config))
}

//! `onnx:PATH`: a policy trained anywhere (Stable-Baselines3, CleanRL, RLlib, plain NumPy) and
//! saved as an ONNX file, acting for every agent in `mtf simulate`, `compare` and `analyze`.
//!
//! The file maps an agent's observation, exactly as `mtf_env` hands it to Python (the
//! scenario's observation layout, `dim` float32 features), to one logit per level: input
//! `[batch, dim]` (or `[1, dim]`, or `[dim]`), output `[batch, K]` (or `[1, K]`, or `[K]`).
//! Every agent acts through the one model (parameter sharing, as supersuit's vector envs train
//! it); an agent's own features (its weight, its budget) are what tells agents apart. Greedy
//! plays the argmax of the logits; `sampled:onnx:PATH` draws from their softmax, one stream
//! per agent from the episode seed, as a trained run's sampled policy does.
//!
//! The runtime is tract (pure Rust, no system library, no download at build time: ONNX Runtime's
//! crate fetches a prebuilt library, which a machine with only crates.io cannot).

use crate::error::ErrorSlot;
use crate::learners::nets::{choose, episode_streams};
use crate::learners::Policy;
use env::world::Observations;
use rand::rngs::SmallRng;
use std::path::Path;
use std::sync::Arc;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::{Factoid, GenericFactoid};

/// Largest ONNX file read (a policy network is kilobytes to a few megabytes).
const MAX_FILE: u64 = 256 << 20;

type Plan = TypedRunnableModel;

/// An ONNX policy: the optimised model, shared by every fork, and how it is called.
pub struct OnnxPolicy {
    plan: Arc<Plan>,
    /// The model takes every agent in one call (`[n, dim]`); else one call per agent.
    batched: bool,
    /// The input shape of one call (`[n, dim]`, `[1, dim]` or `[dim]`), fixed at load.
    shape: Vec<usize>,
    dim: usize,
    k: usize,
    n: usize,
    rngs: Vec<SmallRng>,
    probs: Vec<f32>,
    entropy: Option<f64>,
    /// Where a failure mid-episode goes (a policy cannot fail there; evaluation reports it).
    errors: ErrorSlot,
}

impl OnnxPolicy {
    /// Load `path` for `n` agents observing `dim` features and choosing among `k` levels; the
    /// error says what does not fit (the caller names the spec).
    pub fn load(path: &Path, n: usize, dim: usize, k: usize, errors: ErrorSlot) -> Result<OnnxPolicy, String> {
        let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
        if !meta.is_file() {
            return Err("not a file".to_string());
        }
        if meta.len() > MAX_FILE {
            return Err(format!("{} bytes, more than an ONNX policy may be ({MAX_FILE})", meta.len()));
        }
        // From the path, so weights an exporter stored beside the model (external data) load.
        Self::prepare(tract_onnx::onnx().model_for_path(path), n, dim, k, errors)
    }

    /// [`OnnxPolicy::load`] from the file's bytes (an exported agent carries them).
    pub fn from_bytes(bytes: &[u8], n: usize, dim: usize, k: usize, errors: ErrorSlot) -> Result<OnnxPolicy, String> {
        Self::prepare(
            tract_onnx::onnx().model_for_read(&mut std::io::Cursor::new(bytes)),
            n,
            dim,
            k,
            errors,
        )
    }

    fn prepare(read: TractResult<InferenceModel>, n: usize, dim: usize, k: usize, errors: ErrorSlot) -> Result<OnnxPolicy, String> {
        let model = read.map_err(|e| format!("not an ONNX model tract can read: {}", one_line(&e)))?;
        if model.inputs.len() != 1 || model.outputs.is_empty() {
            return Err(format!(
                "the model has {} inputs and {} outputs; a policy takes one input (the observation) and gives the logits first",
                model.inputs.len(),
                model.outputs.len()
            ));
        }
        // Batch every agent when the model's first axis is free, else call it per agent.
        let fact = model.input_fact(0).map_err(|e| one_line(&e))?;
        let declared: Option<Vec<Option<usize>>> = (!fact.shape.is_open()).then(|| {
            fact.shape
                .dims()
                .map(|d| d.concretize().and_then(|c| c.as_i64()).and_then(|c| usize::try_from(c).ok()))
                .collect()
        });
        let (shape, batched): (Vec<usize>, bool) = match declared.as_deref() {
            Some([d]) => {
                check_dim("its input", *d, dim)?;
                (vec![dim], false)
            }
            Some([b, d]) => {
                check_dim("its input's second axis", *d, dim)?;
                match b {
                    Some(1) => (vec![1, dim], false),
                    Some(b) if *b != n => {
                        return Err(format!(
                            "its input's batch axis is fixed at {b}; export it with a free batch axis or batch 1"
                        ))
                    }
                    _ => (vec![n, dim], true),
                }
            }
            None => (vec![n, dim], true),
            Some(other) => {
                return Err(format!(
                    "its input has {} axes; a policy reads [batch, {dim}] (the agent's observation)",
                    other.len()
                ))
            }
        };
        // A batch axis the exporter named (torch's `batch`) stays symbolic, so the declared
        // shapes downstream of it still agree; any other input is fixed to what is fed, and
        // the outputs' declared shapes are inferred from it instead.
        let symbolic = batched && matches!(fact.shape.dim(0), Some(GenericFactoid::Only(_)));
        let model = if symbolic {
            let mut typed = fact.clone();
            typed.datum_type = GenericFactoid::Only(f32::datum_type());
            model.with_input_fact(0, typed)
        } else {
            let outputs = model.outputs.len();
            (0..outputs)
                .try_fold(model, |m, i| m.with_output_fact(i, InferenceFact::default()))
                .and_then(|m| m.with_input_fact(0, f32::fact(&shape).into()))
        };
        let plan = model
            .and_then(|m| m.into_optimized())
            .and_then(|m| m.into_runnable())
            .map_err(|e| format!("cannot run it on a [{}] float32 observation: {}", join(&shape), one_line(&e)))?;
        let policy = OnnxPolicy {
            plan,
            batched,
            shape,
            dim,
            k,
            n,
            rngs: episode_streams(n, 0),
            probs: vec![0.0; n * k],
            entropy: None,
            errors,
        };
        // One call now, so a model whose output does not fit is refused before any episode.
        let mut probs = vec![0.0; n * k];
        policy.logits(&vec![0.0; n * dim], &mut probs)?;
        Ok(policy)
    }

    /// One observation's level probabilities, for a policy loaded for one agent (`n` = 1: an
    /// exported agent answers one line at a time).
    pub fn probabilities_one(&self, row: &[f32]) -> Result<Vec<f64>, String> {
        assert_eq!(self.n, 1, "loaded for one agent");
        if row.len() != self.dim {
            return Err(format!("{} features, the model reads {}", row.len(), self.dim));
        }
        let mut probs = vec![0.0; self.k];
        self.logits(row, &mut probs)?;
        Ok(probs.into_iter().map(f64::from).collect())
    }

    /// One observation's softmax probabilities into `probs` (`k`), for a policy loaded for
    /// one agent (a world behind the seam calls it row by row).
    pub fn probabilities(&self, row: &[f32], probs: &mut [f32]) -> Result<(), String> {
        assert_eq!(self.n, 1, "loaded for one agent");
        self.logits(row, probs)
    }

    /// Every agent's softmax probabilities into `probs`, from `data` (`n` rows of `dim`).
    fn logits(&self, data: &[f32], probs: &mut [f32]) -> Result<(), String> {
        let (n, dim, k) = (self.n, self.dim, self.k);
        let per_call = if self.batched { n } else { 1 };
        for (c, row) in data.chunks(per_call * dim).enumerate() {
            let input = Tensor::from_shape(&self.shape, row).map_err(|e| one_line(&e))?;
            let out = self
                .plan
                .run(tvec!(input.into()))
                .map_err(|e| format!("running it: {}", one_line(&e)))?;
            let not_f32 = |_| "its first output is not float32 logits".to_string();
            let view = out[0].try_as_plain_ram().map_err(not_f32)?;
            let logits = view.as_slice::<f32>().map_err(not_f32)?;
            if logits.len() != per_call * k {
                return Err(format!(
                    "its first output has {} values for {per_call} observation(s); the scenario has {k} levels, so [{per_call}, {k}] logits",
                    logits.len()
                ));
            }
            if let Some(bad) = logits.iter().find(|x| !x.is_finite()) {
                return Err(format!("it gave a non-finite logit ({bad})"));
            }
            for (i, l) in logits.chunks(k).enumerate() {
                softmax_into(l, &mut probs[(c * per_call + i) * k..(c * per_call + i + 1) * k]);
            }
        }
        Ok(())
    }
}

fn check_dim(what: &str, declared: Option<usize>, dim: usize) -> Result<(), String> {
    match declared {
        Some(d) if d != dim => Err(format!(
            "{what} has {d} features; this world's observation has {dim} (see mtf_env's observation_space; in the queue world the switches env.observe_* change it)"
        )),
        _ => Ok(()),
    }
}

fn join(shape: &[usize]) -> String {
    shape.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
}

/// tract's errors carry a chain of causes over several lines; a message is one line.
fn one_line(e: &dyn std::fmt::Display) -> String {
    format!("{e:#}").split_whitespace().collect::<Vec<_>>().join(" ")
}

fn softmax_into(logits: &[f32], out: &mut [f32]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut total = 0.0;
    for (o, &l) in out.iter_mut().zip(logits) {
        *o = (l - max).exp();
        total += *o;
    }
    out.iter_mut().for_each(|o| *o /= total);
}

impl Clone for OnnxPolicy {
    fn clone(&self) -> Self {
        OnnxPolicy {
            plan: self.plan.clone(),
            batched: self.batched,
            shape: self.shape.clone(),
            dim: self.dim,
            k: self.k,
            n: self.n,
            rngs: self.rngs.clone(),
            probs: self.probs.clone(),
            entropy: self.entropy,
            errors: self.errors.clone(),
        }
    }
}

impl Policy for OnnxPolicy {
    fn begin_episode(&mut self, seed: u64) {
        self.rngs = episode_streams(self.n, seed);
    }

    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        // The shapes were checked at load; what can still go wrong (a non-finite logit on an
        // observation the model overflows on) is reported by the evaluation, and the episode
        // plays level 0 to its end.
        let mut probs = std::mem::take(&mut self.probs);
        let ran = self.logits(obs.data, &mut probs);
        self.probs = probs;
        if let Err(e) = ran {
            actions.fill(0);
            self.errors.lock().expect("not poisoned").get_or_insert(e);
            return;
        }
        choose(&self.probs, self.k, greedy, &mut self.rngs, actions);
        self.entropy = Some(env::policy::mean_entropy(&self.probs, self.k));
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }

    fn entropy(&self) -> Option<f64> {
        self.entropy
    }
}

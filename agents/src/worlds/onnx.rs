//! `onnx:PATH` and `sampled:onnx:PATH` in a world behind the seam: one ONNX model, trained
//! anywhere ([`crate::export::onnx`]: input `[batch, dim]` with a free or unit batch axis, or
//! `[dim]`; output one logit per level), acting for every live agent on its observation row
//! (the world's [`env::worlds::Layout`]), by the argmax of its logits or a draw from their
//! softmax (the episode's streams, [`Draws::of`]: per agent id in the worlds the queue stack
//! also plays, as its ONNX agents draw; elsewhere one, drawn in row order), as a trained
//! run's sampled actors do.

use super::{Draws, RowPolicy};
use crate::error::ErrorSlot;
use crate::export::onnx::OnnxPolicy;
use crate::learners::base::{argmax, sample_index};
use env::rng::unit;
use env::worlds::World;
use std::path::Path;

/// An ONNX policy for the rows of a world behind the seam.
#[derive(Clone)]
pub struct WorldOnnx {
    model: OnnxPolicy,
    sampled: bool,
    draws: Draws,
    probs: Vec<f32>,
    errors: ErrorSlot,
}

impl WorldOnnx {
    /// Load `path` for `world`'s observation rows and levels (its named actions are not the
    /// model's to choose); the error says what does not fit.
    pub fn load(path: &Path, world: &dyn World, sampled: bool) -> Result<Self, String> {
        let errors = ErrorSlot::default();
        let k = world.levels().len();
        let model = OnnxPolicy::load(path, 1, world.layout().dim(), k, errors.clone())?;
        Ok(Self {
            model,
            sampled,
            draws: Draws::of(world),
            probs: vec![0.0; k],
            errors,
        })
    }
}

impl RowPolicy for WorldOnnx {
    fn begin_episode(&mut self, seed: u64) {
        self.draws.begin(seed);
    }

    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], _groups: &[usize], actions: &mut [usize]) {
        for ((i, row), &id) in obs.chunks_exact(dim).enumerate().zip(agents) {
            // What can still fail after the load's checks (a non-finite logit on a row the
            // model overflows on) fails the command, as a broken agent does ([`RowPolicy::failure`]).
            if let Err(e) = self.model.probabilities(row, &mut self.probs) {
                actions.fill(0);
                self.errors.lock().expect("not poisoned").get_or_insert(e);
                return;
            }
            actions[i] = if self.sampled {
                sample_index(&self.probs, unit(self.draws.next(id)))
            } else {
                argmax(self.probs.iter().map(|&p| f64::from(p)))
            };
        }
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }

    fn draws(&self) -> bool {
        self.sampled
    }

    fn failure(&self) -> Option<String> {
        self.errors.lock().expect("not poisoned").clone()
    }
}

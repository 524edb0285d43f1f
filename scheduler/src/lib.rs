//! Allocation mechanisms for sharing accelerators among agents: Most-Token-First and baselines.
//!
//! Roles: a [`RoundInput`] (SPEC section 3: utilities, or demands and rates; thresholds,
//! budgets, weights, turn) goes into a [`Mechanism`], which writes an [`Allocation`] (an owner
//! per accelerator, budgets after the round, tokens spent, the next turn). Mechanisms are built
//! by name through [`registry::build`]. The crate does no I/O and draws no random numbers;
//! mechanisms that keep state across rounds (stride passes, Themis accumulators, the static
//! partition) keep it inside the mechanism value, which the caller owns and [`Mechanism::reset`]s
//! at each episode.
//!
//! ```
//! use scheduler::{registry, RoundInput};
//! let (input, _) = RoundInput::from_json(r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
//!     "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#).unwrap();
//! let mut mtf = registry::build("mtf", &registry::Params::default()).unwrap();
//! let out = scheduler::run(mtf.as_mut(), &input);
//! assert_eq!(out.owners, vec![Some(1), Some(0), Some(1), Some(1)]);
//! assert_eq!(out.budgets, vec![51.0, 49.0]);
//! ```

pub mod auction;
pub mod board;
pub mod fnv;
pub mod gandiva;
pub mod gavel;
pub mod input;
pub mod json;
pub mod max_throughput;
pub mod mtf;
pub mod registry;
pub mod round_robin;
pub mod static_partition;
pub mod stride;
pub mod themis;
pub mod valuation;

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod testutil;

pub use input::{Form, InputError, Jobs, JsonExtras, Leftovers, Need, RatesStamp, RoundInput};

/// The outcome of one round.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Allocation {
    /// Owner (agent index) of each accelerator, `None` when idle.
    pub owners: Vec<Option<usize>>,
    /// The utility each accelerator had for its owner when it was given (0 when idle). In the
    /// demand form this is the reward of SPEC 2.8.
    pub won_utility: Vec<f64>,
    /// Whether each accelerator was bought (MTF's paid phase, an auction's sale).
    pub paid: Vec<bool>,
    /// Tokens paid for each accelerator (1 for MTF's paid phase, the price in an auction, 0
    /// when not bought).
    pub prices: Vec<f64>,
    /// Budgets after the round (MTF); a copy of the input budgets for the other mechanisms.
    pub budgets: Vec<f64>,
    /// Tokens each agent spent this round (0 for mechanisms without tokens).
    pub spent: Vec<f64>,
    /// The next round-robin turn, `(turn + 1) mod n`.
    pub turn: usize,
}

impl Allocation {
    /// Clear for a new round of `input`'s size, keeping capacity.
    pub fn reset(&mut self, input: &RoundInput) {
        self.owners.clear();
        self.owners.resize(input.m, None);
        self.won_utility.clear();
        self.won_utility.resize(input.m, 0.0);
        self.paid.clear();
        self.paid.resize(input.m, false);
        self.prices.clear();
        self.prices.resize(input.m, 0.0);
        self.budgets.clear();
        self.budgets.extend_from_slice(&input.budgets);
        self.spent.clear();
        self.spent.resize(input.n, 0.0);
        self.turn = (input.turn + 1) % input.n.max(1);
    }

    /// Number of accelerators owned by each of `n` agents.
    pub fn counts(&self, n: usize) -> Vec<usize> {
        let mut k = vec![0; n];
        for i in self.owners.iter().flatten() {
            k[*i] += 1;
        }
        k
    }
}

/// One allocation mechanism. Every mechanism has this one signature: what a mechanism needs
/// beyond utilities is a field of [`RoundInput`], never a special case in the caller.
pub trait Mechanism: Send {
    /// The registry name.
    fn name(&self) -> &'static str;

    /// Optional inputs this mechanism cannot do without.
    fn needs(&self) -> &'static [Need] {
        &[]
    }

    /// Forget all state kept across rounds (start of an episode).
    fn reset(&mut self);

    /// Allocate one round. `input` must be valid ([`RoundInput::validate`]) and carry
    /// [`Mechanism::needs`]; `out` is overwritten (its buffers are reused).
    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation);

    /// The state kept across rounds, as JSON, for `mtf schedule` to hand to the next call.
    fn state(&self) -> Option<serde_json::Value> {
        None
    }

    /// What it has done this episode, for reports (Gavel's policies: allocations computed,
    /// programs solved, seconds in the solver); `None` when it does not say.
    fn stats(&self) -> Option<serde_json::Value> {
        None
    }

    /// Restore a state printed by [`Mechanism::state`], checking it fits `input`'s size.
    fn set_state(&mut self, state: &serde_json::Value, input: &RoundInput) -> Result<(), InputError> {
        let _ = (state, input);
        Err(InputError::Other(format!(
            "mechanism `{}` keeps no state; remove the `state` field",
            self.name()
        )))
    }
}

/// Allocate one round into a fresh [`Allocation`] (convenience for tests and one-off calls).
pub fn run(mechanism: &mut dyn Mechanism, input: &RoundInput) -> Allocation {
    let mut out = Allocation::default();
    mechanism.allocate(input, &mut out);
    out
}

/// Parse a mechanism state from JSON, naming the mechanism on error.
pub(crate) fn parse_state<T: serde::de::DeserializeOwned>(name: &str, state: &serde_json::Value) -> Result<T, InputError> {
    serde_json::from_value(state.clone()).map_err(|e| InputError::Other(format!("field `state` is not a valid `{name}` state: {e}")))
}

/// Check a state vector's length against the round, naming the field on error.
pub(crate) fn check_state_len(name: &str, field: &str, got: usize, expected: usize) -> Result<(), InputError> {
    if got != expected {
        return Err(InputError::Other(format!(
            "field `state.{field}` has {got} entries, expected {expected} for this round (mechanism `{name}`)"
        )));
    }
    Ok(())
}

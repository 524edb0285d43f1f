//! The round input of SPEC section 3 (both forms), its validation, and its JSON reading.

use serde::{Deserialize, Serialize};

/// What happens to the accelerators nobody bought (MTF's free phase, SPEC 3.1 step 3; the
/// auctions' unsold items, SPEC 8). One spelling everywhere: the round JSON's `leftovers`, a
/// config's `mechanism.leftovers`, and the mechanisms' parameter.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Leftovers {
    /// Round robin from `turn` (SPEC 3.1).
    #[default]
    RoundRobin,
    /// One by one to an agent drawn by weight, with the input's `draws` (SPEC 7).
    WeightedRandom,
    /// They stay idle (the valuation world: a free phase would give items to non-bidders).
    #[serde(rename = "none")]
    Idle,
}

impl Leftovers {
    /// Every rule, with the name configs and round inputs spell it with.
    pub const ALL: [(Leftovers, &'static str); 3] = [
        (Leftovers::RoundRobin, "round_robin"),
        (Leftovers::WeightedRandom, "weighted_random"),
        (Leftovers::Idle, "none"),
    ];

    /// The rule a name spells, if any.
    pub fn from_name(name: &str) -> Option<Leftovers> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(l, _)| *l)
    }
}

/// Which form the agents' values take this round (SPEC 3 and 3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// A static n x m utility matrix in [0, 1].
    Utilities,
    /// Per-agent demands (jobs) and an n x m rate matrix; utilities follow the remaining demand.
    Demand,
}

/// One allocation round. Matrices are dense and row-major (`[i * m + c]`).
///
/// Optional inputs are empty vectors when absent; the fields are public so the environment can
/// refill one value every round without allocating. Call [`RoundInput::validate`] on anything
/// that did not come from trusted code.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundInput {
    /// Number of agents (n >= 1).
    pub n: usize,
    /// Number of accelerators (m >= 1).
    pub m: usize,
    /// Which of `utilities` or `demands` + `rates` defines the agents' values.
    pub form: Form,
    /// n x m utilities in [0, 1] (utilities form).
    pub utilities: Vec<f64>,
    /// n demands in jobs (demand form).
    pub demands: Vec<f64>,
    /// n x m service rates > 0: required by the demand form; optional with utilities, where the
    /// rate-aware baselines (stride, gandiva_fair, max_throughput) need it.
    pub rates: Vec<f64>,
    /// Demand form, optional: per agent, the rate its utilities are shares of (SPEC 2.4's
    /// fastest accelerator), when it is faster than any of `rates`' row: a world whose agents
    /// know a faster accelerator than any offered this round (a market's held or on-demand
    /// types) says so. Empty: each row's fastest rate.
    pub fastest: Vec<f64>,
    /// n thresholds in [0, 1] (MTF).
    pub thresholds: Vec<f64>,
    /// n token budgets >= 0 (MTF).
    pub budgets: Vec<f64>,
    /// n weights > 0. Defaults to all 1 when read from JSON without weights.
    pub weights: Vec<f64>,
    /// Round-robin turn in [0, n).
    pub turn: usize,
    /// Optional accelerator type per accelerator (gandiva_fair); derived from equal rate
    /// columns when absent.
    pub types: Vec<usize>,
    /// Uniform numbers in [0, 1), at least m, for MTF's weighted-random leftovers and the
    /// auctions' ties (the caller draws them: the scheduler has no randomness of its own).
    pub draws: Vec<f64>,
    /// n x m bids in tokens, finite and >= 0 (the auctions, SPEC 8).
    pub bids: Vec<f64>,
    /// The auctions' reserve price in tokens (>= 0; default 0).
    pub reserve: f64,
    /// Whether the auctions' payments go back to the agents by weight (default true).
    pub redistribute: bool,
    /// Which rates these are, for the mechanisms' caches (see [`RatesStamp`]).
    pub rates_stamp: RatesStamp,
    /// What a world of jobs says about its agents (empty in the queue world).
    pub jobs: Jobs,
}

/// What a world whose agents are jobs (Gavel's trace-driven GPU cluster, `env::worlds::gavel`)
/// tells a mechanism about them: who they are across rounds (jobs arrive and finish), how many
/// accelerators each runs on at once, how much work is left and since when it waits. Every
/// field is empty (or 0) when absent; Gavel's policies need all but `gangs`
/// ([`Need::Jobs`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Jobs {
    /// Each agent's identity, the same across rounds while the job lasts (unique in a round).
    pub ids: Vec<u64>,
    /// Accelerators each agent runs on at once, all of one type (Gavel's scale factor), or
    /// none: a gang-placed job. Empty: every agent 1. Mechanisms without gang placement give
    /// an agent at most its gang's count of accelerators.
    pub gangs: Vec<u32>,
    /// Work left per agent, in the units of `rates` (rates are work per round).
    pub remaining: Vec<f64>,
    /// Seconds since each agent arrived.
    pub ages: Vec<f64>,
    /// The simulated time at the start of the round, in seconds.
    pub clock: f64,
    /// Seconds per round (a rate over this is work per second).
    pub round_seconds: f64,
    /// The name of each accelerator type (`types` indexes it), in the order a round visits
    /// them (Gavel's: fastest first, v100, p100, k80).
    pub type_names: Vec<String>,
}

impl Jobs {
    /// Agent i's gang size (1 without gangs).
    #[inline]
    pub fn gang(&self, i: usize) -> u32 {
        self.gangs.get(i).copied().unwrap_or(1)
    }

    /// Whether the fields Gavel's policies need are present.
    pub fn present(&self) -> bool {
        !self.ids.is_empty() && !self.type_names.is_empty() && self.round_seconds > 0.0
    }
}

/// Utility of an accelerator of rate `rate` to an agent with `remaining` jobs whose fastest
/// accelerator has rate `max_rate` (SPEC 2.4 and 3.3): the share of the best accelerator's
/// round it would fill. The one definition the environment's observations, the mechanisms and
/// Hedge's rewards share.
#[inline]
pub fn demand_utility(remaining: f64, rate: f64, max_rate: f64) -> f64 {
    remaining.min(rate) / max_rate
}

/// A promise about `RoundInput::rates` that lets a mechanism skip comparing them: two inputs
/// with the same nonzero stamp have the same rates. 0 promises nothing (the rates are then
/// compared number by number, O(n m)). The environment stamps each episode's rates once
/// ([`RatesStamp::fresh`]), so a round of a long episode does not reread n m rates to learn
/// they are the ones it already holds classes for. A cache hint, not part of the round: it is
/// ignored by `==`.
#[derive(Clone, Copy, Debug, Default)]
pub struct RatesStamp(pub u64);

impl PartialEq for RatesStamp {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl RatesStamp {
    /// A stamp no other input of this process has had.
    pub fn fresh() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        RatesStamp(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// Largest weight ratio accepted, as bounds on each weight: weights must lie in
/// `[1 / MAX_WEIGHT, MAX_WEIGHT]`. Redistribution computes `S * w_j / sum_k w_k`; with these
/// bounds (and the bounds below) no product or sum can overflow or underflow to 0. Callers with
/// other scales normalise first (the environment divides weights by a power of two, which
/// changes no result bit).
pub const MAX_WEIGHT: f64 = 1e9;

/// Largest budget, demand and rate accepted: sums over a round of n such values stay finite
/// and exact enough (f64 has 53 bits; 1e15 < 2^50).
pub const MAX_AMOUNT: f64 = 1e15;

/// Smallest service rate accepted (a rate of 1e-300 would make utilities overflow).
pub const MIN_RATE: f64 = 1e-9;

/// An optional input a mechanism needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// `thresholds`.
    Thresholds,
    /// `budgets`.
    Budgets,
    /// `rates` (only checked in the utilities form; the demand form always carries them).
    Rates,
    /// `draws`, at least m uniforms in [0, 1).
    Draws,
    /// `bids`, n x m.
    Bids,
    /// The jobs' fields ([`Jobs`]: ids, remaining work, ages, the clock, the round's length,
    /// the type names) and `types`.
    Jobs,
}

impl Need {
    /// The JSON field name.
    pub fn field(self) -> &'static str {
        match self {
            Need::Thresholds => "thresholds",
            Need::Budgets => "budgets",
            Need::Rates => "rates",
            Need::Draws => "draws",
            Need::Bids => "bids",
            Need::Jobs => "ids",
        }
    }
}

/// What is wrong with a round input. Each variant names the field and the offending value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InputError {
    /// Not JSON, or not the expected shape.
    #[error("bad JSON: {0}")]
    Json(String),
    /// A field that must be present is not.
    #[error("missing field `{field}`{why}")]
    Missing {
        /// The field.
        field: &'static str,
        /// Why it is needed (may be empty).
        why: String,
    },
    /// A field that must not be present together with another.
    #[error("fields `{0}` and `{1}` cannot be given together: use either utilities or demands + rates")]
    Conflict(&'static str, &'static str),
    /// A vector or matrix row of the wrong length.
    #[error("field `{field}`{at} has {got} entries, expected {expected}")]
    Length {
        /// The field.
        field: &'static str,
        /// Where (e.g. " row 2"), or empty.
        at: String,
        /// Entries found.
        got: usize,
        /// Entries expected.
        expected: usize,
    },
    /// A value outside its domain.
    #[error("field `{field}`{at} is {value}, {expected}")]
    Value {
        /// The field.
        field: &'static str,
        /// Where (e.g. "[1][3]").
        at: String,
        /// The value as written.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// No agents or no accelerators.
    #[error("field `{field}` is empty: need at least one {what}")]
    Empty {
        /// The field.
        field: &'static str,
        /// "agent" or "accelerator".
        what: &'static str,
    },
    /// A mechanism-specific problem (e.g. a state of the wrong size).
    #[error("{0}")]
    Other(String),
}

impl RoundInput {
    /// An input in the utilities form with weights 1, no budgets or thresholds, turn 0.
    pub fn from_utilities(utilities: &[Vec<f64>]) -> Self {
        let n = utilities.len();
        let m = utilities.first().map_or(0, Vec::len);
        Self {
            n,
            m,
            form: Form::Utilities,
            utilities: utilities.concat(),
            demands: Vec::new(),
            rates: Vec::new(),
            thresholds: Vec::new(),
            budgets: Vec::new(),
            weights: vec![1.0; n],
            turn: 0,
            types: Vec::new(),
            draws: Vec::new(),
            bids: Vec::new(),
            reserve: 0.0,
            redistribute: true,
            rates_stamp: RatesStamp::default(),
            fastest: Vec::new(),
            jobs: Jobs::default(),
        }
    }

    /// An input in the demand form with weights 1, no budgets or thresholds, turn 0.
    pub fn from_demands(demands: &[f64], rates: &[Vec<f64>]) -> Self {
        let n = demands.len();
        let m = rates.first().map_or(0, Vec::len);
        Self {
            n,
            m,
            form: Form::Demand,
            utilities: Vec::new(),
            demands: demands.to_vec(),
            rates: rates.concat(),
            thresholds: Vec::new(),
            budgets: Vec::new(),
            weights: vec![1.0; n],
            turn: 0,
            types: Vec::new(),
            draws: Vec::new(),
            bids: Vec::new(),
            reserve: 0.0,
            redistribute: true,
            rates_stamp: RatesStamp::default(),
            fastest: Vec::new(),
            jobs: Jobs::default(),
        }
    }

    /// Agent `i`'s utility for accelerator `c` before anything is allocated this round (in the
    /// demand form, from its whole demand).
    pub fn start_utility(&self, i: usize, c: usize) -> f64 {
        match self.form {
            Form::Utilities => self.utilities[i * self.m + c],
            Form::Demand => {
                let row = &self.rates[i * self.m..(i + 1) * self.m];
                let max = match self.fastest.get(i) {
                    Some(&f) => f,
                    None => row.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                };
                demand_utility(self.demands[i], row[c], max)
            }
        }
    }

    /// Agent `i`'s mean start utility over the accelerators: what one token is worth in SPEC
    /// 4's net reward (utility won minus this times the tokens spent).
    pub fn mean_start_utility(&self, i: usize) -> f64 {
        (0..self.m).map(|c| self.start_utility(i, c)).sum::<f64>() / self.m as f64
    }

    /// Rate of accelerator `c` for agent `i`. Panics if rates are absent.
    #[inline]
    pub fn rate(&self, i: usize, c: usize) -> f64 {
        self.rates[i * self.m + c]
    }

    /// Identical rate columns (the same rate for every agent, compared with `==`): `out[c]` is
    /// accelerator c's group, numbered in order of first appearance; returns the number of
    /// groups. O(n m) and row-wise: each column is hashed as the rows go by, then checked
    /// against the first column of its hash in a second row-wise pass; only a column whose hash
    /// collides with a different column is compared column-wise with the earlier groups of its
    /// hash. Gandiva_fair's types and the demand form's rate classes both come from here.
    pub fn distinct_rate_columns(&self, out: &mut Vec<usize>) -> usize {
        use std::collections::HashMap;
        let (n, m) = (self.n, self.m);
        let mut hash = vec![crate::fnv::OFFSET; m];
        for row in self.rates.chunks_exact(m.max(1)).take(n) {
            for (h, &r) in hash.iter_mut().zip(row) {
                *h = crate::fnv::word(*h, r.to_bits());
            }
        }
        let mut first: HashMap<u64, usize> = HashMap::with_capacity(m.min(1 << 16));
        let cand: Vec<usize> = hash.iter().enumerate().map(|(c, h)| *first.entry(*h).or_insert(c)).collect();
        let mut collides = vec![false; m];
        for row in self.rates.chunks_exact(m.max(1)).take(n) {
            for ((bad, &r), &k) in collides.iter_mut().zip(row).zip(&cand) {
                *bad |= r != row[k];
            }
        }
        out.clear();
        let mut reps: Vec<usize> = Vec::new();
        let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::new();
        for c in 0..m {
            let g = if !collides[c] && cand[c] != c {
                out[cand[c]]
            } else {
                let same = |r: usize| (0..n).all(|i| self.rate(i, r) == self.rate(i, c));
                let bucket = by_hash.entry(hash[c]).or_default();
                match bucket.iter().find(|&&g| same(reps[g])) {
                    Some(&g) => g,
                    None => {
                        reps.push(c);
                        bucket.push(reps.len() - 1);
                        reps.len() - 1
                    }
                }
            };
            out.push(g);
        }
        reps.len()
    }

    /// Whether optional rates are present.
    pub fn has_rates(&self) -> bool {
        !self.rates.is_empty()
    }

    /// Check every constraint of SPEC section 3 ("Valid input"). Lengths of matrices are checked
    /// against `n` and `m` too, so a caller that filled the fields by hand is caught.
    pub fn validate(&self) -> Result<(), InputError> {
        let (n, m) = (self.n, self.m);
        if n == 0 {
            let field = if self.form == Form::Utilities { "utilities" } else { "demands" };
            return Err(InputError::Empty { field, what: "agent" });
        }
        if m == 0 {
            let field = if self.form == Form::Utilities { "utilities" } else { "rates" };
            return Err(InputError::Empty {
                field,
                what: "accelerator",
            });
        }
        match self.form {
            Form::Utilities => {
                check_len("utilities", &self.utilities, n * m)?;
                check_matrix(
                    "utilities",
                    &self.utilities,
                    m,
                    |v| (0.0..=1.0).contains(&v),
                    "expected a number in [0, 1]",
                )?;
                if self.has_rates() {
                    check_len("rates", &self.rates, n * m)?;
                }
            }
            Form::Demand => {
                check_len("demands", &self.demands, n)?;
                check_vec(
                    "demands",
                    &self.demands,
                    |v| (0.0..=MAX_AMOUNT).contains(&v),
                    "expected a number in [0, 1e15]",
                )?;
                if self.rates.is_empty() {
                    return Err(InputError::Missing {
                        field: "rates",
                        why: " (the demand form needs an n x m rate matrix)".into(),
                    });
                }
                check_len("rates", &self.rates, n * m)?;
            }
        }
        if self.has_rates() {
            check_matrix(
                "rates",
                &self.rates,
                m,
                |v| (MIN_RATE..=MAX_AMOUNT).contains(&v),
                "expected a number in [1e-9, 1e15]",
            )?;
        }
        self.validate_fields()
    }

    /// The per-agent fields and the optional ones (thresholds to the reserve).
    fn validate_fields(&self) -> Result<(), InputError> {
        let (n, m) = (self.n, self.m);
        if !self.thresholds.is_empty() {
            check_len("thresholds", &self.thresholds, n)?;
            check_vec(
                "thresholds",
                &self.thresholds,
                |v| (0.0..=1.0).contains(&v),
                "expected a number in [0, 1]",
            )?;
        }
        if !self.budgets.is_empty() {
            check_len("budgets", &self.budgets, n)?;
            check_vec(
                "budgets",
                &self.budgets,
                |v| (0.0..=MAX_AMOUNT).contains(&v),
                "expected a number in [0, 1e15]",
            )?;
        }
        check_len("weights", &self.weights, n)?;
        check_vec(
            "weights",
            &self.weights,
            |v| (1.0 / MAX_WEIGHT..=MAX_WEIGHT).contains(&v),
            "expected a number in [1e-9, 1e9]",
        )?;
        if self.turn >= n {
            return Err(InputError::Value {
                field: "turn",
                at: String::new(),
                value: self.turn.to_string(),
                expected: "expected an agent index in [0, n)",
            });
        }
        if !self.types.is_empty() {
            check_len("types", &self.types, m)?;
        }
        if !self.fastest.is_empty() {
            if self.form != Form::Demand {
                return Err(InputError::Value {
                    field: "fastest",
                    at: String::new(),
                    value: "given".into(),
                    expected: "only with demands and rates (utilities are given whole)",
                });
            }
            check_len("fastest", &self.fastest, n)?;
            // Utilities are shares of it: at least every rate of the row, so none exceeds 1.
            if let Some(i) = (0..n).find(|&i| {
                let f = self.fastest[i];
                !(f.is_finite() && self.rates[i * m..(i + 1) * m].iter().all(|&r| r <= f))
            }) {
                return Err(InputError::Value {
                    field: "fastest",
                    at: format!("[{i}]"),
                    value: self.fastest[i].to_string(),
                    expected: "expected a finite rate at least the agent's fastest in `rates`",
                });
            }
        }
        check_vec("draws", &self.draws, |v| (0.0..1.0).contains(&v), "expected a number in [0, 1)")?;
        if !self.bids.is_empty() {
            check_len("bids", &self.bids, n * m)?;
            check_matrix(
                "bids",
                &self.bids,
                m,
                |v| (0.0..=MAX_AMOUNT).contains(&v),
                "expected a number of tokens in [0, 1e15]",
            )?;
        }
        if !(0.0..=MAX_AMOUNT).contains(&self.reserve) {
            return Err(InputError::Value {
                field: "reserve",
                at: String::new(),
                value: self.reserve.to_string(),
                expected: "expected a number of tokens in [0, 1e15]",
            });
        }
        self.validate_jobs()
    }

    /// The jobs' fields: lengths, ranges, unique ids, types naming a type.
    fn validate_jobs(&self) -> Result<(), InputError> {
        let (n, j) = (self.n, &self.jobs);
        if !j.ids.is_empty() {
            check_len("ids", &j.ids, n)?;
            let mut sorted = j.ids.clone();
            sorted.sort_unstable();
            if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
                return Err(InputError::Value {
                    field: "ids",
                    at: String::new(),
                    value: w[0].to_string(),
                    expected: "expected every agent's id to be unique (this one appears twice)",
                });
            }
        }
        if !j.gangs.is_empty() {
            check_len("gangs", &j.gangs, n)?;
            if let Some(i) = j.gangs.iter().position(|&g| g == 0 || g as usize > self.m) {
                return Err(InputError::Value {
                    field: "gangs",
                    at: format!("[{i}]"),
                    value: j.gangs[i].to_string(),
                    expected: "expected a count of accelerators in [1, m]",
                });
            }
        }
        for (field, v) in [("remaining", &j.remaining), ("ages", &j.ages)] {
            if !v.is_empty() {
                check_len(field, v, n)?;
                check_vec(field, v, |x| (0.0..=MAX_AMOUNT).contains(&x), "expected a number in [0, 1e15]")?;
            }
        }
        for (field, v, ok) in [
            ("clock", j.clock, (0.0..=MAX_AMOUNT).contains(&j.clock)),
            (
                "round_seconds",
                j.round_seconds,
                j.round_seconds == 0.0 || (1e-6..=MAX_AMOUNT).contains(&j.round_seconds),
            ),
        ] {
            if !ok {
                return Err(InputError::Value {
                    field,
                    at: String::new(),
                    value: v.to_string(),
                    expected: "expected a number of seconds in [0, 1e15] (round_seconds: above 1e-6)",
                });
            }
        }
        if !j.type_names.is_empty() {
            if let Some(c) = self.types.iter().position(|&t| t >= j.type_names.len()) {
                return Err(InputError::Value {
                    field: "types",
                    at: format!("[{c}]"),
                    value: self.types[c].to_string(),
                    expected: "expected an index into `type_names`",
                });
            }
        }
        Ok(())
    }

    /// Check that the inputs a mechanism needs are present.
    pub fn check_needs(&self, mechanism: &str, needs: &[Need]) -> Result<(), InputError> {
        for &need in needs {
            let missing = match need {
                Need::Thresholds => self.thresholds.is_empty(),
                Need::Budgets => self.budgets.is_empty(),
                Need::Rates => self.rates.is_empty(),
                Need::Draws => self.draws.len() < self.m,
                Need::Bids => self.bids.is_empty(),
                Need::Jobs => !self.jobs.present() || self.types.is_empty(),
            };
            if missing {
                return Err(InputError::Missing {
                    field: need.field(),
                    why: format!(" (mechanism `{mechanism}` needs it)"),
                });
            }
        }
        Ok(())
    }

    /// Parse the SPEC section 3 JSON and validate it. Unknown fields are errors (a typo would
    /// otherwise silently fall back to a default); `state` and `fairness` are returned aside.
    pub fn from_json(text: &str) -> Result<(RoundInput, JsonExtras), InputError> {
        // Read a value first: serde would accept a top-level array as a positional struct.
        let value: serde_json::Value = serde_json::from_str(text).map_err(|e| InputError::Json(e.to_string()))?;
        if !value.is_object() {
            let kind = match value {
                serde_json::Value::Array(_) => "an array",
                serde_json::Value::String(_) => "a string",
                serde_json::Value::Number(_) => "a number",
                serde_json::Value::Bool(_) => "a boolean",
                _ => "null",
            };
            return Err(InputError::Json(format!("the round must be a JSON object {{...}}, got {kind}")));
        }
        // A type error names its field (`turn`, `utilities[1][0]`), as range errors do.
        let raw: RawRound = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if path == "." || path.is_empty() {
                InputError::Json(inner.to_string())
            } else {
                InputError::Json(format!("`{path}`: {inner}"))
            }
        })?;
        raw.resolve()
    }
}

/// Fields of the JSON round that configure a mechanism rather than describe the round.
#[derive(Clone, Debug, Default)]
pub struct JsonExtras {
    /// Mechanism state carried between `mtf schedule` calls (stride passes, Themis accumulators,
    /// the static partition), as printed by the previous call.
    pub state: Option<serde_json::Value>,
    /// Themis's fairness knob f in [0, 1].
    pub fairness: Option<f64>,
    /// The free phase: `"round_robin"` (SPEC 3.1, the default), `"weighted_random"` (SPEC 7:
    /// one leftover per entry of `draws`, to an agent drawn by weight) or `"none"` (leftovers
    /// stay idle, SPEC 8's valuation world).
    pub leftovers: Leftovers,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRound {
    utilities: Option<Vec<Vec<f64>>>,
    demands: Option<Vec<f64>>,
    rates: Option<Vec<Vec<f64>>>,
    fastest: Option<Vec<f64>>,
    thresholds: Option<Vec<f64>>,
    budgets: Option<Vec<f64>>,
    weights: Option<Vec<f64>>,
    turn: Option<usize>,
    types: Option<Vec<usize>>,
    draws: Option<Vec<f64>>,
    state: Option<serde_json::Value>,
    fairness: Option<f64>,
    leftovers: Option<String>,
    bids: Option<Vec<Vec<f64>>>,
    reserve: Option<f64>,
    redistribute: Option<bool>,
    ids: Option<Vec<u64>>,
    gangs: Option<Vec<u32>>,
    remaining: Option<Vec<f64>>,
    ages: Option<Vec<f64>>,
    clock: Option<f64>,
    round_seconds: Option<f64>,
    type_names: Option<Vec<String>>,
}

impl RawRound {
    fn resolve(self) -> Result<(RoundInput, JsonExtras), InputError> {
        let (form, n, m, utilities, demands, rates);
        match (self.utilities, self.demands) {
            (Some(_), Some(_)) => return Err(InputError::Conflict("utilities", "demands")),
            (Some(u), None) => {
                form = Form::Utilities;
                n = u.len();
                m = u.first().map_or(0, Vec::len);
                utilities = flatten("utilities", u, m)?;
                demands = Vec::new();
                rates = match self.rates {
                    Some(r) => rows("rates", r, n, m)?,
                    None => Vec::new(),
                };
            }
            (None, Some(d)) => {
                form = Form::Demand;
                n = d.len();
                let r = self.rates.ok_or(InputError::Missing {
                    field: "rates",
                    why: " (the demand form needs an n x m rate matrix)".into(),
                })?;
                m = r.first().map_or(0, Vec::len);
                rates = rows("rates", r, n, m)?;
                demands = d;
                utilities = Vec::new();
            }
            (None, None) => {
                return Err(InputError::Missing {
                    field: "utilities",
                    why: " (or `demands` and `rates`)".into(),
                })
            }
        }
        if let Some(f) = self.fairness {
            if !(0.0..=1.0).contains(&f) {
                return Err(InputError::Value {
                    field: "fairness",
                    at: String::new(),
                    value: f.to_string(),
                    expected: "expected a number in [0, 1]",
                });
            }
        }
        let leftovers = match self.leftovers.as_deref() {
            None => Leftovers::default(),
            Some(name) => Leftovers::from_name(name).ok_or_else(|| InputError::Value {
                field: "leftovers",
                at: String::new(),
                value: format!("\"{name}\""),
                expected: "expected \"round_robin\", \"weighted_random\" or \"none\"",
            })?,
        };
        let bids = match self.bids {
            Some(b) => rows("bids", b, n, m)?,
            None => Vec::new(),
        };
        let input = RoundInput {
            n,
            m,
            form,
            utilities,
            demands,
            rates,
            thresholds: self.thresholds.unwrap_or_default(),
            budgets: self.budgets.unwrap_or_default(),
            weights: self.weights.unwrap_or_else(|| vec![1.0; n]),
            turn: self.turn.unwrap_or(0),
            types: self.types.unwrap_or_default(),
            draws: self.draws.unwrap_or_default(),
            bids,
            reserve: self.reserve.unwrap_or(0.0),
            redistribute: self.redistribute.unwrap_or(true),
            rates_stamp: RatesStamp::default(),
            fastest: self.fastest.unwrap_or_default(),
            jobs: Jobs {
                ids: self.ids.unwrap_or_default(),
                gangs: self.gangs.unwrap_or_default(),
                remaining: self.remaining.unwrap_or_default(),
                ages: self.ages.unwrap_or_default(),
                clock: self.clock.unwrap_or(0.0),
                round_seconds: self.round_seconds.unwrap_or(0.0),
                type_names: self.type_names.unwrap_or_default(),
            },
        };
        input.validate()?;
        Ok((
            input,
            JsonExtras {
                state: self.state,
                fairness: self.fairness,
                leftovers,
            },
        ))
    }
}

/// An n x m matrix field: n rows of m, flattened row-major.
fn rows(field: &'static str, rows: Vec<Vec<f64>>, n: usize, m: usize) -> Result<Vec<f64>, InputError> {
    if rows.len() != n {
        return Err(InputError::Length {
            field,
            at: String::new(),
            got: rows.len(),
            expected: n,
        });
    }
    flatten(field, rows, m)
}

fn flatten(field: &'static str, rows: Vec<Vec<f64>>, m: usize) -> Result<Vec<f64>, InputError> {
    let mut flat = Vec::with_capacity(rows.len() * m);
    for (i, row) in rows.into_iter().enumerate() {
        if row.len() != m {
            return Err(InputError::Length {
                field,
                at: format!(" row {i}"),
                got: row.len(),
                expected: m,
            });
        }
        flat.extend(row);
    }
    Ok(flat)
}

fn check_len<T>(field: &'static str, v: &[T], expected: usize) -> Result<(), InputError> {
    if v.len() != expected {
        return Err(InputError::Length {
            field,
            at: String::new(),
            got: v.len(),
            expected,
        });
    }
    Ok(())
}

fn check_vec(field: &'static str, v: &[f64], ok: impl Fn(f64) -> bool, expected: &'static str) -> Result<(), InputError> {
    match v.iter().position(|&x| !ok(x)) {
        Some(i) => Err(InputError::Value {
            field,
            at: format!("[{i}]"),
            value: v[i].to_string(),
            expected,
        }),
        None => Ok(()),
    }
}

fn check_matrix(field: &'static str, v: &[f64], m: usize, ok: impl Fn(f64) -> bool, expected: &'static str) -> Result<(), InputError> {
    match v.iter().position(|&x| !ok(x)) {
        Some(k) => Err(InputError::Value {
            field,
            at: format!("[{}][{}]", k / m, k % m),
            value: v[k].to_string(),
            expected,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(json: &str) -> String {
        RoundInput::from_json(json).unwrap_err().to_string()
    }

    #[test]
    fn type_errors_did_not_name_the_field() {
        let base = r#""utilities": [[0.5, 0.5]], "thresholds": [0.5], "budgets": [1], "weights": [1]"#;
        for (extra, field) in [
            (r#""turn": "0""#, "`turn`"),
            (r#""turn": -1"#, "`turn`"),
            (r#""turn": 0.5"#, "`turn`"),
            (r#""turn": 0, "leftovers": 3"#, "`leftovers`"),
            (r#""turn": 0, "draws": ["x"]"#, "`draws[0]`"),
            (r#""turn": 0, "fairness": "high""#, "`fairness`"),
            (r#""turn": 0, "reserve": [1]"#, "`reserve`"),
            (r#""turn": 0, "redistribute": 1"#, "`redistribute`"),
            (r#""turn": 0, "demands": {"a": 1}"#, "`demands`"),
        ] {
            let e = err(&format!("{{{base}, {extra}}}"));
            assert!(e.contains(field) && e.contains("invalid"), "{extra}: {e}");
        }
        let e = err(r#"{"utilities": [[0.5, "x"]], "thresholds": [0.5], "budgets": [1], "weights": [1], "turn": 0}"#);
        assert!(e.contains("`utilities[0][1]`"), "{e}");
    }

    #[test]
    fn start_utilities_by_hand() {
        // Demand form: demand 5, rates 10 and 5 (max 10): min(5, 10) / 10 and min(5, 5) / 10.
        let d = RoundInput::from_demands(&[5.0], &[vec![10.0, 5.0]]);
        assert_eq!((d.start_utility(0, 0), d.start_utility(0, 1)), (0.5, 0.5));
        let d = RoundInput::from_demands(&[2.0], &[vec![10.0, 5.0]]);
        assert_eq!(d.mean_start_utility(0), (0.2 + 0.2) / 2.0);
        let u = RoundInput::from_utilities(&[vec![0.9, 0.1, 0.2], vec![0.0, 0.0, 0.3]]);
        assert!((u.mean_start_utility(0) - 0.4).abs() < 1e-15 && (u.mean_start_utility(1) - 0.1).abs() < 1e-15);
    }

    #[test]
    fn spec_example_parses() {
        let (r, _) = RoundInput::from_json(
            r#"{"utilities": [[0.1, 0.9, 0.1, 0.2], [0.5, 0.6, 0.5, 0.7]],
                "thresholds": [0.5, 0.5], "budgets": [50.0, 50.0], "weights": [1.0, 1.0], "turn": 0}"#,
        )
        .unwrap();
        assert_eq!((r.n, r.m, r.form), (2, 4, Form::Utilities));
        assert_eq!(r.utilities[5], 0.6);
    }

    #[test]
    fn each_bad_input_names_its_problem() {
        assert!(err("{").starts_with("bad JSON"));
        assert!(err(r#"{"utilities": [[0.1, 0.2], [0.3]]}"#).contains("`utilities` row 1 has 1 entries, expected 2"));
        assert!(err(r#"{"utilities": [[0.1, 1.5]]}"#).contains("`utilities`[0][1] is 1.5"));
        assert!(err(r#"{"utilities": [[0.1]], "weights": [-1]}"#).contains("`weights`[0] is -1"));
        assert!(err(r#"{"utilities": [[0.1]], "budgets": [-0.5]}"#).contains("`budgets`[0] is -0.5"));
        assert!(err(r#"{"utilities": [[0.1]], "thresholds": [1.1]}"#).contains("`thresholds`[0] is 1.1"));
        assert!(err(r#"{"utilities": [[0.1]], "turn": 1}"#).contains("`turn`"));
        assert!(err(r#"{"utilities": []}"#).contains("need at least one agent"));
        assert!(err(r#"{"utilities": [[]]}"#).contains("need at least one accelerator"));
        assert!(err(r#"{"utilities": [[0.1]], "demands": [1]}"#).contains("cannot be given together"));
        assert!(err(r#"{"demands": [1]}"#).contains("missing field `rates`"));
        assert!(err(r#"{"demands": [1], "rates": [[0.0]]}"#).contains("`rates`[0][0] is 0"));
        assert!(err(r#"{"demands": [-1], "rates": [[1.0]]}"#).contains("`demands`[0] is -1"));
        assert!(err(r#"{"utilitis": [[0.1]]}"#).contains("unknown field `utilitis`"));
        assert!(err(r#"{"utilities": [[NaN]]}"#).starts_with("bad JSON"));
        assert!(err(r#"{"utilities": [[1e999]]}"#).starts_with("bad JSON"));
        assert!(err(r#"{"utilities": [[0.1]], "fairness": 2}"#).contains("`fairness`"));
    }

    #[test]
    fn weights_of_1e308_overflowed_redistribution() {
        let e = err(r#"{"utilities": [[0.5], [0.5]], "thresholds": [0, 0], "budgets": [50, 50], "weights": [1e308, 1]}"#);
        assert!(e.contains("`weights`[0] is 100000000"), "{e}");
        assert!(err(r#"{"utilities": [[0.5]], "weights": [1e-308]}"#).contains("`weights`[0]"));
        assert!(err(r#"{"utilities": [[0.5]], "budgets": [1e300]}"#).contains("`budgets`[0]"));
        assert!(err(r#"{"demands": [1e300], "rates": [[1]]}"#).contains("`demands`[0]"));
        assert!(err(r#"{"demands": [1], "rates": [[1e-300]]}"#).contains("`rates`[0][0]"));
        // The bounds themselves are accepted.
        RoundInput::from_json(r#"{"utilities": [[0.5], [0.5]], "budgets": [1e15, 0], "weights": [1e9, 1e-9]}"#).unwrap();
    }

    #[test]
    fn top_level_array_was_accepted_as_a_positional_struct() {
        let e = err(r#"[[[0.5]], null, null, [0.5], [10], [1], 0]"#);
        assert_eq!(e, "bad JSON: the round must be a JSON object {...}, got an array");
        assert!(err("3").contains("got a number"));
    }

    #[test]
    fn needs_are_reported_by_name() {
        let r = RoundInput::from_utilities(&[vec![0.5]]);
        let e = r.check_needs("mtf", &[Need::Thresholds, Need::Budgets]).unwrap_err();
        assert_eq!(e.to_string(), "missing field `thresholds` (mechanism `mtf` needs it)");
    }
}

//! The standalone agent runtime: what an exported agent binary carries and how it decides.
//!
//! An exported agent is a copy of the `mtf-agent` runtime binary with a payload appended: a
//! JSON manifest (agents, observation layout, threshold levels, training run, config hash),
//! the policy's numbers as little-endian f32, then `[manifest length u64][weights length
//! u64][FNV-1a 64 of manifest and weights u64][MTFAGNT2]`. At start the runtime reads its own
//! executable, finds the footer, checks the checksum, the manifest (known version and kind,
//! levels in [0, 1], sizes that fit) and that every number is finite, and loads the payload, so
//! the single file is all a tenant needs and a damaged one refuses to run. The runtime uses serde_json
//! and a few pure functions and constants of the environment crate (the observation layout's
//! names and lengths, FNV-1a, splitmix64); it runs no burn, no environment and no mechanism.
//! An ONNX policy (`kind` `onnx`, `mtf export --policy onnx:PATH`) carries the model file as its
//! payload instead of numbers and runs it with tract, as `onnx:PATH` does inside `mtf`.
//!
//! Protocol: JSON lines. In: `{"budget": B / T, "utilities": [u_c; m]}` (the environment's
//! normalisation), plus the further features the policy was trained on, named in the
//! manifest's `inputs` in the order it reads them (the observation's order, SPEC 4):
//! `"backlog"` (backlog over arrival rate, >= 0), `"burst"` (the arrival process's burst state,
//! 0 or 1), `"weight"` (weight over the largest, in (0, 1]) and `"budgets"` (every agent's
//! budget share, `agents_total` of them), and `"tokens"` (the agent's budget B itself: a Hedge
//! policy's budget state is `min(floor(B), T)`, which `floor(budget * T)` can miss by one when
//! B / T does not survive the round trip; `mtf` always sends it, from manifest version 4). A
//! line may carry features the policy does not read;
//! one it reads is required. Out: `{"threshold": .., "probabilities": [..]}` for a threshold policy, or,
//! for a bid policy (SPEC 8), `{"bid_factor": a, "bids": [a * value_scale * u_c; m],
//! "probabilities": [..]}`; greedy unless the runtime was started with `--sample --seed N`. A bad line gets `{"error": ".."}` on its output line
//! and the agent goes on with the next.
//!
//! A world policy (manifest `world` present: the actors of a `mtf train` run in a world behind
//! the seam, `env::worlds`, one per group of agents) reads `{"world": [x; features]}`, one
//! live agent's observation row in the world's declared layout (`world.features` names it),
//! and answers `{"threshold": a, "probabilities": [..]}` or, when the world's levels are bid
//! factors, `{"bid_factor": a, "probabilities": [..]}`. The processes are per group: started
//! with `--agent G`, the group's index in `world.groups`.
//! A market tenant's policy is a world policy (the market is a world behind the seam since
//! 2026-11-29): its row is `env::market::Market::observe`'s features.

use serde::{Deserialize, Serialize};

/// Footer magic (2: the footer carries a checksum).
pub const MAGIC: &[u8; 8] = b"MTFAGNT2";

/// The manifest version `mtf export` writes (3: `inputs`; 4: the runtime reads `tokens`, so
/// `mtf` sends it; 5: constant policies per agent; 6: `by_type` policies; 7: market
/// policies, no longer written or read; 8: ONNX policies; 9: world policies). Versions 2 (SPEC
/// 4's state only) to 8 are read too, but for a version-7 market policy (its `market` block is
/// no longer read, so its manifest fails the checks of the policy it then looks like).
pub const VERSION: u32 = 9;

/// Largest ONNX model an exported agent carries (as `onnx:PATH` reads).
pub const MAX_MODEL: usize = 256 << 20;

/// Most catalog types a `by_type` policy may read.
const MAX_TYPES: usize = 1024;

/// The features a policy may read after SPEC 4's state, in the observation's order.
pub const INPUTS: [&str; 5] = env::world::OBSERVATION_EXTRAS;

/// Footer length: manifest length, weights length, checksum, magic.
const FOOTER: usize = 32;

/// Largest manifest read (a manifest is a few hundred bytes).
const MAX_MANIFEST: usize = 1 << 20;

/// How an exported policy decides, named in the manifest's `kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyForm {
    /// An actor network (`actor_critic`): one tanh hidden layer of `hidden` units; the
    /// actor-critic's, PPO's, and any learner's that exports an actor.
    Actor,
    /// Hedge's log-weights per budget state (`hedge`).
    Table,
    /// One level (`fixed`).
    Constant,
    /// An ONNX network from any trainer (`onnx`, `mtf export --policy onnx:PATH`): the
    /// payload is the model file, run with tract, one policy shared by every agent.
    Onnx,
}

impl PolicyForm {
    /// Every form with its manifest name.
    pub const ALL: [(PolicyForm, &'static str); 4] = [
        (PolicyForm::Actor, "actor_critic"),
        (PolicyForm::Table, "hedge"),
        (PolicyForm::Constant, "fixed"),
        (PolicyForm::Onnx, "onnx"),
    ];

    /// Its name in a manifest's `kind`.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map(|(_, n)| *n)
            .expect("every form is listed")
    }

    /// The form a manifest's `kind` names.
    pub fn from_name(kind: &str) -> Result<PolicyForm, String> {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == kind)
            .map(|(f, _)| *f)
            .ok_or_else(|| format!("unknown policy kind `{kind}`"))
    }
}

/// What the payload describes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version.
    pub version: u32,
    /// The policy's form: `actor_critic`, `hedge` or `fixed` ([`PolicyForm`]).
    pub kind: String,
    /// Agent indices (in the training run) this file holds, in payload order.
    pub agents: Vec<usize>,
    /// Accelerators (length of `utilities`).
    pub m: usize,
    /// What the levels are: `threshold` (MTF and the baselines) or `bid` (bid factors of the
    /// auctions). Absent in manifests written before bid policies: `threshold`.
    #[serde(default = "threshold")]
    pub action: String,
    /// Tokens bid per unit of utility at bid factor 1 (bid policies).
    #[serde(default = "one")]
    pub value_scale: f64,
    /// Action levels: thresholds in [0, 1], or bid factors.
    pub levels: Vec<f64>,
    /// Actor hidden width (actor_critic).
    pub hidden: usize,
    /// The features read after the budget and the utilities, in order (a subsequence of
    /// [`INPUTS`]); empty for SPEC 4's state.
    #[serde(default)]
    pub inputs: Vec<String>,
    /// Agents in the training scenario: the length of the `budgets` input.
    #[serde(default)]
    pub agents_total: usize,
    /// Length of the `by_type` block the policy reads instead of SPEC 4's state (0: it reads
    /// SPEC 4's state and `inputs`; else `inputs` ends with `by_type`, after `burst` and
    /// `weight` when the block holds them). Such a policy runs on any cluster with these
    /// `types`.
    #[serde(default)]
    pub by_type: usize,
    /// The catalog's accelerator types, in order (`by_type` policies).
    #[serde(default)]
    pub types: Vec<String>,
    /// A world policy's world (`env::worlds`): its name, the row it reads and its groups.
    /// Absent for every other policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world: Option<WorldShape>,
    /// Each held agent's weight in the training run (`by_type` policies): on a scenario with
    /// other agents, each agent acts with a held agent of its weight (see `drive::transfer_map`).
    #[serde(default)]
    pub weights: Vec<f64>,
    /// Token total T (hedge: budget state = min(floor(budget * T), T)).
    pub total_tokens: f64,
    /// Budget states per agent (hedge).
    pub states: usize,
    /// Fixed level index (fixed).
    pub fixed_level: usize,
    /// Length in bytes of the ONNX model the payload holds (onnx; the payload pads it to a
    /// multiple of 4).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub model_bytes: usize,
    /// The training run it came from.
    pub training_run: String,
    /// FNV-1a 64 of the run's resolved config.toml, hex.
    pub config_hash: String,
}

/// What a world policy acts in: the agents it holds (`Manifest::agents`) are indices into
/// `groups`, or agent ids where it holds an actor per agent (`per_agent`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorldShape {
    /// Its `env.world` name.
    pub name: String,
    /// The observation row's feature names, in order (`env::worlds::Layout::names`).
    pub features: Vec<String>,
    /// The world's groups, by index.
    pub groups: Vec<String>,
    /// 0: an actor per group; n: an actor per agent of a world of n (the queue world's
    /// learners keep one per agent), `Manifest::agents` their ids. Absent before 2026-12-03.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub per_agent: usize,
}

/// Most features a world policy's row may have, and most groups.
const MAX_WORLD: usize = 1 << 16;

fn threshold() -> String {
    "threshold".into()
}

fn one() -> f64 {
    1.0
}

fn is_zero(x: &usize) -> bool {
    *x == 0
}

/// Longest line either side of the protocol reads (1 MiB): a longer one is refused without
/// ever being held whole.
pub const MAX_LINE: usize = 1 << 20;

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineRead {
    /// A line (in the buffer, without its newline).
    Line,
    /// The end of the input, nothing read.
    End,
    /// A line longer than the limit: the buffer holds its first `limit` bytes; with `skip`,
    /// the rest of it was read and dropped, so the next read starts at the next line.
    TooLong,
}

/// Read one line of at most `limit` bytes into `buf` (cleared first; the newline is not
/// kept): memory stays bounded whatever the other side sends. A longer line is reported when
/// its newline arrives with `skip` (the reader can go on: the agent answers it with an error),
/// else as soon as it passes the limit (an endless line cannot stall the caller).
pub fn read_line(r: &mut impl std::io::BufRead, buf: &mut Vec<u8>, limit: usize, skip: bool) -> std::io::Result<LineRead> {
    buf.clear();
    let (mut too_long, mut any) = (false, false);
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            return Ok(match (any, too_long) {
                (false, _) => LineRead::End,
                (true, true) => LineRead::TooLong,
                (true, false) => LineRead::Line,
            });
        }
        any = true;
        let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(at) => (&avail[..at], at + 1),
            None => (avail, avail.len()),
        };
        let room = limit - buf.len();
        if chunk.len() > room {
            too_long = true;
            if !skip {
                buf.extend_from_slice(&chunk[..room]);
                r.consume(room);
                return Ok(LineRead::TooLong);
            }
        }
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let newline = done > chunk.len();
        r.consume(done);
        if newline {
            return Ok(if too_long { LineRead::TooLong } else { LineRead::Line });
        }
    }
}

/// Largest bid factor a manifest may carry (as the environment's limit).
const MAX_BID_FACTOR: f64 = 1e3;

impl Manifest {
    /// Number of f32 per agent in the payload (saturating: [`Manifest::validate`] bounds it).
    pub fn per_agent(&self) -> usize {
        let (d, h, k) = (self.input_len(), self.hidden, self.levels.len());
        match self.form() {
            Ok(PolicyForm::Actor) => d
                .saturating_mul(h)
                .saturating_add(h)
                .saturating_add(h.saturating_mul(k))
                .saturating_add(k),
            Ok(PolicyForm::Table) => self.states.saturating_mul(k),
            // From version 5 a constant policy carries each agent's level index (a level per
            // weight class or per agent); before, `fixed_level` alone.
            Ok(PolicyForm::Constant) if self.version >= 5 => 1,
            // The model is bytes, not numbers (`model_bytes`).
            Ok(PolicyForm::Constant | PolicyForm::Onnx) | Err(_) => 0,
        }
    }

    /// The policy's form, from `kind`.
    pub fn form(&self) -> Result<PolicyForm, String> {
        PolicyForm::from_name(&self.kind)
    }

    /// Length of the policy's input: SPEC 4's state and the `inputs`.
    pub fn input_len(&self) -> usize {
        if let Some(w) = &self.world {
            return w.features.len();
        }
        if self.by_type > 0 {
            return self.by_type;
        }
        let extra = |name: &String| if name == "budgets" { self.agents_total } else { 1 };
        env::world::spec_features(self.m).saturating_add(self.inputs.iter().map(extra).fold(0, usize::saturating_add))
    }

    /// Check what a runtime relies on: a known version and kind, levels in [0, 1], at least
    /// one agent and accelerator, a fixed level that exists, budget states for Hedge, inputs
    /// it knows in the observation's order.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=VERSION).contains(&self.version) {
            return Err(format!(
                "manifest version {} is not one this runtime reads (2 to {VERSION})",
                self.version
            ));
        }
        let mut known = INPUTS.iter();
        if let Some(bad) = self.inputs.iter().find(|i| !known.any(|k| *k == i.as_str())) {
            return Err(format!(
                "input `{bad}` is unknown or out of order (inputs are a subsequence of {INPUTS:?})"
            ));
        }
        if self.inputs.iter().any(|i| i == "budgets") && !(1..=1 << 20).contains(&self.agents_total) {
            return Err(format!(
                "a policy reading `budgets` needs agents_total in [1, 2^20], not {}",
                self.agents_total
            ));
        }
        if self.by_type > 0 || !self.types.is_empty() || self.inputs.iter().any(|i| i == "by_type") {
            if self.version < 6 {
                return Err(format!("a by_type policy needs manifest version 6, not {}", self.version));
            }
            // The block holds the burst state and weight class when `inputs` names them.
            let t = self.types.len();
            let others = self.inputs.len().saturating_sub(1);
            let shape_ok =
                self.inputs.last().is_some_and(|i| i == "by_type") && self.inputs[..others].iter().all(|i| i == "burst" || i == "weight");
            if !shape_ok || t == 0 || t > MAX_TYPES || self.by_type != 2 + 3 * t + others {
                return Err(format!(
                    "a by_type policy reads inputs [(\"burst\",) (\"weight\",) \"by_type\"], a block of 2 + 3 x types + those numbers; this one has inputs {:?}, {t} types, length {}",
                    self.inputs, self.by_type
                ));
            }
            if self.weights.len() != self.agents.len() || self.weights.iter().any(|w| !(w.is_finite() && *w > 0.0)) {
                return Err(format!(
                    "a by_type policy needs a weight > 0 per agent ({} agents, {} weights)",
                    self.agents.len(),
                    self.weights.len()
                ));
            }
        }
        let form = self.form()?;
        if self.levels.is_empty() {
            return Err("the manifest has no levels".into());
        }
        let max = match self.action.as_str() {
            "threshold" => 1.0,
            "bid" => MAX_BID_FACTOR,
            other => return Err(format!("unknown action `{other}` (threshold or bid)")),
        };
        if let Some(l) = self.levels.iter().find(|l| !(0.0..=max).contains(*l)) {
            return Err(format!("level {l} is outside [0, {max}]"));
        }
        if !(self.value_scale > 0.0 && self.value_scale <= 1e12) {
            return Err(format!("value_scale {} is outside (0, 1e12]", self.value_scale));
        }
        if let Some(w) = &self.world {
            self.validate_world(w, form)?;
        } else if self.agents.is_empty() || self.m == 0 {
            return Err("the manifest names no agent or no accelerator".into());
        }
        if self.fixed_level >= self.levels.len() {
            return Err(format!(
                "fixed level {} does not exist ({} levels)",
                self.fixed_level,
                self.levels.len()
            ));
        }
        if form == PolicyForm::Table && (self.states == 0 || !(self.total_tokens > 0.0 && self.total_tokens.is_finite())) {
            return Err("a Hedge policy needs budget states and a token total > 0".into());
        }
        if form == PolicyForm::Actor && self.hidden == 0 {
            return Err("an actor-critic policy needs a hidden width".into());
        }
        if form == PolicyForm::Onnx {
            if self.version < 8 {
                return Err(format!("an ONNX policy needs manifest version 8, not {}", self.version));
            }
            if !(1..=MAX_MODEL).contains(&self.model_bytes) || self.by_type > 0 || self.agents.len() != 1 {
                return Err(format!(
                    "an ONNX policy is one model of 1 to {MAX_MODEL} bytes shared by every agent, reading SPEC 4's state and `inputs`; this one has {} bytes, {} agents, by_type {}",
                    self.model_bytes,
                    self.agents.len(),
                    self.by_type
                ));
            }
        } else if self.model_bytes > 0 {
            return Err(format!(
                "a {} policy carries no model, but model_bytes is {}",
                self.kind, self.model_bytes
            ));
        }
        Ok(())
    }
}

impl Manifest {
    /// A world policy: an actor or constant levels per group, reading the world's row alone.
    fn validate_world(&self, w: &WorldShape, form: PolicyForm) -> Result<(), String> {
        if self.version < 9 {
            return Err(format!("a world policy needs manifest version 9, not {}", self.version));
        }
        let (d, g) = (w.features.len(), w.groups.len());
        if !(1..=MAX_WORLD).contains(&d) || !(1..=MAX_WORLD).contains(&g) {
            return Err(format!(
                "a world policy reads 1 to {MAX_WORLD} features for 1 to {MAX_WORLD} groups; this one has {d} features and {g} groups"
            ));
        }
        if !matches!(form, PolicyForm::Actor | PolicyForm::Constant) || self.by_type > 0 || !self.inputs.is_empty() {
            return Err(format!(
                "a world policy is an actor or constant levels reading the world's row and nothing else; this one is {} with by_type {}, inputs {:?}",
                self.kind, self.by_type, self.inputs
            ));
        }
        if w.per_agent > MAX_WORLD {
            return Err(format!(
                "a world policy holds an actor per agent for at most {MAX_WORLD} agents; this one says {}",
                w.per_agent
            ));
        }
        let (bound, what) = if w.per_agent > 0 { (w.per_agent, "agents") } else { (g, "groups") };
        if self.agents.is_empty() || self.agents.iter().any(|&a| a >= bound) {
            return Err(format!(
                "a world policy holds {what} among 0..{bound}; this one names {:?}",
                self.agents
            ));
        }
        Ok(())
    }
}

/// FNV-1a 64 of some bytes.
pub fn fnv(bytes: &[u8]) -> u64 {
    env::rng::fnv1a(bytes)
}

/// FNV-1a 64 of some bytes, as 16 hex digits.
pub fn fnv_hex(bytes: &[u8]) -> String {
    format!("{:016x}", fnv(bytes))
}

/// `runtime` with the payload appended.
pub fn append_payload(runtime: &[u8], manifest: &Manifest, weights: &[f32]) -> Vec<u8> {
    let raw: Vec<u8> = weights.iter().flat_map(|w| w.to_le_bytes()).collect();
    append_raw(runtime, manifest, &raw)
}

/// `runtime` with an ONNX policy's payload appended: the manifest (its `model_bytes` the
/// model's length) and the model file, padded to a multiple of 4.
pub fn append_model(runtime: &[u8], manifest: &Manifest, model: &[u8]) -> Vec<u8> {
    let mut raw = model.to_vec();
    raw.resize(model.len().next_multiple_of(4), 0);
    append_raw(runtime, manifest, &raw)
}

fn append_raw(runtime: &[u8], manifest: &Manifest, raw: &[u8]) -> Vec<u8> {
    let json = serde_json::to_vec(manifest).expect("a manifest serialises");
    let mut out = Vec::with_capacity(runtime.len() + json.len() + raw.len() + FOOTER);
    out.extend_from_slice(runtime);
    let start = out.len();
    out.extend_from_slice(&json);
    out.extend_from_slice(raw);
    let sum = fnv(&out[start..]);
    out.extend((json.len() as u64).to_le_bytes());
    out.extend((raw.len() as u64).to_le_bytes());
    out.extend(sum.to_le_bytes());
    out.extend(MAGIC);
    out
}

/// What an exported agent carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    /// What the policy is.
    pub manifest: Manifest,
    /// Its numbers (none for an ONNX policy).
    pub weights: Vec<f32>,
    /// An ONNX policy's model file (empty otherwise).
    pub model: Vec<u8>,
}

/// Read the payload from an executable's bytes, checking its checksum, its manifest and that
/// every number is finite (an ONNX model is checked by loading it: [`crate::export::onnx`]).
pub fn read_payload(exe: &[u8]) -> Result<Payload, String> {
    let n = exe.len();
    if n < FOOTER || &exe[n - 8..] != MAGIC {
        return Err("this binary carries no policy (export one with `mtf export`)".into());
    }
    let word = |at: usize| u64::from_le_bytes(exe[at..at + 8].try_into().expect("8 bytes"));
    let (json_len, w_len, sum) = (word(n - FOOTER), word(n - FOOTER + 8), word(n - FOOTER + 16));
    let end = n - FOOTER;
    // Lengths are untrusted: compare in u64 so 2^64 - 1 cannot overflow.
    let fits = json_len <= MAX_MANIFEST as u64 && w_len % 4 == 0 && json_len.checked_add(w_len).is_some_and(|t| t <= end as u64);
    if !fits {
        return Err("the policy payload is damaged (lengths do not fit)".into());
    }
    let (json_len, w_len) = (json_len as usize, w_len as usize);
    let w_start = end - w_len;
    let payload = &exe[w_start - json_len..end];
    if fnv(payload) != sum {
        return Err("the policy payload is damaged (checksum mismatch): export it again".into());
    }
    let manifest: Manifest =
        serde_json::from_slice(&exe[w_start - json_len..w_start]).map_err(|e| format!("the policy manifest is damaged: {e}"))?;
    manifest.validate().map_err(|e| format!("the policy manifest is invalid: {e}"))?;
    if manifest.form() == Ok(PolicyForm::Onnx) {
        let n = manifest.model_bytes;
        if w_len != n.next_multiple_of(4) {
            return Err(format!("the policy payload holds {w_len} bytes, the manifest's model {n}"));
        }
        return Ok(Payload {
            model: exe[w_start..w_start + n].to_vec(),
            manifest,
            weights: Vec::new(),
        });
    }
    let weights: Vec<f32> = exe[w_start..end]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    if let Some(k) = weights.iter().position(|w| !w.is_finite()) {
        return Err(format!("the policy's number {k} is {}, not finite", weights[k]));
    }
    // The manifest is untrusted: its sizes may multiply past 2^64.
    let Some(want) = manifest.per_agent().checked_mul(manifest.agents.len()) else {
        return Err("the policy manifest is invalid: its sizes overflow".into());
    };
    if weights.len() != want {
        return Err(format!(
            "the policy payload holds {} numbers, the manifest says {want}",
            weights.len()
        ));
    }
    if manifest.form() == Ok(PolicyForm::Constant) {
        let k = manifest.levels.len();
        if let Some(l) = weights.iter().find(|&&l| !(l >= 0.0 && l.fract() == 0.0 && (l as usize) < k)) {
            return Err(format!("the policy's level index {l} is not one of its {k} levels"));
        }
    }
    Ok(Payload {
        manifest,
        weights,
        model: Vec::new(),
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Input {
    /// Required but for world policies.
    budget: Option<f64>,
    /// Required but for `by_type` policies, which read the `by_type` block instead.
    #[serde(default)]
    utilities: Vec<f64>,
    by_type: Option<Vec<f64>>,
    backlog: Option<f64>,
    burst: Option<f64>,
    weight: Option<f64>,
    budgets: Option<Vec<f64>>,
    tokens: Option<f64>,
    world: Option<Vec<f64>>,
}

impl Input {
    /// The policy's input vector (budget, utilities, the manifest's inputs in order), or what
    /// is wrong with the line.
    fn features(&self, manifest: &Manifest) -> Result<Vec<f64>, String> {
        if manifest.world.is_some() {
            let d = manifest.input_len();
            let x = self
                .world
                .as_ref()
                .ok_or("`world` is missing: this policy reads a world's observation row (see --describe)")?;
            if x.len() != d {
                return Err(format!("`world` has {} entries, expected {d}", x.len()));
            }
            // The network runs in f32: a larger number would turn into infinity there.
            if let Some(j) = x.iter().position(|v| !(v.is_finite() && v.abs() <= f64::from(f32::MAX))) {
                return Err(format!("`world`[{j}] is {:?}, expected a finite number", x[j]));
            }
            return Ok(x.clone());
        }
        let budget = self.budget.ok_or("`budget` is missing: this policy reads it (see --describe)")?;
        if manifest.by_type > 0 {
            let x = self
                .by_type
                .as_ref()
                .ok_or("`by_type` is missing: this policy reads it (see --describe)")?;
            if x.len() != manifest.by_type {
                return Err(format!("`by_type` has {} entries, expected {}", x.len(), manifest.by_type));
            }
            // The block's budget over an equal share reaches n, its backlog MAX_BACKLOG.
            if let Some(j) = x.iter().position(|v| !(0.0..=MAX_BACKLOG).contains(v)) {
                return Err(format!("`by_type`[{j}] is {}, expected a number in [0, {MAX_BACKLOG:e}]", x[j]));
            }
            return Ok(x.clone());
        }
        let m = manifest.m;
        if self.utilities.len() != m {
            return Err(format!("`utilities` has {} entries, expected {m}", self.utilities.len()));
        }
        if !share(budget) {
            return Err(format!("`budget` is {budget}, expected a share B/T in [0, 1]"));
        }
        if let Some(b) = self.tokens {
            if !(b.is_finite() && (0.0..=env::config::limits::MAX_TOKENS).contains(&b)) {
                return Err(format!(
                    "`tokens` is {b}, expected a budget in [0, {:e}]",
                    env::config::limits::MAX_TOKENS
                ));
            }
        }
        if let Some(c) = self.utilities.iter().position(|u| !(0.0..=1.0).contains(u)) {
            return Err(format!("`utilities`[{c}] is {}, expected a number in [0, 1]", self.utilities[c]));
        }
        let mut x = Vec::with_capacity(manifest.input_len());
        x.push(budget);
        x.extend(&self.utilities);
        let missing = |name: &str| format!("`{name}` is missing: this policy reads it (see --describe)");
        for name in &manifest.inputs {
            match name.as_str() {
                "backlog" => match self.backlog.ok_or_else(|| missing("backlog"))? {
                    b if (0.0..=MAX_BACKLOG).contains(&b) => x.push(b),
                    b => return Err(format!("`backlog` is {b}, expected a number in [0, {MAX_BACKLOG:e}]")),
                },
                "burst" => match self.burst.ok_or_else(|| missing("burst"))? {
                    b if b == 0.0 || b == 1.0 => x.push(b),
                    b => return Err(format!("`burst` is {b}, expected 0 or 1")),
                },
                "weight" => match self.weight.ok_or_else(|| missing("weight"))? {
                    w if w > 0.0 && w <= 1.0 => x.push(w),
                    w => return Err(format!("`weight` is {w}, expected a number in (0, 1]")),
                },
                _ => {
                    let b = self.budgets.as_ref().ok_or_else(|| missing("budgets"))?;
                    if b.len() != manifest.agents_total {
                        return Err(format!("`budgets` has {} entries, expected {}", b.len(), manifest.agents_total));
                    }
                    if let Some(j) = b.iter().position(|&v| !share(v)) {
                        return Err(format!("`budgets`[{j}] is {}, expected a share B/T in [0, 1]", b[j]));
                    }
                    x.extend(b);
                }
            }
        }
        Ok(x)
    }
}

/// `floor(B)`: exact from `tokens`; from the share, `share * T` is first taken to the whole
/// token it is within 1e-9 of (B / T * T lands a hair below B = 3 for some T).
fn budget_floor(share: f64, tokens: Option<f64>, total: f64) -> f64 {
    if let Some(b) = tokens {
        return b.floor();
    }
    let b = share * total;
    let whole = b.round();
    if (b - whole).abs() <= 1e-9 * total.max(1.0) {
        whole
    } else {
        b.floor()
    }
}

/// Whether `x` is a budget share B/T (redistribution's rounding may put it a hair over 1).
fn share(x: f64) -> bool {
    (0.0..=1.0 + 1e-6).contains(&x)
}

/// Largest backlog over arrival rate an agent accepts: beyond it an f32 network input would
/// overflow to infinity (the environment's queues stay far below).
const MAX_BACKLOG: f64 = 1e9;

/// A loaded policy for one agent.
pub struct Agent<'a> {
    manifest: &'a Manifest,
    /// This agent's numbers.
    w: &'a [f32],
    /// An ONNX policy's model, loaded for one agent.
    model: Option<&'a crate::export::onnx::OnnxPolicy>,
}

impl<'a> Agent<'a> {
    /// The policy of the `slot`-th agent in the payload.
    pub fn new(manifest: &'a Manifest, weights: &'a [f32], slot: usize) -> Self {
        let per = manifest.per_agent();
        Self {
            manifest,
            w: &weights[slot * per..(slot + 1) * per],
            model: None,
        }
    }

    /// An ONNX policy ([`load_model`]).
    pub fn onnx(manifest: &'a Manifest, model: &'a crate::export::onnx::OnnxPolicy) -> Self {
        Self {
            manifest,
            w: &[],
            model: Some(model),
        }
    }

    /// Action probabilities for one input (budget share, utilities, then the manifest's
    /// `inputs`: [`Manifest::input_len`] numbers).
    pub fn probabilities(&self, input: &[f64]) -> Vec<f64> {
        self.probabilities_at(input, None)
    }

    /// [`Agent::probabilities`], with the agent's budget in tokens when known (Hedge's state);
    /// a model that cannot answer gives NaN (see [`Agent::answer`] for its message).
    pub fn probabilities_at(&self, input: &[f64], tokens: Option<f64>) -> Vec<f64> {
        self.try_probabilities(input, tokens)
            .unwrap_or_else(|_| vec![f64::NAN; self.manifest.levels.len()])
    }

    fn try_probabilities(&self, input: &[f64], tokens: Option<f64>) -> Result<Vec<f64>, String> {
        let k = self.manifest.levels.len();
        Ok(match self.manifest.form().expect("a validated manifest") {
            PolicyForm::Actor => {
                let (d, h) = (self.manifest.input_len(), self.manifest.hidden);
                let x: Vec<f32> = input.iter().map(|&v| v as f32).collect();
                let mut logits = vec![0.0; k];
                crate::learners::nets::actor_logits(self.w, (d, h, k), &x, &mut Vec::new(), &mut logits);
                softmax(logits.iter().map(|&l| f64::from(l)))
            }
            PolicyForm::Table => {
                let s = (budget_floor(input[0], tokens, self.manifest.total_tokens).max(0.0) as usize).min(self.manifest.states - 1);
                softmax(self.w[s * k..(s + 1) * k].iter().map(|&l| f64::from(l)))
            }
            PolicyForm::Constant => {
                let level = self.w.first().map_or(self.manifest.fixed_level, |&l| l as usize);
                (0..k).map(|l| if l == level { 1.0 } else { 0.0 }).collect()
            }
            PolicyForm::Onnx => {
                let x: Vec<f32> = input.iter().map(|&v| v as f32).collect();
                self.model
                    .expect("an ONNX policy is built with Agent::onnx")
                    .probabilities_one(&x)?
            }
        })
    }

    /// Answer one protocol line: the decision, or an error object naming the problem.
    pub fn answer(&self, line: &str, draw: Option<f64>) -> String {
        let input: Input = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return serde_json::json!({ "error": format!("bad JSON: {e}") }).to_string(),
        };
        let x = match input.features(self.manifest) {
            Ok(x) => x,
            Err(e) => return serde_json::json!({ "error": e }).to_string(),
        };
        let p = match self.try_probabilities(&x, input.tokens) {
            Ok(p) => p,
            Err(e) => return serde_json::json!({ "error": format!("the policy's model failed on this input: {e}") }).to_string(),
        };
        if p.iter().any(|q| !q.is_finite()) {
            return serde_json::json!({ "error": "the policy's probabilities are not finite for this input" }).to_string();
        }
        let level = match draw {
            None => crate::learners::argmax(p.iter().copied()),
            Some(u) => {
                let mut x = u;
                p.iter()
                    .position(|&q| {
                        let hit = x < q;
                        x -= q;
                        hit
                    })
                    .unwrap_or(p.len() - 1)
            }
        };
        let a = self.manifest.levels[level];
        if self.manifest.world.is_some() && self.manifest.action == "bid" {
            return serde_json::json!({ "bid_factor": a, "probabilities": p }).to_string();
        }
        if self.manifest.action == "bid" {
            let bids: Vec<f64> = input.utilities.iter().map(|u| a * self.manifest.value_scale * u).collect();
            return serde_json::json!({ "bid_factor": a, "bids": bids, "probabilities": p }).to_string();
        }
        serde_json::json!({ "threshold": a, "probabilities": p }).to_string()
    }
}

/// An ONNX policy's model, loaded for one agent reading the manifest's input; the error says
/// why it cannot run.
pub fn load_model(payload: &Payload) -> Result<crate::export::onnx::OnnxPolicy, String> {
    let m = &payload.manifest;
    crate::export::onnx::OnnxPolicy::from_bytes(&payload.model, 1, m.input_len(), m.levels.len(), Default::default())
        .map_err(|e| format!("the policy's ONNX model: {e}"))
}

fn softmax(logits: impl Iterator<Item = f64>) -> Vec<f64> {
    let l: Vec<f64> = logits.collect();
    let max = l.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = l.iter().map(|x| (x - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|x| x / s).collect()
}

/// splitmix64 uniforms for `--sample --seed N` (the runtime has no other randomness).
pub struct Draws(u64);

impl Draws {
    /// Seeded.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next uniform in [0, 1): splitmix64's sequence from the seed.
    pub fn next_unit(&mut self) -> f64 {
        let x = env::rng::splitmix(self.0);
        self.0 = self.0.wrapping_add(env::rng::GOLDEN);
        env::rng::unit(x)
    }
}

#[cfg(test)]
mod tests;

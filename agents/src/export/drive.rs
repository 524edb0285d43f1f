//! Driving exported agent binaries as the agents' policies (`--policy agent:PATH`), over their
//! stdin/stdout protocol: one process per agent. A file holding every agent of the scenario runs
//! each process with `--agent i`; a file holding one agent serves every agent (a homogeneous
//! population). A reply that breaks the protocol, or none within the timeout
//! (`MTF_AGENT_TIMEOUT` seconds, default [`DEFAULT_TIMEOUT_SECS`]), is recorded and reported as
//! a user error after the episode; the agents are then stopped and not asked again.

use crate::export::runtime::{read_line, read_payload, LineRead, Manifest, MAX_LINE};
use env::policy::Policy;
use env::world::Observations;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// Seconds an agent may take to answer one observation before it is declared unresponsive.
pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;

/// The reply timeout: `MTF_AGENT_TIMEOUT` seconds when set, else the default; a value that is
/// not a number of seconds in (0, 1e6) is an error.
pub fn reply_timeout() -> Result<Duration, String> {
    let Ok(raw) = std::env::var("MTF_AGENT_TIMEOUT") else {
        return Ok(Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS));
    };
    match raw.trim().parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs < 1e6 => Ok(Duration::from_secs_f64(secs)),
        _ => Err(format!("MTF_AGENT_TIMEOUT={raw:?}: expected a number of seconds in (0, 1e6)")),
    }
}

pub use crate::error::ErrorSlot;

/// Read and check an exported agent file against a scenario's shape; with it, the training
/// agent each of the scenario's agents runs as (`--agent`; all the same for a one-agent file).
/// A `by_type` policy runs on any cluster with its accelerator types: m need not match, and
/// agents are matched by weight ([`crate::train::transfer_map`]).
pub fn check(path: &Path, scenario: &env::config::Scenario, action: &str, levels: &[f64]) -> Result<(Manifest, Vec<usize>), String> {
    let (n, m) = (scenario.n(), scenario.m());
    let bytes = crate::run::read_regular(path, 1 << 30).map_err(|e| e.to_string())?;
    if !bytes.ends_with(crate::export::runtime::MAGIC) {
        // No policy inside: any executable speaking the protocol (docs/AGENTS.md).
        return Ok((external(path, scenario, action, levels), (0..n).collect()));
    }
    let manifest = read_payload(&bytes).map_err(|e| format!("{}: {e}", path.display()))?.manifest;
    if manifest.action != action {
        return Err(format!(
            "{}: a {} policy; this scenario's mechanism takes a {action}",
            path.display(),
            manifest.action
        ));
    }
    if manifest.by_type > 0 {
        let types = &scenario.file.env.catalog.types;
        if &manifest.types != types || manifest.levels != levels {
            return Err(format!(
                "{}: the agent reads accelerator types {:?} with levels {:?}; this scenario has {types:?} and {levels:?}",
                path.display(),
                manifest.types,
                manifest.levels
            ));
        }
        let weights: Vec<f64> = scenario.agents.iter().map(|a| a.weight).collect();
        let assign = if manifest.agents.len() == 1 {
            vec![manifest.agents[0]; n]
        } else {
            let map = crate::train::transfer_map(&manifest.weights, &weights).map_err(|e| format!("{}: {e}", path.display()))?;
            map.into_iter().map(|p| manifest.agents[p]).collect()
        };
        return Ok((manifest, assign));
    }
    if manifest.m != m || manifest.levels != levels {
        return Err(format!(
            "{}: the agent expects {} accelerators and levels {:?}; this scenario has {m} and {levels:?}",
            path.display(),
            manifest.m,
            manifest.levels
        ));
    }
    if manifest.agents.len() != 1 && manifest.agents.len() != n {
        return Err(format!(
            "{}: holds {} agents; this scenario has {n} (export one agent, or all of them)",
            path.display(),
            manifest.agents.len()
        ));
    }
    if manifest.inputs.iter().any(|i| i == "budgets") && manifest.agents_total != n {
        return Err(format!(
            "{}: reads the budgets of {} agents; this scenario has {n}",
            path.display(),
            manifest.agents_total
        ));
    }
    let assign = (0..n)
        .map(|i| manifest.agents[if manifest.agents.len() == 1 { 0 } else { i }])
        .collect();
    Ok((manifest, assign))
}

/// The manifest an executable without an exported policy is driven by (the agent protocol of
/// docs/AGENTS.md): one process per agent, started as `PATH --agent i`; it reads SPEC 4's state
/// and its token budget each round and answers one of the scenario's levels.
fn external(path: &Path, scenario: &env::config::Scenario, action: &str, levels: &[f64]) -> Manifest {
    let n = scenario.n();
    Manifest {
        version: crate::export::runtime::VERSION,
        kind: "external".into(),
        agents: (0..n).collect(),
        m: scenario.m(),
        action: action.to_string(),
        value_scale: 1.0,
        levels: levels.to_vec(),
        hidden: 0,
        inputs: Vec::new(),
        agents_total: n,
        by_type: 0,
        types: Vec::new(),
        world: None,
        weights: scenario.agents.iter().map(|a| a.weight).collect(),
        total_tokens: scenario.file.mechanism.total_tokens,
        states: 0,
        fixed_level: 0,
        model_bytes: 0,
        training_run: path.display().to_string(),
        config_hash: String::new(),
    }
}

pub(crate) struct Proc {
    child: Child,
    stdin: ChildStdin,
    /// Lines the agent wrote, read by a thread of its own so a silent agent cannot hang us.
    /// The channel holds one line: an agent that writes without being asked blocks on its
    /// full pipe instead of growing our memory.
    replies: Receiver<Reply>,
}

/// What an agent's reader thread saw.
enum Reply {
    /// A line (without its newline; at most [`MAX_LINE`] bytes).
    Line(String),
    /// A line longer than [`MAX_LINE`].
    TooLong,
    /// The agent closed its output.
    End,
    /// Reading failed.
    Failed(String),
}

/// Where each of an agent's `inputs` is in `scenario`'s observation: (name, offset, length).
/// `scenario` observes every input (its switches set for the agent: see `policies::parse`).
pub fn layout(manifest: &Manifest, scenario: &env::config::Scenario) -> Vec<(String, usize, usize)> {
    let mut at = env::world::spec_features(scenario.m());
    let mut places = Vec::new();
    for (name, len) in env::world::observation_extras(scenario) {
        if manifest.inputs.iter().any(|i| i == name) {
            places.push((name.to_string(), at, len));
        }
        at += len;
    }
    places
}

/// Exported binaries acting for every agent.
pub struct AgentProcesses {
    path: PathBuf,
    manifest: Manifest,
    /// Per agent of the scenario, the training agent it runs as (see [`check`]).
    assign: Vec<usize>,
    /// The agent's inputs in the observation (see [`layout`]).
    layout: Vec<(String, usize, usize)>,
    levels: Vec<f64>,
    procs: Vec<Proc>,
    errors: ErrorSlot,
    timeout: Duration,
    /// An agent broke the protocol or went silent: stop asking.
    dead: bool,
    /// The mean entropy of the distributions the agents answered with last.
    entropy: Option<f64>,
}

impl AgentProcesses {
    /// Processes start lazily, at the first episode.
    pub fn new(
        path: &Path,
        manifest: Manifest,
        assign: Vec<usize>,
        layout: Vec<(String, usize, usize)>,
        levels: &[f64],
        errors: ErrorSlot,
        timeout: Duration,
    ) -> Self {
        Self {
            path: path.to_path_buf(),
            manifest,
            assign,
            layout,
            levels: levels.to_vec(),
            procs: Vec::new(),
            errors,
            timeout,
            dead: false,
            entropy: None,
        }
    }

    fn fail(&mut self, msg: String) {
        let mut slot = self.errors.lock().expect("not poisoned");
        slot.get_or_insert(msg);
        self.dead = true;
        self.procs.iter_mut().for_each(Proc::kill);
    }

    /// Start the n agent processes; the error is the problem alone (the caller names the file).
    fn start(&mut self, n: usize) -> Result<(), String> {
        for i in 0..n {
            let arg = (self.manifest.agents.len() > 1 || self.manifest.kind == "external").then_some(self.assign[i]);
            self.procs.push(Proc::spawn(&self.path, arg)?);
        }
        Ok(())
    }
}

impl Proc {
    /// Start `path` (with `--agent i` when given), its output read by a thread of its own.
    pub(crate) fn spawn(path: &Path, agent: Option<usize>) -> Result<Proc, String> {
        let mut cmd = Command::new(path);
        if let Some(i) = agent {
            cmd.arg("--agent").arg(i.to_string());
        }
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?;
        let stdin = child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
        let (tx, replies) = std::sync::mpsc::sync_channel(1);
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            loop {
                let got = match read_line(&mut stdout, &mut buf, MAX_LINE, false) {
                    Ok(LineRead::Line) => Reply::Line(String::from_utf8_lossy(&buf).into_owned()),
                    Ok(LineRead::TooLong) => Reply::TooLong,
                    Ok(LineRead::End) => Reply::End,
                    Err(e) => Reply::Failed(e.to_string()),
                };
                let end = !matches!(got, Reply::Line(_));
                if tx.send(got).is_err() || end {
                    return;
                }
            }
        });
        Ok(Proc { child, stdin, replies })
    }

    /// One reply per request: a line waiting before we ask is one nobody asked for, and would
    /// answer the next request out of step. Anything else waiting (an overlong line, a closed
    /// output) is its problem already, reported as such.
    pub(crate) fn nothing_waiting(&self, who: &str) -> Result<(), String> {
        match self.replies.try_recv() {
            Ok(Reply::Line(extra)) => {
                let extra: String = extra.chars().take(200).collect();
                Err(format!("{who} sent a reply nobody asked for (one reply per request): {extra}"))
            }
            // Never a line here, so always the problem.
            Ok(other) => received(who, Ok(other)).map(|_| ()),
            Err(_) => Ok(()),
        }
    }

    /// Send one request line.
    pub(crate) fn send(&mut self, who: &str, line: &str) -> Result<(), String> {
        if writeln!(self.stdin, "{line}").and_then(|_| self.stdin.flush()).is_err() {
            // An agent whose output went wrong first (its reader stopped and it died) says
            // so; otherwise it stopped reading.
            if let Ok(other @ (Reply::TooLong | Reply::Failed(_) | Reply::End)) = self.replies.try_recv() {
                received(who, Ok(other))?;
            }
            return Err(format!("{who} stopped reading its input"));
        }
        Ok(())
    }

    /// The reply line, within `timeout`.
    pub(crate) fn reply(&self, who: &str, timeout: Duration) -> Result<String, String> {
        match self.replies.recv_timeout(timeout) {
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "{who} did not answer within {:.1} s (set MTF_AGENT_TIMEOUT=SECONDS to wait longer)",
                timeout.as_secs_f64()
            )),
            got => received(who, got),
        }
    }

    /// Stop the process.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What an agent's reader delivered, as its line or the problem.
fn received(who: &str, got: Result<Reply, RecvTimeoutError>) -> Result<String, String> {
    match got {
        Ok(Reply::Line(line)) => Ok(line),
        Ok(Reply::TooLong) => Err(format!("{who} replied with a line longer than {MAX_LINE} bytes")),
        Ok(Reply::Failed(e)) => Err(format!("reading {who}'s output: {e}")),
        Ok(Reply::End) | Err(_) => Err(format!("{who} closed its output")),
    }
}

/// The level a reply chose (answering in `action`'s key: `threshold` or `bid_factor`), and
/// the entropy of the distribution it chose from when it says (an exported policy does).
pub(crate) fn decision(who: &str, line: &str, action: &str, levels: &[f64]) -> Result<(usize, Option<f64>), String> {
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{who} replied with bad JSON ({e}): {}", line.trim()))?;
    if let Some(e) = v.get("error") {
        return Err(format!("{who} reported an error: {e}"));
    }
    let key = if action == "bid" { "bid_factor" } else { "threshold" };
    let t = v
        .get(key)
        .and_then(serde_json::Value::as_f64)
        .ok_or_else(|| format!("{who}'s reply has no numeric `{key}`: {}", line.trim()))?;
    // A distribution or nothing: [2, -1] gave an entropy of -0.60 (an external agent's
    // reply is untrusted).
    let entropy = match v.get("probabilities") {
        None => None,
        Some(p) => {
            let k = levels.len();
            let xs: Option<Vec<f64>> = p.as_array().map(|a| a.iter().filter_map(serde_json::Value::as_f64).collect());
            let ok = xs.as_ref().filter(|xs| {
                xs.len() == k
                    && p.as_array().is_some_and(|a| a.len() == k)
                    && xs.iter().all(|x| x.is_finite() && *x >= 0.0)
                    && (xs.iter().sum::<f64>() - 1.0).abs() < 1e-6
            });
            let Some(xs) = ok else {
                return Err(format!(
                    "{who}'s `probabilities` is not a distribution over the {k} levels (K non-negative numbers summing to 1): {}",
                    line.trim().chars().take(200).collect::<String>()
                ));
            };
            Some(xs.iter().filter(|&&x| x > 0.0).map(|&x| -x * x.ln()).sum::<f64>())
        }
    };
    let level = env::config::level_index(levels, t).ok_or_else(|| format!("{who} chose {key} {t}, not one of the levels {levels:?}"))?;
    Ok((level, entropy))
}

impl Drop for AgentProcesses {
    fn drop(&mut self) {
        self.procs.iter_mut().for_each(Proc::kill);
    }
}

impl Policy for AgentProcesses {
    fn begin_episode(&mut self, _seed: u64) {}

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(AgentProcesses::new(
            &self.path,
            self.manifest.clone(),
            self.assign.clone(),
            self.layout.clone(),
            &self.levels,
            self.errors.clone(),
            self.timeout,
        ))
    }

    /// The agents choose; `greedy` is theirs to decide (an exported policy acts greedily).
    fn act(&mut self, obs: Observations<'_>, budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        actions.fill(0);
        if self.dead {
            return;
        }
        match self.round(obs, budgets, actions) {
            Ok(entropy) => self.entropy = entropy,
            Err(e) => self.fail(format!("{}: {e}", self.path.display())),
        }
    }

    fn entropy(&self) -> Option<f64> {
        self.entropy
    }
}

impl AgentProcesses {
    /// One round: every agent asked, every reply read into `actions`; the agents' mean
    /// entropy, or the first problem (the caller names the file).
    fn round(&mut self, obs: Observations<'_>, budgets: &[f64], actions: &mut [usize]) -> Result<Option<f64>, String> {
        let n = actions.len();
        if self.procs.is_empty() {
            self.start(n)?;
        }
        for (i, p) in self.procs.iter().enumerate() {
            p.nothing_waiting(&format!("agent {i}"))?;
        }
        for i in 0..n {
            let line = self.request(obs.get(i), budgets[i]);
            self.procs[i].send(&format!("agent {i}"), &line)?;
        }
        let mut entropy = Some(0.0);
        for (i, action) in actions.iter_mut().enumerate() {
            let who = format!("agent {i}");
            let line = self.procs[i].reply(&who, self.timeout)?;
            let (level, h) = decision(&who, &line, &self.manifest.action, &self.levels)?;
            *action = level;
            // The policy's entropy only when every agent says what it drew from.
            entropy = entropy.zip(h).map(|(e, h)| e + h / n as f64);
        }
        Ok(entropy)
    }

    /// The protocol line for one agent's observation `o` and budget.
    fn request(&self, o: &[f32], budget: f64) -> String {
        // A by_type policy reads its block, not the utilities (and m is then the cluster's).
        let m = if self.manifest.by_type > 0 { 0 } else { self.manifest.m };
        let utilities: Vec<f64> = o[1..env::world::spec_features(m)].iter().map(|&u| f64::from(u)).collect();
        let mut line = serde_json::json!({ "budget": f64::from(o[0]), "utilities": utilities });
        // The budget itself, for Hedge's exact budget state (runtimes from manifest version 4
        // read it; older ones refuse unknown fields).
        if self.manifest.version >= 4 {
            line["tokens"] = budget.into();
        }
        for (name, at, len) in &self.layout {
            let v = &o[*at..at + len];
            line[name.as_str()] = if name == "budgets" || name == "by_type" {
                v.iter().map(|&b| f64::from(b)).collect::<Vec<_>>().into()
            } else {
                f64::from(v[0]).into()
            };
        }
        line.to_string()
    }
}

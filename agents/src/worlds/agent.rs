//! `agent:PATH` in a world behind the seam: an exported agent (from `mtf export` on a run of
//! the world) or any executable speaking the protocol, one process per group started with
//! `--agent G` (per agent, `--agent ID`, for an export holding an actor per agent). Each live
//! agent's row goes to its group's process as `{"world": [..]}`, one request and one reply at
//! a time (so no pipe fills however many agents a group has); the reply names a level
//! (`threshold` or `bid_factor`). A plain executable in a world that keeps a protocol of its
//! own (the queue and valuation worlds, [`World::agent_request`]) is driven by that one
//! instead, per agent (issue 38's gap 6, decided 2026-12-06: docs/AGENTS.md's scripts keep
//! working when those worlds move behind the seam). A reply that breaks the protocol is
//! recorded, the processes stopped, and the comparison fails naming it ([`RowPolicy::failure`]).

use super::RowPolicy;
use crate::export::drive::{decision, reply_timeout, ErrorSlot, Proc};
use crate::export::runtime::{read_payload, Manifest, WorldShape, MAGIC, VERSION};
use env::worlds::World;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The exported agent at `path` checked against `world`: its manifest (one synthesised for an
/// executable without a policy inside), or what does not fit.
pub fn check(path: &Path, world: &dyn World) -> Result<Manifest, String> {
    let here = shape(world);
    let bytes = crate::run::read_regular(path, 1 << 30).map_err(|e| e.to_string())?;
    if !bytes.ends_with(MAGIC) {
        return Ok(external(path, world, here));
    }
    let manifest = read_payload(&bytes).map_err(|e| format!("{}: {e}", path.display()))?.manifest;
    let Some(theirs) = &manifest.world else {
        return Err(format!(
            "{}: a policy for the queue world; this is the {} world (export a run trained on it)",
            path.display(),
            here.name
        ));
    };
    let action = world.action_kind().as_str();
    if theirs.name != here.name
        || reads(&theirs.features, &here.features).is_none()
        || manifest.levels != world.levels()
        || manifest.action != action
    {
        return Err(format!(
            "{}: the agent acts in the {} world on features {:?} with {} levels {:?}; this config is the {} world on {:?} with {action} levels {:?}",
            path.display(),
            theirs.name,
            theirs.features,
            manifest.action,
            manifest.levels,
            here.name,
            here.features,
            world.levels()
        ));
    }
    if manifest.agents.len() != 1 && theirs.groups != here.groups {
        return Err(format!(
            "{}: holds groups {:?}; this world's are {:?} (export one group, or a run of this world)",
            path.display(),
            theirs.groups,
            here.groups
        ));
    }
    if manifest.agents.len() != 1 && theirs.per_agent > 0 && theirs.per_agent != world.possible() {
        return Err(format!(
            "{}: holds an actor per agent of {}; this world has {} agents (export one agent, or a run of this world)",
            path.display(),
            theirs.per_agent,
            world.possible()
        ));
    }
    Ok(manifest)
}

/// Where an agent's features (`theirs`, the manifest's: the whole row, or a block of it the
/// learner read) sit in the world's row (`here`), when they are a contiguous run of it.
fn reads(theirs: &[String], here: &[String]) -> Option<std::ops::Range<usize>> {
    if theirs.is_empty() || theirs.len() > here.len() {
        return None;
    }
    let at = here.windows(theirs.len()).position(|w| w == theirs)?;
    Some(at..at + theirs.len())
}

fn shape(world: &dyn World) -> WorldShape {
    WorldShape {
        name: env::registry::world_name(&world.config()),
        features: world.layout().names.clone(),
        groups: world.group_names(),
        per_agent: 0,
    }
}

/// The manifest an executable without an exported policy is driven by: every group's process
/// started with `--agent G`, reading rows of `world`'s layout.
fn external(path: &Path, world: &dyn World, here: WorldShape) -> Manifest {
    Manifest {
        version: VERSION,
        kind: "external".into(),
        agents: (0..here.groups.len()).collect(),
        m: 0,
        action: world.action_kind().as_str().into(),
        value_scale: 1.0,
        levels: world.levels().to_vec(),
        hidden: 0,
        inputs: Vec::new(),
        agents_total: 0,
        by_type: 0,
        types: Vec::new(),
        world: Some(here),
        weights: Vec::new(),
        total_tokens: 0.0,
        states: 0,
        fixed_level: 0,
        model_bytes: 0,
        training_run: path.display().to_string(),
        config_hash: String::new(),
    }
}

/// Agent processes acting for a world's groups.
pub struct WorldAgents {
    path: PathBuf,
    manifest: Manifest,
    /// Per group (or agent, for an actor per agent), its process once started.
    procs: Vec<Option<Proc>>,
    /// Whether a process serves an agent id (the manifest's actors are per agent), not a group.
    per_agent: bool,
    errors: ErrorSlot,
    timeout: Duration,
    /// A process broke the protocol: stop asking.
    dead: bool,
    line: String,
    /// The features of each row the agent reads (its manifest's, found in the world's row).
    reads: std::ops::Range<usize>,
    /// An external executable in a world with a protocol of its own
    /// ([`World::agent_request`]): each live agent's request this round, by id (its process is
    /// then per agent). Empty otherwise.
    requests: Vec<Option<String>>,
}

impl WorldAgents {
    /// `agent:PATH` for `world` (processes start at the first row of their group).
    pub fn new(path: &Path, world: &dyn World) -> Result<Self, String> {
        let manifest = check(path, world)?;
        let here = world.layout().names.clone();
        let theirs = manifest.world.as_ref().map_or_else(|| here.clone(), |w| w.features.clone());
        let reads = reads(&theirs, &here).expect("checked");
        // A bare name is a file in the current directory (INTERFACE), never a `$PATH` lookup,
        // as in the queue world's `agent:` (before 2026-12-02 the seam's ran `$PATH`'s).
        let path = std::fs::canonicalize(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let timeout = reply_timeout()?;
        Ok(Self::with(&path, manifest, Arc::new(Mutex::new(None)), timeout, reads))
    }

    fn with(path: &Path, manifest: Manifest, errors: ErrorSlot, timeout: Duration, reads: std::ops::Range<usize>) -> Self {
        Self {
            path: path.to_path_buf(),
            per_agent: manifest.world.as_ref().is_some_and(|w| w.per_agent > 0),
            manifest,
            procs: Vec::new(),
            errors,
            timeout,
            dead: false,
            line: String::new(),
            reads,
            requests: Vec::new(),
        }
    }

    fn fail(&mut self, msg: String) {
        self.errors.lock().expect("not poisoned").get_or_insert(msg);
        self.dead = true;
        self.procs.iter_mut().flatten().for_each(Proc::kill);
    }

    /// The row's level from the process of group (or agent) `g`.
    fn ask(&mut self, g: usize, row: &[f32]) -> Result<usize, String> {
        if !self.requests.is_empty() {
            return self.ask_own(g);
        }
        // A file holding one group's (or agent's) policy serves every one (a homogeneous
        // population) from one process: it holds no state of any one agent's.
        let (held, slot) = if self.manifest.agents.len() == 1 {
            (self.manifest.agents[0], 0)
        } else {
            (g, g)
        };
        if self.procs.len() <= slot {
            self.procs.resize_with(slot + 1, || None);
        }
        let who = format!("{} {g}'s agent", if self.per_agent { "agent" } else { "group" });
        if self.procs[slot].is_none() {
            let arg = (self.manifest.agents.len() > 1 || self.manifest.kind == "external").then_some(held);
            self.procs[slot] = Some(Proc::spawn(&self.path, arg)?);
        }
        let p = self.procs[slot].as_mut().expect("started");
        p.nothing_waiting(&who)?;
        self.line.clear();
        // Written by hand: one allocation per agent and round less, in a loop over rows.
        self.line.push_str("{\"world\":[");
        for (j, x) in row.iter().enumerate() {
            if j > 0 {
                self.line.push(',');
            }
            // f32 to f64 is exact: the agent reads the row the world wrote.
            self.line
                .push_str(&serde_json::Number::from_f64(f64::from(*x)).map_or("null".into(), |n| n.to_string()));
        }
        self.line.push_str("]}");
        p.send(&who, &self.line)?;
        let reply = p.reply(&who, self.timeout)?;
        Ok(decision(&who, &reply, &self.manifest.action, &self.manifest.levels)?.0)
    }
}

impl WorldAgents {
    /// Agent `id`'s level in the world's own protocol: its process (`--agent ID`) reads the
    /// request [`RowPolicy::sees`] took from the world.
    fn ask_own(&mut self, id: usize) -> Result<usize, String> {
        let who = format!("agent {id}");
        let Some(line) = self.requests.get(id).and_then(Option::as_ref) else {
            return Err(format!("{who} is live but the world gave it no request"));
        };
        if self.procs.len() <= id {
            self.procs.resize_with(id + 1, || None);
        }
        if self.procs[id].is_none() {
            self.procs[id] = Some(Proc::spawn(&self.path, Some(id))?);
        }
        let p = self.procs[id].as_mut().expect("started");
        p.nothing_waiting(&who)?;
        p.send(&who, line)?;
        let reply = p.reply(&who, self.timeout)?;
        Ok(decision(&who, &reply, &self.manifest.action, &self.manifest.levels)?.0)
    }
}

impl Drop for WorldAgents {
    fn drop(&mut self) {
        self.procs.iter_mut().flatten().for_each(Proc::kill);
    }
}

impl RowPolicy for WorldAgents {
    /// An external executable reads the world's own protocol where it keeps one (the queue
    /// and valuation worlds: docs/AGENTS.md's first table), per agent: the same script is
    /// then the same policy on the queue stack and behind the seam. An exported agent reads
    /// the rows it was exported on.
    fn sees(&mut self, world: &dyn World) {
        if self.manifest.kind != "external" {
            return;
        }
        for slot in &mut self.requests {
            *slot = None;
        }
        for &id in world.live() {
            let Some(request) = world.agent_request(id) else {
                continue;
            };
            if self.requests.len() <= id {
                self.requests.resize(id + 1, None);
            }
            self.requests[id] = Some(request.to_string());
        }
        self.per_agent |= !self.requests.is_empty();
    }

    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], groups: &[usize], actions: &mut [usize]) {
        actions.fill(0);
        let by = if self.per_agent { agents } else { groups };
        for ((row, &g), a) in obs.chunks_exact(dim).zip(by).zip(actions.iter_mut()) {
            if self.dead {
                return;
            }
            let row = &row[self.reads.clone()];
            match self.ask(g, row) {
                Ok(level) => *a = level,
                Err(e) => self.fail(format!("{}: {e}", self.path.display())),
            }
        }
    }

    /// An agent process is told each episode's seed and may draw from it: every seed is
    /// played.
    fn draws(&self) -> bool {
        true
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(Self::with(
            &self.path,
            self.manifest.clone(),
            self.errors.clone(),
            self.timeout,
            self.reads.clone(),
        ))
    }

    fn failure(&self) -> Option<String> {
        self.errors.lock().expect("not poisoned").clone()
    }
}

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
        // The queue and valuation worlds behind the seam (`env.stack = "seam"`) do not yet
        // drive their own stack's exports (issue 38's export gap).
        return Err(if matches!(here.name.as_str(), "queues" | "valuations") {
            format!(
                "{}: exported from a run on the queue world's own stack; play it there (without env.stack = \"seam\"), or export a run trained behind the seam",
                path.display()
            )
        } else {
            format!(
                "{}: a policy for the queue world; this is the {} world (export a run trained on it)",
                path.display(),
                here.name
            )
        });
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
    /// Whether it is an external executable in a world with a protocol of its own
    /// ([`World::agent_request`]), its processes then per agent: decided once, at the first
    /// round with agents (`None` before).
    own: Option<bool>,
    /// In the world's own protocol, each live agent's request this round, by id.
    requests: Vec<Option<String>>,
    /// The mean entropy of the distributions the last round's replies drew from, where every
    /// reply said (`probabilities`, docs/AGENTS.md).
    entropy: Option<f64>,
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
            own: None,
            requests: Vec::new(),
            entropy: None,
        }
    }

    fn fail(&mut self, msg: String) {
        self.errors.lock().expect("not poisoned").get_or_insert(msg);
        self.dead = true;
        self.procs.iter_mut().flatten().for_each(Proc::kill);
    }

    /// The row's level from the process of group (or agent) `g`, and the entropy of the
    /// distribution it drew from when its reply says.
    fn ask(&mut self, g: usize, row: &[f32]) -> Result<(usize, Option<f64>), String> {
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
        decision(&who, &reply, &self.manifest.action, &self.manifest.levels)
    }

    /// A round in the world's own protocol, as the queue stack's `agent:` plays it
    /// (`export::drive`): every live agent's request written to its process (`--agent ID`),
    /// then every reply read, so an agent may wait for the others' requests (one model server
    /// behind every process). The agents' mean entropy where every one says it.
    fn round_own(&mut self, agents: &[usize], actions: &mut [usize]) -> Result<Option<f64>, String> {
        for &id in agents {
            let who = format!("agent {id}");
            let line = self.requests.get(id).and_then(Option::as_ref).ok_or_else(|| {
                format!("the world gave live {who} no request (World::agent_request answers for every live agent or none)")
            })?;
            if self.procs.len() <= id {
                self.procs.resize_with(id + 1, || None);
            }
            if self.procs[id].is_none() {
                self.procs[id] = Some(Proc::spawn(&self.path, Some(id))?);
            }
            let p = self.procs[id].as_mut().expect("started");
            p.nothing_waiting(&who)?;
            p.send(&who, line)?;
        }
        let mut entropy = Some(0.0);
        for (&id, a) in agents.iter().zip(actions.iter_mut()) {
            let who = format!("agent {id}");
            let reply = self.procs[id].as_mut().expect("started").reply(&who, self.timeout)?;
            let (level, h) = decision(&who, &reply, &self.manifest.action, &self.manifest.levels)?;
            *a = level;
            entropy = entropy.zip(h).map(|(e, h)| e + h / agents.len() as f64);
        }
        Ok(entropy)
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
        if self.manifest.kind != "external" || self.own == Some(false) {
            return;
        }
        let live = world.live();
        if self.own.is_none() {
            let Some(&first) = live.first() else {
                return;
            };
            let own = world.agent_request(first).is_some();
            self.own = Some(own);
            if !own {
                return;
            }
            self.per_agent = true;
        }
        self.requests.iter_mut().for_each(|r| *r = None);
        for &id in live {
            if self.requests.len() <= id {
                self.requests.resize(id + 1, None);
            }
            self.requests[id] = world.agent_request(id).map(|r| r.to_string());
        }
    }

    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], groups: &[usize], actions: &mut [usize]) {
        actions.fill(0);
        self.entropy = None;
        if self.dead {
            return;
        }
        if self.own == Some(true) {
            match self.round_own(agents, actions) {
                Ok(h) => self.entropy = h,
                Err(e) => self.fail(format!("{}: {e}", self.path.display())),
            }
            return;
        }
        let by = if self.per_agent { agents } else { groups };
        let mut entropy = Some(0.0);
        for ((row, &g), a) in obs.chunks_exact(dim).zip(by).zip(actions.iter_mut()) {
            if self.dead {
                return;
            }
            let row = &row[self.reads.clone()];
            match self.ask(g, row) {
                Ok((level, h)) => {
                    *a = level;
                    entropy = entropy.zip(h).map(|(e, h)| e + h / groups.len() as f64);
                }
                Err(e) => self.fail(format!("{}: {e}", self.path.display())),
            }
        }
        self.entropy = entropy;
    }

    /// The mean entropy of the distributions the last round's replies drew from, where every
    /// one said (as the queue stack's `agent:` reports it).
    fn entropy(&self) -> Option<f64> {
        self.entropy
    }

    /// An agent process may draw its actions (from a seed of its own: the episode's is not
    /// sent): every seed is played.
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

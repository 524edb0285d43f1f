//! Driving exported agent binaries as the agents' policies (`--policy agent:PATH`), over their
//! stdin/stdout protocol: one process per agent. A file holding every agent of the scenario runs
//! each process with `--agent i`; a file holding one agent serves every agent (a homogeneous
//! population). A reply that breaks the protocol is recorded and reported as a user error
//! after the episode.

use crate::runtime::{read_payload, Manifest};
use env::eval::ActionSource;
use env::world::Observations;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};

/// The first protocol error any driven agent made.
pub type ErrorSlot = Arc<Mutex<Option<String>>>;

/// Read and check an exported agent file against a scenario's shape.
pub fn check(path: &Path, n: usize, m: usize, levels: &[f64]) -> Result<Manifest, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let (manifest, _) = read_payload(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
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
    Ok(manifest)
}

struct Proc {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// Exported binaries acting for every agent.
pub struct AgentProcesses {
    path: PathBuf,
    manifest: Manifest,
    levels: Vec<f64>,
    procs: Vec<Proc>,
    errors: ErrorSlot,
    line: String,
}

impl AgentProcesses {
    /// Processes start lazily, at the first episode.
    pub fn new(path: &Path, manifest: Manifest, levels: &[f64], errors: ErrorSlot) -> Self {
        Self {
            path: path.to_path_buf(),
            manifest,
            levels: levels.to_vec(),
            procs: Vec::new(),
            errors,
            line: String::new(),
        }
    }

    fn fail(&self, msg: String) {
        let mut slot = self.errors.lock().expect("not poisoned");
        slot.get_or_insert(msg);
    }

    fn start(&mut self, n: usize) -> Result<(), String> {
        for i in 0..n {
            let mut cmd = Command::new(&self.path);
            if self.manifest.agents.len() > 1 {
                cmd.arg("--agent").arg(self.manifest.agents[i].to_string());
            }
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{}: {e}", self.path.display()))?;
            let stdin = child.stdin.take().expect("piped");
            let stdout = BufReader::new(child.stdout.take().expect("piped"));
            self.procs.push(Proc { child, stdin, stdout });
        }
        Ok(())
    }
}

impl Drop for AgentProcesses {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

impl ActionSource for AgentProcesses {
    fn reset(&mut self, _seed: u64) {}

    fn act(&mut self, obs: Observations<'_>, _budgets: &[f64], actions: &mut [usize]) {
        let n = actions.len();
        if self.procs.is_empty() {
            if let Err(e) = self.start(n) {
                self.fail(e);
            }
        }
        if self.procs.len() != n {
            actions.fill(0);
            return;
        }
        let m = self.manifest.m;
        for (i, p) in self.procs.iter_mut().enumerate() {
            let o = obs.get(i);
            let utilities: Vec<f64> = o[1..1 + m].iter().map(|&u| f64::from(u)).collect();
            let line = serde_json::json!({ "budget": f64::from(o[0]), "utilities": utilities }).to_string();
            if writeln!(p.stdin, "{line}").and_then(|_| p.stdin.flush()).is_err() {
                let msg = format!("{}: agent {i} stopped reading its input", self.path.display());
                let mut slot = self.errors.lock().expect("not poisoned");
                slot.get_or_insert(msg);
            }
        }
        for i in 0..n {
            self.line.clear();
            let read = self.procs[i].stdout.read_line(&mut self.line);
            let level = match read {
                Ok(0) | Err(_) => Err(format!("agent {i} closed its output")),
                Ok(_) => serde_json::from_str::<serde_json::Value>(&self.line)
                    .map_err(|e| format!("agent {i} replied with bad JSON ({e}): {}", self.line.trim()))
                    .and_then(|v| {
                        if let Some(e) = v.get("error") {
                            return Err(format!("agent {i} reported an error: {e}"));
                        }
                        let t = v
                            .get("threshold")
                            .and_then(serde_json::Value::as_f64)
                            .ok_or_else(|| format!("agent {i}'s reply has no numeric `threshold`: {}", self.line.trim()))?;
                        self.levels
                            .iter()
                            .position(|&l| (l - t).abs() < 1e-9)
                            .ok_or_else(|| format!("agent {i} chose threshold {t}, not one of the levels {:?}", self.levels))
                    }),
            };
            actions[i] = match level {
                Ok(l) => l,
                Err(e) => {
                    self.fail(format!("{}: {e}", self.path.display()));
                    0
                }
            };
        }
    }
}

//! Policies named by a spec, as `mtf simulate --policy` and `mtf compare --policies` take them:
//! `fixed:TAU` (the level TAU for everyone), `fixed:all` (every level, in `compare`), `hedge`
//! (Hedge learning online from uniform weights in every episode), `run:RUN_DIR` (a trained run's
//! greedy policy), `sampled:run:RUN_DIR` (the same policy drawing its actions, as it did in
//! training; reproducible from the episode seed), `agent:PATH` (exported agent binaries, driven
//! over their protocol).

use crate::error::{policy, user};
use crate::export::drive::ErrorSlot;
use crate::learners::hedge::HedgeConfig;
use crate::learners::wrap::{Layered, Sample};
use crate::learners::{Fixed, Init, LearnerConfig, OnlineLearning, Policy};
use env::config::{EnvSection, Scenario};
use env::metrics::EpisodeMetrics;
use std::path::{Path, PathBuf};

/// The spec forms, for messages and help.
pub const FORMS: &str = "fixed:TAU, hedge, run:RUN_DIR, sampled:run:RUN_DIR or agent:PATH";

/// A policy spec, parsed once: what `--policy` and `--policies` name.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    /// `fixed:X`: level X (a threshold, or a bid factor) for everyone.
    Fixed(f64),
    /// `fixed:all`: every level (`mtf compare` expands it).
    FixedAll,
    /// `hedge`: Hedge learning online from uniform weights in every episode.
    Hedge,
    /// `run:DIR`: a trained run's greedy policy.
    Run(PathBuf),
    /// `sampled:run:DIR`: the same policy drawing its actions, as it did in training.
    Sampled(PathBuf),
    /// `agent:PATH`: an exported agent binary.
    Agent(PathBuf),
}

impl PolicySpec {
    /// Read a spec; the error names it and says what is wrong.
    pub fn parse(spec: &str) -> crate::error::Result<PolicySpec> {
        // A message is one line: the spec is quoted escaped, and a spec with a newline (a
        // pasted list) is refused before it can name a path.
        if spec.chars().any(char::is_control) {
            return Err(policy(
                spec,
                "contains a control character (a newline?): give one spec per argument",
            ));
        }
        let path = |form: &str, rest: &str| {
            if rest.is_empty() {
                Err(policy(spec, format!("`{form}` needs a path after the colon")))
            } else {
                Ok(PathBuf::from(rest))
            }
        };
        if let Some(inner) = spec.strip_prefix("sampled:") {
            return match inner.strip_prefix("run:") {
                Some(dir) => Ok(PolicySpec::Sampled(path("sampled:run:", dir)?)),
                None => Err(policy(spec, "`sampled:` takes a trained run, sampled:run:RUN_DIR")),
            };
        }
        if spec == "fixed:all" {
            return Ok(PolicySpec::FixedAll);
        }
        if let Some(tau) = spec.strip_prefix("fixed:") {
            let t: f64 = tau.parse().map_err(|_| policy(spec, format!("`{tau}` is not a number")))?;
            return Ok(PolicySpec::Fixed(t));
        }
        if spec == "hedge" {
            return Ok(PolicySpec::Hedge);
        }
        if let Some(dir) = spec.strip_prefix("run:") {
            return Ok(PolicySpec::Run(path("run:", dir)?));
        }
        if let Some(file) = spec.strip_prefix("agent:") {
            return Ok(PolicySpec::Agent(path("agent:", file)?));
        }
        Err(policy(spec, format!("expected {FORMS}")))
    }

    /// The policy for `scenario`, and the observation switches it reads with when they are not
    /// the scenario's (a trained run's, or those an exported agent's inputs need; they change
    /// no dynamics, SPEC 4). `spec` is the text it was read from, for messages. Exported agents
    /// report protocol errors into `agent_errors` (a policy cannot fail mid-episode;
    /// [`Named::evaluate`] turns the first into an error).
    pub fn build(
        &self,
        spec: &str,
        scenario: &Scenario,
        agent_errors: &ErrorSlot,
    ) -> crate::error::Result<(Box<dyn Policy>, Option<EnvSection>)> {
        match self {
            PolicySpec::Sampled(dir) => {
                let (run, observe) = PolicySpec::Run(dir.clone()).build(spec, scenario, agent_errors)?;
                Ok((Box::new(Layered::new(run, Sample)), observe))
            }
            PolicySpec::FixedAll => Err(policy(spec, "`fixed:all` names every level; give one level here, fixed:X")),
            PolicySpec::Fixed(t) => {
                let level = scenario.level_index(*t).ok_or_else(|| {
                    policy(
                        spec,
                        format!(
                            "{t} is not one of the {} {:?}",
                            scenario.action_kind().levels_name(),
                            scenario.action_levels()
                        ),
                    )
                })?;
                Ok((Box::new(Fixed { level }), None))
            }
            PolicySpec::Hedge => {
                let scenario = scenario.clone();
                let initial = move || HedgeConfig::default().init(&Init::new(&scenario, 1));
                Ok((Box::new(OnlineLearning::new(std::sync::Arc::new(initial))), None))
            }
            PolicySpec::Run(dir) if crate::train::group::is_group(dir) => Err(policy(
                spec,
                "is a run group: name one replicate (run:GROUP/replicate-K), or compare the group (mtf compare expands it)",
            )),
            PolicySpec::Run(dir) => {
                let (exp, learner, _) = crate::train::load_run(dir, false)?;
                crate::train::check_fits(spec, &exp.scenario, scenario)?;
                Ok((learner.fork(), Some(exp.scenario.file.env)))
            }
            PolicySpec::Agent(path) => agent(spec, path, scenario, agent_errors),
        }
    }
}

/// Expand the specs a comparison evaluates: `fixed:all` to one `fixed:X` per level, a run group
/// (`run:GROUP`) to every replicate; and every trained run is reported greedy and sampled (the
/// sampled rows the command line does not name follow the others).
pub fn expand(specs: &[String], levels: &[f64]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut twins: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, s: String| {
        if !v.contains(&s) {
            v.push(s);
        }
    };
    for p in specs {
        if p == "fixed:all" {
            levels.iter().for_each(|l| push(&mut out, format!("fixed:{l}")));
            continue;
        }
        let Some(members) = group_members(p) else {
            push(&mut out, p.clone());
            continue;
        };
        members.into_iter().for_each(|m| push(&mut out, m));
    }
    for p in &out {
        if let Some(dir) = p.strip_prefix("run:") {
            push(&mut twins, format!("sampled:run:{dir}"));
        }
    }
    twins.retain(|t| !out.contains(t));
    out.extend(twins);
    out
}

/// The replicates' specs a group's spec (`run:GROUP` or `sampled:run:GROUP`) expands to, or
/// `None` when the spec names no group.
pub fn group_members(spec: &str) -> Option<Vec<String>> {
    let (prefix, dir) = match spec.strip_prefix("sampled:run:") {
        Some(dir) => ("sampled:run:", dir),
        None => ("run:", spec.strip_prefix("run:")?),
    };
    crate::train::group::is_group(Path::new(dir)).then(|| {
        crate::train::group::replicates(Path::new(dir))
            .iter()
            .map(|r| format!("{prefix}{}", r.display()))
            .collect()
    })
}

/// The policy `spec` names, for `scenario` (see [`PolicySpec::build`]).
pub fn parse(spec: &str, scenario: &Scenario, agent_errors: &ErrorSlot) -> crate::error::Result<(Box<dyn Policy>, Option<EnvSection>)> {
    PolicySpec::parse(spec)?.build(spec, scenario, agent_errors)
}

/// Exported agent binaries at `path` acting for every agent, reading the observation their
/// manifest's inputs need.
fn agent(
    spec: &str,
    path: &Path,
    scenario: &Scenario,
    agent_errors: &ErrorSlot,
) -> crate::error::Result<(Box<dyn Policy>, Option<EnvSection>)> {
    let (action, levels) = (scenario.action_kind().as_str(), scenario.action_levels());
    let manifest = crate::export::drive::check(path, scenario.n(), scenario.m(), action, levels).map_err(|e| policy(spec, e))?;
    // A bare name is a file in the current directory (INTERFACE), never a `$PATH` lookup.
    let path = std::fs::canonicalize(path).map_err(|e| policy(spec, format!("{}: {e}", path.display())))?;
    let timeout = crate::export::drive::reply_timeout().map_err(user)?;
    let mut observe = scenario.file.env.clone();
    let reads = |name: &str| manifest.inputs.iter().any(|i| i == name);
    (observe.observe_burst, observe.observe_weight, observe.observe_budgets) = (reads("burst"), reads("weight"), reads("budgets"));
    let mut seen = scenario.clone();
    seen.file.env.observe_as(&observe);
    let layout = crate::export::drive::layout(&manifest, &seen);
    Ok((
        Box::new(crate::export::drive::AgentProcesses::new(
            &path,
            manifest,
            layout,
            levels,
            agent_errors.clone(),
            timeout,
        )),
        Some(observe),
    ))
}

/// A policy named by a spec, parsed and ready to evaluate.
pub struct Named {
    /// The spec.
    pub spec: String,
    /// The policy.
    pub policy: Box<dyn Policy>,
    /// The observation switches it reads with, if not the scenario's.
    observe: Option<EnvSection>,
    errors: ErrorSlot,
}

impl Named {
    /// Parse `spec` for `scenario` (see [`parse`]).
    pub fn parse(spec: &str, scenario: &Scenario) -> crate::error::Result<Named> {
        let errors = ErrorSlot::default();
        let (policy, observe) = parse(spec, scenario, &errors)?;
        Ok(Named {
            spec: spec.to_string(),
            policy,
            observe,
            errors,
        })
    }

    /// Evaluate it on `seeds` of `scenario` (greedy, fairness figures on): one episode's
    /// metrics per seed, in seed order, whatever `threads` says; an exported agent's protocol
    /// error is an error.
    pub fn evaluate(&self, scenario: &Scenario, seeds: &[u64], threads: usize) -> crate::error::Result<Vec<EpisodeMetrics>> {
        let mut scenario = scenario.clone();
        if let Some(observe) = &self.observe {
            scenario.file.env.observe_as(observe);
        }
        let episodes = env::eval::evaluate(&scenario, seeds, self.policy.as_ref(), true, threads);
        if let Some(e) = self.errors.lock().expect("not poisoned").take() {
            return Err(policy(&self.spec, e));
        }
        Ok(episodes)
    }
}

#[cfg(test)]
mod tests {
    use super::PolicySpec;

    #[test]
    fn an_empty_path_or_a_newline_gave_a_confusing_message() {
        for (spec, says) in [
            ("run:", "`run:` needs a path"),
            ("sampled:run:", "`sampled:run:` needs a path"),
            ("agent:", "`agent:` needs a path"),
            ("fixed:0.5\nfixed:0.6", "control character"),
            ("run:runs/a\rb", "control character"),
        ] {
            let e = PolicySpec::parse(spec).unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n') && !e.contains('\r'), "{spec:?}: {e:?}");
        }
        assert_eq!(PolicySpec::parse("run:x").unwrap(), PolicySpec::Run("x".into()));
    }
}

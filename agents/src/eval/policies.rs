//! Policies named by a spec, as `mtf simulate --policy` and `mtf compare --policies` take them:
//! `fixed:X` (the level X for everyone: a threshold, or a bid factor under an auction),
//! `fixed:w1=X,w2=Y,...` (a level per weight class), `fixed:[X,Y,...]` (a level per agent),
//! `fixed:all` (every level, in `compare`), `hedge`
//! (Hedge learning online from uniform weights in every episode), `run:RUN_DIR` (a trained run's
//! greedy policy), `sampled:run:RUN_DIR` (the same policy drawing its actions, as it did in
//! training; reproducible from the episode seed), `agent:PATH` (exported agent binaries, driven
//! over their protocol), `onnx:PATH` and `sampled:onnx:PATH` (an ONNX policy from any trainer,
//! see [`crate::export::onnx`]).

use crate::error::ErrorSlot;
use crate::error::{policy, user};
use crate::learners::fixed::Levels;
use crate::learners::hedge::HedgeConfig;
use crate::learners::wrap::{Layered, Sample};
use crate::learners::{Init, LearnerConfig, OnlineLearning, Policy};
use env::config::{EnvSection, Scenario};
use env::metrics::EpisodeMetrics;
use std::path::{Path, PathBuf};

/// The spec forms, for messages and help.
pub const FORMS: &str =
    "fixed:X, fixed:w1=X,w2=Y,... (per weight class), fixed:[X,Y,...] (per agent), hedge, run:RUN_DIR, sampled:run:RUN_DIR, agent:PATH, onnx:PATH or sampled:onnx:PATH";

/// A policy spec, parsed once: what `--policy` and `--policies` name.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    /// `fixed:X`, `fixed:w1=X,...` or `fixed:[X,...]`: levels (thresholds, or bid factors)
    /// for everyone, per weight class or per agent.
    Fixed(Levels),
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
    /// `onnx:PATH`: an ONNX file mapping an agent's observation to level logits (greedy).
    Onnx(PathBuf),
    /// `sampled:onnx:PATH`: the same, drawing from the logits' softmax.
    SampledOnnx(PathBuf),
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
            if let Some(file) = inner.strip_prefix("onnx:") {
                return Ok(PolicySpec::SampledOnnx(path("sampled:onnx:", file)?));
            }
            return match inner.strip_prefix("run:") {
                Some(dir) => Ok(PolicySpec::Sampled(path("sampled:run:", dir)?)),
                None => Err(policy(
                    spec,
                    "`sampled:` takes a trained run or an ONNX file, sampled:run:RUN_DIR or sampled:onnx:PATH",
                )),
            };
        }
        if spec == "fixed:all" {
            return Ok(PolicySpec::FixedAll);
        }
        if let Some(levels) = spec.strip_prefix("fixed:") {
            return Levels::parse(levels).map(PolicySpec::Fixed).map_err(|e| policy(spec, e));
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
        if let Some(file) = spec.strip_prefix("onnx:") {
            return Ok(PolicySpec::Onnx(path("onnx:", file)?));
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
            PolicySpec::Fixed(levels) => Ok((levels.policy(scenario).map_err(|e| policy(spec, e))?, None)),
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
                let trained = &exp.scenario;
                if exp.learner.chosen().features() == crate::learners::Features::ByType {
                    // A by_type policy on any cluster with its types (its own size included,
                    // where the block's length still depends on the catalog): each agent acts
                    // as a trained agent of its weight, as its export does, on the same
                    // observation switches.
                    let map = crate::train::check_transfer(spec, trained, scenario)?;
                    let mut seen = scenario.clone();
                    seen.file.env.observe_as(&trained.file.env);
                    let inputs = crate::learners::inputs(&seen, crate::learners::Features::ByType);
                    let moved = learner
                        .transferred(&map, inputs)
                        .ok_or_else(|| policy(spec, "its learner's policies cannot act for other agents"))?;
                    return Ok((moved, Some(exp.scenario.file.env)));
                }
                crate::train::check_fits(spec, &exp.scenario, scenario)?;
                Ok((learner.fork(), Some(exp.scenario.file.env)))
            }
            PolicySpec::Agent(path) => agent(spec, path, scenario, agent_errors),
            PolicySpec::Onnx(path) => Ok((Box::new(onnx(spec, path, scenario, agent_errors)?), None)),
            PolicySpec::SampledOnnx(path) => Ok((
                Box::new(Layered::new(Box::new(onnx(spec, path, scenario, agent_errors)?), Sample)),
                None,
            )),
        }
    }
}

impl PolicySpec {
    /// The spec as tables label it: one spelling per policy (`fixed:0` and `fixed:0.0` are
    /// `fixed:0.0`; classes in ascending weight).
    pub fn label(&self, spec: &str) -> String {
        match self {
            PolicySpec::Fixed(levels) => levels.spec(),
            _ => spec.to_string(),
        }
    }
}

/// The spec as tables label it ([`PolicySpec::label`]); a spec that does not parse as itself.
pub fn canonical(spec: &str) -> String {
    PolicySpec::parse(spec).map_or_else(|_| spec.to_string(), |p| p.label(spec))
}

/// Expand the specs a comparison evaluates: `fixed:all` to one `fixed:X` per level, a run group
/// (`run:GROUP`) to every replicate; and every trained run is reported greedy and sampled (the
/// sampled rows the command line does not name follow the others).
pub fn expand(specs: &[String], levels: &[f64]) -> crate::error::Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let mut twins: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, s: String| {
        if !v.contains(&s) {
            v.push(s);
        }
    };
    for p in specs {
        if p == "fixed:all" {
            levels.iter().for_each(|l| push(&mut out, Levels::All(*l).spec()));
            continue;
        }
        let Some(members) = group_members(p)? else {
            push(&mut out, canonical(p));
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
    Ok(out)
}

/// The replicates' specs a group's spec (`run:GROUP` or `sampled:run:GROUP`) expands to,
/// `None` when the spec names no group; a damaged group is an error naming the replicate.
pub fn group_members(spec: &str) -> crate::error::Result<Option<Vec<String>>> {
    let (prefix, dir) = match spec.strip_prefix("sampled:run:") {
        Some(dir) => ("sampled:run:", dir),
        None => match spec.strip_prefix("run:") {
            Some(dir) => ("run:", dir),
            None => return Ok(None),
        },
    };
    if !crate::train::group::is_group(Path::new(dir)) {
        return Ok(None);
    }
    Ok(Some(
        crate::train::group::replicates(Path::new(dir))?
            .iter()
            .map(|r| format!("{prefix}{}", r.display()))
            .collect(),
    ))
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
    let (manifest, assign) = crate::export::drive::check(path, scenario, action, levels).map_err(|e| policy(spec, e))?;
    // A bare name is a file in the current directory (INTERFACE), never a `$PATH` lookup.
    let path = std::fs::canonicalize(path).map_err(|e| policy(spec, format!("{}: {e}", path.display())))?;
    let timeout = crate::export::drive::reply_timeout().map_err(user)?;
    let mut observe = scenario.file.env.clone();
    let reads = |name: &str| manifest.inputs.iter().any(|i| i == name);
    (observe.observe_burst, observe.observe_weight, observe.observe_budgets) = (reads("burst"), reads("weight"), reads("budgets"));
    observe.observe_by_type = reads("by_type");
    let mut seen = scenario.clone();
    seen.file.env.observe_as(&observe);
    let layout = crate::export::drive::layout(&manifest, &seen);
    Ok((
        Box::new(crate::export::drive::AgentProcesses::new(
            &path,
            manifest,
            assign,
            layout,
            levels,
            agent_errors.clone(),
            timeout,
        )),
        Some(observe),
    ))
}

/// An ONNX file acting for every agent of `scenario`, on the scenario's own observation.
fn onnx(spec: &str, path: &Path, scenario: &Scenario, errors: &ErrorSlot) -> crate::error::Result<crate::export::onnx::OnnxPolicy> {
    let layout = env::world::observation_dim(scenario);
    crate::export::onnx::OnnxPolicy::load(path, scenario.agents.len(), layout, scenario.action_levels().len(), errors.clone())
        .map_err(|e| policy(spec, e))
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

    #[test]
    fn a_comma_list_keeps_per_class_and_per_agent_specs_whole() {
        let given = ["fixed:w1=0.2,w2=0.4,w4=0.7,fixed:[0.1,0.2],hedge".to_string(), "fixed:0".into()];
        assert_eq!(
            crate::worlds::policies::join_split(&given),
            ["fixed:w1=0.2,w2=0.4,w4=0.7", "fixed:[0.1,0.2]", "hedge", "fixed:0"]
        );
        assert_eq!(
            super::expand(&crate::worlds::policies::join_split(&given)[3..], &[]).unwrap(),
            ["fixed:0.0"]
        );
    }
}

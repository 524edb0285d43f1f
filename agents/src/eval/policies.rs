//! Policies named by a spec, as `mtf simulate --policy` and `mtf compare --policies` take them:
//! `fixed:TAU` (the level TAU for everyone), `fixed:all` (every level, in `compare`), `hedge`
//! (Hedge learning online from uniform weights in every episode), `run:RUN_DIR` (a trained run's
//! greedy policy), `sampled:run:RUN_DIR` (the same policy drawing its actions, as it did in
//! training; reproducible from the episode seed), `agent:PATH` (exported agent binaries, driven
//! over their protocol).

use crate::config::{Experiment, LearnerKind, LearnerSection};
use crate::error::user;
use crate::export::drive::ErrorSlot;
use crate::learners::{Fixed, OnlineLearning, Policy};
use env::config::{EnvSection, Scenario};
use env::metrics::EpisodeMetrics;
use std::path::Path;

/// The spec forms, for messages and help.
pub const FORMS: &str = "fixed:TAU, hedge, run:RUN_DIR, sampled:run:RUN_DIR or agent:PATH";

/// A policy that draws its actions even when evaluation asks for the greedy ones.
struct Sampled(Box<dyn Policy>);

impl Policy for Sampled {
    fn begin_episode(&mut self, seed: u64) {
        self.0.begin_episode(seed);
    }

    fn act(&mut self, obs: env::world::Observations<'_>, budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        self.0.act(obs, budgets, false, actions);
    }

    fn after_step(&mut self, env: &env::world::ClusterEnv, budgets_before: &[f64], actions: &[usize]) {
        self.0.after_step(env, budgets_before, actions);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(Sampled(self.0.fork()))
    }
}

/// Expand `fixed:all` to one `fixed:X` per threshold level.
pub fn expand(specs: &[String], levels: &[f64]) -> Vec<String> {
    specs
        .iter()
        .flat_map(|p| {
            if p == "fixed:all" {
                levels.iter().map(|l| format!("fixed:{l}")).collect()
            } else {
                vec![p.clone()]
            }
        })
        .collect()
}

/// The policy `spec` names, for `scenario`, and the observation switches it reads with when
/// they are not the scenario's (a trained run's, or those an exported agent's inputs need;
/// they change no dynamics, SPEC 4). Exported agents report protocol errors into
/// `agent_errors` (a policy cannot fail mid-episode; [`Named::evaluate`] turns the first into an
/// error).
pub fn parse(spec: &str, scenario: &Scenario, agent_errors: &ErrorSlot) -> crate::Result<(Box<dyn Policy>, Option<EnvSection>)> {
    let levels = &scenario.action_levels();
    if let Some(inner) = spec.strip_prefix("sampled:") {
        if !inner.starts_with("run:") {
            return Err(user(format!("policy {spec}: `sampled:` takes a trained run, sampled:run:RUN_DIR")));
        }
        let (policy, observe) = parse(inner, scenario, agent_errors)?;
        return Ok((Box::new(Sampled(policy)), observe));
    }
    if let Some(tau) = spec.strip_prefix("fixed:") {
        let t: f64 = tau.parse().map_err(|_| user(format!("policy {spec}: `{tau}` is not a number")))?;
        let level = levels.iter().position(|&l| (l - t).abs() < 1e-9).ok_or_else(|| {
            user(format!(
                "policy {spec}: {t} is not one of the {} {levels:?}",
                crate::config::levels_name(scenario)
            ))
        })?;
        return Ok((Box::new(Fixed { level }), None));
    }
    if spec == "hedge" {
        let exp = Experiment {
            scenario: scenario.clone(),
            learner: LearnerSection {
                kind: LearnerKind::Hedge,
                ..Default::default()
            },
            train: Default::default(),
        };
        return Ok((
            Box::new(OnlineLearning::new(std::sync::Arc::new(move || crate::train::build_learner(&exp)))),
            None,
        ));
    }
    if let Some(dir) = spec.strip_prefix("run:") {
        let (exp, learner, _) = crate::train::load_run(Path::new(dir), false)?;
        check_fits(spec, &exp.scenario, scenario)?;
        return Ok((learner.fork(), Some(exp.scenario.file.env)));
    }
    if let Some(path) = spec.strip_prefix("agent:") {
        let action = scenario.action_kind().as_str();
        let manifest = crate::export::drive::check(Path::new(path), scenario.n(), scenario.m(), action, levels)
            .map_err(|e| user(format!("policy {spec}: {e}")))?;
        // A bare name is a file in the current directory (INTERFACE), never a `$PATH` lookup.
        let path = std::fs::canonicalize(path).map_err(|e| user(format!("policy {spec}: {path}: {e}")))?;
        let timeout = crate::export::drive::reply_timeout().map_err(user)?;
        let mut observe = scenario.file.env.clone();
        let reads = |name: &str| manifest.inputs.iter().any(|i| i == name);
        (observe.observe_burst, observe.observe_weight, observe.observe_budgets) = (reads("burst"), reads("weight"), reads("budgets"));
        let mut seen = scenario.clone();
        seen.file.env.observe_as(&observe);
        let layout = crate::export::drive::layout(&manifest, &seen);
        return Ok((
            Box::new(crate::export::drive::AgentProcesses::new(
                &path,
                manifest,
                layout,
                levels,
                agent_errors.clone(),
                timeout,
            )),
            Some(observe),
        ));
    }
    Err(user(format!("policy {spec}: expected {FORMS}")))
}

/// A policy trained on `trained` can act in `scenario`: the same agents, accelerators and
/// levels.
pub fn check_fits(spec: &str, trained: &Scenario, scenario: &Scenario) -> crate::Result<()> {
    let levels = scenario.action_levels();
    if (trained.n(), trained.m(), trained.action_levels()) != (scenario.n(), scenario.m(), levels) {
        return Err(user(format!(
            "policy {spec}: the run was trained for {} agents, {} accelerators and levels {:?}; this scenario has {}, {} and {:?}",
            trained.n(),
            trained.m(),
            trained.action_levels(),
            scenario.n(),
            scenario.m(),
            levels
        )));
    }
    Ok(())
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
    pub fn parse(spec: &str, scenario: &Scenario) -> crate::Result<Named> {
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
    pub fn evaluate(&self, scenario: &Scenario, seeds: &[u64], threads: usize) -> crate::Result<Vec<EpisodeMetrics>> {
        let mut scenario = scenario.clone();
        if let Some(observe) = &self.observe {
            scenario.file.env.observe_as(observe);
        }
        let episodes = env::eval::evaluate(&scenario, seeds, self.policy.as_ref(), true, threads);
        if let Some(e) = self.errors.lock().expect("not poisoned").take() {
            return Err(user(format!("policy {}: {e}", self.spec)));
        }
        Ok(episodes)
    }
}

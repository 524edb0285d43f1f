//! `mtf export`: a trained run's policies as one self-contained executable (see `runtime`).

pub mod drive;
pub mod onnx;
pub mod runtime;

use crate::config::Experiment;
use crate::error::{failed, user};
use crate::learners::Exported as Form;
use crate::learners::Features;
use runtime::{append_payload, fnv_hex, Manifest, PolicyForm, VERSION};
use std::path::{Path, PathBuf};

/// Build the exported agent's bytes for `agents` of the queue-world run in `dir`, on top of
/// `runtime` (`replicate` is refused: a group's replicates are run directories; the worlds
/// behind the seam export through `crate::worlds::export`).
pub fn export_bytes(
    dir: &Path,
    agents: Option<usize>,
    replicate: Option<usize>,
    runtime: &[u8],
) -> crate::error::Result<(Vec<u8>, Manifest)> {
    if let Some(r) = replicate {
        return Err(user(format!(
            "--replicate {r}: a run group's replicates are run directories; export one with --run {}/replicate-{r}",
            dir.display()
        )));
    }
    // A run without a checkpoint has learned nothing: exporting it would ship an untrained
    // policy under a trained run's name.
    let (exp, learner, _) = crate::train::load_run(dir, false)?;
    let sc = &exp.scenario;
    let (n, m) = (sc.n(), sc.m());
    let chosen: Vec<usize> = match agents {
        None => (0..n).collect(),
        Some(i) if i < n => vec![i],
        Some(i) => return Err(user(format!("--agent {i}: the run has agents 0..{}", n - 1))),
    };
    // How the learner's policies run: an actor network (the actor-critic's, PPO's), Hedge's
    // table or one level.
    let (form, hidden, fixed_level) = match exp.learner.chosen().exported(sc) {
        Form::Actor { hidden } => (PolicyForm::Actor, hidden, 0),
        Form::Table => (PolicyForm::Table, 0, 0),
        Form::Constant { level } => (PolicyForm::Constant, 0, level),
    };
    let inputs = policy_inputs(&exp);
    let by_type = exp.learner.chosen().features() == Features::ByType;
    let levels = sc.action_levels().to_vec();
    let config = crate::run::read_regular(&crate::run::RunDir::at(dir).config(), crate::run::MAX_TEXT)?;
    let manifest = Manifest {
        version: VERSION,
        kind: form.name().into(),
        action: sc.action_kind().as_str().into(),
        value_scale: sc.file.env.value_scale,
        agents: chosen.clone(),
        m,
        hidden,
        agents_total: n,
        inputs: inputs.iter().map(|i| i.to_string()).collect(),
        by_type: if by_type { env::world::by_type_features(sc) } else { 0 },
        types: if by_type { sc.file.env.catalog.types.clone() } else { Vec::new() },
        world: None,
        weights: if by_type {
            chosen.iter().map(|&i| sc.agents[i].weight).collect()
        } else {
            Vec::new()
        },
        total_tokens: sc.file.mechanism.total_tokens,
        states: crate::learners::hedge::budget_states(sc),
        fixed_level,
        model_bytes: 0,
        levels,
        training_run: dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()).display().to_string(),
        config_hash: fnv_hex(&config),
    };
    let mut weights = Vec::new();
    for &i in &chosen {
        weights.extend(learner.export_weights(i)?);
    }
    sealed(runtime, manifest, &weights, None)
}

/// `runtime` with the policy appended, once its manifest is one the runtime reads (checked
/// when `what` names it: "world") and its numbers are as many as it says.
pub(crate) fn sealed(runtime: &[u8], manifest: Manifest, weights: &[f32], what: Option<&str>) -> crate::error::Result<(Vec<u8>, Manifest)> {
    if let Some(what) = what {
        manifest
            .validate()
            .map_err(|e| failed(format!("the {what} policy's manifest: {e}")))?;
    }
    let want = manifest.per_agent() * manifest.agents.len();
    if weights.len() != want {
        return Err(failed(format!("exported {} numbers, expected {want}", weights.len())));
    }
    Ok((append_payload(runtime, &manifest, weights), manifest))
}

/// What a run's policies read after SPEC 4's state, by the exported protocol's names (the
/// observation's order): nothing for SPEC 4's state, the run's whole observation, or (instead
/// of SPEC 4's state) the `by_type` block.
pub fn policy_inputs(exp: &Experiment) -> Vec<&'static str> {
    match exp.learner.chosen().features() {
        Features::Spec => Vec::new(),
        Features::ByType => {
            let e = &exp.scenario.file.env;
            let mut v: Vec<&'static str> = Vec::new();
            if e.observe_burst {
                v.push("burst");
            }
            if e.observe_weight {
                v.push("weight");
            }
            v.push("by_type");
            v
        }
        Features::All => env::world::observation_extras(&exp.scenario)
            .into_iter()
            .map(|(name, _)| name)
            .collect(),
    }
}

/// The runtime binary: `mtf-agent` next to this executable.
pub fn runtime_path() -> crate::error::Result<PathBuf> {
    let me = std::env::current_exe().map_err(|e| failed(format!("locating the mtf executable: {e}")))?;
    let path = me.with_file_name(format!("mtf-agent{}", std::env::consts::EXE_SUFFIX));
    if !path.exists() {
        return Err(user(format!(
            "{}: the agent runtime is missing; build it with `cargo build --release -p agents --bin mtf-agent`",
            path.display()
        )));
    }
    Ok(path)
}

/// `mtf export --policy onnx:PATH --config SCENARIO`: an ONNX policy from any trainer as an
/// agent executable for `scenario`'s agents. The model is checked against the scenario's
/// observation and levels here (and loaded again when the agent starts); every agent runs
/// the one model, on the observation `mtf_env` gives Python: SPEC 4's state and every
/// feature the scenario observes, named in the manifest's `inputs`.
pub fn export_onnx(model: &Path, source: &crate::config::Source, out: &Path, force: bool) -> crate::error::Result<Exported> {
    let named = |e: String| user(format!("--policy onnx:{}: {e}", model.display()));
    if env::registry::stack_of(&source.config, &source.set) != env::registry::Stack::Queue {
        return Err(user(format!(
            "{}: an ONNX policy reads the queue world's observation; this file is another world's",
            source.config.display()
        )));
    }
    if std::fs::symlink_metadata(out).is_ok() && !force {
        return Err(user(format!("{}: exists; pass --force to replace it", out.display())));
    }
    let sc = source.load(None)?;
    if sc.file.env.observe_by_type {
        // The runtime reads either SPEC 4's state and its extras or the by_type block alone.
        return Err(user(format!(
            "{}: env.observe_by_type adds a block an exported ONNX agent cannot be sent beside SPEC 4's state; export with it off, or evaluate the model with --policy onnx:PATH",
            source.config.display()
        )));
    }
    let bytes = crate::run::read_regular(model, runtime::MAX_MODEL as u64)?;
    let extras = env::world::observation_extras(&sc);
    let manifest = Manifest {
        version: VERSION,
        kind: PolicyForm::Onnx.name().into(),
        action: sc.action_kind().as_str().into(),
        value_scale: sc.file.env.value_scale,
        agents: vec![0],
        m: sc.m(),
        hidden: 0,
        agents_total: sc.n(),
        inputs: extras.iter().map(|(name, _)| name.to_string()).collect(),
        by_type: 0,
        types: Vec::new(),
        world: None,
        weights: Vec::new(),
        total_tokens: sc.file.mechanism.total_tokens,
        states: 0,
        fixed_level: 0,
        model_bytes: bytes.len(),
        levels: sc.action_levels().to_vec(),
        training_run: model.canonicalize().unwrap_or_else(|_| model.to_path_buf()).display().to_string(),
        config_hash: fnv_hex(&crate::run::read_regular(&source.config, crate::run::MAX_TEXT)?),
    };
    manifest.validate().map_err(named)?;
    debug_assert_eq!(manifest.input_len(), env::world::observation_dim(&sc));
    // Refused here, not when a tenant starts the agent: the model must take one observation.
    let payload = runtime::Payload {
        manifest,
        weights: Vec::new(),
        model: bytes,
    };
    runtime::load_model(&payload).map_err(named)?;
    let runtime_bytes = crate::run::read_regular(&runtime_path()?, 1 << 30)?;
    let exe = runtime::append_model(&runtime_bytes, &payload.manifest, &payload.model);
    write_executable(out, &exe)?;
    Ok(Exported {
        out: out.to_path_buf(),
        bytes: exe.len(),
        manifest: payload.manifest,
    })
}

/// What [`export`] wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Exported {
    /// The executable.
    pub out: PathBuf,
    /// Its size.
    pub bytes: usize,
    /// The policy it carries.
    pub manifest: Manifest,
}

/// Export the queue-world run in `dir` (its `agents`, or all) to
/// the executable `out`. An existing `out` is
/// replaced only with `force`, and only if it is a regular file.
pub fn export(dir: &Path, out: &Path, agents: Option<usize>, replicate: Option<usize>, force: bool) -> crate::error::Result<Exported> {
    export_with(out, force, |runtime| export_bytes(dir, agents, replicate, runtime))
}

/// Write the executable `out` (an existing one only with `force`, and only a regular file)
/// from the runtime's bytes and what `payload` appends to them.
pub fn export_with(
    out: &Path,
    force: bool,
    payload: impl FnOnce(&[u8]) -> crate::error::Result<(Vec<u8>, Manifest)>,
) -> crate::error::Result<Exported> {
    if std::fs::symlink_metadata(out).is_ok() && !force {
        return Err(user(format!("{}: exists; pass --force to replace it", out.display())));
    }
    let runtime_file = runtime_path()?;
    let runtime = crate::run::read_regular(&runtime_file, 1 << 30)?;
    let (bytes, manifest) = payload(&runtime)?;
    write_executable(out, &bytes)?;
    Ok(Exported {
        out: out.to_path_buf(),
        bytes: bytes.len(),
        manifest,
    })
}

fn write_executable(out: &Path, bytes: &[u8]) -> crate::error::Result<()> {
    crate::run::write_atomic(out, bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(out, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| crate::run::io_error(out, "making executable", e))?;
    }
    Ok(())
}

//! `mtf export --run RUN` on a run of a world behind the seam: its actors, one per group (or
//! per agent, where its learner kept one per agent: the queue world's), or a fixed run's
//! levels (constant policies), as a standalone agent ([`crate::export::runtime`], manifest
//! `world`); `agent:PATH` drives it back ([`super::agent`]).

use crate::error::user;
use crate::export::runtime::{fnv_hex, Manifest, PolicyForm, WorldShape, VERSION};
use crate::export::{export_with, Exported};
use std::path::Path;

/// Export the seam run (or run group's replicate) in `dir` to the executable `out`.
pub fn export(dir: &Path, out: &Path, agents: Option<usize>, replicate: Option<usize>, force: bool) -> crate::error::Result<Exported> {
    export_with(out, force, |runtime| world_bytes(dir, agents, replicate, runtime))
}

/// A trained run of a world behind the seam: its actors, one per group (`agents`: one group
/// by its index, or all), of replicate `replicate` when `dir` is a run group (default 0).
fn world_bytes(dir: &Path, agents: Option<usize>, replicate: Option<usize>, runtime: &[u8]) -> crate::error::Result<(Vec<u8>, Manifest)> {
    let run = crate::run::RunDir::at(dir);
    let src = if run.is_group() {
        let all = crate::train::group::replicates(dir)?;
        let r = replicate.unwrap_or(0);
        all.get(r)
            .cloned()
            .ok_or_else(|| user(format!("--replicate {r}: the run group has replicates 0..{}", all.len() - 1)))?
    } else if let Some(r) = replicate {
        return Err(user(format!("--replicate {r}: {} is one run, not a run group", dir.display())));
    } else {
        dir.to_path_buf()
    };
    let config_path = crate::run::RunDir::at(&src).config();
    let world = super::load(&config_path, &[], None, None)?;
    if let Some((levels, per_agent)) = super::train::fixed_levels(&src)? {
        return fixed_bytes(&src, world.as_ref(), &levels, per_agent, agents, runtime);
    }
    let trained = super::train::trained_actors(&src, world.as_ref())?;
    if !trained.exportable() {
        return Err(crate::error::run_dir(
            &src,
            "holds Hedge's table over the budget states, which reads the world's budgets, not an observation row: an exported world policy cannot carry it (play it with run:DIR)",
        ));
    }
    let (actors, hidden) = trained.weights();
    // The features its actors read: the whole row, or the block the learner read.
    let reads = trained.reads(world.layout().dim());
    let groups = world.group_names();
    // An actor per agent where the learner kept one (the queue world's), else per group.
    let per_agent = if trained.per_agent() { actors.len() } else { 0 };
    let chosen: Vec<usize> = match agents {
        None => (0..actors.len()).collect(),
        Some(g) if g < actors.len() => vec![g],
        Some(g) if per_agent > 0 => {
            return Err(user(format!(
                "--agent {g}: this run keeps an actor per agent and exports its agents 0..{}",
                actors.len() - 1
            )))
        }
        Some(g) => {
            return Err(user(format!(
                "--agent {g}: a run of this world exports its groups 0..{} ({})",
                groups.len() - 1,
                groups.join(", ")
            )))
        }
    };
    let weights: Vec<f32> = chosen.iter().flat_map(|&g| actors[g].iter().copied()).collect();
    let manifest = manifest(
        &src,
        world.as_ref(),
        PolicyForm::Actor,
        hidden,
        chosen,
        world.layout().names[reads].to_vec(),
        per_agent,
    )?;
    crate::export::sealed(runtime, manifest, &weights, Some("world"))
}

/// A fixed run's levels as constant policies (one level index per group, or per agent where
/// the run fixed a level per weight class or per agent), which read nothing of the row.
fn fixed_bytes(
    src: &Path,
    world: &dyn env::worlds::World,
    levels: &[usize],
    per_agent: bool,
    agents: Option<usize>,
    runtime: &[u8],
) -> crate::error::Result<(Vec<u8>, Manifest)> {
    let what = if per_agent { "agents" } else { "groups" };
    let chosen: Vec<usize> = match agents {
        None => (0..levels.len()).collect(),
        Some(g) if g < levels.len() => vec![g],
        Some(g) => {
            return Err(user(format!(
                "--agent {g}: this fixed run exports its {what} 0..{}",
                levels.len() - 1
            )))
        }
    };
    let weights: Vec<f32> = chosen.iter().map(|&g| levels[g] as f32).collect();
    // A constant policy reads no feature, but a world manifest names the row it is driven on.
    let features = world.layout().names.clone();
    let per_agent = if per_agent { levels.len() } else { 0 };
    let manifest = manifest(src, world, PolicyForm::Constant, 0, chosen, features, per_agent)?;
    crate::export::sealed(runtime, manifest, &weights, Some("world"))
}

/// The manifest of a world policy exported from the run in `src`.
fn manifest(
    src: &Path,
    world: &dyn env::worlds::World,
    form: PolicyForm,
    hidden: usize,
    chosen: Vec<usize>,
    features: Vec<String>,
    per_agent: usize,
) -> crate::error::Result<Manifest> {
    let groups = world.group_names();
    let config = crate::run::read_regular(&crate::run::RunDir::at(src).config(), crate::run::MAX_TEXT)?;
    Ok(Manifest {
        version: VERSION,
        kind: form.name().into(),
        action: world.action_kind().as_str().into(),
        value_scale: 1.0,
        agents: chosen,
        m: 0,
        hidden,
        agents_total: 0,
        inputs: Vec::new(),
        by_type: 0,
        types: Vec::new(),
        world: Some(WorldShape {
            name: env::registry::world_name(&world.config()),
            features,
            groups,
            per_agent,
        }),
        weights: Vec::new(),
        total_tokens: 0.0,
        states: 0,
        fixed_level: 0,
        model_bytes: 0,
        levels: world.levels().to_vec(),
        training_run: src.canonicalize().unwrap_or_else(|_| src.to_path_buf()).display().to_string(),
        config_hash: fnv_hex(&config),
    })
}

//! Policies for the worlds behind the seam, and the specs that name them on the command line:
//! `fixed:X` (level X for everyone; X a level, or one of the world's named actions, as the
//! market's `fixed:own`, or `own` alone), `fixed:all` (every level and named action, a row each), `uniform` (a level
//! drawn uniformly every round), `run:DIR` (a trained run's actors; a run group: every
//! replicate), `agent:PATH` (an exported agent, or any executable speaking the protocol:
//! [`super::agent`]).

use super::RowPolicy;
pub use super::{Fixed, Uniform};
use env::worlds::World;
use std::path::Path;

/// A named policy: its row label and the policy.
pub type Named = (String, Box<dyn RowPolicy>);

/// The policies a spec names for `world` (`fixed:all` is one per level, a run group one per
/// replicate). Errors name the spec.
pub fn parse(spec: &str, world: &dyn World) -> crate::error::Result<Vec<Named>> {
    let levels = world.levels();
    let bad = |problem: String| crate::error::policy(spec, problem);
    let named = world.named_actions();
    if spec == "fixed:all" {
        let names = levels.iter().map(f64::to_string).chain(named.iter().map(|n| n.to_string()));
        return Ok(names
            .enumerate()
            .map(|(k, name)| (format!("fixed:{name}"), Box::new(Fixed::new(vec![k])) as Box<dyn RowPolicy>))
            .collect());
    }
    // A named action, alone (the market's `own`) or as `fixed:own`: every agent at it.
    let fixed = spec.strip_prefix("fixed:");
    if let Some(j) = named.iter().position(|n| *n == fixed.unwrap_or(spec).trim()) {
        let label = if fixed.is_some() {
            format!("fixed:{}", named[j])
        } else {
            named[j].to_string()
        };
        return Ok(vec![(label, Box::new(Fixed::new(vec![levels.len() + j])))]);
    }
    if spec == "uniform" {
        return Ok(vec![("uniform".into(), Box::new(Uniform::new(levels.len())))]);
    }
    if let Some(x) = spec.strip_prefix("fixed:") {
        let v: f64 = x.trim().parse().map_err(|_| {
            let names: String = named.iter().map(|n| format!(" or `{n}`")).collect();
            bad(format!("`{x}` is not a number{names}"))
        })?;
        let k = env::config::level_index(levels, v).ok_or_else(|| {
            bad(format!(
                "{v} is not one of this world's {} {levels:?}",
                world.action_kind().levels_name()
            ))
        })?;
        return Ok(vec![(format!("fixed:{}", levels[k]), Box::new(Fixed::new(vec![k])))]);
    }
    if let Some(dir) = spec.strip_prefix("run:") {
        return run_policies(Path::new(dir), world).map_err(|e| match e {
            crate::error::Error::User(m) => bad(m),
            other => other,
        });
    }
    if let Some(path) = spec.strip_prefix("agent:") {
        let agents = super::agent::WorldAgents::new(Path::new(path), world).map_err(bad)?;
        return Ok(vec![(spec.to_string(), Box::new(agents))]);
    }
    Err(bad(
        "a world of env.worlds takes fixed:X, fixed:all, uniform, run:DIR (a run trained on it) or agent:PATH (one exported from such a run)".into(),
    ))
}

/// A trained run's actors (one per group), or every replicate's of a run group.
fn run_policies(dir: &Path, world: &dyn World) -> crate::error::Result<Vec<Named>> {
    let run = crate::RunDir::at(dir);
    if run.is_group() {
        let mut out = Vec::new();
        for (k, r) in crate::train::group::replicates(dir)?.into_iter().enumerate() {
            let trained = super::train::trained_actors(&r, world)?;
            out.push((format!("run:{}#{k}", stem(dir)), trained.policy()));
        }
        return Ok(out);
    }
    let trained = super::train::trained_actors(dir, world)?;
    Ok(vec![(format!("run:{}", stem(dir)), trained.policy())])
}

/// A run directory's name, as its rows are labelled (`run:NAME`).
pub(crate) fn stem(dir: &Path) -> String {
    dir.file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Split a comma-separated list of specs (`fixed:0.3,uniform`).
pub fn split(list: &[String]) -> Vec<String> {
    list.iter()
        .flat_map(|s| s.split(','))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

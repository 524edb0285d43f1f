//! Policies for the worlds behind the seam, and the specs that name them on the command line:
//! `fixed:X` (level X for everyone; X a level, or one of the world's named actions, as the
//! market's `fixed:own`, or `own` alone), `fixed:G=X,H=Y,...` (a level per group, by the
//! world's group names), `fixed:[X,Y,...]` (a level per possible agent, by id), `fixed:all`
//! (every level and named action, a row each), `uniform` (a level drawn uniformly every
//! round), `hedge` (Hedge learning as it plays, in a world that keeps SPEC 4's round record:
//! [`super::online`]), `run:DIR` (a trained run's actors, drawing their levels where they
//! trained so; `sampled:run:DIR` the same, `greedy:run:DIR` their argmax; a run group: every
//! replicate), `agent:PATH` (an exported agent, or any executable speaking the protocol:
//! [`super::agent`]), `onnx:PATH` and `sampled:onnx:PATH` (an ONNX policy from any trainer:
//! [`super::onnx`]).

use super::{action_name, group_spec, RowPolicy};
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
        return Ok(vec![("uniform".into(), Box::new(Uniform::of(world)))]);
    }
    if spec == "hedge" {
        let online = super::online::Online::hedge(world).ok_or_else(|| {
            bad("learns as it plays from each round's record (SPEC 4: the queue world's), which this world does not keep; train it instead (learner.kind = \"hedge\", then run:DIR)".into())
        })?;
        return Ok(vec![("hedge".into(), Box::new(online))]);
    }
    if let Some(x) = fixed.filter(|x| x.contains('=')) {
        return per_group(x, world).map_err(bad);
    }
    if let Some(x) = fixed.filter(|x| x.trim_start().starts_with('[')) {
        return per_agent(x, world).map_err(bad);
    }
    if let Some(x) = fixed {
        let k = action_index(x, world).map_err(bad)?;
        return Ok(vec![(format!("fixed:{}", action_name(k, world)), Box::new(Fixed::new(vec![k])))]);
    }
    // `run:DIR` plays a run as it trained (drawing its levels where it drew them);
    // `sampled:run:DIR` says so (the queue world's spelling); `greedy:run:DIR` plays the
    // argmax, a row marked near-uniform where the policy is.
    let run = spec
        .strip_prefix("sampled:run:")
        .or_else(|| spec.strip_prefix("run:"))
        .map(|d| (d, false));
    if let Some((dir, greedy)) = run.or_else(|| spec.strip_prefix("greedy:run:").map(|d| (d, true))) {
        return run_policies(Path::new(dir), world, greedy).map_err(|e| match e {
            crate::error::Error::User(m) => bad(m),
            other => other,
        });
    }
    let onnx = spec.strip_prefix("sampled:onnx:").map(|f| (f, true));
    if let Some((file, sampled)) = onnx.or_else(|| spec.strip_prefix("onnx:").map(|f| (f, false))) {
        if file.trim().is_empty() {
            return Err(bad("needs the path of an ONNX file".into()));
        }
        let policy = super::onnx::WorldOnnx::load(Path::new(file), world, sampled).map_err(|e| bad(format!("{file}: {e}")))?;
        return Ok(vec![(spec.to_string(), Box::new(policy))]);
    }
    if let Some(path) = spec.strip_prefix("agent:") {
        let agents = super::agent::WorldAgents::new(Path::new(path), world).map_err(bad)?;
        return Ok(vec![(spec.to_string(), Box::new(agents))]);
    }
    Err(bad(
        "a world of env.worlds takes fixed:X, fixed:G=X,H=Y,... (a level per group), fixed:[X,Y,...] (a level per agent), fixed:all, uniform, hedge (learning as it plays, where the world keeps its rounds), run:DIR (a run trained on it, as it trained; greedy:run:DIR its argmax), agent:PATH (one exported from such a run), onnx:PATH or sampled:onnx:PATH (an ONNX policy)".into(),
    ))
}

/// A spec as the row it plays is labelled, for a `fixed:` spec of one row (`fixed:0.30` is
/// `fixed:0.3`'s row, `fixed:b=0.2,a=0.1` is `fixed:a=0.1,b=0.2`'s where the world's groups
/// are `a`, `b`); any other spec, or one that does not parse, as written (a run's or an
/// agent's rows are not loaded to name them). What `--label`'s specs are matched by.
pub fn canonical(spec: &str, world: &dyn World) -> String {
    if spec.starts_with("fixed:") {
        if let Ok(rows) = parse(spec, world) {
            if let [(label, _)] = rows.as_slice() {
                return label.clone();
            }
        }
    }
    spec.to_string()
}

/// The action a level's text names: a level of the world's grid, or one of its named actions
/// (the market's `own`).
fn action_index(text: &str, world: &dyn World) -> Result<usize, String> {
    let (levels, named) = (world.levels(), world.named_actions());
    let text = text.trim();
    if let Some(j) = named.iter().position(|n| *n == text) {
        return Ok(levels.len() + j);
    }
    let v: f64 = text.parse().map_err(|_| {
        let names: String = named.iter().map(|n| format!(" or `{n}`")).collect();
        format!("`{text}` is not a number{names}")
    })?;
    env::config::level_index(levels, v)
        .ok_or_else(|| format!("{v} is not one of this world's {} {levels:?}", world.action_kind().levels_name()))
}

/// `fixed:G=X,H=Y,...`: a level (or named action) per group, every group of the world named
/// once by its name (the queue world's `w1`, `w2`, ...; a wrong name's error lists them).
/// The row is labelled with the groups in the world's order, so two spellings of one policy
/// label one row.
fn per_group(text: &str, world: &dyn World) -> Result<Vec<Named>, String> {
    let names = world.group_names();
    let all = || names.join(", ");
    let mut chosen: Vec<Option<usize>> = vec![None; names.len()];
    for part in text.split(',') {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("`{}`: give each group as NAME=LEVEL (groups: {})", part.trim(), all()))?;
        let key = key.trim();
        let g = names
            .iter()
            .position(|n| n == key)
            .ok_or_else(|| format!("`{key}` is not a group of this world (groups: {})", all()))?;
        if chosen[g].is_some() {
            return Err(format!("group `{key}` is given twice"));
        }
        chosen[g] = Some(action_index(value, world).map_err(|e| format!("{key}: {e}"))?);
    }
    let levels = chosen
        .iter()
        .zip(&names)
        .map(|(k, n)| k.ok_or_else(|| format!("no level for group `{n}` (give every group: {})", all())))
        .collect::<Result<Vec<usize>, String>>()?;
    Ok(vec![(group_spec(&levels, world), Box::new(Fixed::new(levels)))])
}

/// `fixed:[X,Y,...]`: a level (or named action) per possible agent, by id, as the queue
/// world's own spec; labelled with the levels as the world names them.
fn per_agent(text: &str, world: &dyn World) -> Result<Vec<Named>, String> {
    let inner = text
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("`{}`: a level per agent is a list in brackets, [X,Y,...]", text.trim()))?;
    if inner.trim().is_empty() {
        return Err(format!(
            "the per-agent list is empty: give a level for each of this world's {} agents",
            world.possible()
        ));
    }
    let levels = inner
        .split(',')
        .enumerate()
        .map(|(id, x)| match x.trim() {
            "" => Err(format!("agent {id}: no level (an empty entry)")),
            x => action_index(x, world).map_err(|e| format!("agent {id}: {e}")),
        })
        .collect::<Result<Vec<usize>, String>>()?;
    let n = world.possible();
    if levels.len() != n {
        return Err(format!(
            "gives {} levels; this world has {n} agents (a level for each, by id 0..{})",
            levels.len(),
            n.saturating_sub(1)
        ));
    }
    let names: Vec<String> = levels.iter().map(|&k| action_name(k, world)).collect();
    Ok(vec![(
        format!("fixed:[{}]", names.join(",")),
        Box::new(super::PerAgent::new(levels)),
    )])
}

/// A trained run's actors (one per group), or every replicate's of a run group.
fn run_policies(dir: &Path, world: &dyn World, greedy: bool) -> crate::error::Result<Vec<Named>> {
    let prefix = if greedy { "greedy:run:" } else { "run:" };
    let policy = |r: &Path| -> crate::error::Result<Box<dyn RowPolicy>> {
        let trained = super::train::trained_actors(r, world)?;
        if !greedy {
            return Ok(trained.policy());
        }
        if let Some(g) = trained.greedy() {
            return Ok(g);
        }
        match trained {
            // ES's actors play their argmax already.
            super::train::Trained::Es(_) => Ok(trained.policy()),
            _ => Err(crate::error::user(
                "greedy: plays the argmax of a policy that draws a level per row (PPO, the actor-critic, the queue world's Hedge); this run's Hedge draws a level per group per episode: play it as it trained (run:DIR)",
            )),
        }
    };
    let run = crate::RunDir::at(dir);
    if run.is_group() {
        let mut out = Vec::new();
        for (k, r) in crate::train::group::replicates(dir)?.into_iter().enumerate() {
            out.push((format!("{prefix}{}#{k}", stem(dir)), policy(&r)?));
        }
        return Ok(out);
    }
    Ok(vec![(format!("{prefix}{}", stem(dir)), policy(dir)?)])
}

/// A run directory's name, as its rows are labelled (`run:NAME`).
pub(crate) fn stem(dir: &Path) -> String {
    dir.file_name()
        .map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Split a comma-separated list of specs (`fixed:0.3,uniform`), empty ones dropped; a comma
/// inside a per-agent list or between groups' levels keeps the spec whole ([`join_split`]).
pub fn split(list: &[String]) -> Vec<String> {
    join_split(list)
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// Split each item at its commas, except where a comma continues the spec before it: inside
/// a per-agent list (`fixed:[0.2,0.4]`) or before another group's level
/// (`fixed:w1=0.2,w2=0.4`: a `NAME=LEVEL` part after a `fixed:` spec holding one). Both
/// worlds' command lines split with it.
pub fn join_split(items: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        for part in item.split(',') {
            let continues = out.last().is_some_and(|prev: &String| {
                let open = prev.matches('[').count() > prev.matches(']').count();
                let group = prev.trim_start().starts_with("fixed:")
                    && prev.contains('=')
                    && part
                        .split_once('=')
                        .is_some_and(|(key, _)| !key.trim().is_empty() && !key.contains(':'));
                open || group
            });
            match out.last_mut() {
                Some(prev) if continues => {
                    prev.push(',');
                    prev.push_str(part);
                }
                _ => out.push(part.to_string()),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{join_split, split};

    #[test]
    fn a_comma_list_keeps_per_group_and_per_agent_specs_whole() {
        let given = [
            "fixed:group_0=0.3, group_1=0.7,uniform,fixed:[0.1,0.2]".to_string(),
            "fixed:0.3,run:a=b".into(),
        ];
        assert_eq!(
            split(&given),
            [
                "fixed:group_0=0.3, group_1=0.7",
                "uniform",
                "fixed:[0.1,0.2]",
                "fixed:0.3",
                "run:a=b"
            ]
        );
        // A `NAME=LEVEL` part continues only a `fixed:` spec that holds one; a part whose key
        // is a spec (`fixed:w1=0.2` after another) starts a spec of its own.
        let given = ["fixed:w1=0.2,w2=0.4,fixed:w1=0.3,w2=0.5,,x=1".to_string()];
        assert_eq!(join_split(&given), ["fixed:w1=0.2,w2=0.4", "fixed:w1=0.3,w2=0.5", "", "x=1"]);
    }
}

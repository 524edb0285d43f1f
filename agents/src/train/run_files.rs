//! A queue-world run directory read back: its experiment and its learner from the latest
//! checkpoint, what a resume may change, and the defaults older runs were trained with.

use super::checkpoint;
use crate::config::Experiment;
use crate::error::user;
use crate::learners::Learner;
use crate::run::RunDir;
use std::path::Path;

/// Load a run directory's experiment and its learner restored from its latest checkpoint
/// ([`checkpoint::latest`]), or fresh, with 0 episodes done, when there is none and
/// `allow_fresh`.
pub fn load_run(dir: &Path, allow_fresh: bool) -> crate::error::Result<(Experiment, Box<dyn Learner>, u64)> {
    load_run_allowing(dir, allow_fresh, &[])
}

/// Refuse a run of another world where a queue- or valuation-world run is read, naming the
/// run and what reads it (before, its config was parsed as a queue-world file and the error
/// blamed its `env.world` as an unknown variant: issue 42.7). Unreadable configs pass: the
/// parse that follows names their problem.
pub fn queue_world_run(dir: &Path) -> crate::error::Result<()> {
    let Ok(text) = std::fs::read_to_string(RunDir::at(dir).config()) else {
        return Ok(());
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    if env::registry::stack_of_table(&table) == env::registry::Stack::Queue {
        return Ok(());
    }
    let world = env::registry::world_name(&table);
    let reads = format!(
        "a {world} run is read with a {world} config (mtf compare --config FILE --policies run:DIR), mtf train --resume and mtf curves"
    );
    let what = if world == "queues" || world == "valuations" {
        format!("a run of the {world} world trained by the seam's commands (env.stack = \"seam\" in its config.toml), read here as one of the queue world's own: its config must say the same")
    } else {
        format!("a run of the {world} world (env.world in its config.toml), read here as a queue-world run")
    };
    Err(crate::error::run_dir(dir, format!("{what}: {reads}")))
}

/// [`load_run`], where the run's `config.toml` may differ from the config its checkpoint
/// recorded at the keys `allowed` (and `train.threads`, which changes no result).
pub fn load_run_allowing(dir: &Path, allow_fresh: bool, allowed: &[String]) -> crate::error::Result<(Experiment, Box<dyn Learner>, u64)> {
    let config = RunDir::at(dir).config();
    if !config.exists() {
        return Err(crate::error::run_dir(dir, "not a run directory (no config.toml)"));
    }
    queue_world_run(dir)?;
    let exp = Experiment::load(&config, &run_config_sets(&config)).map_err(|e| user(e.to_string()))?;
    let mut learner = exp.build_learner();
    let Some(latest) = checkpoint::latest(dir) else {
        if allow_fresh {
            return Ok((exp, learner, 0));
        }
        return Err(crate::error::run_dir(
            &RunDir::at(dir).latest_checkpoint(),
            "no checkpoint (the run has not finished an episode)",
        ));
    };
    let (done, recorded) = checkpoint::restore(&latest, learner.as_mut())?;
    if let Some(recorded) = recorded {
        refuse_changes(&config, &recorded, &exp.to_toml(), allowed, "its checkpoint")?;
    }
    Ok((exp, learner, done))
}

/// Refuse the config `now` (the file at `config`) where it differs from `recorded` (`since`:
/// what wrote it) at keys other than `allowed` and `train.threads` (which changes no result):
/// one line naming the keys, for every resume of every world and of run groups.
pub(crate) fn refuse_changes(config: &Path, recorded: &str, now: &str, allowed: &[String], since: &str) -> crate::error::Result<()> {
    let changed: Vec<String> = changed_keys(recorded, now)
        .into_iter()
        .filter(|k| k != "train.threads" && !allowed.contains(k))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    Err(crate::error::run_dir(
        config,
        format!(
            "changed since {since} was written, at {}: resuming or evaluating it would continue a different experiment. Restore those keys, or, for a resume meant to change them, add --allow-config-change {}",
            changed.join(", "),
            changed.join(",")
        ),
    ))
}

/// Keys a run's `config.toml` gained after older runs were written, each with the value its
/// default had before: a run directory is read as it was trained, and a checkpoint's recorded
/// config compares equal to it. `learner.ppo.head_scale` is written since 2026-11-28 (a6450e0),
/// when its default went from 1 to 0.03; `learner.actor_critic.share` since 2026-12-05, when
/// its default went from `"none"` (then left out of the file) to `"auto"`. Values are TOML.
const LEGACY_DEFAULTS: &[(&str, &str, &str)] = &[("ppo", "head_scale", "1.0"), ("actor_critic", "share", "\"none\"")];

/// A [`LEGACY_DEFAULTS`] value as TOML.
fn legacy_value(then: &str) -> toml::Value {
    let t: toml::Table = format!("v = {then}").parse().expect("a TOML value");
    t["v"].clone()
}

/// [`LEGACY_DEFAULTS`] filled into a run's config `table` where its `[learner.*]` section has
/// no such key.
fn legacy_defaults(table: &mut toml::Table) {
    let Some(toml::Value::Table(learner)) = table.get_mut("learner") else {
        return;
    };
    for &(section, key, then) in LEGACY_DEFAULTS {
        if let Some(toml::Value::Table(t)) = learner.get_mut(section) {
            t.entry(key).or_insert_with(|| legacy_value(then));
        }
    }
}

/// The `--set`s that read the run directory config at `config` as it was trained
/// ([`LEGACY_DEFAULTS`]): none for a config written since, or one that cannot be read (its
/// reader then says why).
pub(crate) fn run_config_sets(config: &Path) -> Vec<String> {
    let Some(table) = std::fs::read_to_string(config).ok().and_then(|t| t.parse::<toml::Table>().ok()) else {
        return Vec::new();
    };
    // The keys legacy_defaults would fill: a [learner.<section>] table without them.
    let learner = table.get("learner").and_then(|l| l.as_table());
    LEGACY_DEFAULTS
        .iter()
        .filter(|(section, key, _)| {
            learner
                .and_then(|l| l.get(*section))
                .and_then(|s| s.as_table())
                .is_some_and(|s| !s.contains_key(*key))
        })
        .map(|(section, key, then)| format!("learner.{section}.{key}={then}"))
        .collect()
}

/// The key paths (`train.episodes`, `env.agents`) where two TOML configs differ; arrays compare
/// whole. A text that does not parse differs everywhere (`(the whole config)`). Both are read
/// with [`LEGACY_DEFAULTS`] filled in (a checkpoint written before a key was recorded without it).
pub(crate) fn changed_keys(a: &str, b: &str) -> Vec<String> {
    fn flat(prefix: &str, t: &toml::Table, out: &mut std::collections::BTreeMap<String, toml::Value>) {
        for (k, v) in t {
            let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
            match v {
                toml::Value::Table(inner) => flat(&key, inner, out),
                other => {
                    out.insert(key, other.clone());
                }
            }
        }
    }
    let (Ok(mut a), Ok(mut b)) = (a.parse::<toml::Table>(), b.parse::<toml::Table>()) else {
        return vec!["(the whole config)".into()];
    };
    legacy_defaults(&mut a);
    legacy_defaults(&mut b);
    let (mut fa, mut fb) = (Default::default(), Default::default());
    flat("", &a, &mut fa);
    flat("", &b, &mut fb);
    let keys: std::collections::BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
    keys.into_iter().filter(|k| fa.get(*k) != fb.get(*k)).cloned().collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_run_written_before_head_scale_was_recorded_reads_as_trained() {
        // Written before 2026-11-28: [learner.ppo] without head_scale, trained at 1.
        let old = "seed = 1\n[learner.ppo]\nlr = 0.0005\n";
        let dir = std::env::temp_dir().join(format!("mtf-legacy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.toml");
        std::fs::write(&path, old).unwrap();
        assert_eq!(super::run_config_sets(&path), vec!["learner.ppo.head_scale=1.0".to_string()]);
        // Its checkpoint's recorded config (without the key) matches it read at 1, not at
        // the new default, and a written key is compared as written.
        let at = |x: &str| format!("seed = 1\n[learner.ppo]\nlr = 0.0005\nhead_scale = {x}\n");
        assert!(super::changed_keys(old, &at("1.0")).is_empty());
        assert_eq!(super::changed_keys(old, &at("0.03")), vec!["learner.ppo.head_scale"]);
        assert_eq!(super::changed_keys(&at("0.03"), &at("1.0")), vec!["learner.ppo.head_scale"]);
        // A config written since, or without a PPO section, needs nothing.
        std::fs::write(&path, at("0.03")).unwrap();
        assert!(super::run_config_sets(&path).is_empty());
        std::fs::write(&path, "seed = 1\n[learner.es]\npairs = 4\n").unwrap();
        assert!(super::run_config_sets(&path).is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

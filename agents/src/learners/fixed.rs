//! Fixed levels: the baselines every learner is compared with. One level for every agent
//! (`env::policy::Fixed`), or a level per weight class or per agent ([`FixedEach`]), as
//! `mtf analyze` finds them. They learn nothing.

use super::base::{ErrorIn, Exported, Init, Learner, LearnerConfig, Losses, Transition};
use env::config::{ConfigError, Scenario};
use env::policy::{Fixed, Policy};
use env::world::Observations;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `[learner.fixed]`: `threshold` for everyone, or a level per weight class (`by_weight`) or
/// per agent (`per_agent`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FixedConfig {
    /// The level (a threshold, or a bid factor under an auction): one of the scenario's levels.
    pub threshold: f64,
    /// A level per weight class, keyed `w<weight>` (`{ w1 = 0.2, w2 = 0.4, w4 = 0.7 }`):
    /// every class of the scenario, no other. Overrides `threshold`.
    /// Absent, not empty: an empty table sets no level, and is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_weight: Option<BTreeMap<String, f64>>,
    /// A level per agent, in agent order (as many as agents). Overrides `threshold`. Absent,
    /// not empty: an empty list is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_agent: Option<Vec<f64>>,
}

impl Default for FixedConfig {
    fn default() -> Self {
        Self {
            threshold: 0.5,
            by_weight: None,
            per_agent: None,
        }
    }
}

impl FixedConfig {
    /// The levels it names, and the key an error about them names; an error names its key.
    fn levels(&self) -> Result<(Levels, &'static str), (&'static str, String)> {
        match (&self.by_weight, &self.per_agent) {
            (Some(_), Some(_)) => Err(("learner.fixed", "set by_weight or per_agent, not both".into())),
            // An empty table was accepted and dropped: every agent then played `threshold`.
            (Some(b), None) if b.is_empty() => Err((
                "learner.fixed.by_weight",
                "is empty: give a level per weight class ({ w1 = 0.2, ... }) or remove it".into(),
            )),
            (None, Some(p)) if p.is_empty() => Err(("learner.fixed.per_agent", "is empty: give a level per agent or remove it".into())),
            (Some(b), None) => {
                let mut by = Vec::new();
                for (key, &level) in b {
                    by.push((weight_key(key).map_err(|e| ("learner.fixed.by_weight", e))?, level));
                }
                Ok((Levels::ByWeight(by), "learner.fixed.by_weight"))
            }
            (None, Some(p)) => Ok((Levels::PerAgent(p.clone()), "learner.fixed.per_agent")),
            (None, None) => Ok((Levels::All(self.threshold), "learner.fixed.threshold")),
        }
    }
}

impl FixedConfig {
    /// Each agent's level index in `shape` (checked by [`LearnerConfig::validate`]), or `None`
    /// where one level is everyone's (`threshold`).
    pub fn each(&self, shape: &dyn super::WorldShape) -> Option<Vec<usize>> {
        let (levels, _) = self.levels().expect("validated levels");
        match levels {
            Levels::All(_) => None,
            l => Some(l.resolve(shape).expect("validated levels")),
        }
    }
}

impl LearnerConfig for FixedConfig {
    fn validate(&self, shape: &dyn super::WorldShape, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        if !chosen {
            return Ok(());
        }
        let (levels, key) = self.levels().map_err(|(k, p)| err(k, p))?;
        if !matches!(levels, Levels::All(_)) && !shape.per_agent() {
            return Err(err(
                key,
                "here a fixed run plays one level for every agent: set learner.fixed.threshold".into(),
            ));
        }
        levels.resolve(shape).map(|_| ()).map_err(|p| err(key, p))
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        let (levels, _) = self.levels().expect("validated levels");
        let each = levels.resolve(run.shape).expect("validated levels");
        match levels {
            Levels::All(_) => Box::new(Fixed { level: each[0] }),
            _ => Box::new(FixedEach { levels: each }),
        }
    }

    fn exported(&self, sc: &dyn super::WorldShape) -> Exported {
        let first = self
            .levels()
            .ok()
            .and_then(|(l, _)| l.resolve(sc).ok())
            .and_then(|each| each.first().copied());
        Exported::Constant { level: first.unwrap_or(0) }
    }
}

/// The levels of a fixed policy, as a spec names them after `fixed:`: `0.5` (everyone),
/// `w1=0.2,w2=0.4,w4=0.7` (per weight class), `[0.2,0.2,0.4]` (per agent).
#[derive(Clone, Debug, PartialEq)]
pub enum Levels {
    /// One level for everyone.
    All(f64),
    /// (weight, level) per weight class.
    ByWeight(Vec<(f64, f64)>),
    /// A level per agent.
    PerAgent(Vec<f64>),
}

/// A level as specs and labels print it: `0.0`, `0.5` (one spelling per level, so `fixed:0`
/// and `fixed:0.0` label the same row).
pub fn level_text(x: f64) -> String {
    format!("{x:?}")
}

/// A weight as a class key prints it: `1`, `0.5`.
fn weight_text(w: f64) -> String {
    format!("{w}")
}

/// `w<weight>` to the weight.
fn weight_key(key: &str) -> Result<f64, String> {
    key.strip_prefix('w')
        .and_then(|w| w.parse::<f64>().ok())
        .filter(|w| w.is_finite() && *w > 0.0)
        .ok_or_else(|| format!("`{key}` is not a weight class key (w<weight>, e.g. w1 or w0.5)"))
}

fn number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| format!("`{}` is not a number", text.trim()))
}

impl Levels {
    /// Read the text after `fixed:`; the error says what is wrong.
    pub fn parse(text: &str) -> Result<Levels, String> {
        let text = text.trim();
        if let Some(inner) = text.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or("a per-agent list needs its closing `]`: [0.2,0.2,0.4]")?;
            if inner.trim().is_empty() {
                return Err("the per-agent list is empty".into());
            }
            return inner.split(',').map(number).collect::<Result<_, _>>().map(Levels::PerAgent);
        }
        if text.contains('=') {
            let mut by: Vec<(f64, f64)> = Vec::new();
            for part in text.split(',') {
                let (key, level) = part
                    .split_once('=')
                    .ok_or_else(|| format!("`{part}`: give each class as w<weight>=<level>"))?;
                let w = weight_key(key.trim())?;
                if by.iter().any(|(x, _)| same_weight(*x, w)) {
                    return Err(format!("weight class w{} is given twice", weight_text(w)));
                }
                by.push((w, number(level)?));
            }
            return Ok(Levels::ByWeight(by));
        }
        number(text).map(Levels::All)
    }

    /// Each agent's level index in `sc`; the error names the class, agent or level that does
    /// not fit.
    pub fn resolve(&self, sc: &dyn super::WorldShape) -> Result<Vec<usize>, String> {
        let index = |x: f64| {
            sc.level_index(x)
                .ok_or_else(|| format!("{x} is not one of the {} {:?}", sc.action_kind().levels_name(), sc.levels()))
        };
        let classes = sc.weight_classes();
        let names = || {
            classes
                .iter()
                .map(|w| format!("w{}", weight_text(*w)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Levels::All(x) => Ok(vec![index(*x)?; sc.agents()]),
            Levels::PerAgent(xs) if xs.len() != sc.agents() => Err(format!(
                "gives {} levels for the scenario's {} agents (one per agent, in order)",
                xs.len(),
                sc.agents()
            )),
            Levels::PerAgent(xs) => xs.iter().map(|&x| index(x)).collect(),
            Levels::ByWeight(by) => {
                if let Some((w, _)) = by.iter().find(|(w, _)| !classes.iter().any(|c| same_weight(*c, *w))) {
                    return Err(format!("no agent has weight {} (classes: {})", weight_text(*w), names()));
                }
                if let Some(c) = classes.iter().find(|c| !by.iter().any(|(w, _)| same_weight(**c, *w))) {
                    return Err(format!(
                        "no level for weight class w{} (give every class: {})",
                        weight_text(*c),
                        names()
                    ));
                }
                (0..sc.agents())
                    .map(|id| {
                        let (_, level) = by.iter().find(|(w, _)| same_weight(*w, sc.weight(id))).expect("every class");
                        index(*level)
                    })
                    .collect()
            }
        }
    }

    /// The policy spec that plays them: `fixed:...`, classes in ascending weight.
    pub fn spec(&self) -> String {
        match self {
            Levels::All(x) => format!("fixed:{}", level_text(*x)),
            Levels::PerAgent(xs) => {
                format!("fixed:[{}]", xs.iter().map(|x| level_text(*x)).collect::<Vec<_>>().join(","))
            }
            Levels::ByWeight(by) => {
                let mut by = by.clone();
                by.sort_by(|a, b| a.0.total_cmp(&b.0));
                let parts: Vec<String> = by.iter().map(|(w, l)| format!("w{}={}", weight_text(*w), level_text(*l))).collect();
                format!("fixed:{}", parts.join(","))
            }
        }
    }

    /// The policy that plays them in `sc`.
    pub fn policy(&self, sc: &Scenario) -> Result<Box<dyn Policy>, String> {
        let each = self.resolve(sc)?;
        Ok(match self {
            Levels::All(_) => Box::new(Fixed { level: each[0] }),
            _ => Box::new(FixedEach { levels: each }),
        })
    }
}

fn same_weight(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(1.0)
}

/// A fixed level per agent (level indices).
#[derive(Clone, Debug, PartialEq)]
pub struct FixedEach {
    /// Level index per agent.
    pub levels: Vec<usize>,
}

impl Policy for FixedEach {
    fn begin_episode(&mut self, _seed: u64) {}

    fn act(&mut self, _obs: Observations<'_>, _budgets: &[f64], _greedy: bool, actions: &mut [usize]) {
        actions.copy_from_slice(&self.levels);
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
}

/// A fixed level "learns" nothing; an exported constant policy carries each agent's level
/// index (manifest version 5).
macro_rules! learns_nothing {
    ($t:ty, |$me:ident, $agent:ident| $level:expr) => {
        impl Learner for $t {
            fn learn(&mut self, _t: &Transition<'_>) -> Losses {
                Losses::default()
            }

            fn save(&self) -> crate::error::Result<Vec<u8>> {
                Ok(Vec::new())
            }

            fn load(&mut self, _bytes: &[u8]) -> crate::error::Result<()> {
                Ok(())
            }

            fn export_weights(&self, $agent: usize) -> crate::error::Result<Vec<f32>> {
                let $me = self;
                Ok(vec![$level as f32])
            }
        }
    };
}
learns_nothing!(Fixed, |f, _agent| f.level);
learns_nothing!(FixedEach, |f, agent| f.levels[agent]);

#[cfg(test)]
mod tests {
    use super::*;

    fn quickstart() -> Scenario {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
        env::config::ScenarioFile::load(&path, &[]).unwrap()
    }

    #[test]
    fn specs_read_back_to_what_they_play() {
        let sc = quickstart();
        let classes = sc.weight_classes();
        assert_eq!(classes, [1.0, 2.0, 4.0]);
        let by = Levels::parse("w4=0.7, w1=0.2,w2=0.4").unwrap();
        assert_eq!(by.spec(), "fixed:w1=0.2,w2=0.4,w4=0.7");
        let each = by.resolve(&sc).unwrap();
        for (a, l) in sc.agents.iter().zip(&each) {
            let want = match a.weight as u32 {
                1 => 0.2,
                2 => 0.4,
                _ => 0.7,
            };
            assert_eq!(sc.action_levels()[*l], want);
        }
        assert_eq!(Levels::parse(&by.spec()["fixed:".len()..]).unwrap().resolve(&sc).unwrap(), each);
        assert_eq!(Levels::parse("0").unwrap().spec(), "fixed:0.0");
        let list: Vec<String> = (0..sc.n()).map(|i| format!("0.{}", i % 10)).collect();
        let per = Levels::parse(&format!("[{}]", list.join(", "))).unwrap();
        assert_eq!(per.resolve(&sc).unwrap(), (0..sc.n()).map(|i| i % 10).collect::<Vec<_>>());
    }

    #[test]
    fn levels_that_do_not_fit_the_scenario_say_which() {
        let sc = quickstart();
        for (text, says) in [
            ("w1=0.2,w2=0.4", "no level for weight class w4"),
            ("w1=0.2,w2=0.4,w4=0.7,w3=0.1", "no agent has weight 3"),
            ("w1=0.2,w2=0.4,w4=0.75", "0.75 is not one of the threshold levels"),
            ("[0.1,0.2]", "gives 2 levels for the scenario's"),
        ] {
            let e = Levels::parse(text).unwrap().resolve(&sc).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
        for (text, says) in [
            ("w1=0.2,w1=0.3", "given twice"),
            ("x1=0.2", "not a weight class key"),
            ("[0.1,0.2", "closing"),
            ("[]", "empty"),
            ("w1=zero", "`zero` is not a number"),
            ("nan", "not a number"),
        ] {
            let e = Levels::parse(text).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn an_empty_by_weight_table_or_per_agent_list_was_dropped() {
        // Both were accepted and every agent played the default 0.5.
        let sc = quickstart();
        let err = |key: &str, p: String| ConfigError {
            file: "x.toml".into(),
            key: key.into(),
            problem: p,
        };
        for (cfg, key) in [
            (
                FixedConfig {
                    by_weight: Some(BTreeMap::new()),
                    ..FixedConfig::default()
                },
                "learner.fixed.by_weight",
            ),
            (
                FixedConfig {
                    per_agent: Some(Vec::new()),
                    ..FixedConfig::default()
                },
                "learner.fixed.per_agent",
            ),
        ] {
            let e = cfg.validate(&sc, true, &err).unwrap_err();
            assert_eq!(e.key, key);
            assert!(e.problem.starts_with("is empty"), "{e}");
        }
        // Absent, they leave the threshold in charge.
        FixedConfig::default().validate(&sc, true, &err).unwrap();
    }
}

//! What a learner's config is checked against: the shape of the world its agents act in
//! ([`WorldShape`]), whichever world that is. The queue and valuation worlds give it from
//! their scenario, every world behind the seam (`env::worlds::World`: Gavel, the bandit, the
//! market) from the trait, so one set of checks per learner (`LearnerConfig::validate`) serves
//! them all, and what a world cannot give (a block of features it does not declare, a round
//! record to re-run, an actor per agent) is refused by the learner that needs it, in one line
//! naming its key.

use super::base::{inputs, Features, Inputs};
use env::config::{ActionKind, Scenario};
use env::worlds::World;
use scheduler::registry::Params;

/// A mechanism a round can be re-run under, with the round's record (the queue world's):
/// what Hedge's counterfactual levels per budget state and difference rewards need.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// The mechanism's registry name.
    pub mechanism: String,
    /// Its parameters.
    pub params: Params,
    /// Hedge's budget states (`floor(T) + 1`; 1 where budgets say nothing).
    pub budget_states: usize,
}

/// The shape of a world, as the learners' checks see it.
pub trait WorldShape {
    /// Agents, ids `0..agents()` (a world's possible agents).
    fn agents(&self) -> usize;

    /// The action levels.
    fn levels(&self) -> &[f64];

    /// What a level sets.
    fn action_kind(&self) -> ActionKind;

    /// Agent `id`'s weight.
    fn weight(&self, id: usize) -> f64;

    /// Where `features` sit in an agent's row; `None` when the world's rows have no such
    /// features (SPEC 4's and the by_type block are the queue world's).
    fn features(&self, features: Features) -> Option<Inputs>;

    /// Rounds per episode, when the world fixes them.
    fn rounds(&self) -> Option<u32>;

    /// Whether the same agents act every round until the episode ends (the queue world's, the
    /// market's learning tenants): a learner may then keep an actor and critic per agent (or
    /// per pool) updated on every agent's rounds, and a critic may read every agent's row.
    /// False where agents come and go (Gavel's jobs): learners pool each group's agents' rows.
    fn persistent(&self) -> bool;

    /// Whether a run may keep a policy per agent (an actor, a level per agent), as the queue
    /// world's does on either stack; else one per pool ([`WorldShape::pools`]), as in the
    /// worlds whose agents come and go and in the market, whose run directories, exports and
    /// policies keep one per group.
    fn per_agent(&self) -> bool;

    /// Each agent's pool, numbered from 0: who shares an actor where agents share one (the
    /// queue world's weight class under `share = "class"`; in the other worlds of the seam
    /// and in the market, always, the agent's group).
    fn pools(&self) -> Vec<usize>;

    /// Whether every agent is paid the shared welfare, as far as the learners can tell (PPO's
    /// `critic = "auto"` is central then, where the agents stay).
    fn welfare_reward(&self) -> bool;

    /// The mechanism a round can be re-run under, when the world keeps each round's record.
    fn rerun(&self) -> Option<Rerun>;

    /// The weight classes, ascending.
    fn weight_classes(&self) -> Vec<f64> {
        let mut w: Vec<f64> = (0..self.agents()).map(|id| self.weight(id)).collect();
        w.sort_by(f64::total_cmp);
        w.dedup();
        w
    }

    /// The index of `value` among the levels.
    fn level_index(&self, value: f64) -> Option<usize> {
        env::config::level_index(self.levels(), value)
    }
}

impl WorldShape for Scenario {
    fn agents(&self) -> usize {
        self.n()
    }

    fn levels(&self) -> &[f64] {
        self.action_levels()
    }

    fn action_kind(&self) -> ActionKind {
        Scenario::action_kind(self)
    }

    fn weight(&self, id: usize) -> f64 {
        self.agents[id].weight
    }

    fn features(&self, features: Features) -> Option<Inputs> {
        // A scenario built by hand without the switch has no by_type block.
        (features != Features::ByType || self.file.env.observe_by_type).then(|| inputs(self, features))
    }

    fn rounds(&self) -> Option<u32> {
        Some(self.file.env.rounds)
    }

    fn persistent(&self) -> bool {
        true
    }

    fn per_agent(&self) -> bool {
        true
    }

    fn pools(&self) -> Vec<usize> {
        self.class_of_agents()
    }

    fn welfare_reward(&self) -> bool {
        self.file.env.reward == env::config::Reward::Welfare
    }

    fn rerun(&self) -> Option<Rerun> {
        let m = &self.file.mechanism;
        Some(Rerun {
            mechanism: m.name.clone(),
            params: m.params(),
            budget_states: super::hedge::budget_states(self),
        })
    }

    fn weight_classes(&self) -> Vec<f64> {
        Scenario::weight_classes(self)
    }
}

/// A world behind the seam as the learners' checks and constructors see it: a policy per
/// agent where its agents stay (the queue world's, as on its own stack), else one per pool;
/// its rows read whole or by a block it names, no round record.
pub struct SeamShape<'a> {
    world: &'a dyn World,
    persistent: bool,
    per_agent: bool,
    pools: Vec<usize>,
    rounds: Option<u32>,
}

impl<'a> SeamShape<'a> {
    /// A world as the registry builds it: its agents staying for the whole episode where it
    /// says so ([`World::agents_stay`]: the queue world's, whose PPO and actor-critic then
    /// keep what they keep on its own stack: an actor per agent unless shared per class, a
    /// critic per agent, central under the welfare reward), else coming and going with one
    /// policy per group (Gavel's jobs, the bandit's).
    pub fn of(world: &'a dyn World) -> Self {
        Self {
            world,
            persistent: world.agents_stay(),
            per_agent: world.agents_stay(),
            pools: (0..world.possible()).map(|id| world.group(id)).collect(),
            // A bound above 100,000 rounds is a safety cap (Gavel's `env.max_rounds`: its
            // episodes end when every job is done), not an episode's length.
            rounds: world.max_rounds().filter(|&r| r <= 100_000),
        }
    }

    /// A world whose agents all act every round until its episode ends, one policy per pool
    /// (`pools[id]`, numbered from 0): the market's learning tenants, a pool per tenant entry
    /// that learns.
    pub fn persistent(world: &'a dyn World, pools: Vec<usize>) -> Self {
        Self {
            world,
            persistent: true,
            per_agent: false,
            pools,
            rounds: world.max_rounds(),
        }
    }
}

impl WorldShape for SeamShape<'_> {
    fn agents(&self) -> usize {
        self.world.possible()
    }

    fn levels(&self) -> &[f64] {
        self.world.levels()
    }

    fn action_kind(&self) -> ActionKind {
        self.world.action_kind()
    }

    fn weight(&self, id: usize) -> f64 {
        self.world.weight(id)
    }

    /// The whole row, or a block the world names ([`World::feature_block`]: the queue world's
    /// SPEC 4 `spec` and `by_type` blocks).
    fn features(&self, features: Features) -> Option<Inputs> {
        let obs_dim = self.world.layout().dim();
        if features == Features::All {
            return Some(Inputs {
                obs_dim,
                at: 0,
                d: obs_dim,
            });
        }
        let name = serde_json::to_value(features).ok()?.as_str()?.to_string();
        let block = self.world.feature_block(&name)?;
        Some(Inputs {
            obs_dim,
            at: block.start,
            d: block.len(),
        })
    }

    fn rounds(&self) -> Option<u32> {
        self.rounds
    }

    fn persistent(&self) -> bool {
        self.persistent
    }

    fn per_agent(&self) -> bool {
        self.per_agent
    }

    fn pools(&self) -> Vec<usize> {
        self.pools.clone()
    }

    /// What the world says of its reward ([`World::shares_reward`]: Gavel's and the queue
    /// world's `env.reward = "welfare"`), not a config key read here: PPO's `auto` settings
    /// follow it where the agents stay (a world whose agents come and go keeps local critics
    /// and an actor per group either way).
    fn welfare_reward(&self) -> bool {
        self.world.shares_reward()
    }

    /// The queue world's, where its rounds are SPEC 4's ([`World::scenario`]): difference
    /// rewards re-run them behind the seam as on its own stack.
    fn rerun(&self) -> Option<Rerun> {
        self.world.scenario().and_then(WorldShape::rerun)
    }
}

/// `features` where the world's rows have them, else one line naming `key`.
pub fn check_features(
    shape: &dyn WorldShape,
    features: Features,
    key: &str,
    err: &super::ErrorIn<'_>,
) -> Result<(), env::config::ConfigError> {
    match shape.features(features) {
        Some(_) => Ok(()),
        None => Err(err(
            key,
            format!(
                "{} features are not in this world's observations (blocks a world declares: the queue world's spec, and its by_type with env.observe_by_type = true); features = \"all\" reads the agent's whole row",
                serde_json::to_value(features).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learners::LearnerSection;
    use env::config::ConfigError;

    fn section(kind: &str, sets: &str) -> LearnerSection {
        let text = format!("kind = \"{kind}\"\n{sets}");
        toml::from_str(&text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn err(key: &str, problem: String) -> ConfigError {
        ConfigError {
            file: "test.toml".into(),
            key: key.into(),
            problem,
        }
    }

    /// The key `section` is refused at in `shape`, or `None` when it passes.
    fn refused(shape: &dyn WorldShape, s: &LearnerSection) -> Option<String> {
        s.validate(shape, &err).err().map(|e| e.key)
    }

    #[test]
    fn what_a_world_behind_the_seam_cannot_give_is_refused_at_its_key_and_the_queue_world_takes_it() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
        let sc = env::config::ScenarioFile::load(&path, &[]).unwrap();
        let table: toml::Table = "seed = 3\n[env]\nworld = \"bandit\"\nagents = 4\nrounds = 10\n".parse().unwrap();
        let bandit = env::registry::build(table, std::path::Path::new("bandit.toml")).unwrap();
        let seam = SeamShape::of(bandit.as_ref());
        for (kind, sets, key) in [
            ("ppo", "[ppo]\ncritic = \"central\"", "learner.ppo.critic"),
            ("ppo", "[ppo]\nshare = \"class_id\"", "learner.ppo.share"),
            ("ppo", "[ppo]\nfeatures = \"spec\"", "learner.ppo.features"),
            (
                "actor_critic",
                "[actor_critic]\nfeatures = \"spec\"",
                "learner.actor_critic.features",
            ),
            (
                "actor_critic",
                "reward = \"difference\"\n[actor_critic]\nfeatures = \"all\"",
                "learner.reward",
            ),
            ("hedge", "[hedge]\nscale = \"round\"", "learner.hedge.scale"),
            ("fixed", "[fixed]\nper_agent = [0.5, 0.5, 0.5, 0.5]", "learner.fixed.per_agent"),
        ] {
            let s = section(kind, sets);
            assert_eq!(refused(&seam, &s).as_deref(), Some(key), "{kind} {sets}");
            // The queue world has all of it (per_agent sized to its agents).
            let s = if kind == "fixed" {
                section("fixed", &format!("[fixed]\nper_agent = {:?}", vec![0.5; sc.n()]))
            } else {
                s
            };
            assert_eq!(refused(&sc, &s), None, "{kind} {sets}");
        }
        // The market's learning tenants stay for the whole episode but keep one actor per
        // group: a central critic over them is MAPPO, per-agent ids and actors are refused.
        let duel = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/duel.toml");
        let market = env::registry::load(&duel, &[]).unwrap();
        let stays = SeamShape::persistent(market.as_ref(), vec![0; market.possible()]);
        for (kind, sets, key) in [
            ("ppo", "[ppo]\ncritic = \"central\"", None),
            ("ppo", "[ppo]\nrollout = 10", None),
            ("ppo", "[ppo]\nshare = \"class_id\"", Some("learner.ppo.share")),
            ("ppo", "[ppo]\nshare = \"none\"", Some("learner.ppo.share")),
        ] {
            assert_eq!(refused(&stays, &section(kind, sets)).as_deref(), key, "{kind} {sets}");
        }
        // The queue world behind the seam keeps what it keeps on its own stack: an actor per
        // agent (PPO's own-reward default, share = "none" and "class_id"), a level per agent.
        let queue = env::registry::load(&path, &["env.stack=\"seam\"".into()]).unwrap();
        let queue = SeamShape::of(queue.as_ref());
        for (kind, sets) in [
            ("ppo", "[ppo]\nshare = \"none\"".to_string()),
            ("ppo", "[ppo]\nshare = \"class_id\"".to_string()),
            ("ppo", "[ppo]\ncritic = \"central\"".to_string()),
            ("fixed", format!("[fixed]\nper_agent = {:?}", vec![0.5; sc.n()])),
        ] {
            assert_eq!(refused(&queue, &section(kind, &sets)), None, "{kind} {sets}");
        }
        use crate::learners::ppo::Share;
        assert_eq!(Share::Auto.resolve(&queue), Share::None);
        assert_eq!(Share::Auto.resolve(&stays), Share::Class);
        assert_eq!(
            refused(&seam, &section("ppo", "[ppo]\nrollout = 10")),
            None,
            "the bandit's rounds are fixed"
        );
        // A section that does not run is checked for its own values only: the actor-critic's
        // default features (SPEC 4's) do not stop ES here.
        assert_eq!(refused(&seam, &section("es", "")), None);
        assert_eq!(
            refused(&seam, &section("es", "[ppo]\nlr = -1.0")).as_deref(),
            Some("learner.ppo.lr")
        );
        // PPO's critic "auto" is central under the welfare reward only where agents are apart.
        use crate::learners::ppo::Critic;
        assert_eq!(Critic::Auto.resolve(&seam), Critic::Local);
        let welfare = env::config::ScenarioFile::load(&path, &["env.reward=\"welfare\"".into()]).unwrap();
        assert_eq!(Critic::Auto.resolve(&welfare), Critic::Central);
        assert_eq!(Critic::Auto.resolve(&sc), Critic::Local);
        // Its share and entropy bonus "auto" are the w124-mmpp recipe (one actor per weight
        // class, no bonus) for MAPPO under the welfare reward, one actor per class at 0.01 for
        // IPPO (local critics) under it, and per agent at 0.01 elsewhere: under own rewards and
        // behind the seam.
        use crate::learners::ppo::{Bonus, PpoConfig};
        let auto = PpoConfig::default();
        let w = auto.resolved(&welfare);
        assert_eq!((w.critic, w.share, w.entropy), (Critic::Central, Share::Class, Bonus::Of(0.0)));
        let ippo = PpoConfig {
            critic: Critic::Local,
            ..PpoConfig::default()
        };
        let mappo_own = PpoConfig {
            critic: Critic::Central,
            ..PpoConfig::default()
        };
        let i = ippo.resolved(&welfare);
        assert_eq!((i.critic, i.share, i.entropy), (Critic::Local, Share::Class, Bonus::Of(0.01)));
        for r in [auto.resolved(&sc), mappo_own.resolved(&sc)] {
            assert_eq!((r.share, r.entropy), (Share::None, Bonus::Of(0.01)), "{r:?}");
        }
        // Behind the seam a run keeps one actor per group, and `auto` says so; `none` is refused.
        let r = auto.resolved(&seam);
        assert_eq!((r.share, r.entropy), (Share::Class, Bonus::Of(0.01)), "{r:?}");
        assert_eq!(
            refused(&seam, &section("ppo", "[ppo]\nshare = \"none\"")).as_deref(),
            Some("learner.ppo.share")
        );
        // What a file says stays what it says.
        let set = PpoConfig {
            share: Share::None,
            entropy: Bonus::Of(0.02),
            ..PpoConfig::default()
        };
        assert_eq!(
            (set.resolved(&welfare).share, set.resolved(&welfare).entropy),
            (Share::None, Bonus::Of(0.02))
        );
        // Behind the seam `auto` reads the world's own word on its reward: the queue world
        // under the welfare reward, its agents staying, resolves as its scenario does; Gavel's
        // jobs come and go, so their critics stay local under the welfare reward too.
        let queue = env::registry::load(&path, &["env.reward=\"welfare\"".into()]).unwrap();
        let stays = SeamShape::of(queue.as_ref());
        assert!(stays.persistent() && stays.welfare_reward());
        // SPEC 4's block where the scenario has it; by_type only where observed.
        use crate::learners::Features;
        assert_eq!(stays.features(Features::Spec), welfare.features(Features::Spec));
        assert!(stays.features(Features::Spec).is_some_and(|i| i.d < i.obs_dim));
        assert_eq!(stays.features(Features::ByType), None);
        let typed = env::registry::load(&path, &["env.observe_by_type=true".into()]).unwrap();
        let typed_sc = env::config::ScenarioFile::load(&path, &["env.observe_by_type=true".into()]).unwrap();
        assert_eq!(
            SeamShape::of(typed.as_ref()).features(Features::ByType),
            typed_sc.features(Features::ByType)
        );
        assert_eq!(stays.pools(), welfare.class_of_agents());
        let r = auto.resolved(&stays);
        assert_eq!((r.critic, r.share, r.entropy), (w.critic, w.share, w.entropy));
        let own = env::registry::load(&path, &[]).unwrap();
        assert!(!SeamShape::of(own.as_ref()).welfare_reward());
        let gavel = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/gavel/learn.toml");
        let gavel = env::registry::load(&gavel, &["env.reward=\"welfare\"".into()]).unwrap();
        let jobs = SeamShape::of(gavel.as_ref());
        assert!(jobs.welfare_reward() && !jobs.persistent());
        assert_eq!(Critic::Auto.resolve(&jobs), Critic::Local);
        // The actor-critic's `auto` is the w124-mmpp recipe (one actor and critic per weight
        // class, no bonus) under the welfare reward where the agents stay from 200 training
        // episodes on, per agent with the annealed 0.01 elsewhere (shorter runs; own rewards:
        // the main job); per group behind the seam; PPO's class_id is refused.
        use crate::learners::actor_critic::{ActorCriticConfig, CLASS_FROM_EPISODES};
        let ac = ActorCriticConfig::default();
        let long = CLASS_FROM_EPISODES;
        for (shape, episodes, want) in [
            (&welfare as &dyn WorldShape, long, (Share::Class, Bonus::Of(0.0))),
            (&stays, long, (Share::Class, Bonus::Of(0.0))),
            (&welfare, long - 1, (Share::None, Bonus::Of(0.01))),
            (&stays, 50, (Share::None, Bonus::Of(0.01))),
            (&sc, long, (Share::None, Bonus::Of(0.01))),
            (&jobs, long, (Share::Class, Bonus::Of(0.01))),
            (&jobs, 1, (Share::Class, Bonus::Of(0.01))),
        ] {
            let r = ac.resolved(shape, episodes);
            assert_eq!((r.share, r.entropy), want, "{episodes} episodes");
        }
        let set = ActorCriticConfig {
            share: Share::None,
            entropy: Bonus::Of(0.02),
            ..ActorCriticConfig::default()
        };
        assert_eq!(
            (set.resolved(&welfare, long).share, set.resolved(&welfare, long).entropy),
            (Share::None, Bonus::Of(0.02))
        );
        assert_eq!(refused(&sc, &section("actor_critic", "[actor_critic]\nshare = \"auto\"")), None);
        assert_eq!(
            refused(&sc, &section("actor_critic", "[actor_critic]\nshare = \"class_id\"")).as_deref(),
            Some("learner.actor_critic.share")
        );
    }
}

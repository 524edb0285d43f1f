//! The learners' base (as Optuna's `_base` modules): what a learner is ([`Learner`], fed one
//! round at a time as a [`Transition`], reporting [`Losses`]), what its config section tells the
//! harness ([`LearnerConfig`]), and the helpers every learner uses. Every other file of
//! `learners/` builds on this one.

use env::config::{ConfigError, Scenario};
use env::rng::{names, stream_seed};
use env::world::Observations;
use scheduler::{Allocation, RoundInput};
use serde::{Deserialize, Serialize};

/// Documented limits of the learners, checked before anything of that size is allocated.
pub mod limits {
    /// Hidden layer width of the actor or critic.
    pub const MAX_HIDDEN: usize = 16_384;
    /// Rounds in an N-step return.
    pub const MAX_STEPS: usize = 100_000;
    /// Hedge weights in all (agents x budget states x levels).
    pub const MAX_HEDGE_WEIGHTS: usize = 100_000_000;
    /// A central critic's first-layer weights over all agents (n x n x features x width).
    pub const MAX_CENTRAL_CRITIC: usize = 200_000_000;
    /// Learning rate of the gradient learners: an Adam step moves each weight by about `lr`,
    /// so above 1 a step outgrows the weights' own scale (1e9 diverged to NaN in one episode).
    pub const MAX_LR: f64 = 1.0;
    /// Loss and reward coefficients (`reward_scale`, `entropy`, `vf_coef`): 1e308 overflowed.
    pub const MAX_COEF: f64 = 1e6;
    /// Decoupled weight decay (a step multiplies a weight by `1 - lr * weight_decay`).
    pub const MAX_WEIGHT_DECAY: f64 = 1.0;
    /// Environment seeds per training episode (`train.envs`): that many copies, or with a
    /// learner's `group` that many groups of copies sharing a seed (the most copies of one
    /// seed a group may have too).
    pub const MAX_ENVS: usize = 1024;

    /// Refuse `v` above `max` at `key`: values that can only diverge.
    pub fn at_most(err: &super::ErrorIn<'_>, key: &str, v: f64, max: f64) -> Result<(), env::config::ConfigError> {
        let show = |x: f64| if x.abs() >= 1e6 { format!("{x:e}") } else { format!("{x}") };
        if v > max {
            return Err(err(
                key,
                format!("{} is more than {}, where training can only diverge", show(v), show(max)),
            ));
        }
        Ok(())
    }
}

/// Which observation features a learner reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Features {
    /// SPEC 4's state: the budget share and the agent's m utilities.
    Spec,
    /// The whole observation (adds backlog over arrival rate, and the configured extras).
    All,
    /// The observation's `by_type` block (`env::world::observation_extras`): the budget over
    /// an equal share, per accelerator type its share, the agent's rate and its utility, then
    /// the backlog and the observed extras. Its length does not depend on n or m, so a policy
    /// trained on one cluster runs on any cluster with the same catalog (`run:DIR`, exports).
    /// A learner reading it turns `env.observe_by_type` on.
    ByType,
}

/// Where a learner's features sit in each agent's observation: `obs_dim[at..at + d]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Inputs {
    /// Observation length.
    pub obs_dim: usize,
    /// First feature read.
    pub at: usize,
    /// Features read.
    pub d: usize,
}

/// One round as a learner sees it: what every world gives (observations before and after,
/// the actions, the rewards, whether the episode ended), and the queue world's record of the
/// round, which only the learners that re-run the mechanism read (Hedge, difference rewards).
#[derive(Clone, Copy)]
pub struct Transition<'a> {
    /// Observations the actions were taken on.
    pub obs: Observations<'a>,
    /// Level index each agent chose.
    pub actions: &'a [usize],
    /// Rewards of the round.
    pub rewards: &'a [f64],
    /// Observations of the next round.
    pub next_obs: Observations<'a>,
    /// Whether the episode ended with this round.
    pub done: bool,
    /// Which agents acted this round, where not all did (a world whose agents arrive and
    /// leave): the others' rows, actions and rewards are placeholders a learner must not learn
    /// from. `None`: every agent acted.
    pub live: Option<&'a [bool]>,
    /// The queue world's record of the round (`None` in other worlds).
    pub round: Option<Round<'a>>,
}

/// The queue world's record of one round: what a counterfactual re-run of the mechanism
/// needs.
#[derive(Clone, Copy)]
pub struct Round<'a> {
    /// Budgets at the start of the round.
    pub budgets: &'a [f64],
    /// Budgets at the start of the next round.
    pub next_budgets: &'a [f64],
    /// The round input the mechanism saw.
    pub input: &'a RoundInput,
    /// The bids at factor 1 of that round (auctions; empty otherwise): with
    /// `env::world::play`, a counterfactual bid factor's bids.
    pub bid_values: &'a [f64],
    /// The allocation it made.
    pub allocation: &'a Allocation,
}

impl<'a> Transition<'a> {
    /// The round `env` just played, from the observations and budgets the actions were taken
    /// on.
    pub fn played(env: &'a env::world::ClusterEnv, obs: Observations<'a>, budgets: &'a [f64], actions: &'a [usize]) -> Self {
        Transition {
            obs,
            actions,
            rewards: env.last_rewards(),
            next_obs: env.observations(),
            done: env.agents().is_empty(),
            live: None,
            round: Some(Round {
                budgets,
                next_budgets: env.budgets(),
                input: env.last_input(),
                bid_values: env.last_bid_values(),
                allocation: env.last_allocation(),
            }),
        }
    }

    /// The queue world's record of the round, for a learner that cannot learn without it
    /// (`who` names the learner in the message).
    pub fn round(&self, who: &str) -> Round<'a> {
        self.round
            .unwrap_or_else(|| panic!("{who} re-runs the queue world's mechanism and learns from its round record only"))
    }
}

/// Training statistics of one round (means over agents), summed into episode logs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Losses {
    /// Actor (policy-gradient) loss.
    pub actor: f64,
    /// Critic (squared TD error) loss.
    pub critic: f64,
    /// Policy entropy (nats).
    pub entropy: f64,
    /// Hedge: the spread (max - min) of an agent's counterfactual rewards over the levels, the
    /// signal its update scales to [0, 1]; 0 when every level would have paid the same (the
    /// round taught nothing). 0 for other learners.
    pub reward_spread: f64,
    /// The round did no update (PPO between its updates): the episode's means leave it out.
    #[serde(default, skip_serializing)]
    pub skipped: bool,
}

pub use env::policy::{Fixed, Policy};

impl Losses {
    /// The mean of the rounds that updated (a round with `skipped` set is left out); `skipped`
    /// when none did. The one average of losses: over environment copies, and over an
    /// episode's rounds.
    pub fn mean(losses: &[Losses]) -> Losses {
        let updated: Vec<&Losses> = losses.iter().filter(|l| !l.skipped).collect();
        if updated.is_empty() {
            return Losses {
                skipped: true,
                ..Losses::default()
            };
        }
        let k = updated.len() as f64;
        let sum = |f: fn(&Losses) -> f64| updated.iter().map(|l| f(l)).sum::<f64>() / k;
        Losses {
            actor: sum(|l| l.actor),
            critic: sum(|l| l.critic),
            entropy: sum(|l| l.entropy),
            reward_spread: sum(|l| l.reward_spread),
            skipped: false,
        }
    }
}

/// Updating: learn from one round.
pub trait Learner: Policy {
    /// Update every agent from the round it just played.
    fn learn(&mut self, t: &Transition<'_>) -> Losses;

    /// Act in K environment copies at once (`train.envs`): `obs[k]` and `budgets[k]` in,
    /// `actions[k]` out, sampled. Default: one `act` per copy, in order; the batched learners
    /// do one forward pass for all copies and draw in the same order, so both agree.
    fn act_many(&mut self, obs: &[Observations<'_>], budgets: &[&[f64]], actions: &mut [Vec<usize>]) {
        for (k, a) in actions.iter_mut().enumerate() {
            self.act(obs[k], budgets[k], false, a);
        }
    }

    /// Learn from one round of K environment copies. Default: `learn` from each in order,
    /// the losses averaged over the copies that updated.
    fn learn_many(&mut self, ts: &[Transition<'_>]) -> Losses {
        let losses: Vec<Losses> = ts.iter().map(|t| self.learn(t)).collect();
        Losses::mean(&losses)
    }

    /// The one range of each agent's observation it reads, when that is all it reads (the
    /// networks over `by_type`): training copies only that range out of the environment and
    /// lets the environment skip what no one reads. `None` (default): it may read anything.
    fn reads(&self) -> Option<std::ops::Range<usize>> {
        None
    }

    /// How many consecutive environment copies of a training episode replay one seed: copies
    /// `g j .. g j + g - 1` share the arrivals and service draws of seed j (common random
    /// numbers: an evolution strategy's antithetic pairs, 2; the group-relative advantages of
    /// PPO and the actor-critic, their `group`); 1 (default): every copy has its own seed.
    fn seed_group(&self) -> usize {
        1
    }

    /// Everything needed to continue training: parameters, optimizer state, weights.
    fn save(&self) -> crate::error::Result<Vec<u8>>;

    /// Where its parameters first stop being finite (a diverged run), described; `None` when
    /// all are finite or it has none. Checked after every training episode.
    fn non_finite(&self) -> Option<String> {
        None
    }

    /// Restore from [`Learner::save`]'s bytes; a corrupt checkpoint is an error, not a panic.
    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()>;

    /// Its greedy and sampled policies acting for another scenario's agents: agent j of that
    /// scenario with this population's agent `map[j]`'s policy, reading `inputs` there (a
    /// `by_type` policy on a cluster of another size). `None`: its policies cannot move.
    fn transferred(&self, _map: &[usize], _inputs: Inputs) -> Option<Box<dyn Policy>> {
        None
    }

    /// Agent i's policy as the numbers an exported agent carries (`agents::export::runtime` layout):
    /// actor-critic `W1 [1+m, h], b1 [h], W2 [h, K], b2 [K]`; Hedge log-weights `[states, K]`;
    /// nothing for a fixed threshold.
    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>>;
}

/// Index of the largest value (ties: the lowest index).
pub fn argmax(xs: impl IntoIterator<Item = f64>) -> usize {
    let mut best = (0, f64::NEG_INFINITY);
    for (k, x) in xs.into_iter().enumerate() {
        if x > best.1 {
            best = (k, x);
        }
    }
    best.0
}

/// Sample an index from unnormalised weights with one uniform `u` in [0, 1).
pub fn sample_index<W: Copy + Into<f64>>(weights: &[W], u: f64) -> usize {
    let total: f64 = weights.iter().map(|&w| w.into()).sum();
    let mut x = u * total;
    for (k, &w) in weights.iter().enumerate() {
        let w: f64 = w.into();
        if x < w {
            return k;
        }
        x -= w;
    }
    weights.iter().rposition(|&w| w.into() > 0.0).unwrap_or(0)
}

/// A coefficient annealed linearly from `start` to 0 over `fraction` of `planned` steps, then
/// 0; `start` throughout when the span is 0 (no schedule, or no plan). The entropy bonus's
/// schedule for the actor-critic (steps: rounds, or episodes when pooled) and PPO (updates).
pub(crate) fn annealed(start: f64, fraction: f64, done: u64, planned: u64) -> f64 {
    let span = fraction * planned as f64;
    if span <= 0.0 {
        return start;
    }
    start * (1.0 - done as f64 / span).max(0.0)
}

/// Helpers of the learners' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// Feed `learner` one round: observations `obs` then `next` (`dim` features per agent),
    /// `actions` and `rewards`, without a round record (the learners these tests train do not
    /// read it).
    pub fn learn_round(learner: &mut dyn Learner, dim: usize, obs: &[f32], next: &[f32], actions: &[usize], rewards: &[f64]) -> Losses {
        learner.learn(&Transition {
            obs: Observations { data: obs, dim },
            actions,
            rewards,
            next_obs: Observations { data: next, dim },
            done: false,
            live: None,
            round: None,
        })
    }

    /// A one-state bandit played by `groups x group` copies of `n` agents (`d` features, `k`
    /// levels), as a seed group plays it: each round every group draws a noise uniform in
    /// `[-shared, shared]` that all its copies see (as common random numbers share arrivals),
    /// every agent of every copy its own uniform in `[-own, own]`, and agent i is paid
    /// `base + noises + gain` for level `best`, `base + noises` otherwise.
    pub struct NoisyBandit {
        pub n: usize,
        pub d: usize,
        pub k: usize,
        pub groups: usize,
        pub group: usize,
        pub rounds: usize,
        pub base: f64,
        pub shared: f64,
        pub own: f64,
        pub gain: f64,
        pub best: usize,
    }

    /// Agents that come and go: 4 agents of one class in 2 copies of one seed, `episodes`
    /// episodes of 6 rounds, agents 0 and 1 acting in rounds 0-2 and 2 and 3 in rounds 3-5.
    /// Acting, level 2 pays 1 and the others 0; the row of an agent not acting says level 0
    /// paid 5 (a learner reading those would learn level 0). Observations are one feature,
    /// 0.5; `skipped(t)`: whether round t's update is skipped, checked every round.
    pub fn come_and_go(learner: &mut dyn Learner, episodes: u64, skipped: impl Fn(usize) -> bool) {
        let obs = vec![0.5f32; 4];
        for e in 0..episodes {
            learner.begin_episode(e);
            for t in 0..6 {
                let live: Vec<bool> = (0..4).map(|i| (i < 2) == (t < 3)).collect();
                let mut actions = vec![vec![0usize; 4]; 2];
                let views = [Observations { data: &obs, dim: 1 }, Observations { data: &obs, dim: 1 }];
                learner.act_many(&views, &[&[0.0; 4], &[0.0; 4]], &mut actions);
                let rewards: Vec<Vec<f64>> = actions
                    .iter()
                    .map(|a| {
                        (0..4)
                            .map(|i| match live[i] {
                                true => f64::from(u8::from(a[i] == 2)),
                                false => 5.0 * f64::from(u8::from(a[i] == 0)),
                            })
                            .collect()
                    })
                    .collect();
                let ts: Vec<Transition<'_>> = (0..2)
                    .map(|k| Transition {
                        live: Some(&live),
                        ..transition(1, &obs, &actions[k], &rewards[k], t == 5)
                    })
                    .collect();
                assert_eq!(learner.learn_many(&ts).skipped, skipped(t), "round {t}");
            }
        }
    }

    impl NoisyBandit {
        /// Play it with `learner` (acting for all copies at once, learning from their rounds);
        /// returns its probabilities (`probabilities`), `[n][k]`.
        pub fn play<L: Learner>(&self, learner: &mut L, probabilities: impl Fn(&L, Observations<'_>) -> Vec<f32>) -> Vec<f32> {
            let (n, d) = (self.n, self.d);
            assert!(self.best < self.k, "the paying level is one of the k levels");
            let copies = self.groups * self.group;
            let obs: Vec<f32> = (0..n * d).map(|j| ((j * 7) % 10) as f32 / 10.0).collect();
            let views: Vec<Observations<'_>> = (0..copies).map(|_| Observations { data: &obs, dim: d }).collect();
            let budgets = vec![0.0; n];
            let b: Vec<&[f64]> = (0..copies).map(|_| budgets.as_slice()).collect();
            let mut actions = vec![vec![0; n]; copies];
            let mut noise = env::rng::stream(9, "test-shared-noise", 0);
            let mut draw = |scale: f64| scale * (2.0 * env::rng::unit(rand::Rng::next_u64(&mut noise)) - 1.0);
            learner.begin_episode(3);
            for _ in 0..self.rounds {
                learner.act_many(&views, &b, &mut actions);
                let c: Vec<f64> = (0..self.groups).map(|_| draw(self.shared)).collect();
                let rewards: Vec<Vec<f64>> = (0..copies)
                    .map(|copy| {
                        (0..n)
                            .map(|i| {
                                let paid = if actions[copy][i] == self.best { self.gain } else { 0.0 };
                                self.base + c[copy / self.group] + draw(self.own) + paid
                            })
                            .collect()
                    })
                    .collect();
                let ts: Vec<Transition<'_>> = (0..copies)
                    .map(|copy| transition(d, &obs, &actions[copy], &rewards[copy], false))
                    .collect();
                learner.learn_many(&ts);
            }
            probabilities(learner, Observations { data: &obs, dim: d })
        }
    }

    /// One round's transition from `obs` to itself, ending the episode when `done` (no round
    /// record).
    pub fn transition<'a>(dim: usize, obs: &'a [f32], actions: &'a [usize], rewards: &'a [f64], done: bool) -> Transition<'a> {
        Transition {
            obs: Observations { data: obs, dim },
            actions,
            rewards,
            next_obs: Observations { data: obs, dim },
            done,
            live: None,
            round: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_and_argmax_by_hand() {
        assert_eq!(sample_index(&[1.0, 3.0], 0.2), 0);
        assert_eq!(sample_index(&[1.0, 3.0], 0.3), 1);
        assert_eq!(sample_index(&[0.0, 2.0, 0.0], 0.999), 1);
        assert_eq!(argmax([0.1, 0.7, 0.7]), 1);
    }
}

/// The error constructor of config checks: `err(key, problem)` names the file too.
pub type ErrorIn<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

/// What a learner population is built for: the shape of any world, and in the queue world its
/// scenario too.
#[derive(Clone, Copy)]
pub struct Init<'a> {
    /// The shape of the world the agents act in.
    pub shape: &'a dyn super::WorldShape,
    /// The queue world's scenario, when the run is in it (on either stack: behind the seam,
    /// [`env::worlds::World::scenario`]): what the learners built only there read (Hedge per
    /// budget state and difference rewards, which re-run its rounds; uniform play, which the
    /// seam's trainer plays as a policy). `None` in the other worlds.
    pub scenario: Option<&'a Scenario>,
    /// Training episodes planned (PPO anneals its learning rate over them).
    pub episodes: u64,
    /// The seed of the learners' initial parameters.
    pub seed: u64,
}

impl<'a> Init<'a> {
    /// For `episodes` episodes of `scenario`, parameters drawn from its root seed's `init`
    /// stream.
    pub fn new(scenario: &'a Scenario, episodes: u64) -> Self {
        Self {
            shape: scenario,
            scenario: Some(scenario),
            episodes,
            seed: stream_seed(scenario.file.seed, names::INIT, 0),
        }
    }

    /// For `episodes` episodes of a world behind the seam, parameters drawn from `seed`.
    pub fn seam(shape: &'a dyn super::WorldShape, episodes: u64, seed: u64) -> Self {
        Self {
            shape,
            scenario: None,
            episodes,
            seed,
        }
    }

    /// The same, in a world whose rounds are the queue world's `scenario`.
    pub fn in_scenario(self, scenario: Option<&'a Scenario>) -> Self {
        Self { scenario, ..self }
    }

    /// The queue world's scenario, for a learner built only there (behind the seam its checks
    /// refuse it, or the seam's trainer runs its own: Hedge over the episode, uniform play).
    pub fn queue_scenario(&self) -> &'a Scenario {
        self.scenario
            .expect("a learner built only in the queue world (the seam's trainer builds Hedge and uniform play its own way)")
    }

    /// The same, its parameters drawn from the `init` stream of training seed `root` (a
    /// replicate's).
    pub fn with_root(self, root: u64) -> Self {
        Self {
            seed: stream_seed(root, names::INIT, 0),
            ..self
        }
    }

    /// Where a learner that reads `features` finds them in the world's observations (its
    /// checks refused features the world has not).
    pub fn inputs(&self, features: Features) -> Inputs {
        self.shape
            .features(features)
            .expect("features the world has (checked with the learner's config)")
    }
}

/// How a learner's policies run in an exported agent (`export::runtime`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exported {
    /// An actor network, one tanh hidden layer of `hidden` units over what it reads.
    Actor {
        /// Hidden units.
        hidden: usize,
    },
    /// Hedge's log-weights per budget state.
    Table,
    /// One level for every observation.
    Constant {
        /// The level index.
        level: usize,
    },
}

/// What every learner kind's config section tells the harness.
pub trait LearnerConfig {
    /// Check this section against the world's shape (any world's: [`super::WorldShape`]);
    /// `chosen` says whether it is the run's learner (checks that only matter for the learner
    /// that runs, such as a table's size or what the world cannot give it, apply then).
    /// Errors name `learner.<kind>.<key>`.
    fn validate(&self, shape: &dyn super::WorldShape, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError>;

    /// A fresh learner population.
    fn init(&self, run: &Init<'_>) -> Box<dyn Learner>;

    /// Its section with every `"auto"` decided for `shape` and a run of `episodes` training
    /// episodes, where it has any (what TensorBoard's HPARAMS tab records: the values the run
    /// trained with). `None`: the section as written.
    fn resolved_section(&self, _shape: &dyn super::WorldShape, _episodes: u64) -> Option<toml::Value> {
        None
    }

    /// The observation features its policies read.
    fn features(&self) -> Features {
        Features::Spec
    }

    /// How its policies export.
    fn exported(&self, shape: &dyn super::WorldShape) -> Exported;

    /// Whether it learns from the rewards it is given (so difference rewards can pay it).
    fn learns_from_rewards(&self) -> bool {
        false
    }

    /// Copies per seed and the key that sets it, for a learner that trains on groups of copies
    /// sharing a seed ([`Learner::seed_group`]): a training episode steps `train.envs` such
    /// groups.
    fn group(&self) -> Option<(usize, &'static str)> {
        None
    }

    /// The environment copies a training episode steps, when the learner decides it (an
    /// evolution strategy's population) rather than `train.envs`.
    fn copies(&self) -> Option<usize> {
        None
    }

    /// What its state costs in memory at peak during training, by the config key that sizes
    /// it: `(key, bytes)` ([`crate::train::memory`] adds the rest). Default: nothing worth
    /// counting (fixed levels, uniform play).
    fn memory(&self, _sc: &Scenario, _copies: usize) -> Vec<(String, u64)> {
        Vec::new()
    }
}

/// Peak bytes per byte of a network stack's f32 parameters while it trains, measured
/// (`/usr/bin/time` peak RSS, 1 training episode): PPO 8 agents with critics 2048-2048, 11.0x;
/// PPO and the actor-critic, 20 agents with critics 1024-1024, 13.0x and 12.9x. The parameter,
/// its gradient, Adam's two moments, the optimizer's working copies (parameter and gradient
/// read out of the tensor) and the checkpoint's serialised copies.
pub const NETS_PEAK_PER_PARAM_BYTE: f64 = 12.0;

/// The features a learner reading `features` sees in `sc`.
pub fn feature_dim(sc: &Scenario, features: Features) -> usize {
    inputs(sc, features).d
}

/// Where `features` sit in `sc`'s observations (`by_type` last, when observed).
pub fn inputs(sc: &Scenario, features: Features) -> Inputs {
    let obs_dim = env::world::observation_dim(sc);
    let (at, d) = match features {
        Features::Spec => (0, env::world::spec_features(sc.m())),
        Features::All => (0, obs_dim),
        Features::ByType => {
            let d = env::world::by_type_features(sc);
            // Without the switch (a scenario built by hand) the block is not there: read
            // nothing past the end rather than the wrong features.
            assert!(sc.file.env.observe_by_type, "by_type features need env.observe_by_type");
            (obs_dim - d, d)
        }
    };
    Inputs { obs_dim, at, d }
}

/// `bytes` of f32 network parameters as peak training memory ([`NETS_PEAK_PER_PARAM_BYTE`]).
pub fn nets_peak(params: u64) -> u64 {
    (params as f64 * 4.0 * NETS_PEAK_PER_PARAM_BYTE) as u64
}

/// Parameters of one stack of `n` one-hidden-layer actors (`d` in, `h` hidden, `k` out).
pub fn actor_params(n: usize, d: usize, h: usize, k: usize) -> u64 {
    n as u64 * (d * h + h + h * k + k) as u64
}

/// Parameters of `n` two-hidden-layer critics (`d` in, `c` hidden, 1 out).
pub fn critic_params(n: usize, d: usize, c: [usize; 2]) -> u64 {
    n as u64 * (d * c[0] + c[0] + c[0] * c[1] + c[1] + c[1] + 1) as u64
}

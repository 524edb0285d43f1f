//! Every door for the worlds behind the seam (`env::worlds::World`: Gavel's GPU cluster, the
//! toy bandit): one play function, evaluation on seeds in parallel, policies named by a spec,
//! training (checkpoints, exact resume, TensorBoard, replicates),
//! comparisons with paired statistics. Nothing here asks which world it holds.
//!
//! - [`play`]: one episode of a world under a [`RowPolicy`] (what picks a level for each live
//!   agent from its observation row and group), through the one episode driver
//!   ([`env::worlds::play`]);
//!   [`evaluate`] runs it on seeds in parallel, results in seed order.
//! - [`policies`]: `fixed:X`, `fixed:all`, `uniform`, `run:DIR` (a trained run's actors),
//!   `agent:PATH` ([`agent`]: an exported run of the world, or any executable speaking the
//!   protocol).
//! - [`es`], [`train`]: ES over one actor per group, PPO or the actor-critic (one actor per
//!   group, through the one training rollout), or full-information Hedge over a level per
//!   group held for the episode (`learners::episode_hedge`; [`hedge`]: its play); a run directory like every other run's;
//!   [`actors`]: a trained run's actors as plain weights.
//! - [`compare`]: `mtf simulate`, `mtf compare` and `mtf analyze` for these worlds; [`scan`]:
//!   `mtf scan`, the figures against one config key (Gavel's arrival rate).

pub mod actors;
pub mod agent;
pub mod compare;
pub mod deviations;
pub mod es;
pub mod export;
pub mod hedge;
pub mod online;
pub mod onnx;
pub mod policies;
pub mod scan;
pub mod train;

use env::eval::Stat;
use env::rng::{names, stream, unit};
use env::worlds::{Better, Figures, World, WorldMetric};
use rand::rngs::SmallRng;
use rand::Rng;
use std::path::Path;

/// Picks a level index for each live agent of a world from its observation row and group.
pub trait RowPolicy: Send {
    /// Start of an episode (`seed` seeds this episode's draws).
    fn begin_episode(&mut self, _seed: u64) {}

    /// Before each [`RowPolicy::act`]: the world as the round finds it (a policy whose state
    /// is more than the rows, the queue world's Hedge over its budgets, reads it here).
    /// Default: nothing.
    fn sees(&mut self, _world: &dyn World) {}

    /// One level index per row: `obs` holds `groups.len()` rows of `dim` features, row i
    /// agent `agents[i]`'s (its id) of group `groups[i]`.
    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], groups: &[usize], actions: &mut [usize]);

    /// After the round `actions` played, the world as it left it (a policy that learns as it
    /// plays, `hedge`, learns from its round here). Default: nothing.
    fn after(&mut self, _world: &dyn World, _actions: &[usize]) {}

    /// An independent copy (one per episode played in parallel).
    fn fork(&self) -> Box<dyn RowPolicy>;

    /// The mean entropy (nats) over the rows of the distributions the last
    /// [`RowPolicy::act`] chose from (greedy or not); `None` for a policy that does not choose
    /// from one. Its share of `ln K` says whether a greedy row is an argmax of noise.
    fn entropy(&self) -> Option<f64> {
        None
    }

    /// Whether it draws its actions (from the episode's seed): then another seed plays
    /// another episode even in a world that replays one trace, and a comparison plays every
    /// seed. Default: no (it acts on what it observes alone).
    fn draws(&self) -> bool {
        false
    }

    /// What went wrong while it acted, in it or any of its copies (an agent process that broke
    /// its protocol): the episodes it played are then not its own, and the command fails.
    fn failure(&self) -> Option<String> {
        None
    }
}

/// Action `k` as a row's label prints it.
pub fn action_name(k: usize, world: &dyn World) -> String {
    let levels = world.levels();
    match levels.get(k) {
        Some(x) => x.to_string(),
        None => world.named_actions()[k - levels.len()].to_string(),
    }
}

/// The spec `fixed:G=X,H=Y,...` of an action index per group, groups in the world's order.
pub fn group_spec(levels: &[usize], world: &dyn World) -> String {
    let names = world.group_names();
    let parts: Vec<String> = names
        .iter()
        .zip(levels)
        .map(|(n, &k)| format!("{n}={}", action_name(k, world)))
        .collect();
    format!("fixed:{}", parts.join(","))
}

/// The same level index for every agent of a group (`levels[group]`, or one level for all).
#[derive(Clone, Debug)]
pub struct Fixed {
    levels: Vec<usize>,
}

impl Fixed {
    /// One level per group (a single entry: that level for every group).
    pub fn new(levels: Vec<usize>) -> Self {
        Self { levels }
    }
}

impl RowPolicy for Fixed {
    fn act(&mut self, _obs: &[f32], _dim: usize, _agents: &[usize], groups: &[usize], actions: &mut [usize]) {
        for (a, &g) in actions.iter_mut().zip(groups) {
            *a = self.levels[g.min(self.levels.len() - 1)];
        }
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }
}

/// A level index per possible agent, by id (`fixed:[X,Y,...]`).
#[derive(Clone, Debug)]
pub struct PerAgent {
    levels: Vec<usize>,
}

impl PerAgent {
    /// Agent `id` plays `levels[id]` (one per possible agent: checked by the spec's parser).
    pub fn new(levels: Vec<usize>) -> Self {
        Self { levels }
    }
}

impl RowPolicy for PerAgent {
    fn act(&mut self, _obs: &[f32], _dim: usize, agents: &[usize], _groups: &[usize], actions: &mut [usize]) {
        for (a, &id) in actions.iter_mut().zip(agents) {
            *a = self.levels[id];
        }
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }
}

/// A policy's random draws in an episode: one stream for the agents present in turn, or, in
/// the worlds the queue stack also plays ([`Draws::of`]: the queue and valuation worlds), one
/// stream per agent id keyed as the queue stack keys its learners' and uniform play's
/// (`learners::nets::episode_streams`), so a policy that draws plays the same episodes on
/// either stack. Elsewhere (the market, the Gavel world, toy worlds) the one stream is what
/// their published tables were computed with; moving them to per-agent streams would change
/// those tables' sampled and uniform columns (not their distribution), so it waits for their
/// next regeneration.
#[derive(Clone, Debug)]
pub struct Draws {
    one: SmallRng,
    per_agent: Option<Vec<SmallRng>>,
    seed: u64,
}

impl Draws {
    /// One stream for the agents present.
    pub fn shared() -> Self {
        Self {
            one: stream(0, names::POLICY, 0),
            per_agent: None,
            seed: 0,
        }
    }

    /// A stream per agent id where the queue stack also plays `w`, else one.
    pub fn of(w: &dyn World) -> Self {
        Self {
            per_agent: w.scenario().is_some().then(Vec::new),
            ..Self::shared()
        }
    }

    /// The streams of the episode `seed`.
    pub fn begin(&mut self, seed: u64) {
        self.seed = seed;
        self.one = stream(seed, names::POLICY, 0);
        if let Some(rngs) = &mut self.per_agent {
            rngs.clear();
        }
    }

    /// Agent `id`'s next draw (its own stream's, or the shared stream's next). Streams are
    /// made as ids appear (an id is below the world's `possible()`).
    pub fn next(&mut self, id: usize) -> u64 {
        match &mut self.per_agent {
            None => self.one.next_u64(),
            Some(rngs) => {
                while rngs.len() <= id {
                    rngs.push(stream(self.seed, names::POLICY, rngs.len() as u64));
                }
                rngs[id].next_u64()
            }
        }
    }
}

/// A level drawn uniformly for every agent every round (from the episode's policy streams:
/// [`Draws`], per agent id in the worlds the queue stack also plays, so uniform play and every
/// reference against it are the same episodes on either stack).
#[derive(Clone, Debug)]
pub struct Uniform {
    k: usize,
    draws: Draws,
}

impl Uniform {
    /// Over `k` levels, one stream for the agents present.
    pub fn new(k: usize) -> Self {
        Self { k, draws: Draws::shared() }
    }

    /// Over `w`'s levels, a stream per agent where the queue stack also plays `w`.
    pub fn of(w: &dyn World) -> Self {
        Self {
            k: w.levels().len(),
            draws: Draws::of(w),
        }
    }
}

impl RowPolicy for Uniform {
    fn begin_episode(&mut self, seed: u64) {
        self.draws.begin(seed);
    }

    fn act(&mut self, _obs: &[f32], _dim: usize, agents: &[usize], _groups: &[usize], actions: &mut [usize]) {
        for (a, &id) in actions.iter_mut().zip(agents) {
            *a = ((unit(self.draws.next(id)) * self.k as f64) as usize).min(self.k - 1);
        }
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(self.clone())
    }

    fn entropy(&self) -> Option<f64> {
        Some((self.k as f64).ln())
    }

    fn draws(&self) -> bool {
        true
    }
}

/// What one episode gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Played {
    /// The world's figures.
    pub figures: Figures,
    /// Per group: the mean, over the agents of the group that acted, of their summed rewards.
    pub group_returns: Vec<f64>,
    /// Agent-steps played (one per live agent per round).
    pub agent_steps: u64,
    /// The mean entropy of the distributions the policy chose from, over the rounds with
    /// agents to act, as a share of `ln K` ([`RowPolicy::entropy`]; `None` where the policy
    /// does not choose from one, or the world has one level).
    pub entropy_share: Option<f64>,
}

/// Play one episode of `world` from `seed` under `policy` (through the one episode driver,
/// [`env::worlds::play`]), with the world's figures at its end.
pub fn play(world: &mut dyn World, policy: &mut dyn RowPolicy, seed: u64) -> Played {
    let mut rows = Rows::new(policy);
    let returns = env::worlds::play(world, &mut rows, seed);
    Played {
        figures: world.figures(),
        group_returns: returns.group_returns,
        agent_steps: returns.agent_steps,
        entropy_share: rows.entropy_share(world.levels().len()),
    }
}

/// [`play`], calling `after` with the world after every round (the round log of `mtf
/// simulate`).
pub fn play_watched(world: &mut dyn World, policy: &mut dyn RowPolicy, seed: u64, after: &mut dyn FnMut(&dyn World)) {
    struct Watched<'a, 'b> {
        rows: Rows<'a>,
        after: &'b mut dyn FnMut(&dyn World),
    }
    impl<'w> env::worlds::Acting<dyn World + 'w> for Watched<'_, '_> {
        fn begin_episode(&mut self, seed: u64) {
            self.rows.policy.begin_episode(seed);
        }
        fn act(&mut self, world: &(dyn World + 'w), obs: &[f32], groups: &[usize], actions: &mut [usize]) {
            env::worlds::Acting::act(&mut self.rows, world, obs, groups, actions);
        }
        fn after_step(&mut self, world: &(dyn World + 'w), actions: &[usize]) {
            env::worlds::Acting::after_step(&mut self.rows, world, actions);
            (self.after)(world);
        }
    }
    env::worlds::play(
        world,
        &mut Watched {
            rows: Rows::new(policy),
            after,
        },
        seed,
    );
}

/// A [`RowPolicy`] as the driver's [`env::worlds::Acting`] in any world, summing the
/// policy's entropy over the rounds in which agents act (in round order: the same sum on any
/// number of threads).
struct Rows<'a> {
    policy: &'a mut dyn RowPolicy,
    entropy: Option<f64>,
    rounds: u64,
}

impl<'a> Rows<'a> {
    fn new(policy: &'a mut dyn RowPolicy) -> Self {
        Self {
            policy,
            entropy: Some(0.0),
            rounds: 0,
        }
    }

    /// The episode's mean entropy as a share of `ln levels` (as the queue world's evaluation
    /// reports it).
    fn entropy_share(&self, levels: usize) -> Option<f64> {
        let max = (levels as f64).ln();
        self.entropy
            .filter(|_| self.rounds > 0 && max > 0.0)
            .map(|sum| sum / self.rounds as f64 / max)
    }
}

impl<'w> env::worlds::Acting<dyn World + 'w> for Rows<'_> {
    fn begin_episode(&mut self, seed: u64) {
        self.policy.begin_episode(seed);
    }

    fn act(&mut self, world: &(dyn World + 'w), obs: &[f32], groups: &[usize], actions: &mut [usize]) {
        self.policy.sees(world);
        self.policy.act(obs, world.layout().dim(), world.live(), groups, actions);
        if !groups.is_empty() {
            self.entropy = self.entropy.zip(self.policy.entropy()).map(|(sum, h)| sum + h);
            self.rounds += 1;
        }
    }

    fn after_step(&mut self, world: &(dyn World + 'w), actions: &[usize]) {
        self.policy.after(world, actions);
    }
}

/// The budgets a policy over the queue world's budget states reads, as each round finds them
/// (copied in [`RowPolicy::sees`]).
#[derive(Default)]
pub(crate) struct Budgets(Vec<f64>);

impl Budgets {
    pub(crate) fn see(&mut self, world: &dyn World) {
        self.0.clear();
        self.0.extend_from_slice(world.budgets().unwrap_or(&[]));
    }

    /// The budgets of `agents`' rows, which such a policy is built for only as every agent of
    /// a world with budgets, in id order (`who` names it in the message).
    pub(crate) fn of(&self, agents: &[usize], who: &str) -> &[f64] {
        assert!(
            agents.iter().enumerate().all(|(i, &id)| i == id) && self.0.len() == agents.len(),
            "{who} acts for every agent of a world with budgets"
        );
        &self.0
    }
}

/// A learner's own policy (`env::policy::Policy`) as a [`RowPolicy`] in a world that gives
/// its budgets ([`World::budgets`]: the queue world's), every agent's row in id order, each
/// round sampled as it trained (the queue world's Hedge per budget state behind the seam).
pub struct Learned {
    policy: Box<dyn crate::learners::Policy>,
    budgets: Budgets,
    /// Its argmax instead of a draw.
    greedy: bool,
}

impl Learned {
    /// `policy`, sampling.
    pub fn new(policy: Box<dyn crate::learners::Policy>) -> Self {
        Self {
            policy,
            budgets: Budgets::default(),
            greedy: false,
        }
    }

    /// The same policy acting on its argmax.
    pub fn greedy(self) -> Self {
        Self { greedy: true, ..self }
    }
}

impl RowPolicy for Learned {
    fn begin_episode(&mut self, seed: u64) {
        self.policy.begin_episode(seed);
    }

    fn sees(&mut self, world: &dyn World) {
        self.budgets.see(world);
    }

    fn act(&mut self, obs: &[f32], dim: usize, agents: &[usize], _groups: &[usize], actions: &mut [usize]) {
        let budgets = self.budgets.of(agents, "a learner's own policy");
        self.policy
            .act(env::world::Observations { data: obs, dim }, budgets, self.greedy, actions);
    }

    fn entropy(&self) -> Option<f64> {
        self.policy.entropy()
    }

    fn draws(&self) -> bool {
        !self.greedy
    }

    fn fork(&self) -> Box<dyn RowPolicy> {
        Box::new(Self {
            policy: self.policy.fork(),
            budgets: Budgets::default(),
            greedy: self.greedy,
        })
    }
}

/// One episode per seed on `threads` workers, each with its own copy of the world and the
/// policy; results in seed order (so they do not depend on `threads`).
pub fn evaluate(world: &dyn World, policy: &dyn RowPolicy, seeds: &[u64], threads: usize) -> Vec<Played> {
    let protos = std::sync::Mutex::new((world.fork(), policy.fork()));
    env::par::par_map(
        threads,
        seeds,
        || (),
        |_, &seed| {
            let (mut w, mut p) = {
                let g = protos.lock().expect("no panic while forking");
                (g.0.fork(), g.1.fork())
            };
            play(w.as_mut(), p.as_mut(), seed)
        },
    )
}

/// The level every agent at which plays `world`'s best headline on `seeds` (the first of
/// equals): the best fixed level, picked on the seeds given.
pub fn best_level(world: &dyn World, seeds: &[u64], threads: usize) -> usize {
    let head = world.headline();
    let better = sign(world.metrics()[head].better);
    (0..world.levels().len())
        .map(|k| {
            let played = evaluate(world, &Fixed::new(vec![k]), seeds, threads);
            (k, summarise(&played, world.metrics())[head].mean * better)
        })
        .fold((0, f64::NEG_INFINITY), |b, (k, v)| if v > b.1 { (k, v) } else { b })
        .0
}

/// The mean over episodes of the policy's entropy share ([`Played::entropy_share`]), where
/// every episode has one.
pub fn mean_entropy_share(played: &[Played]) -> Option<f64> {
    let each: Option<Vec<f64>> = played.iter().map(|p| p.entropy_share).collect();
    each.filter(|e| !e.is_empty()).map(|e| e.iter().sum::<f64>() / e.len() as f64)
}

/// The figures of several episodes, each as mean and 95% CI (in the world's metric order).
pub fn summarise(played: &[Played], metrics: &[WorldMetric]) -> Vec<Stat> {
    (0..metrics.len())
        .map(|k| Stat::of(&played.iter().map(|p| p.figures[k]).filter(|x| x.is_finite()).collect::<Vec<_>>()))
        .collect()
}

/// The paired difference `a - b` of figure `k` over the same seeds (NaN pairs left out).
pub fn paired(a: &[Played], b: &[Played], k: usize) -> Stat {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| x.figures[k] - y.figures[k])
        .filter(|x| x.is_finite())
        .collect();
    Stat::of(&d)
}

/// `+1` when higher is better, `-1` when lower is: a difference times this is an improvement.
pub fn sign(better: Better) -> f64 {
    match better {
        Better::Higher => 1.0,
        Better::Lower => -1.0,
    }
}

/// A world from a config with overrides (a root seed and a mechanism too, as the commands'
/// flags give them). The mechanism's key is the world's to say (`World::select_mechanism`):
/// `like`, a world of the same file already built, answers it, so the file is built once.
pub fn load(
    config: &Path,
    set: &[String],
    seed: Option<u64>,
    mechanism: Option<(&dyn World, &str)>,
) -> crate::error::Result<Box<dyn World>> {
    let mut set = set.to_vec();
    if let Some(s) = seed {
        set.push(format!("seed={s}"));
    }
    if let Some((like, m)) = mechanism {
        let key = like
            .select_mechanism(m)
            .map_err(|problem| crate::error::user(format!("{problem}, given on the command line")))?;
        set.push(key);
    }
    env::registry::load(config, &set).map_err(|e| crate::error::user(e.to_string()))
}

/// Whether `world` under `policies` plays another episode on another seed: the world draws
/// from it (its job sizes, arrivals), or it reads actions and a policy draws its own from it
/// (uniform play, a sampled run). Else every seed plays the same episode, played once.
pub fn plays_every_seed<'a>(world: &dyn World, mut policies: impl Iterator<Item = &'a dyn RowPolicy>) -> bool {
    world.varies_with_seed() || (world.reads_actions() && policies.any(|p| p.draws()))
}

/// The root seed of a world's config.
pub fn root_seed(world: &dyn World) -> u64 {
    world.config().get("seed").and_then(|s| s.as_integer()).map_or(1, |s| s as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bandit(extra: &[&str]) -> Box<dyn World> {
        let path = std::env::temp_dir().join(format!("mtf-bandit-{}.toml", std::process::id()));
        std::fs::write(&path, "[env]\nworld = \"bandit\"\nagents = 4\nrounds = 10\nnoise = 0.0\n").unwrap();
        let set: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let w = env::registry::load(&path, &set).unwrap();
        std::fs::remove_file(path).ok();
        w
    }

    #[test]
    fn hedge_learns_as_it_plays_only_where_the_world_keeps_its_rounds() {
        let err = policies::parse("hedge", bandit(&[]).as_ref()).err().expect("refused").to_string();
        assert!(
            err.contains("hedge") && err.contains("does not keep") && !err.contains('\n'),
            "{err}"
        );
        // A uniform policy's entropy is ln K every round: its share is 1; a fixed level
        // chooses from no distribution.
        let mut w = bandit(&[]);
        let k = w.levels().len();
        let share = play(w.as_mut(), &mut Uniform::new(k), 3).entropy_share.unwrap();
        assert!((share - 1.0).abs() < 1e-12, "{share}");
        assert_eq!(play(w.as_mut(), &mut Fixed::new(vec![3]), 3).entropy_share, None);
    }

    #[test]
    fn play_pays_the_bandits_known_rewards() {
        // Without noise, level 0.3 pays group 0 (target 0.3) 1 and group 1 (target 0.7)
        // 1 - 0.16 per round. Agents 0, 2 (group 0) are there all 10 rounds, 1 and 3 from round 1.
        let mut w = bandit(&[]);
        let mut p = Fixed::new(vec![3]);
        let out = play(w.as_mut(), &mut p, 5);
        assert!((out.group_returns[0] - 10.0).abs() < 1e-12, "{:?}", out.group_returns);
        assert!((out.group_returns[1] - 9.0 * 0.84).abs() < 1e-12, "{:?}", out.group_returns);
        assert_eq!(out.agent_steps, 2 + 9 * 4);
        // In parallel, on 1 or 3 threads, in seed order: the same.
        let one = evaluate(w.as_ref(), &p, &[1, 2, 3], 1);
        let three = evaluate(w.as_ref(), &p, &[1, 2, 3], 3);
        assert_eq!(one, three);
    }
}

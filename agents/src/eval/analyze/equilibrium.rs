//! Where selfish learners go and whether they could see it: the selfish equilibrium and the
//! signal a learner learns from.
//!
//! - **The equilibrium.** Iterated best responses per weight class from the best fixed level:
//!   in turn, each class's first agent tries every level while everyone else keeps the current
//!   profile; if one pays it more (its own reward, on the selection seeds, with common random
//!   numbers) the whole class moves there. It stops when no class gains (a symmetric Nash
//!   equilibrium of the per-class game, up to the selection seeds' noise), when a profile
//!   repeats (a cycle), or after [`MAX_PASSES`] passes. Its welfare is scored on the held-out
//!   seeds, with the price of anarchy against the best fixed level and the best adaptive
//!   policy.
//! - **The signal.** For each class's first best response (from the best fixed level): the
//!   gain in its own reward per round, the per-round standard deviation of that reward and its
//!   round-to-round (lag-1) autocorrelation rho on the held-out seeds, and the agent-rounds a
//!   two-sample test needs to see the gain at 5% significance with 80% power:
//!   `2 (z_0.975 + z_0.8)^2 2 sd^2 / gain^2 (1 + rho) / (1 - rho)` over both arms (the AR(1)
//!   variance inflation of a mean of correlated rounds). A policy-gradient learner compares its
//!   levels through no better statistic.
//! - **One round against the long run.** Whether the reward of one round (the utility the
//!   agent would win this round at each level, re-running the mechanism on the round as played,
//!   everyone else at the best fixed level) ranks the levels as the long-run reward does
//!   (Spearman's rank correlation over the levels): a learner that credits each round's action
//!   with that round's reward follows the first.

use super::*;
use crate::learners::hedge::{level_reward, HedgeReward};
use env::config::World;
use env::queue_world::QueueWorld;
use env::world::play;

pub use crate::train::selfish::{selfish, Selfish, MAX_PASSES};

/// z quantiles of the two-sample test: two-sided 5%, power 80%.
const Z_ALPHA: f64 = 1.959_963_984_540_054;
const Z_BETA: f64 = 0.841_621_233_572_914_3;

/// The selfish equilibrium.
#[derive(Debug, Clone, Serialize)]
pub struct Equilibrium {
    /// Per weight class: (weight, level).
    pub levels: Vec<(f64, f64)>,
    /// Passes the best responses took.
    pub passes: usize,
    /// Whether it stopped because no class gained (else: a cycle, or the pass limit).
    pub converged: bool,
    /// Its held-out welfare.
    pub welfare: Stat,
    /// Its welfare minus the best fixed level's (held-out, paired).
    pub vs_best_fixed: Stat,
    /// Its welfare minus the best adaptive policy's (held-out, paired).
    pub vs_best_adaptive: Stat,
    /// The best fixed level's welfare over the equilibrium's (the price of anarchy against it).
    pub price_of_anarchy_fixed: f64,
    /// The best adaptive policy's welfare over the equilibrium's.
    pub price_of_anarchy_adaptive: f64,
    /// The policy spec that plays it (`mtf compare --policies`).
    pub spec: String,
}

/// What one weight class's learner learns from.
#[derive(Debug, Clone, Serialize)]
pub struct Signal {
    /// The class's weight.
    pub weight: f64,
    /// Its best response's gain in own reward per round (held-out mean).
    pub gain: f64,
    /// The per-round standard deviation of its own reward.
    pub sd: f64,
    /// The lag-1 autocorrelation of its per-round reward.
    pub autocorrelation: f64,
    /// Agent-rounds (both arms) a two-sample test at 5% and 80% power needs to see the gain;
    /// `None` when there is no gain.
    pub agent_rounds: Option<f64>,
    /// The gain as a share of the reward.
    pub relative_gain: f64,
    /// The level the one-round reward ranks first, and the long-run reward (if computed).
    pub one_round_best: Option<f64>,
    /// The level the long-run own reward ranks first (selection seeds).
    pub long_run_best: f64,
    /// Spearman's rank correlation of the one-round and the long-run reward over the levels.
    pub rank_correlation: Option<f64>,
}

/// The selfish equilibrium from the best fixed level `best` (see the module documentation).
pub(super) fn equilibrium(
    ctx: &mut Ctx<'_>,
    sc: &Scenario,
    best: usize,
    best_eps: &[EpisodeMetrics],
    adaptive_eps: &[EpisodeMetrics],
) -> Equilibrium {
    let found = selfish(sc, best, &ctx.select, ctx.spec.threads);
    ctx.evaluations += found.evaluations;
    let eps = ctx.held_out(sc, &found.policy(sc));
    let w = |e: &[EpisodeMetrics]| mean(e, |x| x.welfare);
    let by = found.by_weight(sc);
    let (passes, converged) = (found.passes, found.converged);
    Equilibrium {
        spec: crate::learners::fixed::Levels::ByWeight(by.clone()).spec(),
        levels: by,
        passes,
        converged,
        welfare: Stat::of(&eps.iter().map(|e| e.welfare).collect::<Vec<_>>()),
        vs_best_fixed: paired(&eps, best_eps, |e| e.welfare),
        vs_best_adaptive: paired(&eps, adaptive_eps, |e| e.welfare),
        price_of_anarchy_fixed: w(best_eps) / w(&eps),
        price_of_anarchy_adaptive: w(adaptive_eps) / w(&eps),
    }
}

/// One held-out episode of `policy`, recording `agent`'s reward every round and, when
/// `counterfactual`, the utility it would have won that round at each level (net of the
/// tokens' value under the `net` reward) (the mechanism re-run on
/// the round as played with only its level changed).
fn episode(sc: &Scenario, seed: u64, policy: &dyn Policy, agent: usize, counterfactual: bool) -> (Vec<f64>, Vec<f64>) {
    let mut world = QueueWorld::new(sc.clone());
    world.env_mut().set_recording(false);
    let n = world.env().n();
    let mech = &sc.file.mechanism;
    let mut recorder = Recorder {
        policy: policy.fork(),
        budgets: vec![0.0; n],
        agent,
        counterfactual,
        levels: sc.action_levels().to_vec(),
        action_kind: sc.action_kind(),
        mechanism: scheduler::registry::build(&mech.name, &mech.params()).expect("a validated mechanism"),
        quasi_linear: (sc.file.env.world == World::Valuations).then_some(sc.file.env.value_scale),
        // The round's own reward where it is a function of the round (net prices the tokens);
        // utility won for the others.
        kind: if sc.file.env.reward == env::config::Reward::Net {
            HedgeReward::Net
        } else {
            HedgeReward::Eq42
        },
        rewards: Vec::new(),
        one_round: vec![0.0; sc.action_levels().len()],
        input: scheduler::RoundInput::from_utilities(&[vec![0.0]]),
        alloc: scheduler::Allocation::default(),
    };
    env::worlds::play(&mut world, &mut recorder, seed);
    let rounds = recorder.rewards.len().max(1) as f64;
    (recorder.rewards, recorder.one_round.into_iter().map(|s| s / rounds).collect())
}

/// A policy acting greedily in the episode driver while recording one agent's reward every
/// round and its counterfactual utility at each level ([`episode`]).
struct Recorder {
    policy: Box<dyn Policy>,
    budgets: Vec<f64>,
    agent: usize,
    counterfactual: bool,
    levels: Vec<f64>,
    action_kind: env::config::ActionKind,
    mechanism: Box<dyn scheduler::Mechanism>,
    quasi_linear: Option<f64>,
    kind: HedgeReward,
    rewards: Vec<f64>,
    one_round: Vec<f64>,
    input: scheduler::RoundInput,
    alloc: scheduler::Allocation,
}

impl env::worlds::Acting<QueueWorld> for Recorder {
    fn begin_episode(&mut self, seed: u64) {
        self.policy.begin_episode(seed);
    }

    fn act(&mut self, world: &QueueWorld, _obs: &[f32], _groups: &[usize], actions: &mut [usize]) {
        let env = world.env();
        self.budgets.copy_from_slice(env.budgets());
        self.policy.act(env.observations(), &self.budgets, true, actions);
    }

    fn after_step(&mut self, world: &QueueWorld, _actions: &[usize]) {
        let env = world.env();
        self.rewards.push(env.last_rewards()[self.agent]);
        if self.counterfactual {
            for (l, sum) in self.one_round.iter_mut().enumerate() {
                self.input.clone_from(env.last_input());
                play(&mut self.input, self.action_kind, self.agent, self.levels[l], env.last_bid_values());
                self.mechanism.reset();
                self.mechanism.allocate(&self.input, &mut self.alloc);
                *sum += level_reward(self.kind, self.quasi_linear, &self.input, &self.alloc, self.agent);
            }
        }
    }
}

/// The signal of every class's first best response (see the module documentation).
pub(super) fn signals(ctx: &mut Ctx<'_>, sc: &Scenario, best: usize, responses: &[BestResponse]) -> Vec<Signal> {
    let levels = sc.action_levels().to_vec();
    let mech = &sc.file.mechanism;
    // The one-round counterfactual is exact only for a mechanism without state across rounds.
    let stateless = scheduler::registry::build(&mech.name, &mech.params()).is_ok_and(|m| m.state().is_none());
    let seeds = ctx.held_out.clone();
    responses
        .iter()
        .map(|b| {
            let agent = b.agent;
            let deviation = env::config::level_index(&levels, b.deviation).expect("a level");
            let dev = pinned(Box::new(Fixed { level: best }), vec![(agent, deviation)]);
            let (mut common, mut deviated, mut one_round) = (Vec::new(), Vec::new(), vec![0.0; levels.len()]);
            for &s in &seeds {
                let (r, c) = episode(sc, s, &Fixed { level: best }, agent, stateless);
                common.push(r);
                one_round.iter_mut().zip(c).for_each(|(a, x)| *a += x / seeds.len() as f64);
                deviated.push(episode(sc, s, &dev, agent, false).0);
            }
            ctx.evaluations += 2;
            let all: Vec<f64> = common.iter().chain(&deviated).flatten().copied().collect();
            let m = all.iter().sum::<f64>() / all.len() as f64;
            let var = all.iter().map(|x| (x - m).powi(2)).sum::<f64>() / all.len() as f64;
            let (mut num, mut den) = (0.0, 0.0);
            for series in common.iter().chain(&deviated) {
                let mu = series.iter().sum::<f64>() / series.len() as f64;
                num += series.windows(2).map(|w| (w[0] - mu) * (w[1] - mu)).sum::<f64>();
                den += series.iter().map(|x| (x - mu).powi(2)).sum::<f64>();
            }
            let rho = if den > 0.0 { (num / den).clamp(-0.99, 0.99) } else { 0.0 };
            let per_round = |s: &[Vec<f64>]| s.iter().flatten().sum::<f64>() / s.iter().map(Vec::len).sum::<usize>().max(1) as f64;
            let gain = per_round(&deviated) - per_round(&common);
            let agent_rounds =
                (gain > 0.0 && var > 0.0).then(|| 2.0 * (Z_ALPHA + Z_BETA).powi(2) * 2.0 * var / gain.powi(2) * (1.0 + rho) / (1.0 - rho));
            let long_run_best = levels[crate::learners::argmax(b.own_by_level.iter().copied())];
            Signal {
                weight: b.weight,
                gain,
                sd: var.sqrt(),
                autocorrelation: rho,
                agent_rounds,
                relative_gain: gain / per_round(&common).abs().max(1e-12),
                one_round_best: stateless.then(|| levels[crate::learners::argmax(one_round.iter().copied())]),
                long_run_best,
                rank_correlation: stateless.then(|| spearman(&one_round, &b.own_by_level)),
            }
        })
        .collect()
}

/// Spearman's rank correlation (average ranks for ties).
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    let (ra, rb) = (ranks(a), ranks(b));
    let n = a.len() as f64;
    let (ma, mb) = (ra.iter().sum::<f64>() / n, rb.iter().sum::<f64>() / n);
    let cov: f64 = ra.iter().zip(&rb).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let (va, vb): (f64, f64) = (ra.iter().map(|x| (x - ma).powi(2)).sum(), rb.iter().map(|y| (y - mb).powi(2)).sum());
    if va == 0.0 || vb == 0.0 {
        return 0.0;
    }
    cov / (va * vb).sqrt()
}

fn ranks(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    crate::learners::es::centred_ranks(x)
        .iter()
        .map(|r| (r + 0.5) * (n - 1) as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spearman_of_known_rankings() {
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]), 1.0);
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0);
        // d = (0, 1, -1): 1 - 6 * 2 / (3 * 8) = 0.5.
        assert!((spearman(&[1.0, 2.0, 3.0], &[1.0, 3.0, 2.0]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn the_sample_size_formula_by_hand() {
        // sd 1, gain 0.1, no autocorrelation: per arm 2 (1.96 + 0.84)^2 / 0.01 = 1570; both arms 3140.
        let n = 2.0 * (Z_ALPHA + Z_BETA).powi(2) * 2.0 * 1.0 / 0.01;
        assert!((n - 3139.5).abs() < 1.0, "{n}");
    }
}

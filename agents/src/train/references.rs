//! Where a queue-world run's result sits: its held-out evaluation, greedy and sampled,
//! against the best fixed level, uniform play and the selfish equilibrium.

use super::selfish;
use crate::config::{Experiment, LearnerKind};
use crate::learners::Learner;
use env::eval::{evaluate, Stat, Summary};
use serde::Serialize;

/// Where a run's result sits (issue 40's self-judging results): on its own held-out seeds, the
/// best fixed level (picked on the selection seeds, then scored on the held-out ones) and
/// uniform random play, each as the paired difference of the world's headline (the run minus
/// the reference: positive is better), greedy and drawing actions as in training.
#[derive(Debug, Clone, Serialize)]
pub struct References {
    /// The best fixed level's spec (`fixed:X`).
    pub best_fixed: String,
    /// Its held-out headline.
    pub best_fixed_eval: Stat,
    /// Uniform random play's held-out headline.
    pub uniform_eval: Stat,
    /// The run greedy minus the best fixed level.
    pub greedy_vs_best_fixed: Stat,
    /// The run sampled minus the best fixed level.
    pub sampled_vs_best_fixed: Stat,
    /// The run greedy minus uniform play.
    pub greedy_vs_uniform: Stat,
    /// The run sampled minus uniform play.
    pub sampled_vs_uniform: Stat,
    /// The evaluation that plays as the run trained: `sampled` for a learner that draws its
    /// actions, `greedy` for one that does not (ES, fixed levels, Hedge's greedy table).
    pub scored: &'static str,
    /// Under an agent's own reward (any `env.reward` but `welfare`), where selfish learners
    /// should go: the selfish equilibrium (`mtf analyze`'s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selfish: Option<SelfishReference>,
}

/// The selfish equilibrium as a reference: iterated best responses per weight class from the
/// best fixed level, each class's own reward on the selection seeds (`mtf analyze`'s search),
/// scored on the held-out seeds.
#[derive(Debug, Clone, Serialize)]
pub struct SelfishReference {
    /// Its policy spec (`fixed:w1=X,...`).
    pub spec: String,
    /// Whether the best responses stopped because no class gained (else a cycle or the pass
    /// limit: then it is where they stopped, not an equilibrium).
    pub converged: bool,
    /// Its held-out headline.
    pub eval: Stat,
    /// It minus the best fixed level (held-out, paired).
    pub vs_best_fixed: Stat,
    /// The run (as trained) minus it.
    pub run_vs: Stat,
}

impl References {
    /// The run against both references in the way it plays: (vs best fixed, vs uniform).
    pub fn scored(&self) -> (Stat, Stat) {
        if self.scored == "sampled" {
            (self.sampled_vs_best_fixed, self.sampled_vs_uniform)
        } else {
            (self.greedy_vs_best_fixed, self.greedy_vs_uniform)
        }
    }
}

/// Where a paired difference's CI puts it: a word a console line and a summary can carry.
pub fn verdict(d: Stat) -> &'static str {
    verdict_as(d, "above it, significant", "below it, significant")
}

/// [`verdict`] in other words for the two significant cases.
pub fn verdict_as(d: Stat, above: &'static str, below: &'static str) -> &'static str {
    if !d.has_ci() {
        "one seed: no CI"
    } else if d.mean - d.ci95 > 0.0 {
        above
    } else if d.mean + d.ci95 < 0.0 {
        below
    } else {
        "within the CI"
    }
}

/// The references of a run whose held-out headlines are `held` (greedy and sampled, in seed
/// order): the fixed levels on the selection seeds, the best and uniform play on the held-out
/// ones.
pub(super) fn references(exp: &Experiment, held: &HeldOut, stochastic: bool) -> References {
    let sc = &exp.scenario;
    let root = sc.file.seed;
    let (eval, select) = (
        env::eval::episode_seeds(root, exp.train.eval_seeds),
        env::eval::selection_seeds(root, exp.train.eval_seeds),
    );
    let t = exp.train.threads;
    let headline = |policy: &dyn crate::learners::Policy, seeds: &[u64]| headlines(sc, policy, seeds, t);
    let best = best_fixed_level(sc, &select, t);
    let base = headline(&crate::learners::Fixed { level: best }, &eval);
    let unif = headline(&uniform_play(sc), &eval);
    let diff = |a: &[f64], b: &[f64]| Stat::of(&a.iter().zip(b).map(|(x, y)| x - y).collect::<Vec<f64>>());
    let run = if stochastic { &held.sampled } else { &held.greedy };
    let selfish = (sc.file.env.reward != env::config::Reward::Welfare && sc.file.env.world == env::config::World::Queues).then(|| {
        let found = selfish::selfish(sc, best, &select, t);
        let eq = headline(&found.policy(sc), &eval);
        SelfishReference {
            spec: crate::learners::fixed::Levels::ByWeight(found.by_weight(sc)).spec(),
            converged: found.converged,
            eval: Stat::of(&eq),
            vs_best_fixed: diff(&eq, &base),
            run_vs: diff(run, &eq),
        }
    });
    References {
        best_fixed: crate::learners::fixed::Levels::All(sc.action_levels()[best]).spec(),
        best_fixed_eval: Stat::of(&base),
        uniform_eval: Stat::of(&unif),
        greedy_vs_best_fixed: diff(&held.greedy, &base),
        sampled_vs_best_fixed: diff(&held.sampled, &base),
        greedy_vs_uniform: diff(&held.greedy, &unif),
        sampled_vs_uniform: diff(&held.sampled, &unif),
        scored: if stochastic { "sampled" } else { "greedy" },
        selfish,
    }
}

/// Each episode's headline (`report::table::headline_of`) of `policy` on `seeds`, in seed order.
pub(crate) fn headlines(sc: &env::config::Scenario, policy: &dyn crate::learners::Policy, seeds: &[u64], threads: usize) -> Vec<f64> {
    evaluate(sc, seeds, policy, false, threads)
        .iter()
        .map(crate::report::table::headline_of)
        .collect()
}

/// The best fixed level (every agent at it) by its mean headline on `select` (the selection
/// seeds; the first of equals).
pub(crate) fn best_fixed_level(sc: &env::config::Scenario, select: &[u64], threads: usize) -> usize {
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let levels = sc.action_levels().len();
    let picked: Vec<f64> = (0..levels)
        .map(|l| mean(&headlines(sc, &crate::learners::Fixed { level: l }, select, threads)))
        .collect();
    (0..levels).fold(0, |b, l| if picked[l] > picked[b] { l } else { b })
}

/// Uniform random play: every agent draws a level uniformly every round.
pub(crate) fn uniform_play(sc: &env::config::Scenario) -> impl crate::learners::Policy {
    use crate::learners::wrap::{Layered, Sample};
    let levels = sc.action_levels().len();
    Layered::new(Box::new(crate::learners::uniform::Uniform::new(sc.n(), levels, sc.m())), Sample)
}

/// Every held-out episode's welfare, in seed order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HeldOut {
    /// The greedy policy's.
    pub greedy: Vec<f64>,
    /// The sampled policy's.
    pub sampled: Vec<f64>,
}

/// The held-out evaluation on seeds no training episode used (the ones `mtf simulate` uses for
/// the same root seed, so fixed thresholds and baselines compare on equal arrivals): greedy,
/// then drawing its actions as in training.
pub(super) fn evaluate_held_out(exp: &Experiment, learner: &dyn Learner) -> (Summary, Summary, HeldOut) {
    let seeds = env::eval::episode_seeds(exp.scenario.file.seed, exp.train.eval_seeds);
    let greedy = evaluate(&exp.scenario, &seeds, learner.fork().as_ref(), true, exp.train.threads);
    let sampled_policy = crate::learners::wrap::Layered::new(learner.fork(), crate::learners::wrap::Sample);
    let sampled = evaluate(&exp.scenario, &seeds, &sampled_policy, true, exp.train.threads);
    let welfare = |eps: &[env::metrics::EpisodeMetrics]| eps.iter().map(crate::report::table::headline_of).collect();
    let held_out = HeldOut {
        greedy: welfare(&greedy),
        sampled: welfare(&sampled),
    };
    (Summary::of(&exp.scenario, &greedy), Summary::of(&exp.scenario, &sampled), held_out)
}

/// ` (near-uniform: ...)` when a sampled evaluation's policy is nearly uniform.
pub(super) fn near_uniform_note(sampled: &Summary) -> &'static str {
    if near_uniform(sampled) {
        NEAR_UNIFORM_NOTE
    } else {
        ""
    }
}

/// What a greedy figure of a near-uniform policy is marked with, in every world.
pub const NEAR_UNIFORM_NOTE: &str = " (the argmax of a near-uniform policy: noise, not a policy it learned)";

/// Whether a learner draws its actions in training (and so is judged drawing them).
pub fn draws(kind: LearnerKind) -> bool {
    matches!(
        kind,
        LearnerKind::ActorCritic | LearnerKind::Ppo | LearnerKind::Hedge | LearnerKind::Uniform
    )
}

/// Whether a policy's mean entropy in an evaluation is above
/// `env::metrics::spec::NEAR_UNIFORM` of the largest.
pub fn near_uniform(s: &Summary) -> bool {
    s.stat("entropy_share").is_some_and(|e| e.mean > env::metrics::spec::NEAR_UNIFORM)
}

//! `mtf analyze`: can learning help in a scenario, and where would selfish learners go?
//!
//! 1. **Headroom.** The best policy of simple adaptive classes: one level per weight class,
//!    optionally times one state bit an agent can see (burst state, budget above its share,
//!    backlog above its own running mean). Each class is searched by coordinate ascent from the
//!    best fixed level on *selection* seeds, then scored on held-out seeds, paired against the
//!    best fixed level. A learner of these classes can gain about that much, no more; a richer
//!    learner is not bounded by it, but a small headroom says there is little to learn.
//! 2. **Best responses.** For each weight class, one agent deviates unilaterally from the best
//!    common fixed level: its own reward gain and what the deviation costs welfare.
//! 3. **The token scale.** MTF (at its best fixed level for each total) against the baselines
//!    as `mechanism.total_tokens` varies, with the share of accelerators bought rather than
//!    given out free.
//! 4. **A trained run** (`--run DIR`) against all three; a run group (`mtf train --replicates`)
//!    is reported across its replicates (interquartile mean, bootstrap interval over
//!    replicates, probability of improvement), greedy and sampled, with the selfish
//!    equilibrium's welfare beside it.
//!
//! Every comparison is paired on the same seeds, and every result is independent of
//! `threads`: evaluations run in seed order and the search breaks ties by its fixed order.

mod adaptive;
pub mod equilibrium;
mod report;

pub use adaptive::{Adaptive, Bit};
pub use report::{figures, markdown, verdict, write};

use crate::config::Source;
use crate::error::user;
use crate::eval::theory::pinned;
use crate::learners::wrap::{Layered, Sample};
use crate::learners::{Fixed, Policy};
use crate::report::stats::Replicates;
use crate::report::table::{signed, welfare_diff, Row};
use env::config::{ActionKind, Scenario};
use env::eval::{episode_seeds, Stat, Summary};
use env::metrics::EpisodeMetrics;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What to analyze.
#[derive(Debug, Clone)]
pub struct AnalyzeSpec {
    /// The scenario's source.
    pub source: Source,
    /// A trained run to place against the analysis.
    pub run: Option<PathBuf>,
    /// Held-out episodes every result is scored on (the same seeds as `mtf compare`'s).
    pub seeds: usize,
    /// Episodes the searches select on (other seeds than the held-out ones).
    pub select_seeds: usize,
    /// Token totals of the token-scale sweep.
    pub tokens: Vec<f64>,
    /// Baseline mechanisms of the token-scale sweep and the run's standing.
    pub baselines: Vec<String>,
    /// Worker threads (results do not depend on it).
    pub threads: usize,
    /// Progress lines on stderr.
    pub progress: bool,
}

/// Defaults of the command line.
pub mod defaults {
    /// Held-out seeds.
    pub const SEEDS: usize = 16;
    /// Selection seeds.
    pub const SELECT_SEEDS: usize = 8;
    /// Token totals (the 100, 1,000, 10,000).
    pub const TOKENS: [f64; 3] = [100.0, 1000.0, 10000.0];
    /// [`TOKENS`] as the command line writes it.
    pub const TOKENS_TEXT: &str = "100,1000,10000";
    /// Baselines: the standard schedulers of the thesis's comparison (the queue world's own,
    /// `World::baselines`).
    pub const BASELINES: [&str; 3] = env::queue_world::BASELINES;
    /// [`BASELINES`] as the command line writes it.
    pub const BASELINES_TEXT: &str = "stride,gandiva_fair,themis";
}

/// One class's best policy.
#[derive(Debug, Clone, Serialize)]
pub struct Headroom {
    /// The class.
    pub bit: Bit,
    /// Per weight class: (weight, level when the bit is off, level when it is on).
    pub levels: Vec<(f64, f64, f64)>,
    /// Mean welfare on the selection seeds.
    pub select_welfare: f64,
    /// The same minus the best fixed level's, on the selection seeds (never negative: fixed
    /// policies are in every class).
    pub select_gain: f64,
    /// Welfare minus the best fixed level's on the held-out seeds (paired 95% CI).
    pub held_out_gain: Stat,
    /// Evaluations the search ran.
    pub evaluations: usize,
    /// The policy spec that plays it (`mtf compare --policies`), when it is one: the
    /// per-class policy without a state bit.
    pub spec: Option<String>,
}

/// One weight class's unilateral best response to the best common fixed level.
#[derive(Debug, Clone, Serialize)]
pub struct BestResponse {
    /// The class's weight.
    pub weight: f64,
    /// The deviating agent (the class's first).
    pub agent: usize,
    /// The level everyone else plays.
    pub common: f64,
    /// The deviation that maximises the agent's own reward on the selection seeds.
    pub deviation: f64,
    /// Its own reward per round, deviation minus common (held-out, paired).
    pub own_reward_gain: Stat,
    /// Its own throughput (jobs per round), deviation minus common (held-out, paired).
    pub own_throughput_gain: Stat,
    /// Welfare, deviation minus common (held-out, paired).
    pub welfare_change: Stat,
    /// Its own reward per round at every level, everyone else at the common level (selection
    /// seeds).
    pub own_by_level: Vec<f64>,
}

/// MTF against the baselines at one token total.
#[derive(Debug, Clone, Serialize)]
pub struct TokenPoint {
    /// `mechanism.total_tokens`.
    pub total_tokens: f64,
    /// MTF's best fixed level at this total (selection seeds).
    pub best_fixed: f64,
    /// MTF's welfare there (held-out).
    pub mtf_welfare: Stat,
    /// Share of accelerator-rounds MTF gave out by sale rather than for free.
    pub paid_share: Stat,
    /// MTF minus each baseline, paired (held-out).
    pub diffs: Vec<(String, Stat)>,
}

/// A trained run's standing.
#[derive(Debug, Clone, Serialize)]
pub struct RunStanding {
    /// The run directory (or run group).
    pub run: String,
    /// The run's greedy policy minus: the best fixed level, every headroom class's best policy,
    /// every baseline (held-out; a run: paired over seeds; a group: mean and 95% CI over the
    /// replicates' paired mean differences).
    pub diffs: Vec<(String, Stat)>,
    /// A run group's replicates against the same rows: interquartile mean, bootstrap interval
    /// and probability of improvement over replicates (greedy), and against the best fixed
    /// level drawing actions as in training (`sampled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicates: Option<GroupStanding>,
    /// Its learning curve: training welfare (its own scenario and seeds, sampled actions) in
    /// up to [`CURVE_BLOCKS`] consecutive blocks of episodes, as (last episode of the block,
    /// mean and 95% CI over the block's episodes).
    pub learning: Vec<(u64, Stat)>,
}

/// A run group's standing across its replicates.
#[derive(Debug, Clone, Serialize)]
pub struct GroupStanding {
    /// The replicates' run directories.
    pub runs: Vec<String>,
    /// Greedy, minus each row (labels as in [`RunStanding::diffs`]).
    pub greedy: Vec<(String, Replicates)>,
    /// Sampled, minus the best fixed level.
    pub sampled: Replicates,
    /// Replicates whose sampled policy is near-uniform.
    pub near_uniform: usize,
}

/// Blocks a run's learning curve is averaged in.
pub const CURVE_BLOCKS: usize = 20;

/// `welfare` (one per episode) in up to [`CURVE_BLOCKS`] consecutive blocks of equal length
/// (the last may be shorter).
fn learning_curve(welfare: &[f64]) -> Vec<(u64, Stat)> {
    crate::eval::curves::blocks_of(welfare, CURVE_BLOCKS)
        .into_iter()
        .map(|(end, block)| (end, Stat::of(&block)))
        .collect()
}

/// The analysis.
#[derive(Debug, Clone, Serialize)]
pub struct Analyzed {
    /// The analyzed scenario.
    #[serde(skip)]
    pub scenario: Scenario,
    /// Selection seeds.
    pub select_seeds: Vec<u64>,
    /// Held-out seeds.
    pub seeds: Vec<u64>,
    /// Every fixed level with its mean welfare on the selection seeds.
    pub fixed: Vec<(f64, f64)>,
    /// The best fixed level (selection seeds).
    pub best_fixed: f64,
    /// One entry per adaptive class that applies.
    pub headroom: Vec<Headroom>,
    /// One entry per weight class.
    pub best_responses: Vec<BestResponse>,
    /// Where selfish learners go: iterated best responses per weight class.
    pub equilibrium: equilibrium::Equilibrium,
    /// What each class's learner learns from: its best response's gain, noise and sample size.
    pub signals: Vec<equilibrium::Signal>,
    /// The token-scale sweep (empty unless the scenario's mechanism is MTF).
    pub token_scale: Vec<TokenPoint>,
    /// The trained run's standing, with `--run`.
    pub run: Option<RunStanding>,
    /// The held-out rows: best fixed (the baseline of `paired`), the headroom policies, the
    /// run, the baselines.
    pub rows: Vec<Row>,
}

struct Ctx<'a> {
    spec: &'a AnalyzeSpec,
    select: Vec<u64>,
    held_out: Vec<u64>,
    evaluations: usize,
}

impl Ctx<'_> {
    fn run(&mut self, sc: &Scenario, policy: &dyn Policy, seeds: &[u64]) -> Vec<EpisodeMetrics> {
        self.evaluations += 1;
        env::eval::evaluate(sc, seeds, policy, false, self.spec.threads)
    }

    fn selection_welfare(&mut self, sc: &Scenario, policy: &dyn Policy) -> f64 {
        let seeds = self.select.clone();
        mean(&self.run(sc, policy, &seeds), |e| e.welfare)
    }

    fn held_out(&mut self, sc: &Scenario, policy: &dyn Policy) -> Vec<EpisodeMetrics> {
        let seeds = self.held_out.clone();
        self.run(sc, policy, &seeds)
    }

    fn say(&self, what: &str) {
        if self.spec.progress {
            eprintln!("analyze: {what}");
        }
    }

    /// The best fixed level on the selection seeds (the lowest of equals) and every level's
    /// welfare.
    fn best_fixed(&mut self, sc: &Scenario) -> (usize, Vec<(f64, f64)>) {
        let levels = sc.action_levels().to_vec();
        let welfare: Vec<(f64, f64)> = (0..levels.len())
            .map(|l| (levels[l], self.selection_welfare(sc, &Fixed { level: l })))
            .collect();
        let best = (0..levels.len()).fold(0, |b, l| if welfare[l].1 > welfare[b].1 { l } else { b });
        (best, welfare)
    }

    /// Coordinate ascent over one class from every agent at `start`: each parameter in turn
    /// takes its best level given the others, until a pass changes nothing (at most 4 passes).
    fn search(&mut self, sc: &Scenario, bit: Bit, start: usize, start_welfare: f64) -> (Adaptive, f64) {
        let mut best = Adaptive::uniform(sc, bit, start);
        let mut value = start_welfare;
        let levels = sc.action_levels().len();
        for _pass in 0..4 {
            let mut moved = false;
            for p in best.params() {
                for l in 0..levels {
                    if l == best.levels[p] {
                        continue;
                    }
                    let mut cand = best.clone();
                    cand.set(p, l);
                    let w = self.selection_welfare(sc, &cand);
                    if w > value + 1e-12 {
                        (best, value, moved) = (cand, w, true);
                    }
                }
            }
            if !moved {
                break;
            }
        }
        (best, value)
    }
}

fn mean(eps: &[EpisodeMetrics], f: impl Fn(&EpisodeMetrics) -> f64) -> f64 {
    eps.iter().map(f).sum::<f64>() / eps.len().max(1) as f64
}

fn paired(a: &[EpisodeMetrics], b: &[EpisodeMetrics], f: impl Fn(&EpisodeMetrics) -> f64) -> Stat {
    Stat::of(&a.iter().zip(b).map(|(x, y)| f(x) - f(y)).collect::<Vec<_>>())
}

fn row(sc: &Scenario, policy: &str, mechanism: &str, episodes: Vec<EpisodeMetrics>) -> Row {
    Row {
        policy: policy.into(),
        spec: None,
        mechanism: mechanism.into(),
        summary: Summary::of(sc, &episodes),
        weights: sc.agents.iter().map(|a| a.weight).collect(),
        episodes,
        paired: None,
    }
}

/// Run the analysis.
pub fn analyze(spec: &AnalyzeSpec) -> crate::error::Result<Analyzed> {
    if spec.seeds < 2 || spec.select_seeds < 1 {
        return Err(user("--seeds must be at least 2 (a paired CI) and --select-seeds at least 1"));
    }
    if let Some(t) = spec.tokens.iter().find(|t| !(t.is_finite() && **t > 0.0)) {
        return Err(user(format!("--tokens: {t} is not a positive token total")));
    }
    let mut sc = spec.source.load(None)?;
    // A baseline policy that does not fit fails now, not after the analysis.
    for b in spec.baselines.iter().filter(|b| is_policy(b)) {
        crate::eval::policies::Named::parse(b, &sc)?;
    }
    crate::train::memory::check(&crate::train::memory::evaluation(&sc, spec.threads), "this analysis")?;
    // A bad run directory (or any replicate of a group) fails now, not after the analysis.
    let trained = match &spec.run {
        None => None,
        Some(dir) => {
            let runs = if crate::train::group::is_group(dir) {
                crate::train::group::replicates(dir)?
            } else {
                vec![dir.clone()]
            };
            let loaded = runs
                .iter()
                .map(|r| crate::train::load_run(r, false).map(|(exp, learner, _)| (r.clone(), exp, learner)))
                .collect::<crate::error::Result<Vec<_>>>()?;
            Some((dir, loaded))
        }
    };
    // Observation only: the burst bit reads it; dynamics and results are unchanged.
    sc.file.env.observe_burst = true;
    let mut sc_dim = sc.clone();
    sc_dim.file.env.observe_burst = false;
    let root = sc.file.seed;
    let mut ctx = Ctx {
        spec,
        select: env::eval::selection_seeds(root, spec.select_seeds),
        held_out: episode_seeds(root, spec.seeds),
        evaluations: 0,
    };
    let levels = sc.action_levels().to_vec();
    let mech = sc.file.mechanism.name.clone();
    ctx.say("fixed levels");
    let (best, fixed) = ctx.best_fixed(&sc);
    let best_eps = ctx.held_out(&sc, &Fixed { level: best });
    let mut rows = vec![row(
        &sc,
        &crate::learners::fixed::Levels::All(levels[best]).spec(),
        &mech,
        best_eps.clone(),
    )];
    let mut headroom = Vec::new();
    let mut policies = Vec::new();
    let mut adaptive_eps = best_eps.clone();
    for bit in Bit::ALL.into_iter().filter(|b| b.applies(&sc)) {
        ctx.say(&format!("headroom: {}", bit.name()));
        let before = ctx.evaluations;
        let (policy, value) = ctx.search(&sc, bit, best, fixed[best].1);
        let eps = ctx.held_out(&sc, &policy);
        let classes = sc.weight_classes();
        headroom.push(Headroom {
            bit,
            levels: (0..classes.len())
                .map(|c| (classes[c], levels[policy.levels[c * 2]], levels[policy.levels[c * 2 + 1]]))
                .collect(),
            select_welfare: value,
            select_gain: value - fixed[best].1,
            held_out_gain: paired(&eps, &best_eps, |e| e.welfare),
            evaluations: ctx.evaluations - before,
            spec: (bit == Bit::None).then(|| {
                let by = (0..classes.len()).map(|c| (classes[c], levels[policy.levels[c * 2]])).collect();
                crate::learners::fixed::Levels::ByWeight(by).spec()
            }),
        });
        let gain = headroom.last().map_or(0.0, |h: &Headroom| h.held_out_gain.mean);
        if headroom.iter().all(|h| h.held_out_gain.mean <= gain) {
            adaptive_eps = eps.clone();
        }
        rows.push(row(&sc, bit.name(), &mech, eps));
        policies.push((bit, policy));
    }
    ctx.say("best responses");
    let best_responses = best_responses(&mut ctx, &sc, best, &best_eps);
    ctx.say("the selfish equilibrium");
    let equilibrium = equilibrium::equilibrium(&mut ctx, &sc, best, &best_eps, &adaptive_eps);
    ctx.say("the signal");
    let signals = equilibrium::signals(&mut ctx, &sc, best, &best_responses);
    let token_scale = if sc.action_kind() == ActionKind::Threshold && mech == "mtf" {
        token_scale(&mut ctx, spec)?
    } else {
        Vec::new()
    };
    for b in &spec.baselines {
        if is_policy(b) {
            // A policy spec plays under the config's mechanism, on the same held-out seeds.
            let named = crate::eval::policies::Named::parse(b, &sc_dim)?;
            let eps = named.evaluate(&sc_dim, &ctx.held_out, spec.threads)?;
            rows.push(row(&sc_dim, &crate::eval::policies::canonical(b), &mech, eps));
            continue;
        }
        let bsc = spec.source.load(Some(b))?;
        let eps = ctx.held_out(&bsc, &Fixed { level: best });
        rows.push(row(&bsc, &crate::learners::fixed::Levels::All(levels[best]).spec(), b, eps));
    }
    let run = match &trained {
        None => None,
        Some((dir, runs)) => Some(standing(&mut ctx, &sc_dim, dir, runs, &mut rows)?),
    };
    crate::report::table::pair(&mut rows, 0);
    Ok(Analyzed {
        scenario: sc_dim,
        select_seeds: ctx.select.clone(),
        seeds: ctx.held_out.clone(),
        best_fixed: levels[best],
        fixed,
        headroom,
        best_responses,
        equilibrium,
        signals,
        token_scale,
        run,
        rows,
    })
}

/// Whether a `--baselines` entry is a policy spec (`fixed:...`, `run:...`, `hedge`) rather than
/// a mechanism name.
fn is_policy(entry: &str) -> bool {
    entry.contains(':') || entry == "hedge"
}

fn best_responses(ctx: &mut Ctx<'_>, sc: &Scenario, best: usize, best_eps: &[EpisodeMetrics]) -> Vec<BestResponse> {
    let levels = sc.action_levels().to_vec();
    let deviate = |agent: usize, level: usize| pinned(Box::new(Fixed { level: best }), vec![(agent, level)]);
    let seeds = ctx.select.clone();
    let common = ctx.run(sc, &Fixed { level: best }, &seeds);
    sc.weight_classes()
        .into_iter()
        .map(|w| {
            let agent = sc.agents.iter().position(|a| a.weight == w).expect("a class has an agent");
            let mut dev = (best, mean(&common, |e| e.reward[agent]));
            let mut own_by_level = vec![dev.1; levels.len()];
            for l in (0..levels.len()).filter(|&l| l != best) {
                let own = mean(&ctx.run(sc, &deviate(agent, l), &seeds), |e| e.reward[agent]);
                own_by_level[l] = own;
                if own > dev.1 + 1e-12 {
                    dev = (l, own);
                }
            }
            let eps = ctx.held_out(sc, &deviate(agent, dev.0));
            BestResponse {
                weight: w,
                agent,
                common: levels[best],
                deviation: levels[dev.0],
                own_reward_gain: paired(&eps, best_eps, |e| e.reward[agent]),
                own_throughput_gain: paired(&eps, best_eps, |e| e.throughput[agent]),
                welfare_change: paired(&eps, best_eps, |e| e.welfare),
                own_by_level,
            }
        })
        .collect()
}

fn token_scale(ctx: &mut Ctx<'_>, spec: &AnalyzeSpec) -> crate::error::Result<Vec<TokenPoint>> {
    let mut points = Vec::new();
    for &t in &spec.tokens {
        ctx.say(&format!("token scale: T = {t}"));
        let mut set = spec.source.set.clone();
        set.push(format!("mechanism.total_tokens={t:?}"));
        let source = Source::new(&spec.source.config, &set, spec.source.seed);
        let sc = source.load(Some("mtf"))?;
        let (best, _) = ctx.best_fixed(&sc);
        let mtf = ctx.held_out(&sc, &Fixed { level: best });
        let mut diffs = Vec::new();
        for b in spec.baselines.iter().filter(|b| !is_policy(b)) {
            let eps = ctx.held_out(&source.load(Some(b))?, &Fixed { level: best });
            diffs.push((b.clone(), paired(&mtf, &eps, |e| e.welfare)));
        }
        points.push(TokenPoint {
            total_tokens: t,
            best_fixed: sc.action_levels()[best],
            mtf_welfare: Stat::of(&mtf.iter().map(|e| e.welfare).collect::<Vec<_>>()),
            paid_share: Stat::of(&mtf.iter().map(|e| e.paid_share).collect::<Vec<_>>()),
            diffs,
        });
    }
    Ok(points)
}

/// The run's policy on the held-out seeds, paired against every row so far; its row joins
/// `rows`.
/// The trained run's (or every replicate's) greedy rows, and its standing against the rows
/// before them.
fn standing(
    ctx: &mut Ctx<'_>,
    sc: &Scenario,
    dir: &Path,
    runs: &[(PathBuf, crate::config::Experiment, Box<dyn crate::learners::Learner>)],
    rows: &mut Vec<Row>,
) -> crate::error::Result<RunStanding> {
    ctx.say("the trained run");
    let before = rows.len();
    let (mut greedy, mut sampled, mut near_uniform) = (Vec::new(), Vec::new(), 0);
    for (path, exp, learner) in runs {
        // The run's learners read the observation it was trained with: its observation-only
        // switches, over this scenario's dynamics.
        let mut sc = sc.clone();
        sc.file.env.observe_as(&exp.scenario.file.env);
        let spec = format!("run:{}", path.display());
        crate::train::check_fits(&spec, &exp.scenario, &sc)?;
        let eps = env::eval::evaluate(&sc, &ctx.held_out, learner.fork().as_ref(), true, ctx.spec.threads);
        if runs.len() > 1 {
            let draws = Layered::new(learner.fork(), Sample);
            let s = env::eval::evaluate(&sc, &ctx.held_out, &draws, false, ctx.spec.threads);
            near_uniform += usize::from(crate::train::near_uniform(&Summary::of(&sc, &s)));
            sampled.push(s);
        }
        greedy.push(row(&sc, &spec, &sc.file.mechanism.name, eps));
    }
    let welfare = |eps: &[EpisodeMetrics]| -> Vec<f64> { eps.iter().map(|e| e.welfare).collect() };
    let learning = {
        let curves = runs
            .iter()
            .map(|(p, _, _)| crate::train::logged_welfare(p))
            .collect::<crate::error::Result<Vec<_>>>()?;
        let len = curves.iter().map(Vec::len).min().unwrap_or(0);
        let mean: Vec<f64> = (0..len)
            .map(|e| curves.iter().map(|c| c[e]).sum::<f64>() / curves.len() as f64)
            .collect();
        learning_curve(&mean)
    };
    let standing = if let [run] = greedy.as_slice() {
        RunStanding {
            run: dir.display().to_string(),
            diffs: rows.iter().map(|r| (r.label(), welfare_diff(run, r))).collect(),
            replicates: None,
            learning,
        }
    } else {
        let boot = env::rng::stream_seed(sc.file.seed, "replicates-bootstrap", 1);
        // Each replicate's mean paired difference to a row's episodes.
        let scores = |runs: &[Vec<f64>], base: &Row| -> Vec<f64> {
            let b = welfare(&base.episodes);
            runs.iter()
                .map(|w| w.iter().zip(&b).map(|(x, y)| x - y).sum::<f64>() / w.len() as f64)
                .collect()
        };
        let g: Vec<Vec<f64>> = greedy.iter().map(|r| welfare(&r.episodes)).collect();
        let s: Vec<Vec<f64>> = sampled.iter().map(|e| welfare(e)).collect();
        let group = GroupStanding {
            runs: runs.iter().map(|(p, _, _)| p.display().to_string()).collect(),
            greedy: rows[..before]
                .iter()
                .map(|r| (r.label(), Replicates::of(&scores(&g, r), boot)))
                .collect(),
            sampled: Replicates::of(&scores(&s, &rows[0]), boot),
            near_uniform,
        };
        RunStanding {
            run: dir.display().to_string(),
            diffs: rows[..before].iter().map(|r| (r.label(), Stat::of(&scores(&g, r)))).collect(),
            replicates: Some(group),
            learning,
        }
    };
    rows.extend(greedy);
    Ok(standing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_lines_defaults_are_the_lists() {
        assert_eq!(defaults::BASELINES_TEXT, defaults::BASELINES.join(","));
        let tokens: Vec<String> = defaults::TOKENS.iter().map(|t| t.to_string()).collect();
        assert_eq!(defaults::TOKENS_TEXT, tokens.join(","));
    }

    #[test]
    fn the_learning_curve_averages_consecutive_blocks() {
        // 45 episodes: blocks of 3 (15 of them), each ending at its last episode.
        let welfare: Vec<f64> = (0..45).map(f64::from).collect();
        let curve = learning_curve(&welfare);
        assert_eq!(curve.len(), 15);
        assert_eq!(curve[0].0, 3);
        assert_eq!(curve[0].1.mean, 1.0);
        assert_eq!(curve[14], (45, Stat::of(&[42.0, 43.0, 44.0])));
        // 41 episodes: blocks of 3, the last of 2.
        let curve = learning_curve(&welfare[..41]);
        assert_eq!((curve.len(), curve[13].0, curve[13].1.mean), (14, 41, 39.5));
        // Fewer episodes than blocks: one per block.
        assert_eq!(
            learning_curve(&[2.0, 4.0]).iter().map(|(e, s)| (*e, s.mean)).collect::<Vec<_>>(),
            vec![(1, 2.0), (2, 4.0)]
        );
    }
}

//! Hedge (Freund & Schapire 1997; thesis Algorithm 2) with one weight vector per agent per
//! budget state `min(floor(B_i), T)`, and SPEC 4's full-information update: for every level,
//! the round's mechanism is re-run with only this agent's threshold changed.
//!
//! The K levels' rewards of a round are divided by a fixed scale, a bound on how far apart
//! any round can put them ([`reward_range`]: the accelerators times the most an item can be
//! worth plus the most it can cost), before `log w += eta_t * R` (weights kept as logs, so long
//! runs never underflow). The learning rate follows no-regret theory's anytime schedule for
//! rewards in a unit range, `eta_t = sqrt(8 ln K / t)` with t the updates of that weight
//! vector so far (Cesa-Bianchi & Lugosi 2006, Thm 2.3 and its doubling-free variant); a
//! constant `learner.hedge.eta` replaces it.
//!
//! Before issue 41 each round's rewards were min-max scaled to [0, 1] (`scale = "round"`
//! keeps that): a round in which the levels differ by a hair then moves the weights as much as
//! one in which they differ by the whole range, which in first-price self-play pushed the bids
//! past the equilibrium, further with more episodes. Counterfactual re-runs use
//! a fresh mechanism of the same kind on a copy of the round input, so only MTF (whose state
//! travels in the input) responds to thresholds; with another mechanism every level scores the
//! same and Hedge stays uniform.

use super::base::{argmax, limits, sample_index, ErrorIn, Exported, Init, Learner, LearnerConfig, Losses, Policy, Transition};
use super::parts::Parts;
use crate::error::failed;
use env::config::{ActionKind, ConfigError, Scenario, World};
use env::rng::{stream, unit};
use env::world::{play, Observations};
use rand::rngs::SmallRng;
use rand::Rng;
use rayon::prelude::*;
use scheduler::{registry, Allocation, RoundInput};
use serde::{Deserialize, Serialize};

/// Hedge's per-round reward (SPEC 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HedgeReward {
    /// Utility won minus the utility-value of the tokens spent.
    Net,
    /// The thesis's eq. 4.2 as written: utility won.
    Eq42,
}

/// How a round's counterfactual rewards are scaled before the update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HedgeScale {
    /// Divided by a fixed bound on their range ([`reward_range`]): rewards on one scale.
    Fixed,
    /// Min-max over the levels to [0, 1], every round (the behaviour before issue 41).
    Round,
}

/// `[learner.hedge]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HedgeConfig {
    /// A constant learning rate; absent: the anytime schedule `sqrt(8 ln K / t)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eta: Option<f64>,
    /// Reward of a counterfactual level.
    pub reward: HedgeReward,
    /// How a round's rewards are scaled.
    pub scale: HedgeScale,
}

impl Default for HedgeConfig {
    fn default() -> Self {
        Self {
            eta: None,
            reward: HedgeReward::Net,
            scale: HedgeScale::Fixed,
        }
    }
}

impl LearnerConfig for HedgeConfig {
    /// Eta (always); when Hedge runs, the table's size, or, in a world without a round record
    /// (Hedge over the episode there), the round-record variants of reward and scale refused.
    fn validate(&self, shape: &dyn super::WorldShape, chosen: bool, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        self.check_eta(err)?;
        let Some(rerun) = shape.rerun() else {
            // Without a round record Hedge is the episode's (`episode_hedge`): a level's reward
            // is its group's return, on one scale for the whole run (its first spread).
            let refused = if !chosen {
                None
            } else if self.reward != HedgeReward::Net {
                Some(("learner.hedge.reward", "here Hedge scores a level by its group's return over the episode (the world's reward), with no round record to re-run: leave reward unset"))
            } else if self.scale != HedgeScale::Fixed {
                Some(("learner.hedge.scale", "here Hedge's rewards are on one scale for the whole run (its first spread), with no rounds to rescale: leave scale unset"))
            } else {
                None
            };
            return refused.map_or(Ok(()), |(key, problem)| Err(err(key, problem.into())));
        };
        let states = rerun.budget_states;
        let levels = shape.levels().len();
        if chosen && states.saturating_mul(levels).saturating_mul(shape.agents()) > limits::MAX_HEDGE_WEIGHTS {
            return Err(err(
                "mechanism.total_tokens",
                format!(
                    "Hedge keeps a weight per agent, budget state (floor(T) + 1 = {states}) and level: more than the limit of {}",
                    limits::MAX_HEDGE_WEIGHTS
                ),
            ));
        }
        Ok(())
    }

    fn init(&self, run: &Init<'_>) -> Box<dyn Learner> {
        Box::new(Hedge::for_scenario(run.queue_scenario(), self))
    }

    fn exported(&self, _shape: &dyn super::WorldShape) -> Exported {
        Exported::Table
    }

    /// The log-weights, n x budget states x levels f64, at their measured peak: 2.95 bytes
    /// per byte (8 agents x 1,000,001 states, and 20 x 200,001; one episode), the table and
    /// its serialised checkpoint copies.
    fn memory(&self, sc: &Scenario, _copies: usize) -> Vec<(String, u64)> {
        let cells = (sc.n() as u64)
            .saturating_mul(budget_states(sc) as u64)
            .saturating_mul(sc.action_levels().len() as u64);
        vec![(
            "mechanism.total_tokens (Hedge's budget states)".into(),
            (cells as f64 * 8.0 * 2.95) as u64,
        )]
    }
}

impl HedgeConfig {
    /// A constant `eta`, when set, is a finite number > 0 (in every world).
    pub fn check_eta(&self, err: &ErrorIn<'_>) -> Result<(), ConfigError> {
        match self.eta {
            Some(eta) if !(eta.is_finite() && eta > 0.0) => {
                Err(err("learner.hedge.eta", format!("must be a finite number > 0, got {eta}")))
            }
            _ => Ok(()),
        }
    }
}

/// Hedge for n agents.
#[derive(Clone)]
pub struct Hedge {
    n: usize,
    levels: Vec<f64>,
    states: usize,
    /// A constant learning rate, or (`None`) the anytime schedule.
    eta: Option<f64>,
    reward: HedgeReward,
    scale: HedgeScale,
    /// The fixed scale's bound on a round's reward range.
    range: f64,
    /// Updates of each weight vector so far, `[agent][state]` (the schedule's t).
    updates: Vec<u64>,
    /// The sum of the distributions each weight vector played (one per update), for the
    /// time-averaged play, `[agent][state][level]`.
    played: Vec<f64>,
    mechanism: String,
    params: registry::Params,
    /// What an action sets (a threshold or a bid factor), for the counterfactual re-runs.
    action: ActionKind,
    /// The valuation world's token value (`value_scale`): rewards are quasi-linear there.
    quasi_linear: Option<f64>,
    /// Log-weights, `[agent][state][level]` flattened.
    logw: Vec<f64>,
    rngs: Vec<SmallRng>,
    /// The mean entropy of the distributions the last act drew from.
    entropy: Option<f64>,
}

/// Hedge's budget states for a scenario: `floor(T) + 1` (SPEC 4); one in the valuation world,
/// whose budgets do not bind (T = 1e9) and so say nothing.
pub fn budget_states(sc: &Scenario) -> usize {
    match sc.file.env.world {
        World::Valuations => 1,
        World::Queues => sc.file.mechanism.total_tokens.floor() as usize + 1,
    }
}

impl Hedge {
    /// Hedge for every agent of a scenario, over its action levels (thresholds, or bid factors
    /// under an auction), with the scenario's reward in its counterfactuals.
    pub fn for_scenario(sc: &Scenario, cfg: &HedgeConfig) -> Self {
        let m = &sc.file.mechanism;
        let mut h = Self::new(sc.n(), sc.action_levels(), 0.0, sc.file.env.rounds, cfg, &m.name, m.params());
        h.states = budget_states(sc);
        h.logw = vec![0.0; sc.n() * h.states * h.levels.len()];
        h.updates = vec![0; sc.n() * h.states];
        h.played = vec![0.0; h.logw.len()];
        h.action = sc.action_kind();
        h.quasi_linear = (sc.file.env.world == World::Valuations).then_some(sc.file.env.value_scale);
        h.range = reward_range(sc);
        h
    }

    /// Hedge over `levels` for `n` agents, with token total `total_tokens` (budget states
    /// 0..=floor(T)), episodes of `rounds` rounds (for the default eta).
    pub fn new(
        n: usize,
        levels: &[f64],
        total_tokens: f64,
        rounds: u32,
        cfg: &HedgeConfig,
        mechanism: &str,
        params: registry::Params,
    ) -> Self {
        let k = levels.len();
        let states = total_tokens.floor() as usize + 1;
        let _ = rounds;
        Self {
            n,
            levels: levels.to_vec(),
            states,
            eta: cfg.eta,
            reward: cfg.reward,
            scale: cfg.scale,
            // Without a scenario to bound it: thresholds on one accelerator, worth 1, a token.
            range: 2.0,
            updates: vec![0; n * states],
            played: vec![0.0; n * states * k],
            mechanism: mechanism.to_string(),
            params,
            action: ActionKind::Threshold,
            quasi_linear: None,
            logw: vec![0.0; n * states * k],
            rngs: (0..n).map(|i| stream(0, env::rng::names::POLICY, i as u64)).collect(),
            entropy: None,
        }
    }

    /// Budget state of a budget: `min(floor(B), T)`.
    pub fn state(&self, budget: f64) -> usize {
        (budget.max(0.0).floor() as usize).min(self.states - 1)
    }

    fn row(&self, i: usize, s: usize) -> &[f64] {
        let k = self.levels.len();
        &self.logw[(i * self.states + s) * k..(i * self.states + s + 1) * k]
    }

    /// Agent i's time-averaged play in budget state s: the mean of the distributions its
    /// weight vector had at each of its updates (uniform before any).
    pub fn time_averaged(&self, i: usize, s: usize) -> Vec<f64> {
        let k = self.levels.len();
        let t = self.updates[i * self.states + s];
        let row = &self.played[(i * self.states + s) * k..(i * self.states + s + 1) * k];
        if t == 0 {
            return vec![1.0 / k as f64; k];
        }
        row.iter().map(|x| x / t as f64).collect()
    }

    /// The learning rate of a weight vector's `t`-th update (from 1).
    pub fn eta(&self, t: u64) -> f64 {
        self.eta
            .unwrap_or_else(|| (8.0 * (self.levels.len() as f64).ln() / t.max(1) as f64).sqrt())
    }

    /// Agent i's current probabilities in budget state s.
    pub fn probabilities(&self, i: usize, s: usize) -> Vec<f64> {
        let row = self.row(i, s);
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = row.iter().map(|l| (l - max).exp()).collect();
        let total: f64 = w.iter().sum();
        w.into_iter().map(|x| x / total).collect()
    }
}

/// Hedge's reward of one outcome for agent i (SPEC 4): utility won, minus (for `Net`) the
/// mean utility of the agent's accelerators times the tokens it spent. In the valuation world
/// (`quasi_linear` = its token value) the environment's own reward: values won minus the price.
pub fn level_reward(kind: HedgeReward, quasi_linear: Option<f64>, input: &RoundInput, alloc: &Allocation, i: usize) -> f64 {
    let won: f64 = (0..input.m)
        .filter(|&c| alloc.owners[c] == Some(i))
        .map(|c| alloc.won_utility[c])
        .sum();
    if let Some(scale) = quasi_linear {
        return won - alloc.spent[i] / scale;
    }
    match kind {
        HedgeReward::Eq42 => won,
        HedgeReward::Net => won - input.mean_start_utility(i) * alloc.spent[i],
    }
}

/// A bound on how far apart one round can put the K levels' rewards (the fixed scale): per
/// accelerator, what a won item can be worth (a utility or value, at most 1) plus what it can
/// cost in the reward's units: under MTF a token at the agent's mean utility (at most 1);
/// under an auction at most the highest bid factor times a value of at most 1, priced in
/// utility (the valuation world) or at the mean utility per token, `value_scale` tokens per
/// unit (the queue world). In the valuation world a won item pays `v - price` with the price
/// at most the bid, so the range is `max(1, highest factor)` per item.
pub fn reward_range(sc: &Scenario) -> f64 {
    let m = sc.m() as f64;
    let top = sc.action_levels().iter().copied().fold(0.0, f64::max);
    match (sc.file.env.world, sc.action_kind()) {
        (World::Valuations, _) => m * top.max(1.0),
        (World::Queues, ActionKind::Threshold) => m * 2.0,
        (World::Queues, ActionKind::Bid) => m * (1.0 + top * sc.file.env.value_scale),
    }
}

/// Scale rewards to [0, 1] by min-max; `None` when they are all equal.
pub fn scale_unit(r: &mut [f64]) -> Option<()> {
    let (lo, hi) = r.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    if hi - lo <= 1e-12 {
        return None;
    }
    r.iter_mut().for_each(|x| *x = (*x - lo) / (hi - lo));
    Some(())
}

impl Hedge {
    /// Agent i's update from its K counterfactual rewards `r` of round `t`; returns their
    /// spread (0 when a min-max scaled round taught nothing).
    fn apply(&mut self, i: usize, t: &Transition<'_>, mut r: Vec<f64>) -> f64 {
        let (lo, hi) = r.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
        let scaled = match self.scale {
            HedgeScale::Round => scale_unit(&mut r).is_some(),
            HedgeScale::Fixed => {
                // Shifted to start at 0 (the update is shift-invariant): only the scale
                // matters, and it is the same every round.
                r.iter_mut().for_each(|x| *x = (*x - lo) / self.range);
                true
            }
        };
        let s = self.state(t.round("Hedge").budgets[i]);
        let row = i * self.states + s;
        let base = row * self.levels.len();
        // The distribution this update moves from, into the time average.
        let p = self.probabilities(i, s);
        for (a, x) in self.played[base..base + p.len()].iter_mut().zip(&p) {
            *a += x;
        }
        self.updates[row] += 1;
        if !scaled {
            return 0.0;
        }
        let eta = self.eta(self.updates[row]);
        for (w, x) in self.logw[base..base + p.len()].iter_mut().zip(&r) {
            *w += eta * x;
        }
        hi - lo
    }
}

impl Policy for Hedge {
    fn act(&mut self, _obs: Observations<'_>, budgets: &[f64], greedy: bool, actions: &mut [usize]) {
        let mut entropy = 0.0;
        for i in 0..self.n {
            let s = self.state(budgets[i]);
            let p = self.probabilities(i, s);
            entropy -= p.iter().filter(|&&x| x > 0.0).map(|x| x * x.ln()).sum::<f64>();
            actions[i] = if greedy {
                argmax(p.iter().copied())
            } else {
                sample_index(&p, unit(self.rngs[i].next_u64()))
            };
        }
        self.entropy = Some(entropy / self.n as f64);
    }

    fn begin_episode(&mut self, episode_seed: u64) {
        self.rngs = (0..self.n)
            .map(|i| stream(episode_seed, env::rng::names::POLICY, i as u64))
            .collect();
    }

    /// The mean entropy over the agents of the distributions of the budget states they were
    /// in at the last act.
    fn entropy(&self) -> Option<f64> {
        self.entropy
    }

    fn fork(&self) -> Box<dyn Policy> {
        Box::new(self.clone())
    }
}

impl Learner for Hedge {
    fn learn(&mut self, t: &Transition<'_>) -> Losses {
        let round = t.round("Hedge");
        let (levels, kind, name, params) = (&self.levels, self.reward, self.mechanism.as_str(), &self.params);
        let (action, quasi_linear) = (self.action, self.quasi_linear);
        // Each agent's K counterfactual rewards; agents in parallel, results in agent order.
        let rewards: Vec<Vec<f64>> = (0..self.n)
            .into_par_iter()
            .map_init(
                || {
                    (
                        registry::build(name, params).expect("validated mechanism"),
                        round.input.clone(),
                        Allocation::default(),
                    )
                },
                |(mech, input, alloc), i| {
                    input.clone_from(round.input);
                    levels
                        .iter()
                        .map(|&level| {
                            play(input, action, i, level, round.bid_values);
                            mech.reset();
                            mech.allocate(input, alloc);
                            level_reward(kind, quasi_linear, input, alloc, i)
                        })
                        .collect()
                },
            )
            .collect();
        let spread: f64 = rewards.into_iter().enumerate().map(|(i, r)| self.apply(i, t, r)).sum();
        // Report the mean entropy of the states the agents acted in.
        let entropy = (0..self.n)
            .map(|i| {
                let p = self.probabilities(i, self.state(round.budgets[i]));
                -p.iter().filter(|&&x| x > 0.0).map(|x| x * x.ln()).sum::<f64>()
            })
            .sum::<f64>()
            / self.n as f64;
        Losses {
            entropy,
            reward_spread: spread / self.n as f64,
            ..Losses::default()
        }
    }

    fn non_finite(&self) -> Option<String> {
        let i = self.logw.iter().position(|x| !x.is_finite())?;
        Some(format!("log-weight {i} is {}", self.logw[i]))
    }

    fn export_weights(&self, agent: usize) -> crate::error::Result<Vec<f32>> {
        let per = self.states * self.levels.len();
        Ok(self.logw[agent * per..(agent + 1) * per].iter().map(|&w| w as f32).collect())
    }

    fn save(&self) -> crate::error::Result<Vec<u8>> {
        let dims = [self.n, self.states, self.levels.len()].map(|x| x as u64);
        Ok(Parts::default()
            .add_u64("hedge/dims", &dims)
            .add_f64("hedge/logw", &self.logw)
            .add_u64("hedge/updates", &self.updates)
            .add_f64("hedge/played", &self.played)
            .into_bytes())
    }

    /// A state saved before the schedule existed loads with no updates counted (its next
    /// update starts the schedule at t = 1).
    fn load(&mut self, bytes: &[u8]) -> crate::error::Result<()> {
        let names = ["hedge/dims", "hedge/logw", "hedge/updates", "hedge/played"];
        let parts = match Parts::read(bytes, &names) {
            Ok(p) => p,
            Err(_) => Parts::read(bytes, &names[..2]).map_err(failed)?,
        };
        let dims = Parts::u64s(parts[0], "hedge/dims").map_err(failed)?;
        let ours = [self.n, self.states, self.levels.len()].map(|x| x as u64);
        if dims != ours {
            return Err(failed(format!(
                "hedge weights are for (agents, budget states, levels) = {dims:?}; this run has {ours:?}"
            )));
        }
        let logw = Parts::f64s(parts[1], "hedge/logw").map_err(failed)?;
        if logw.len() != self.logw.len() {
            return Err(failed(format!(
                "hedge weights hold {} numbers, expected {}",
                logw.len(),
                self.logw.len()
            )));
        }
        let (updates, played) = match parts.get(2..4) {
            Some(&[u, p]) => (
                Parts::u64s(u, "hedge/updates").map_err(failed)?,
                Parts::f64s(p, "hedge/played").map_err(failed)?,
            ),
            _ => (vec![0; self.updates.len()], vec![0.0; self.played.len()]),
        };
        if updates.len() != self.updates.len() || played.len() != self.played.len() {
            return Err(failed(format!(
                "hedge update counts hold {} numbers and its play {}, expected {} and {}",
                updates.len(),
                played.len(),
                self.updates.len(),
                self.played.len()
            )));
        }
        self.logw = logw;
        self.updates = updates;
        self.played = played;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn update_by_hand() {
        // Rewards 1, 3, 2 scale to 0, 1, 0.5; eta 0.5: log-weights 0, 0.5, 0.25.
        let mut r = [1.0, 3.0, 2.0];
        scale_unit(&mut r).unwrap();
        assert_eq!(r, [0.0, 1.0, 0.5]);
        assert!(scale_unit(&mut [2.0, 2.0]).is_none());
        let mut h = Hedge::new(
            1,
            &[0.0, 0.5, 0.9],
            10.0,
            100,
            &HedgeConfig {
                eta: Some(0.5),
                reward: HedgeReward::Net,
                scale: HedgeScale::Round,
            },
            "mtf",
            registry::Params::default(),
        );
        for (w, x) in h.logw[..3].iter_mut().zip(r) {
            *w += 0.5 * x;
        }
        let p = h.probabilities(0, 0);
        let z = 1.0 + 0.5f64.exp() + 0.25f64.exp();
        assert!((p[1] - 0.5f64.exp() / z).abs() < 1e-12);
        assert_eq!(h.state(3.7), 3);
        assert_eq!(h.state(250.0), 10);
        // Default eta: the anytime schedule sqrt(8 ln K / t), t the row's updates so far.
        let d = Hedge::new(
            1,
            &[0.0; 10],
            100.0,
            300,
            &HedgeConfig::default(),
            "mtf",
            registry::Params::default(),
        );
        assert!((d.eta(1) - (8.0 * 10f64.ln()).sqrt()).abs() < 1e-15);
        assert!((d.eta(300) - (8.0 * 10f64.ln() / 300.0).sqrt()).abs() < 1e-15);
        assert_eq!(h.eta(7), 0.5, "a configured eta is constant");
    }

    #[test]
    fn a_fixed_scale_update_by_hand_and_its_time_average() {
        // Rewards 1, 3, 2 on a fixed scale of 2 (one accelerator under MTF): shifted to 0, 2,
        // 1, then halved; first update at eta_1 = sqrt(8 ln 3): log-weights 0, eta_1,
        // eta_1 / 2. The time average after it is the uniform it moved from.
        let make = || {
            Hedge::new(
                1,
                &[0.0, 0.5, 0.9],
                0.0,
                100,
                &HedgeConfig::default(),
                "mtf",
                registry::Params::default(),
            )
        };
        let mut h = make();
        let eta1 = (8.0 * 3f64.ln()).sqrt();
        let input = RoundInput::from_utilities(&[vec![0.0]]);
        let t = crate::learners::testing::transition(1, &[0.0], &[0], &[0.0], false);
        let t = Transition {
            round: Some(crate::learners::Round {
                budgets: &[0.0],
                next_budgets: &[0.0],
                input: &input,
                bid_values: &[],
                allocation: &Allocation::default(),
            }),
            ..t
        };
        // A mechanism whose counterfactual rewards are 1, 3, 2 would need a round built for
        // it; the update itself is what is checked: feed the rewards through `apply`.
        h.apply(0, &t, vec![1.0, 3.0, 2.0]);
        let logw = &h.logw[..3];
        assert!(
            (logw[0]).abs() < 1e-15 && (logw[1] - eta1).abs() < 1e-12 && (logw[2] - eta1 / 2.0).abs() < 1e-12,
            "{logw:?}"
        );
        assert_eq!(h.time_averaged(0, 0), vec![1.0 / 3.0; 3]);
        // Second update, eta_2 = sqrt(8 ln 3 / 2), the same rewards: the time average is the
        // mean of uniform and the distribution after the first update.
        let after_first = h.probabilities(0, 0);
        h.apply(0, &t, vec![1.0, 3.0, 2.0]);
        let eta2 = (8.0 * 3f64.ln() / 2.0).sqrt();
        assert!((h.logw[1] - (eta1 + eta2)).abs() < 1e-12);
        let avg = h.time_averaged(0, 0);
        for l in 0..3 {
            assert!((avg[l] - (1.0 / 3.0 + after_first[l]) / 2.0).abs() < 1e-12, "{avg:?}");
        }
        // Saved and loaded with its schedule and play.
        let mut other = make();
        other.load(&h.save().unwrap()).unwrap();
        assert_eq!(other.time_averaged(0, 0), avg);
        assert_eq!(other.updates, h.updates);
    }

    #[test]
    fn net_reward_charges_the_tokens_spent() {
        // One agent wins c0 (u 0.8) by paying one token; its mean utility is (0.8 + 0.2) / 2.
        let mut input = RoundInput::from_utilities(&[vec![0.8, 0.2]]);
        input.thresholds = vec![0.5];
        input.budgets = vec![5.0];
        let mut alloc = Allocation::default();
        registry::build("mtf", &registry::Params::default())
            .unwrap()
            .allocate(&input, &mut alloc);
        assert_eq!(alloc.spent, vec![1.0]);
        assert!((level_reward(HedgeReward::Net, None, &input, &alloc, 0) - (0.8 + 0.2 - 0.5)).abs() < 1e-12);
        assert!((level_reward(HedgeReward::Eq42, None, &input, &alloc, 0) - 1.0).abs() < 1e-12);
        // Quasi-linear (the valuation world, 2 tokens per unit of value): 1.0 won - 1 / 2.
        assert!((level_reward(HedgeReward::Net, Some(2.0), &input, &alloc, 0) - 0.5).abs() < 1e-12);
    }

    /// One round repeated: agent 0 (budget 50) and four agents without tokens, who come first
    /// in the free phase (turn 1) and want what agent 0 wants.
    fn round(utilities: Vec<f64>) -> RoundInput {
        let mut input = RoundInput::from_utilities(&vec![utilities; 5]);
        input.thresholds = vec![0.0; 5];
        input.budgets = vec![50.0, 0.0, 0.0, 0.0, 0.0];
        input.turn = 1;
        input
    }

    /// Hedge (default eta for 300-round episodes) after `rounds` full-information updates on
    /// `input`: agent 0's probabilities in its budget state.
    fn learn_on(input: &RoundInput, rounds: usize) -> Vec<f64> {
        let levels: Vec<f64> = (0..10).map(|l| l as f64 / 10.0).collect();
        let mut h = Hedge::new(5, &levels, 100.0, 300, &HedgeConfig::default(), "mtf", registry::Params::default());
        let t = crate::learners::testing::transition(1, &[0.0; 5], &[0; 5], &[0.0; 5], false);
        let allocation = Allocation::default();
        let t = Transition {
            round: Some(crate::learners::Round {
                budgets: &input.budgets,
                next_budgets: &input.budgets,
                input,
                bid_values: &[],
                allocation: &allocation,
            }),
            ..t
        };
        for _ in 0..rounds {
            h.learn(&t);
        }
        h.probabilities(0, h.state(50.0))
    }

    #[test]
    fn every_level_paying_the_same_moves_nothing() {
        // Every accelerator at 0.95: every level buys all ten, net reward 0 at every level.
        let p = learn_on(&round(vec![0.95; 10]), 600);
        assert!(p.iter().all(|&x| (x - 0.1).abs() < 1e-12), "{p:?}");
    }

    #[test]
    fn one_level_paying_clearly_more_is_found() {
        // Utilities 0.05, 0.15, .., 0.95 (mean 0.5, the price of a token). At threshold l/10
        // agent 0 buys the 10 - l accelerators at or above it (each worth u - 0.5) and then
        // gets every fifth of the rest in the free phase, after the other four: by hand, net
        // rewards 0, .45, .8, 1.05, 1.2, 1.3, 1.35, 1.3, 1.15, .9 -- 0.6 is best by 0.05 (4%).
        let input = round((0..10).map(|c| 0.05 + 0.1 * c as f64).collect());
        let by_hand = [0.0, 0.45, 0.8, 1.05, 1.2, 1.3, 1.35, 1.3, 1.15, 0.9];
        let mut mech = registry::build("mtf", &registry::Params::default()).unwrap();
        for (l, want) in by_hand.iter().enumerate() {
            let mut x = input.clone();
            play(&mut x, ActionKind::Threshold, 0, l as f64 / 10.0, &[]);
            let mut alloc = Allocation::default();
            mech.reset();
            mech.allocate(&x, &mut alloc);
            let r = level_reward(HedgeReward::Net, None, &x, &alloc, 0);
            assert!((r - want).abs() < 1e-9, "level {l}: {r} by hand {want}");
        }
        let p = learn_on(&input, 600);
        assert!(p[6] > 0.9, "p(0.6) = {} ({p:?})", p[6]);
    }
}

//! Gavel's workload as a world: deep-learning training jobs on GPUs of three types with the
//! throughputs Gavel measured, arriving from a trace in Gavel's format or from Gavel's
//! generator, scheduled in rounds of 360 s by any mechanism of `scheduler` — Gavel's own
//! policies (`scheduler::gavel`), or MTF, the auctions and the baselines with jobs as agents.
//!
//! # The simulation (Gavel's simulator, reproduced)
//! Each step is one of Gavel's scheduling rounds at the current time `now`:
//! 1. the mechanism allocates the GPUs to the jobs present (a job runs on exactly its scale
//!    factor of GPUs of one type, or not at all);
//! 2. a placed job runs `floor(throughput x 360)` steps, or what it has left, finishing
//!    `steps / throughput` seconds after `now`; the round ends when the last placed job
//!    finishes (a little before 360 s, as in Gavel), and jobs whose steps are done leave
//!    then, with completion time = finish - arrival;
//! 3. with nothing placed, time jumps to the next arrival;
//! 4. jobs that arrived by the new `now` join.
//!
//! The episode ends when every job of the measurement window (`env.window`, job ids) has
//! finished. Utilisation is Gavel's: the GPU time jobs were charged (from the end of the
//! previous busy round, so idle gaps count as Gavel counts them) over GPUs times makespan.
//!
//! # Agents, tokens and rewards
//! The agents are the jobs present (id = job index in arrival order; one group, so one
//! shared policy plays every job). Each round a job reports a threshold (MTF) or a bid factor
//! (the auctions) from its observation; Gavel's policies and the other baselines ignore it.
//! Tokens (MTF, the auctions): a job arrives with `tokens_per_job` times its priority weight,
//! pays for the GPUs it buys, receives its weight's share of what the jobs present spend, and
//! takes its balance with it when it finishes — so a job that waited holds more tokens than
//! one that ran, and buys first (MTF is least-attained-service in tokens). A job's reward is
//! minus the hours it spent in the system during the round: an episode's return is minus its
//! completion time from the start of its first round. With `env.reward = "welfare"` every job present is paid instead minus the
//! hours all of them spent in the system that round, over the GPUs: the cluster's objective
//! (the average completion time is the jobs present over time), not the job's own.
//!
//! # Observation of a job (one row)
//! Its budget over the mean budget of the jobs present; its throughput on each GPU type over
//! its best; `log10(1 + hours of work left on its best type) / 3`; `log10(1 + hours since it
//! arrived) / 3`; its scale factor over 8; the GPUs the jobs present ask for over the GPUs
//! there are (capped at 4).

pub mod config;
pub mod data;

use super::api::{check_actions, Better, Figures, Layout, Report, StepError, World, WorldMetric};
use crate::config::{ActionKind, ConfigError};
use config::{GavelFile, Jobs, Resolved};
use data::{Generator, Job};
use scheduler::{Allocation, Form, Mechanism, RoundInput};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Build from a config table (the registry's constructor).
pub fn build(table: toml::Table, path: &Path) -> Result<Box<dyn World>, ConfigError> {
    Ok(Box::new(GavelWorld::new(load(table, path)?)))
}

/// Read and check a Gavel world's config table.
pub fn load(table: toml::Table, path: &Path) -> Result<Resolved, ConfigError> {
    let file: GavelFile = super::api::section(table, path)?;
    file.resolve(path)
}

/// The figures of an episode, in this order.
pub const METRICS: &[WorldMetric] = &[
    WorldMetric {
        key: "avg_jct_h",
        label: "average JCT (h)",
        better: Better::Lower,
        decimals: 3,
        shown: true,
    },
    WorldMetric {
        key: "median_jct_h",
        label: "median JCT (h)",
        better: Better::Lower,
        decimals: 3,
        shown: true,
    },
    WorldMetric {
        key: "p95_jct_h",
        label: "p95 JCT (h)",
        better: Better::Lower,
        decimals: 2,
        shown: true,
    },
    WorldMetric {
        key: "makespan_h",
        label: "makespan (h)",
        better: Better::Lower,
        decimals: 1,
        shown: true,
    },
    WorldMetric {
        key: "utilization",
        label: "utilisation",
        better: Better::Higher,
        decimals: 3,
        shown: true,
    },
    WorldMetric {
        key: "jobs_completed",
        label: "jobs completed (window)",
        better: Better::Higher,
        decimals: 0,
        shown: false,
    },
    WorldMetric {
        key: "rounds",
        label: "rounds",
        better: Better::Lower,
        decimals: 0,
        shown: false,
    },
    WorldMetric {
        key: "rho_mean",
        label: "rho mean (JCT / isolated)",
        better: Better::Lower,
        decimals: 3,
        shown: true,
    },
    WorldMetric {
        key: "rho_median",
        label: "rho median",
        better: Better::Lower,
        decimals: 3,
        shown: false,
    },
    WorldMetric {
        key: "rho_max",
        label: "rho max",
        better: Better::Lower,
        decimals: 3,
        shown: false,
    },
    WorldMetric {
        key: "frac_rho_gt_1",
        label: "share of jobs with rho > 1.01",
        better: Better::Lower,
        decimals: 2,
        shown: false,
    },
];

/// A job present in the cluster.
#[derive(Clone, Debug)]
struct Live {
    id: usize,
    kind: usize,
    left: f64,
    scale: u32,
    weight: f64,
    arrival: f64,
    budget: f64,
}

/// The world (module docs).
pub struct GavelWorld {
    r: Arc<Resolved>,
    mechanism: Box<dyn Mechanism>,
    layout: Layout,
    types: Vec<String>,
    // Episode.
    seed: u64,
    generator: Option<Generator>,
    /// Jobs released so far (the next job's id).
    released: usize,
    pending: Option<Job>,
    now: f64,
    jobs: Vec<Live>,
    ids: Vec<usize>,
    /// Completion time (s) of every finished job, by id (NaN: not finished).
    jct: Vec<f64>,
    window_left: u64,
    round_start: f64,
    round_end: Option<f64>,
    busy: f64,
    rounds: u64,
    turn: usize,
    over: bool,
    truncated: bool,
    idle_at_same_time: u32,
    // Per step.
    input: RoundInput,
    alloc: Allocation,
    dirty: bool,
    acted: Vec<usize>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    /// Whether the round just played is kept as a record (`set_recording`; off by default:
    /// only `mtf simulate`'s round log reads it).
    recording: bool,
    /// The round just played, when recording: the hours it spanned and where each job ran.
    round: Option<serde_json::Value>,
    /// Isolated completion times per seed, for rho (filled from `figures(&self)`).
    isolated: std::cell::RefCell<HashMap<u64, Arc<Vec<f64>>>>,
}

impl GavelWorld {
    /// A world for a resolved config.
    pub fn new(r: Resolved) -> Self {
        let m = &r.file.mechanism;
        let params = scheduler::registry::Params {
            leftovers: m.leftovers,
            gavel_seed: m.gavel_seed,
            ..scheduler::registry::Params::default()
        };
        let mechanism = scheduler::registry::build(&m.name, &params).expect("a checked mechanism name");
        let types: Vec<String> = r.file.env.cluster.iter().map(|g| g.kind.clone()).collect();
        let mut names = vec!["budget".to_string()];
        names.extend(types.iter().map(|t| format!("speed_{t}")));
        names.extend(["work_left", "waited", "gang", "load"].map(String::from));
        let dim = names.len();
        let mut high = vec![1.0f32; dim];
        high[0] = f32::INFINITY;
        high[dim - 1] = 4.0;
        high[1 + types.len()] = f32::INFINITY;
        high[2 + types.len()] = f32::INFINITY;
        let layout = Layout {
            names,
            low: vec![0.0; dim],
            high,
        };
        let mut w = Self {
            mechanism,
            layout,
            types,
            seed: 0,
            generator: None,
            released: 0,
            pending: None,
            now: 0.0,
            jobs: Vec::new(),
            ids: Vec::new(),
            jct: Vec::new(),
            window_left: 0,
            round_start: 0.0,
            round_end: None,
            busy: 0.0,
            rounds: 0,
            turn: 0,
            over: true,
            truncated: false,
            idle_at_same_time: 0,
            input: RoundInput::from_demands(&[0.0], &[vec![1.0]]),
            alloc: Allocation::default(),
            dirty: true,
            acted: Vec::new(),
            rewards: Vec::new(),
            terminated: Vec::new(),
            recording: false,
            round: None,
            isolated: std::cell::RefCell::new(HashMap::new()),
            r: Arc::new(r),
        };
        w.reset(w.r.file.seed);
        w
    }

    /// The resolved config.
    pub fn resolved(&self) -> &Resolved {
        &self.r
    }

    /// The mechanism's statistics (Gavel's policies: allocations, solves, solver seconds).
    pub fn mechanism_stats(&self) -> Option<serde_json::Value> {
        self.mechanism.stats()
    }

    /// Completion time in seconds of each job by id (NaN while unfinished), for the jobs
    /// released so far.
    pub fn jcts(&self) -> &[f64] {
        &self.jct
    }

    /// The simulated time, seconds.
    pub fn now(&self) -> f64 {
        self.now
    }

    /// Run the episode to its end with every job at level `level` (the baselines ignore it).
    pub fn run(&mut self, level: usize) {
        let mut actions = Vec::new();
        while !self.over {
            actions.clear();
            actions.resize(self.jobs.len(), level);
            self.step(&actions).expect("levels inside the space");
        }
    }

    fn next_job(&mut self) -> Option<Job> {
        let id = self.released;
        match &self.r.jobs {
            Jobs::Trace(t) => t.get(id).cloned(),
            Jobs::Generated { jobs, .. } if (id as u64) < *jobs => Some(self.generator.as_mut().expect("a generator").next(&self.r.table)),
            Jobs::Generated { .. } => None,
        }
    }

    /// Admit every job that has arrived by `now`.
    fn admit(&mut self) {
        while self.pending.as_ref().is_some_and(|j| j.arrival <= self.now) {
            let job = self.pending.take().expect("checked");
            let id = self.released;
            self.released += 1;
            self.jct.push(f64::NAN);
            self.jobs.push(Live {
                id,
                kind: job.kind,
                left: job.steps,
                scale: job.scale,
                weight: job.weight,
                arrival: job.arrival,
                budget: self.r.file.mechanism.tokens_per_job * job.weight,
            });
            self.ids.push(id);
            self.dirty = true;
            self.pending = self.next_job();
        }
    }

    fn tput(&self, kind: usize, ty: usize) -> f64 {
        self.r.table.rows[kind].tput[ty]
    }

    /// Refill the round input for the jobs present (rates only when the jobs changed).
    fn fill_input(&mut self, actions: &[usize]) {
        let n = self.jobs.len();
        let m = self.r.gpu_types.len();
        let rs = self.r.file.env.round_seconds;
        let input = &mut self.input;
        input.n = n;
        input.m = m;
        input.form = Form::Demand;
        if self.dirty {
            input.rates.clear();
            for j in &self.jobs {
                let row = &self.r.table.rows[j.kind].tput;
                input.rates.extend(self.r.gpu_types.iter().map(|&t| row[t] * rs));
            }
            input.weights.clear();
            input.weights.extend(self.jobs.iter().map(|j| j.weight));
            input.types.clone_from(&self.r.gpu_types);
            input.rates_stamp = scheduler::RatesStamp::fresh();
            input.jobs.ids.clear();
            input.jobs.ids.extend(self.jobs.iter().map(|j| j.id as u64));
            input.jobs.gangs.clear();
            input.jobs.gangs.extend(self.jobs.iter().map(|j| j.scale));
            input.jobs.type_names.clone_from(&self.types);
            input.jobs.round_seconds = rs;
            self.dirty = false;
        }
        input.demands.clear();
        input.demands.extend(self.jobs.iter().map(|j| j.left));
        input.jobs.remaining.clone_from(&input.demands);
        input.jobs.ages.clear();
        input.jobs.ages.extend(self.jobs.iter().map(|j| self.now - j.arrival));
        input.jobs.clock = self.now;
        input.budgets.clear();
        input.budgets.extend(self.jobs.iter().map(|j| j.budget));
        input.thresholds.clear();
        input.bids.clear();
        match self.r.kind {
            ActionKind::Threshold => input.thresholds.extend(actions.iter().map(|&a| self.r.levels[a])),
            ActionKind::Bid => {
                // Bids: the factor times the job's utility for each GPU (its speed there).
                for (j, &a) in self.jobs.iter().zip(actions) {
                    let row = &self.r.table.rows[j.kind].tput;
                    let best = row.iter().copied().fold(0.0, f64::max);
                    input
                        .bids
                        .extend(self.r.gpu_types.iter().map(|&t| self.r.levels[a] * row[t] / best));
                }
            }
        }
        input.turn = if n == 0 { 0 } else { self.turn % n };
        let draws = self.mechanism.needs().contains(&scheduler::Need::Draws);
        input.draws.clear();
        if draws {
            // Ties and weighted leftovers: uniforms from the episode's stream, per round.
            let mut rng = crate::rng::stream(self.seed, crate::rng::names::LEFTOVERS, self.rounds);
            input.draws.extend((0..m).map(|_| crate::rng::unit(rand::Rng::next_u64(&mut rng))));
        }
    }

    /// Isolated completion times of this seed's jobs (for rho).
    fn isolated_jcts(&self) -> Arc<Vec<f64>> {
        if let Some(j) = self.isolated.borrow().get(&self.seed) {
            return j.clone();
        }
        let mut r = (*self.r).clone();
        r.file.mechanism.name = "isolated".into();
        r.file.env.rho = false;
        let mut iso = GavelWorld::new(r);
        iso.reset(self.seed);
        iso.run(0);
        let jct = Arc::new(iso.jct.clone());
        let mut cache = self.isolated.borrow_mut();
        if cache.len() > 64 {
            cache.clear();
        }
        cache.insert(self.seed, jct.clone());
        jct
    }

    /// The figures, computing rho when asked to.
    fn compute_figures(&self) -> Figures {
        let (lo, hi) = self.r.window;
        let window: Vec<(usize, f64)> = (lo as usize..(hi as usize).min(self.jct.len()))
            .filter(|&i| self.jct[i].is_finite())
            .map(|i| (i, self.jct[i]))
            .collect();
        let hours: Vec<f64> = window.iter().map(|(_, s)| s / 3600.0).collect();
        let gpus = self.r.gpu_types.len() as f64;
        let mut f = vec![
            mean(&hours),
            percentile(&hours, 50.0),
            percentile(&hours, 95.0),
            self.now / 3600.0,
            if self.now > 0.0 { self.busy / (gpus * self.now) } else { f64::NAN },
            hours.len() as f64,
            self.rounds as f64,
        ];
        let rho: Vec<f64> = if self.r.file.env.rho && self.over {
            let iso = self.isolated_jcts();
            window
                .iter()
                .filter_map(|&(i, s)| iso.get(i).filter(|x| x.is_finite()).map(|x| s / x))
                .collect()
        } else {
            Vec::new()
        };
        f.push(mean(&rho));
        f.push(percentile(&rho, 50.0));
        f.push(rho.iter().copied().fold(f64::NAN, f64::max));
        f.push(if rho.is_empty() {
            f64::NAN
        } else {
            rho.iter().filter(|&&x| x > 1.01).count() as f64 / rho.len() as f64
        });
        f
    }
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        f64::NAN
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// NumPy's default percentile (linear interpolation between closest ranks).
pub fn percentile(xs: &[f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = q / 100.0 * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

impl World for GavelWorld {
    fn reset(&mut self, seed: u64) {
        self.seed = seed;
        self.mechanism.reset();
        self.generator = match &self.r.jobs {
            Jobs::Generated { rate, multi_gpu, .. } => Some(Generator::new(&self.r.table, *rate, *multi_gpu, seed)),
            Jobs::Trace(_) => None,
        };
        self.released = 0;
        self.jobs.clear();
        self.ids.clear();
        self.jct.clear();
        self.pending = self.next_job();
        self.now = self.pending.as_ref().map_or(0.0, |j| j.arrival);
        self.window_left = self.r.window.1 - self.r.window.0;
        self.round_start = 0.0;
        self.round_end = None;
        self.busy = 0.0;
        self.rounds = 0;
        self.turn = 0;
        self.over = false;
        self.truncated = false;
        self.idle_at_same_time = 0;
        self.dirty = true;
        self.round = None;
        self.admit();
    }

    fn live(&self) -> &[usize] {
        if self.over {
            &[]
        } else {
            &self.ids
        }
    }

    fn possible(&self) -> usize {
        match &self.r.jobs {
            Jobs::Trace(t) => t.len(),
            Jobs::Generated { jobs, .. } => *jobs as usize,
        }
    }

    fn agent_name(&self, id: usize) -> String {
        format!("job_{id}")
    }

    fn group(&self, _id: usize) -> usize {
        0
    }

    fn group_names(&self) -> Vec<String> {
        vec!["jobs".into()]
    }

    fn weight(&self, id: usize) -> f64 {
        self.jobs.iter().find(|j| j.id == id).map_or(1.0, |j| j.weight)
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn observe(&mut self, out: &mut [f32]) {
        let dim = self.layout.dim();
        let t = self.types.len();
        let total_budget: f64 = self.jobs.iter().map(|j| j.budget).sum();
        let mean_budget = total_budget / self.jobs.len().max(1) as f64;
        let asked: f64 = self.jobs.iter().map(|j| f64::from(j.scale)).sum();
        let load = (asked / self.r.gpu_types.len() as f64).min(4.0) as f32;
        for (row, j) in out.chunks_exact_mut(dim).zip(&self.jobs) {
            let tput = &self.r.table.rows[j.kind].tput;
            let best = tput.iter().copied().fold(0.0, f64::max);
            row[0] = if mean_budget > 0.0 { (j.budget / mean_budget) as f32 } else { 1.0 };
            for k in 0..t {
                row[1 + k] = (tput[k] / best) as f32;
            }
            let left_h = j.left / best / 3600.0;
            row[1 + t] = ((1.0 + left_h).log10() / 3.0) as f32;
            row[2 + t] = ((1.0 + (self.now - j.arrival) / 3600.0).log10() / 3.0) as f32;
            row[3 + t] = (f64::from(j.scale) / 8.0).min(1.0) as f32;
            row[4 + t] = load;
        }
    }

    fn levels(&self) -> &[f64] {
        &self.r.levels
    }

    fn action_kind(&self) -> ActionKind {
        self.r.kind
    }

    fn step(&mut self, actions: &[usize]) -> Result<Report<'_>, StepError> {
        if self.over {
            return Err(StepError::Done);
        }
        check_actions(&self.ids, self.r.levels.len(), actions)?;
        let n = self.jobs.len();
        let before = self.now;
        self.acted.clone_from(&self.ids);
        self.rewards.clear();
        self.terminated.clear();
        self.terminated.resize(n, false);
        // 1. Allocate.
        let mut finish = vec![f64::NAN; n];
        let mut steps = vec![0.0; n];
        if self.recording {
            // A round with no job (a jump to the next arrival) is recorded as one.
            self.round = Some(serde_json::json!({"jobs": n, "running": []}));
        }
        if n > 0 {
            self.fill_input(actions);
            self.mechanism.allocate(&self.input, &mut self.alloc);
            self.turn = self.alloc.turn;
            if !self.alloc.budgets.is_empty() && self.alloc.budgets.len() == n {
                for (j, b) in self.jobs.iter_mut().zip(&self.alloc.budgets) {
                    j.budget = *b;
                }
            }
            let rs = self.r.file.env.round_seconds;
            let mut held = vec![0u32; n];
            let mut ty = vec![usize::MAX; n];
            for (c, owner) in self.alloc.owners.iter().enumerate() {
                if let Some(i) = *owner {
                    held[i] += 1;
                    ty[i] = self.r.gpu_types[c];
                }
            }
            for i in 0..n {
                let j = &self.jobs[i];
                if held[i] == 0 {
                    continue;
                }
                let tput = self.tput(j.kind, ty[i]);
                if tput <= 0.0 || held[i] < j.scale {
                    continue;
                }
                let s = (tput * rs).floor().min(j.left);
                steps[i] = s;
                finish[i] = self.now + s / tput;
            }
            if self.recording {
                let running: Vec<serde_json::Value> = (0..n)
                    .filter(|&i| held[i] > 0)
                    .map(|i| {
                        serde_json::json!({"job": self.agent_name(self.ids[i]), "type": self.types[ty[i]],
                                           "gpus": held[i], "steps": steps[i]})
                    })
                    .collect();
                self.round = Some(serde_json::json!({"jobs": n, "running": running}));
            }
        }
        // 2. Run the round, or jump to the next arrival.
        let end = finish.iter().copied().filter(|f| f.is_finite()).fold(f64::NEG_INFINITY, f64::max);
        if end.is_finite() {
            if let Some(prev) = self.round_end {
                self.round_start = prev;
            }
            self.round_end = Some(end);
            for i in 0..n {
                if finish[i].is_finite() {
                    self.busy += (finish[i] - self.round_start) * f64::from(self.jobs[i].scale);
                    self.jobs[i].left -= steps[i];
                }
            }
            self.now = end;
            self.idle_at_same_time = 0;
        } else if let Some(next) = self.pending.as_ref().map(|j| j.arrival) {
            self.now = next;
            self.idle_at_same_time = 0;
        } else {
            self.idle_at_same_time += 1;
        }
        // Rewards: minus the hours each job spent in the system this round.
        for i in 0..n {
            let left_at = if self.jobs[i].left <= 0.0 && finish[i].is_finite() {
                finish[i]
            } else {
                self.now
            };
            self.rewards.push(-(left_at - before) / 3600.0);
        }
        if self.r.file.env.reward == config::GavelReward::Welfare {
            let shared = self.rewards.iter().sum::<f64>() / self.r.gpu_types.len() as f64;
            self.rewards.fill(shared);
        }
        // Finished jobs leave.
        let (lo, hi) = self.r.window;
        let mut k = 0;
        for i in 0..n {
            if self.jobs[k].left <= 0.0 && finish[i].is_finite() {
                let j = self.jobs.remove(k);
                self.ids.remove(k);
                self.jct[j.id] = finish[i] - j.arrival;
                if (lo..hi).contains(&(j.id as u64)) {
                    self.window_left -= 1;
                }
                self.terminated[i] = true;
                self.dirty = true;
            } else {
                k += 1;
            }
        }
        if let Some(serde_json::Value::Object(r)) = self.round.as_mut().filter(|_| self.recording) {
            r.insert("start_h".into(), (before / 3600.0).into());
            r.insert("end_h".into(), (self.now / 3600.0).into());
        }
        self.rounds += 1;
        self.admit();
        let drained = self.jobs.is_empty() && self.pending.is_none();
        if self.window_left == 0 || drained {
            self.over = true;
        } else if self.rounds >= self.r.file.env.max_rounds || self.idle_at_same_time > 3 {
            // A mechanism that places nothing with nothing left to arrive would loop forever.
            self.over = true;
            self.truncated = true;
        }
        Ok(Report {
            agents: &self.acted,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: self.truncated,
        })
    }

    fn done(&self) -> bool {
        self.over
    }

    fn set_recording(&mut self, on: bool) {
        self.recording = on;
    }

    /// Only a safety cap bounds an episode (its jobs decide when it ends).
    fn episode_rounds(&self) -> Option<u32> {
        None
    }

    /// The round just played (with `set_recording(true)`): its start and end in hours, the
    /// jobs present and, per job that held GPUs, their type, how many and the steps it ran (0
    /// when it held fewer than its scale factor needs).
    fn round_record(&self) -> Option<serde_json::Value> {
        self.round.clone().filter(|_| self.recording)
    }

    fn keeps_round_records(&self) -> bool {
        true
    }

    /// `env.max_rounds`: the cap an episode stops at if its jobs have not all finished.
    fn max_rounds(&self) -> Option<u32> {
        u32::try_from(self.r.file.env.max_rounds).ok()
    }

    fn metrics(&self) -> &'static [WorldMetric] {
        METRICS
    }

    fn figures(&self) -> Figures {
        self.compute_figures()
    }

    fn fork(&self) -> Box<dyn World> {
        Box::new(GavelWorld::new((*self.r).clone()))
    }

    fn config(&self) -> toml::Table {
        let mut file = self.r.file.clone();
        file.learner = None;
        file.train = None;
        toml::Table::try_from(&file).expect("a Gavel config serialises")
    }

    fn mechanism(&self) -> Option<String> {
        Some(self.r.file.mechanism.name.clone())
    }

    fn reads_actions(&self) -> bool {
        scheduler::registry::reads_actions(&self.r.file.mechanism.name)
    }

    fn shares_reward(&self) -> bool {
        self.r.file.env.reward == config::GavelReward::Welfare
    }

    /// A trace replays the same jobs on every seed, and no mechanism here draws from the
    /// episode's seed (Gavel's agnostic policies draw from `mechanism.gavel_seed`): only
    /// generated jobs vary. Weighted-random leftovers and auction ties do draw from it.
    fn varies_with_seed(&self) -> bool {
        matches!(self.r.jobs, Jobs::Generated { .. }) || self.mechanism.needs().contains(&scheduler::Need::Draws)
    }
}

//! Gavel's scheduler as mechanisms: its policies ([`policy`]) and its round mechanism, which
//! turns a policy's allocation into placements round by round (Narayanan et al., OSDI 2020;
//! the simulator of `stanford-futuredata/gavel` at commit c4fa40097339, whose numbers on its
//! own traces `env::worlds::gavel` is checked against).
//!
//! The agents are jobs ([`crate::Jobs`]: ids across rounds, gang sizes, remaining steps,
//! ages, the clock), the accelerators GPUs of a few types (`RoundInput::types`), the rates
//! steps per round. Each round, as Gavel's simulator does it:
//! 1. the previous round's placements are accounted: each job's time on its type grows by
//!    its finish time minus the start of the round (Gavel measures it from the end of the last
//!    round that ran jobs, so an idle gap counts too);
//! 2. finished jobs leave, arrived ones join (each starting with half a round on every type,
//!    Gavel's prior); either asks for a new allocation;
//! 3. when asked for one and 1,920 s have passed since the last (or none was ever made, or
//!    nothing can run without one), the time received since then is turned into a deficit per
//!    job and type, the clock of received time restarts, and the policy computes `X` afresh;
//! 4. priorities: `X[j][k]` over the share of type-k time j has received since then (jobs
//!    without an allocation get 0, a FIFO never places a job of priority 0);
//! 5. per type, in Gavel's order (v100, p100, k80 for aware policies; shuffled each round by
//!    Python's generator seeded `seed + 5` for agnostic ones), jobs by decreasing (priority,
//!    deficit, share) take the type's free GPUs if their whole gang fits; a job placed again
//!    keeps its GPUs (its lease). A job that arrived after the last allocation holds a place
//!    in that order but does not run until an allocation includes it (as in Gavel).
//!
//! A placed job runs `floor(rate)` steps in the round, or what it has left, and finishes when
//! they are done. Switching GPUs costs nothing (Gavel's simulator charges no migration).

pub mod policy;
pub mod pyrandom;
pub mod solve;

use crate::input::{Need, RoundInput};
use crate::{Allocation, Mechanism};
use policy::{Kind, Policy, Snapshot};
use pyrandom::PyRandom;
use std::collections::HashMap;

/// Seconds that must pass between two allocations (Gavel's `minimum_time_between_allocation_resets`).
pub const RECOMPUTE_SECONDS: f64 = 1920.0;

/// A job the mechanism tracks.
#[derive(Clone, Debug)]
struct Job {
    id: u64,
    /// Seconds on each type since the last allocation (starts at half a round).
    time: Vec<f64>,
    /// Per type: time it should have received minus time received, summed over allocations.
    deficit: Vec<f64>,
    priority: Vec<f64>,
}

/// A job placed in the round just allocated.
#[derive(Clone, Copy, Debug)]
struct Placed {
    id: u64,
    ty: usize,
    finish: f64,
}

/// Gavel's scheduler: one policy and the round mechanism's state.
#[derive(Clone, Debug)]
pub struct Gavel {
    policy: Policy,
    seed: u64,
    shuffler: PyRandom,
    /// In arrival order (Gavel's priority dicts keep insertion order).
    jobs: Vec<Job>,
    /// Job id -> the allocation computed last (per type), for the jobs present then.
    allocation: HashMap<u64, Vec<f64>>,
    worker_time: Vec<f64>,
    last_reset: f64,
    need_update: bool,
    placed: Vec<Placed>,
    round_start: f64,
    round_end: Option<f64>,
    last_clock: Option<f64>,
    /// Job id -> the GPUs it ran on last round.
    leases: HashMap<u64, Vec<usize>>,
    stats: Stats,
    // Scratch.
    entries: Vec<(usize, usize, f64, f64, f64)>,
}

/// What the mechanism has done this episode.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Rounds allocated.
    pub rounds: u64,
    /// Allocations computed.
    pub allocations: u64,
    /// Conic programs solved, and of those not reported optimal.
    pub solves: u64,
    /// Solves that did not report an optimal point (their last iterate was used).
    pub solver_failures: u64,
    /// Seconds spent computing allocations.
    pub policy_seconds: f64,
}

impl Gavel {
    /// Gavel's scheduler under `kind`, its random draws those of Gavel's seed `seed` (the
    /// agnostic FIFO's types from `random.Random(seed)`, the agnostic policies' order of types
    /// from `random.Random(seed + 5)`).
    pub fn new(kind: Kind, seed: u64) -> Self {
        Self {
            policy: Policy::new(kind, seed),
            seed,
            shuffler: PyRandom::new(seed + 5),
            jobs: Vec::new(),
            allocation: HashMap::new(),
            worker_time: Vec::new(),
            last_reset: 0.0,
            need_update: false,
            placed: Vec::new(),
            round_start: 0.0,
            round_end: None,
            last_clock: None,
            leases: HashMap::new(),
            stats: Stats::default(),
            entries: Vec::new(),
        }
    }

    /// What it has done since the last reset.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats;
        s.solves = self.policy.solves.count;
        s.solver_failures = self.policy.solves.failed;
        s
    }

    /// The allocation computed last, per job id and type (types in the input's order).
    pub fn allocation(&self) -> &HashMap<u64, Vec<f64>> {
        &self.allocation
    }

    /// 1. The previous round's time per job and type, then departures and arrivals.
    fn account(&mut self, input: &RoundInput, types: usize) {
        let half = input.jobs.round_seconds / 2.0;
        if !self.placed.is_empty() {
            let end = self.placed.iter().map(|p| p.finish).fold(f64::NEG_INFINITY, f64::max);
            if let Some(prev) = self.round_end {
                self.round_start = prev;
            }
            self.round_end = Some(end);
            // Gavel pops its heap latest finish first (ties by job id): the same sums.
            self.placed.sort_by(|a, b| b.finish.total_cmp(&a.finish).then(a.id.cmp(&b.id)));
            for p in &self.placed {
                let ran = p.finish - self.round_start;
                if let Some(job) = self.jobs.iter_mut().find(|j| j.id == p.id) {
                    job.time[p.ty] += ran;
                    self.worker_time[p.ty] += ran;
                }
            }
        }
        let before = self.jobs.len();
        let present: std::collections::HashSet<u64> = input.jobs.ids.iter().copied().collect();
        self.jobs.retain(|j| present.contains(&j.id));
        self.leases.retain(|id, _| present.contains(id));
        self.need_update |= self.jobs.len() != before;
        let known: std::collections::HashSet<u64> = self.jobs.iter().map(|j| j.id).collect();
        for &id in &input.jobs.ids {
            if !known.contains(&id) {
                self.jobs.push(Job {
                    id,
                    time: vec![half; types],
                    deficit: vec![0.0; types],
                    priority: vec![0.0; types],
                });
                self.need_update = true;
            }
        }
    }

    /// 3. Turn the time received since the last allocation into deficits and compute a new one.
    fn reallocate(&mut self, input: &RoundInput, now: f64, counts: &[f64], index: &HashMap<u64, usize>) {
        let half = input.jobs.round_seconds / 2.0;
        let elapsed = now - self.last_reset;
        for (k, w) in self.worker_time.iter_mut().enumerate() {
            *w = 0.0;
            for job in &mut self.jobs {
                let received = job.time[k] - half;
                let should = self.allocation.get(&job.id).map_or(0.0, |a| a[k] * elapsed);
                job.deficit[k] += should - received;
                job.time[k] = half;
                *w += half;
            }
        }
        self.last_reset = now;
        let snapshot = snapshot(input, counts, index);
        let t0 = std::time::Instant::now();
        let x = self.policy.allocate(&snapshot);
        self.stats.policy_seconds += t0.elapsed().as_secs_f64();
        self.stats.allocations += 1;
        let t = counts.len();
        self.allocation = snapshot
            .ids
            .iter()
            .enumerate()
            .map(|(j, &id)| (id, x[j * t..(j + 1) * t].to_vec()))
            .collect();
        self.need_update = false;
    }
}

/// The jobs of `input` as a policy sees them, in id order, over the types with GPUs.
fn snapshot(input: &RoundInput, counts: &[f64], index: &HashMap<u64, usize>) -> Snapshot {
    let t = counts.len();
    let mut ids: Vec<u64> = input.jobs.ids.clone();
    ids.sort_unstable();
    let first: Vec<usize> = (0..t).map(|k| input.types.iter().position(|&x| x == k).unwrap_or(0)).collect();
    let rs = input.jobs.round_seconds;
    let mut s = Snapshot {
        counts: counts.to_vec(),
        name_rank: name_ranks(&input.jobs.type_names),
        ..Snapshot::default()
    };
    for &id in &ids {
        let i = index[&id];
        s.tput.extend(first.iter().map(|&c| input.rate(i, c) / rs));
        s.gangs.push(f64::from(input.jobs.gang(i)));
        s.weights.push(input.weights[i]);
        s.ages.push(input.jobs.ages.get(i).copied().unwrap_or(0.0));
        s.remaining.push(input.jobs.remaining.get(i).copied().unwrap_or(0.0));
    }
    s.ids = ids;
    s
}

/// Each type's position when the names are sorted.
fn name_ranks(names: &[String]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| names[a].cmp(&names[b]));
    let mut rank = vec![0; names.len()];
    for (r, &k) in order.iter().enumerate() {
        rank[k] = r;
    }
    rank
}

impl Mechanism for Gavel {
    fn name(&self) -> &'static str {
        self.policy.kind().name()
    }

    fn needs(&self) -> &'static [Need] {
        &[Need::Rates, Need::Jobs]
    }

    fn reset(&mut self) {
        *self = Gavel::new(self.policy.kind(), self.seed);
    }

    fn stats(&self) -> Option<serde_json::Value> {
        serde_json::to_value(Gavel::stats(self)).ok()
    }

    fn allocate(&mut self, input: &RoundInput, out: &mut Allocation) {
        out.reset(input);
        let n = input.n;
        let t = input.jobs.type_names.len();
        let now = input.jobs.clock;
        let mut counts = vec![0.0; t];
        for &k in &input.types {
            counts[k] += 1.0;
        }
        if self.worker_time.len() != t {
            self.worker_time = vec![0.0; t];
        }
        // Nothing ran last round and time did not move (no arrival to wait for): Gavel forces
        // a new allocation, or the jobs waiting for one would wait forever.
        if self.placed.is_empty() && self.last_clock == Some(now) {
            self.last_reset = 0.0;
        }
        self.account(input, t);
        self.stats.rounds += 1;
        let index: HashMap<u64, usize> = input.jobs.ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let due = now - self.last_reset >= RECOMPUTE_SECONDS || self.last_reset == 0.0;
        if self.need_update && due {
            self.reallocate(input, now, &counts, &index);
        }
        // 4. Priorities.
        let rs = input.jobs.round_seconds;
        let first: Vec<Option<usize>> = (0..t).map(|k| input.types.iter().position(|&x| x == k)).collect();
        for job in &mut self.jobs {
            let i = index[&job.id];
            for k in 0..t {
                let fraction = if self.worker_time[k] == 0.0 {
                    0.0
                } else {
                    job.time[k] / self.worker_time[k]
                };
                let tput = first[k].map_or(0.0, |c| input.rate(i, c));
                job.priority[k] = match self.allocation.get(&job.id) {
                    None => 0.0,
                    Some(a) if a[k] == 0.0 || tput == 0.0 => 0.0,
                    Some(a) if fraction > 0.0 => a[k] / fraction,
                    Some(a) => a[k] * 1e9,
                };
            }
        }
        // 5. Per type in Gavel's order, jobs by decreasing (priority, deficit, share).
        let mut order: Vec<usize> = (0..t).filter(|&k| counts[k] > 0.0).collect();
        if !self.policy.kind().aware() {
            self.shuffler.shuffle(&mut order);
        }
        let entries = &mut self.entries;
        entries.clear();
        for &k in &order {
            let from = entries.len();
            for (p, job) in self.jobs.iter().enumerate() {
                let share = self.allocation.get(&job.id).map_or(0.0, |a| a[k]);
                entries.push((p, k, job.priority[k], job.deficit[k], share));
            }
            // Stable: equal keys keep arrival order, as Python's sorted(reverse=True) does.
            entries[from..].sort_by(|a, b| (b.2, b.3, b.4).partial_cmp(&(a.2, a.3, a.4)).expect("finite keys"));
        }
        let mut left = counts.clone();
        let mut scheduled = vec![false; self.jobs.len()];
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for &(p, k, priority, _, _) in entries.iter() {
            let job = &self.jobs[p];
            let i = index[&job.id];
            let gang = f64::from(input.jobs.gang(i));
            let tput = first[k].map_or(0.0, |c| input.rate(i, c));
            if left[k] == 0.0 || scheduled[p] || tput <= 0.0 || (self.policy.kind().fifo() && priority <= 0.0) || gang > left[k] {
                continue;
            }
            left[k] -= gang;
            scheduled[p] = true;
            if self.allocation.contains_key(&job.id) {
                runs.push((i, k));
            }
        }
        // Placement: leases first (a job on the same type keeps its GPUs), then free GPUs.
        runs.sort_by_key(|&(i, _)| std::cmp::Reverse(input.jobs.gang(i)));
        let mut free: Vec<bool> = vec![true; input.m];
        let mut kept = vec![false; runs.len()];
        for (r, &(i, k)) in runs.iter().enumerate() {
            if let Some(gpus) = self.leases.get(&input.jobs.ids[i]) {
                if gpus.len() == input.jobs.gang(i) as usize && gpus.iter().all(|&c| input.types[c] == k && free[c]) {
                    for &c in gpus {
                        free[c] = false;
                        out.owners[c] = Some(i);
                    }
                    kept[r] = true;
                }
            }
        }
        self.placed.clear();
        for (r, &(i, k)) in runs.iter().enumerate() {
            let id = input.jobs.ids[i];
            if !kept[r] {
                let gpus: Vec<usize> = (0..input.m)
                    .filter(|&c| free[c] && input.types[c] == k)
                    .take(input.jobs.gang(i) as usize)
                    .collect();
                for &c in &gpus {
                    free[c] = false;
                    out.owners[c] = Some(i);
                }
                self.leases.insert(id, gpus);
            }
            let c = first[k].expect("a placed type has GPUs");
            let rate = input.rate(i, c);
            let remaining = input.jobs.remaining.get(i).copied().unwrap_or(f64::INFINITY);
            let steps = rate.floor().min(remaining);
            self.placed.push(Placed {
                id,
                ty: k,
                finish: now + steps / (rate / rs),
            });
        }
        for (id, gpus) in self.leases.iter_mut() {
            if !runs.iter().any(|&(i, _)| input.jobs.ids[i] == *id) {
                gpus.clear();
            }
        }
        self.last_clock = Some(now);
        out.turn = (input.turn + 1) % n.max(1);
    }
}

/// Whether `name` is one of Gavel's policies.
pub fn is_gavel(name: &str) -> bool {
    Kind::from_name(name).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Jobs;

    /// `n` single-GPU jobs (ids 0..n) on `gpus` GPUs of one type `v100`, `rate` steps per round.
    fn round(n: usize, gpus: usize, rate: f64, clock: f64, remaining: f64) -> RoundInput {
        let mut r = RoundInput::from_demands(&vec![remaining; n], &vec![vec![rate; gpus]; n]);
        r.types = vec![0; gpus];
        r.jobs = Jobs {
            ids: (0..n as u64).collect(),
            gangs: Vec::new(),
            remaining: vec![remaining; n],
            ages: vec![clock; n],
            clock,
            round_seconds: 360.0,
            type_names: vec!["v100".into()],
        };
        r
    }

    #[test]
    fn max_min_fairness_time_shares_one_gpu_between_two_jobs() {
        // Two equal jobs, one GPU: X = 1/2 each. Round 1: both priority 1/2 / (180/360) = 1,
        // job 0 first (arrival order). Round 2: job 0 has had 180 + 360 of 900 s, job 1 180:
        // job 1 runs. They alternate.
        let mut g = Gavel::new(Kind::MaxMinFairness, 0);
        let mut owners = Vec::new();
        let mut clock = 0.0;
        for _ in 0..4 {
            let out = crate::run(&mut g, &round(2, 1, 3600.0, clock, 1e6));
            owners.push(out.owners[0]);
            clock += 360.0;
        }
        assert_eq!(owners, vec![Some(0), Some(1), Some(0), Some(1)]);
        let x = &g.allocation()[&0];
        assert!((x[0] - 0.5).abs() < 1e-6, "{x:?}");
    }

    #[test]
    fn a_job_arriving_between_allocations_waits_for_the_next() {
        // Job 0 alone from t = 0. Job 1 arrives at 360: the allocation made at t = 0 leaves
        // Gavel's last reset time at 0, which counts as "never", so job 1 is allocated at once.
        // Job 2 arrives at 720: the next allocation is due 1,920 s after 360, so it waits
        // (though a GPU is idle) until then.
        let mut g = Gavel::new(Kind::MaxMinFairnessPerf, 0);
        let out = crate::run(&mut g, &round(1, 3, 3600.0, 0.0, 1e6));
        assert_eq!(out.owners, vec![Some(0), None, None]);
        let out = crate::run(&mut g, &round(2, 3, 3600.0, 360.0, 1e6));
        assert_eq!(out.owners, vec![Some(0), Some(1), None]);
        let mut clock = 720.0;
        while clock < 360.0 + RECOMPUTE_SECONDS {
            let out = crate::run(&mut g, &round(3, 3, 3600.0, clock, 1e6));
            assert_eq!(out.owners, vec![Some(0), Some(1), None], "at {clock}");
            clock += 360.0;
        }
        let out = crate::run(&mut g, &round(3, 3, 3600.0, clock, 1e6));
        assert_eq!(out.owners, vec![Some(0), Some(1), Some(2)], "at {clock}: leases kept, job 2 placed");
        assert_eq!(g.stats().allocations, 3);
    }

    #[test]
    fn finish_time_is_the_steps_over_the_rate() {
        // 100 steps left at 3600 steps per round (10 per second): done 10 s into the round.
        let mut g = Gavel::new(Kind::FifoPerf, 0);
        crate::run(&mut g, &round(1, 1, 3600.0, 720.0, 100.0));
        assert_eq!(g.placed.len(), 1);
        assert!((g.placed[0].finish - 730.0).abs() < 1e-9);
    }
}

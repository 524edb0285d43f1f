//! Gavel's policies: from a snapshot of the jobs present, the share of wall time `X[j][k]`
//! each job should spend on each GPU type (Gavel's `policies/*.py`, as its simulator at commit
//! c4fa40097339 runs them). A policy never touches the simulation; [`super::Gavel`] turns `X`
//! into placements round by round.

use super::pyrandom::PyRandom;
use super::solve::{self, Shape};
use std::collections::BTreeMap;

/// Which policy computes the allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Every job an equal share of every type (the reference of finish-time fairness).
    Isolated,
    /// Arrival order, one job per GPU (Gavel's heterogeneity-agnostic FIFO, including the way
    /// its code picks a type: see [`Fifo`]).
    Fifo,
    /// Arrival order, each job on the fastest type with a free GPU.
    FifoPerf,
    /// Least attained service: max-min fairness over jobs, every type counted the same.
    MaxMinFairness,
    /// Heterogeneity-aware max-min fairness (Gavel's LAS): each job's throughput under `X`
    /// normalised by its throughput under the agnostic allocation.
    MaxMinFairnessPerf,
    /// Finish-time fairness (Themis's objective), every type counted the same.
    FinishTimeFairness,
    /// Heterogeneity-aware finish-time fairness.
    FinishTimeFairnessPerf,
    /// Maximise the sum of throughputs (an LP).
    MaxSumThroughputPerf,
}

impl Kind {
    /// Every policy with its registry name (Gavel's own).
    pub const ALL: [(Kind, &'static str); 8] = [
        (Kind::Isolated, "isolated"),
        (Kind::Fifo, "fifo"),
        (Kind::FifoPerf, "fifo_perf"),
        (Kind::MaxMinFairness, "max_min_fairness"),
        (Kind::MaxMinFairnessPerf, "max_min_fairness_perf"),
        (Kind::FinishTimeFairness, "finish_time_fairness"),
        (Kind::FinishTimeFairnessPerf, "finish_time_fairness_perf"),
        (Kind::MaxSumThroughputPerf, "max_sum_throughput_perf"),
    ];

    /// The registry name.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .expect("every kind is listed")
    }

    /// The policy a name spells.
    pub fn from_name(name: &str) -> Option<Kind> {
        Self::ALL.iter().find(|(_, n)| *n == name).map(|(k, _)| *k)
    }

    /// Whether it sees the throughput table (Gavel's `_Perf` policies). The agnostic ones also
    /// visit the GPU types in a shuffled order each round, as Gavel does.
    pub fn aware(self) -> bool {
        matches!(
            self,
            Kind::FifoPerf | Kind::MaxMinFairnessPerf | Kind::FinishTimeFairnessPerf | Kind::MaxSumThroughputPerf
        )
    }

    /// Whether it is a FIFO: a job whose priority on a type is 0 is not placed there.
    pub fn fifo(self) -> bool {
        matches!(self, Kind::Fifo | Kind::FifoPerf)
    }
}

/// The jobs present when the allocation is computed, in job-id order (Gavel's `flatten`).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Job ids, ascending.
    pub ids: Vec<u64>,
    /// Steps per second of job j on type k, `[j * t + k]` (types with GPUs only).
    pub tput: Vec<f64>,
    /// GPUs each job runs on at once.
    pub gangs: Vec<f64>,
    /// Priority weights.
    pub weights: Vec<f64>,
    /// Seconds since arrival.
    pub ages: Vec<f64>,
    /// Steps left.
    pub remaining: Vec<f64>,
    /// GPUs per type.
    pub counts: Vec<f64>,
    /// Each type's position in name order (Gavel's `cluster_spec` registers types sorted by
    /// name, and FIFO walks them in that order).
    pub name_rank: Vec<usize>,
}

impl Snapshot {
    fn shape(&self) -> Shape {
        Shape {
            n: self.ids.len(),
            t: self.counts.len(),
        }
    }
}

/// What computing an allocation cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Solves {
    /// Conic programs solved.
    pub count: u64,
    /// Of those, solves that did not report an optimal point.
    pub failed: u64,
}

/// The agnostic max-min allocation every aware fairness policy normalises by (Gavel's
/// `MaxMinFairnessPolicy`: throughputs all 1, coefficient `gang / weight`).
fn agnostic_max_min(s: &Snapshot, solves: &mut Solves, memo: &mut Memo) -> Vec<f64> {
    let sh = s.shape();
    // Alike jobs (one GPU each, one weight): the program depends only on how many there are
    // and the counts, and the solver is deterministic, so a program solved before is
    // answered from the memo, bit for bit as a new solve would.
    let key = (s.gangs.iter().all(|&g| g == 1.0) && s.weights.iter().all(|&w| w == s.weights[0])).then(|| {
        let mut k = vec![sh.n as u64, s.weights[0].to_bits()];
        k.extend(s.counts.iter().map(|c| c.to_bits()));
        k
    });
    if let Some(x) = key.as_ref().and_then(|k| memo.get(k)) {
        return x.clone();
    }
    let c: Vec<f64> = (0..sh.n * sh.t).map(|x| s.gangs[x / sh.t] / s.weights[x / sh.t]).collect();
    let out = solve::max_min(sh, &c, &s.gangs, &s.counts);
    solves.count += 1;
    solves.failed += u64::from(!out.optimal);
    if let Some(k) = key {
        if memo.len() >= MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(k, out.x.clone());
    }
    out.x
}

/// Agnostic allocations of alike jobs, by (jobs, weight, counts).
type Memo = std::collections::HashMap<Vec<u64>, Vec<f64>>;

/// Programs the memo keeps (a paper-scale run sees a few hundred).
const MEMO_ENTRIES: usize = 4096;

/// Each job's throughput under allocation `x` with throughputs `tput`.
fn throughput_under(sh: Shape, tput: &[f64], x: &[f64]) -> Vec<f64> {
    (0..sh.n)
        .map(|j| (0..sh.t).map(|k| tput[j * sh.t + k] * x[j * sh.t + k]).sum())
        .collect()
}

/// Gavel's FIFO, with the state it keeps between calls (the agnostic one keeps its jobs'
/// types; the aware one starts afresh each time).
///
/// Reproduced as Gavel's code runs, which differs from what its comments say: the agnostic
/// FIFO draws a random index among the types with room (`randrange`) but then places the job
/// on the *last* type of its list (a loop variable left over), and removes the drawn type when
/// the placed one fills up. Jobs therefore crowd onto one type whose count can go negative,
/// and the others sit idle (Gavel's FIFO loses to everything on `static_n50_s0`). Kept so that
/// Gavel's numbers can be reproduced; the aware FIFO picks the fastest type as documented.
#[derive(Clone, Debug)]
pub struct Fifo {
    /// Job id -> type (its position in the snapshot's types).
    placed: BTreeMap<u64, usize>,
    rng: PyRandom,
}

impl Fifo {
    /// A FIFO whose random draws replay Python's `random.Random(seed)`.
    pub fn new(seed: u64) -> Self {
        Self {
            placed: BTreeMap::new(),
            rng: PyRandom::new(seed),
        }
    }

    fn allocate(&mut self, s: &Snapshot, aware: bool) -> Vec<f64> {
        let sh = s.shape();
        // Types in name order, as Gavel's cluster_spec dict holds them.
        let mut by_name: Vec<usize> = (0..sh.t).collect();
        by_name.sort_by_key(|&k| s.name_rank[k]);
        let mut avail: Vec<f64> = s.counts.clone();
        let row = |id: u64| s.ids.binary_search(&id).ok();
        if aware {
            self.placed.clear();
        }
        let mut queue: std::collections::VecDeque<usize> = (0..sh.n).filter(|&j| !self.placed.contains_key(&s.ids[j])).collect();
        let scheduled: Vec<(u64, usize)> = self.placed.iter().map(|(&id, &k)| (id, k)).collect();
        for (id, k) in scheduled {
            match row(id) {
                // Finished: the first queued job may take its place, if it fits and can run.
                None => {
                    if let Some(&j) = queue.front() {
                        if s.gangs[j] <= avail[k] && s.tput[j * sh.t + k] > 0.0 {
                            queue.pop_front();
                            self.placed.insert(s.ids[j], k);
                            avail[k] -= s.gangs[j];
                        }
                    }
                    self.placed.remove(&id);
                }
                Some(j) => avail[k] -= s.gangs[j],
            }
        }
        let mut types: Vec<usize> = by_name.iter().copied().filter(|&k| avail[k] > 0.0).collect();
        while !types.is_empty() {
            let Some(j) = queue.pop_front() else { break };
            let fits: Vec<usize> = (0..types.len()).filter(|&p| avail[types[p]] >= s.gangs[j]).collect();
            if fits.is_empty() {
                break;
            }
            let (k, drawn) = if aware {
                // The fastest type with room (first of the fastest, in name order).
                let mut best = (usize::MAX, -1.0);
                for (p, &q) in fits.iter().enumerate() {
                    let t = s.tput[j * sh.t + types[q]];
                    if t > best.1 {
                        best = (p, t);
                    }
                }
                (types[fits[best.0]], best.0)
            } else {
                let drawn = self.rng.randrange(fits.len());
                (*types.last().expect("not empty"), drawn)
            };
            if s.tput[j * sh.t + k] > 0.0 {
                self.placed.insert(s.ids[j], k);
                avail[k] -= s.gangs[j];
                if avail[k] == 0.0 {
                    types.remove(fits[drawn]);
                }
            }
        }
        let mut x = vec![0.0; sh.n * sh.t];
        for (&id, &k) in &self.placed {
            if let Some(j) = row(id) {
                x[j * sh.t + k] = 1.0;
            }
        }
        x
    }
}

/// A policy with whatever state it keeps between allocations.
#[derive(Clone, Debug)]
pub struct Policy {
    kind: Kind,
    fifo: Fifo,
    memo: Memo,
    /// Programs solved so far.
    pub solves: Solves,
}

impl Policy {
    /// A fresh policy; `seed` seeds the agnostic FIFO's draws (Gavel's policy seed).
    pub fn new(kind: Kind, seed: u64) -> Self {
        Self {
            kind,
            fifo: Fifo::new(seed),
            memo: Memo::new(),
            solves: Solves::default(),
        }
    }

    /// Which policy.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The allocation `X` (`n x t`, row-major, every entry in [0, 1]) for the snapshot.
    pub fn allocate(&mut self, s: &Snapshot) -> Vec<f64> {
        let sh = s.shape();
        if sh.n == 0 {
            return Vec::new();
        }
        match self.kind {
            Kind::Isolated => isolated(s),
            Kind::Fifo => self.fifo.allocate(s, false),
            Kind::FifoPerf => self.fifo.allocate(s, true),
            Kind::MaxMinFairness => agnostic_max_min(s, &mut self.solves, &mut self.memo),
            Kind::MaxMinFairnessPerf => {
                let iso = throughput_under(sh, &s.tput, &agnostic_max_min(s, &mut self.solves, &mut self.memo));
                let c: Vec<f64> = (0..sh.n * sh.t)
                    .map(|x| {
                        let j = x / sh.t;
                        s.tput[x] * s.gangs[j] / (s.weights[j] * iso[j])
                    })
                    .collect();
                let out = solve::max_min(sh, &finite(c), &s.gangs, &s.counts);
                self.count(out.optimal);
                out.x
            }
            Kind::FinishTimeFairness | Kind::FinishTimeFairnessPerf => {
                let ones = vec![1.0; sh.n * sh.t];
                let tput = if self.kind == Kind::FinishTimeFairness { &ones } else { &s.tput };
                let iso = throughput_under(sh, tput, &agnostic_max_min(s, &mut self.solves, &mut self.memo));
                let isolated_time: Vec<f64> = (0..sh.n).map(|j| s.ages[j] + s.remaining[j] / iso[j]).collect();
                let out = solve::finish_time(sh, tput, &s.ages, &s.remaining, &finite(isolated_time), &s.gangs, &s.counts);
                self.count(out.optimal);
                out.x
            }
            Kind::MaxSumThroughputPerf => {
                let out = solve::max_sum(sh, &s.tput, &s.gangs, &s.counts);
                self.count(out.optimal);
                out.x
            }
        }
    }

    fn count(&mut self, optimal: bool) {
        self.solves.count += 1;
        self.solves.failed += u64::from(!optimal);
    }
}

/// Coefficients past f64's range (a job the agnostic allocation gave nothing) as the largest
/// finite number, so the program stays well defined.
fn finite(mut v: Vec<f64>) -> Vec<f64> {
    for x in &mut v {
        if !x.is_finite() {
            *x = f64::MAX.sqrt();
        }
    }
    v
}

/// Gavel's `IsolatedPolicy`: `count_k / n / gang_j`, rows scaled so the largest sums to 1.
fn isolated(s: &Snapshot) -> Vec<f64> {
    let sh = s.shape();
    let mut x: Vec<f64> = (0..sh.n * sh.t)
        .map(|c| s.counts[c % sh.t] / sh.n as f64 / s.gangs[c / sh.t])
        .collect();
    let max_row = x.chunks_exact(sh.t).map(|r| r.iter().sum::<f64>()).fold(0.0, f64::max);
    if max_row > 0.0 {
        for v in &mut x {
            *v /= max_row;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` single-GPU jobs on types named v100, p100, k80 (4 GPUs each), with throughputs.
    fn snapshot(tput: &[[f64; 3]]) -> Snapshot {
        let n = tput.len();
        Snapshot {
            ids: (0..n as u64).collect(),
            tput: tput.concat(),
            gangs: vec![1.0; n],
            weights: vec![1.0; n],
            ages: vec![0.0; n],
            remaining: vec![1000.0; n],
            counts: vec![4.0; 3],
            // Names sorted: k80 (2), p100 (1), v100 (0).
            name_rank: vec![2, 1, 0],
        }
    }

    #[test]
    fn isolated_gives_every_job_a_third_of_each_type_on_a_4_4_4_cluster() {
        let s = snapshot(&[[3.0, 2.0, 1.0]; 20]);
        for v in isolated(&s) {
            assert!((v - 1.0 / 3.0).abs() < 1e-12);
        }
    }

    #[test]
    fn a_memoised_agnostic_allocation_is_the_one_a_new_solve_gives() {
        let s = Snapshot {
            counts: vec![4.0, 2.0, 1.0],
            ..snapshot(&[[3.0, 2.0, 1.0]; 5])
        };
        let (mut solves, mut memo) = (Solves::default(), Memo::new());
        let first = agnostic_max_min(&s, &mut solves, &mut memo);
        let again = agnostic_max_min(&s, &mut solves, &mut memo);
        assert_eq!(first, again);
        assert_eq!(solves.count, 1, "the second came from the memo");
        let fresh = agnostic_max_min(&s, &mut Solves::default(), &mut Memo::new());
        assert_eq!(first, fresh);
        // Another weight is another program.
        let heavy = Snapshot {
            weights: vec![2.0; 5],
            ..s.clone()
        };
        agnostic_max_min(&heavy, &mut solves, &mut memo);
        assert_eq!(solves.count, 2);
    }

    #[test]
    fn agnostic_fifo_crowds_onto_the_last_type_in_name_order() {
        // Types in name order: k80, p100, v100; every job goes to v100 (the last) until it is
        // full, whatever the draw; then the drawn type leaves the list.
        let s = snapshot(&[[3.0, 2.0, 1.0]; 6]);
        let x = Fifo::new(0).allocate(&s, false);
        for j in 0..4 {
            assert_eq!(&x[j * 3..j * 3 + 3], &[1.0, 0.0, 0.0], "job {j} on v100");
        }
    }

    #[test]
    fn aware_fifo_takes_the_fastest_type_with_room() {
        // Job throughputs favour p100 for the first jobs: 4 go there, the fifth to v100.
        let s = snapshot(&[[2.0, 3.0, 1.0]; 5]);
        let x = Fifo::new(0).allocate(&s, true);
        assert_eq!(&x[..3], &[0.0, 1.0, 0.0]);
        assert_eq!(&x[12..15], &[1.0, 0.0, 0.0]);
    }

    #[test]
    fn aware_max_min_normalises_by_the_agnostic_allocation() {
        // Two jobs, one GPU of each of two types; job 0 runs at 10 and 1 steps/s, job 1 at 2
        // and 1. The agnostic allocation splits everything in halves: isolated throughputs
        // 5.5 and 1.5. Normalised, job 0 gets 1.818 a + 0.182 (1 - a) from a share a of type
        // 0 (and 1 - a of type 1), job 1 1.333 (1 - a) + 0.667 a: equal, at 1, for a = 1/2.
        let s = Snapshot {
            ids: vec![0, 1],
            tput: vec![10.0, 1.0, 2.0, 1.0],
            gangs: vec![1.0, 1.0],
            weights: vec![1.0, 1.0],
            ages: vec![0.0, 0.0],
            remaining: vec![100.0, 100.0],
            counts: vec![1.0, 1.0],
            name_rank: vec![1, 0],
        };
        let mut p = Policy::new(Kind::MaxMinFairnessPerf, 0);
        let x = p.allocate(&s);
        for v in &x {
            assert!((v - 0.5).abs() < 1e-6, "{x:?}");
        }
        assert_eq!(p.solves.count, 2, "the agnostic allocation, then the aware one");
        // With a second GPU of type 1 there is room to spare: both normalised throughputs rise
        // above 1 together (max-min keeps them equal).
        let wide = Snapshot {
            counts: vec![1.0, 2.0],
            ..s
        };
        let x = Policy::new(Kind::MaxMinFairnessPerf, 0).allocate(&wide);
        let iso = throughput_under(
            wide.shape(),
            &wide.tput,
            &agnostic_max_min(&wide, &mut Solves::default(), &mut Memo::new()),
        );
        let norm = |j: usize| (x[j * 2] * wide.tput[j * 2] + x[j * 2 + 1] * wide.tput[j * 2 + 1]) / iso[j];
        assert!(norm(0) > 1.0 + 1e-3 && (norm(0) - norm(1)).abs() < 1e-5, "{x:?}");
    }
}

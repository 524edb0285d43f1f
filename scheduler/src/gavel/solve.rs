//! Gavel's optimisation policies as conic programs for `clarabel`.
//!
//! Each program is written with the constraint rows cvxpy generates from Gavel's formulation
//! (one nonnegative slack per inequality, the epigraph of a `min` or `max`, `inv_pos` as a
//! three-dimensional second-order cone). Why that matters: these programs have many optimal
//! solutions (max-min fairness fixes only the bottleneck jobs' shares), and an interior-point
//! solver stops near the analytic centre of the optimal face, which is defined by exactly
//! those slacks. Written the same way, clarabel lands where Gavel's ECOS did, so the same jobs
//! get the same shares of each GPU type.

use clarabel::algebra::CscMatrix;
use clarabel::solver::{DefaultSettingsBuilder, DefaultSolver, IPSolver, SolverStatus, SupportedConeT};

/// A problem's shape: `n` jobs, `t` GPU types, the allocation `x[j * t + k]` first among the
/// variables.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Jobs.
    pub n: usize,
    /// GPU types.
    pub t: usize,
}

/// What a solve returned: the allocation (clipped to [0, 1], as Gavel clips it) and whether
/// the solver reported success.
#[derive(Clone, Debug)]
pub struct Solved {
    /// `n x t`, row-major.
    pub x: Vec<f64>,
    /// False when the solver stopped without a (near-)optimal point; `x` is then its last
    /// iterate, clipped, as cvxpy hands back ECOS's.
    pub optimal: bool,
}

/// Rows of `A z + s = b` being assembled: triplets, right-hand side, and the cone list.
struct Rows {
    i: Vec<usize>,
    j: Vec<usize>,
    v: Vec<f64>,
    b: Vec<f64>,
    cones: Vec<SupportedConeT<f64>>,
}

impl Rows {
    fn new() -> Self {
        Self {
            i: Vec::new(),
            j: Vec::new(),
            v: Vec::new(),
            b: Vec::new(),
            cones: Vec::new(),
        }
    }

    /// Start a row with right-hand side `b`; returns its index.
    fn row(&mut self, b: f64) -> usize {
        self.b.push(b);
        self.b.len() - 1
    }

    fn put(&mut self, row: usize, col: usize, v: f64) {
        if v != 0.0 {
            self.i.push(row);
            self.j.push(col);
            self.v.push(v);
        }
    }

    /// Gavel's base constraints (`get_base_constraints`): `x >= 0`, per type
    /// `sum_j gang_j x_jk <= count_k`, per job `sum_k x_jk <= 1`.
    fn base(&mut self, s: Shape, gangs: &[f64], counts: &[f64]) {
        let rows = s.n * s.t + s.t + s.n;
        for c in 0..s.n * s.t {
            let r = self.row(0.0);
            self.put(r, c, -1.0);
        }
        for (k, &count) in counts.iter().enumerate() {
            let r = self.row(count);
            for (j, &g) in gangs.iter().enumerate() {
                self.put(r, j * s.t + k, g);
            }
        }
        for j in 0..s.n {
            let r = self.row(1.0);
            for k in 0..s.t {
                self.put(r, j * s.t + k, 1.0);
            }
        }
        self.cones.push(SupportedConeT::NonnegativeConeT(rows));
    }

    fn solve(self, vars: usize, q: Vec<f64>, s: Shape) -> Solved {
        let m = self.b.len();
        let a = CscMatrix::new_from_triplets(m, vars, self.i, self.j, self.v);
        let p = CscMatrix::<f64>::zeros((vars, vars));
        let settings = DefaultSettingsBuilder::default()
            .verbose(false)
            .build()
            .expect("default settings are valid");
        let mut solver = DefaultSolver::new(&p, &q, &a, &self.b, &self.cones, settings).expect("dimensions are consistent by construction");
        solver.solve();
        let optimal = matches!(solver.solution.status, SolverStatus::Solved | SolverStatus::AlmostSolved);
        let x = solver.solution.x[..s.n * s.t].iter().map(|v| clip(*v)).collect();
        Solved { x, optimal }
    }
}

/// Resolution of an allocation: shares are rounded to this grid. An interior-point solver
/// stops about 1e-9 from the optimum in an arbitrary direction, so two jobs the program treats
/// alike (same throughputs, same weight) get shares differing in the ninth digit, and the round
/// mechanism would order them by that noise; on the grid they tie and go in arrival order.
pub const SHARE_GRID: f64 = 1e-7;

/// `x.clip(min=0).clip(max=1)` on the [`SHARE_GRID`]; a NaN (a failed solve) becomes 0.
fn clip(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        ((v / SHARE_GRID).round() * SHARE_GRID).clamp(0.0, 1.0)
    }
}

/// `maximize min_j sum_k c_jk x_jk` under the base constraints (Gavel's
/// `MaxMinFairnessPolicyWithPerf`: `c` holds the throughputs times the scale factor over the
/// priority weight and the isolated throughput). Variables `[x, t]`, rows `t <= sum_k c_jk
/// x_jk` (cvxpy's epigraph of `min`).
pub fn max_min(s: Shape, c: &[f64], gangs: &[f64], counts: &[f64]) -> Solved {
    let vars = s.n * s.t + 1;
    let tv = s.n * s.t;
    let mut rows = Rows::new();
    rows.base(s, gangs, counts);
    for j in 0..s.n {
        let r = rows.row(0.0);
        for k in 0..s.t {
            rows.put(r, j * s.t + k, -c[j * s.t + k]);
        }
        rows.put(r, tv, 1.0);
    }
    rows.cones.push(SupportedConeT::NonnegativeConeT(s.n));
    let mut q = vec![0.0; vars];
    q[tv] = -1.0;
    rows.solve(vars, q, s)
}

/// `maximize sum_jk c_jk x_jk` under the base constraints (Gavel's `ThroughputSumWithPerf`).
pub fn max_sum(s: Shape, c: &[f64], gangs: &[f64], counts: &[f64]) -> Solved {
    let vars = s.n * s.t;
    let mut rows = Rows::new();
    rows.base(s, gangs, counts);
    let q = c.iter().map(|v| -v).collect();
    rows.solve(vars, q, s)
}

/// Finish-time fairness (Gavel's `FinishTimeFairnessPolicyWithPerf`): minimise the largest
/// `rho_j = (age_j + remaining_j / a_j) / isolated_j`, `a_j = sum_k tput_jk x_jk`, under the
/// base constraints. Variables `[x, u, t]`: `u_j >= 1 / a_j` as the cone
/// `(a_j + u_j, a_j - u_j, 2)` (cvxpy's `inv_pos` through its geometric-mean constraint),
/// `t >= (age_j + remaining_j u_j) / isolated_j` (the epigraph of `maximum`; with one job the
/// objective is its ratio itself, as cvxpy writes it).
pub fn finish_time(s: Shape, tput: &[f64], ages: &[f64], remaining: &[f64], isolated: &[f64], gangs: &[f64], counts: &[f64]) -> Solved {
    let (nt, n) = (s.n * s.t, s.n);
    let u = |j: usize| nt + j;
    let tv = nt + n;
    let epigraph = n > 1;
    let vars = nt + n + usize::from(epigraph);
    let mut rows = Rows::new();
    rows.base(s, gangs, counts);
    let mut q = vec![0.0; vars];
    if epigraph {
        for j in 0..n {
            let r = rows.row(-ages[j] / isolated[j]);
            rows.put(r, tv, -1.0);
            rows.put(r, u(j), remaining[j] / isolated[j]);
        }
        rows.cones.push(SupportedConeT::NonnegativeConeT(n));
        q[tv] = 1.0;
    } else {
        q[u(0)] = remaining[0] / isolated[0];
    }
    for j in 0..n {
        let r0 = rows.row(0.0);
        let r1 = rows.row(0.0);
        let r2 = rows.row(2.0);
        debug_assert_eq!(r2, r1 + 1);
        for k in 0..s.t {
            let a = tput[j * s.t + k];
            rows.put(r0, j * s.t + k, -a);
            rows.put(r1, j * s.t + k, -a);
        }
        rows.put(r0, u(j), -1.0);
        rows.put(r1, u(j), 1.0);
        rows.cones.push(SupportedConeT::SecondOrderConeT(3));
    }
    rows.solve(vars, q, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn max_min_of_two_jobs_on_one_type_splits_the_gpu() {
        // One GPU, two equal jobs: each gets half of it.
        let s = Shape { n: 2, t: 1 };
        let out = max_min(s, &[1.0, 1.0], &[1.0, 1.0], &[1.0]);
        assert!(out.optimal);
        assert!(close(out.x[0], 0.5) && close(out.x[1], 0.5), "{:?}", out.x);
        // A job twice as fast on it needs half the time for the same normalised rate: 1/3, 2/3.
        let out = max_min(s, &[2.0, 1.0], &[1.0, 1.0], &[1.0]);
        assert!(close(out.x[0], 1.0 / 3.0) && close(out.x[1], 2.0 / 3.0), "{:?}", out.x);
    }

    #[test]
    fn degenerate_max_min_lands_on_the_centre() {
        // Three equal jobs, three types of 4 GPUs each, all throughputs 1: every job can have a
        // whole GPU (t* = 1, rows sum to 1); by symmetry the centre splits each row in thirds.
        let s = Shape { n: 3, t: 3 };
        let out = max_min(s, &[1.0; 9], &[1.0; 3], &[4.0; 3]);
        for v in &out.x {
            assert!(close(*v, 1.0 / 3.0), "{:?}", out.x);
        }
    }

    #[test]
    fn max_sum_puts_the_fast_job_on_the_only_gpu() {
        let s = Shape { n: 2, t: 1 };
        let out = max_sum(s, &[3.0, 1.0], &[1.0, 1.0], &[1.0]);
        assert!(close(out.x[0], 1.0) && close(out.x[1], 0.0), "{:?}", out.x);
    }

    #[test]
    fn finish_time_fairness_equalises_the_ratios() {
        // One GPU, two jobs just arrived (age 0), 100 and 300 steps left at 1 step/s, isolated
        // throughput 0.5 each (isolated times 200 and 600). With shares a and 1 - a the ratios
        // are 100 / a / 200 and 300 / (1 - a) / 600: equal at a = 1/2, both 1.
        let s = Shape { n: 2, t: 1 };
        let out = finish_time(s, &[1.0, 1.0], &[0.0, 0.0], &[100.0, 300.0], &[200.0, 600.0], &[1.0, 1.0], &[1.0]);
        assert!(out.optimal);
        assert!(close(out.x[0], 0.5) && close(out.x[1], 0.5), "{:?}", out.x);
        // Alone, a job takes the whole GPU (its time falls with its share).
        let out = finish_time(Shape { n: 1, t: 1 }, &[1.0], &[10.0], &[100.0], &[110.0], &[1.0], &[1.0]);
        assert!(close(out.x[0], 1.0), "{:?}", out.x);
    }
}

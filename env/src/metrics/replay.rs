//! The replays behind the fairness figures (sharing incentive, envy) and the Pareto scan.

use super::Fairness;
use crate::config::{Queues, Service};
use crate::queue::Queue;
use crate::rng::{names, poisson_inv, stream, unit};
use crate::world::{ClusterEnv, IDLE};
use rand::Rng;

/// Inverse-CDF tables of Poisson(lambda) for the few distinct rates of a scenario.
#[derive(Default)]
struct PoissonTables {
    tables: Vec<(u64, Vec<f64>)>,
    deterministic: bool,
}

impl PoissonTables {
    /// A capacity of mean `lambda`: Poisson by inversion of `u`, or `round(lambda)` when the
    /// scenario's service is deterministic (the replays serve like the episode did).
    fn draw(&mut self, lambda: f64, u: f64) -> u64 {
        if self.deterministic {
            return lambda.round() as u64;
        }
        if lambda > 500.0 {
            return poisson_inv(lambda, u);
        }
        let key = lambda.to_bits();
        let k = match self.tables.iter().position(|(b, _)| *b == key) {
            Some(k) => k,
            None => {
                let mut cdf = Vec::new();
                let (mut p, mut acc) = ((-lambda).exp(), 0.0);
                let mut j = 0.0;
                while acc < 1.0 - 1e-15 && cdf.len() < 10_000 {
                    acc += p;
                    cdf.push(acc);
                    j += 1.0;
                    p *= lambda / j;
                }
                self.tables.push((key, cdf));
                self.tables.len() - 1
            }
        };
        let cdf = &self.tables[k].1;
        cdf.partition_point(|&c| c <= u) as u64
    }
}

/// Replay an arrival sequence through a backlog with the given per-round capacities.
fn replay(arrivals: impl Iterator<Item = u64>, capacity: impl Iterator<Item = u64>, cap: u64, deadline: u32, q: &mut Queue) -> u64 {
    q.clear();
    let mut served = 0;
    for (r, (a, s)) in arrivals.zip(capacity).enumerate() {
        let r = r as u32;
        q.push(r, a, cap);
        if deadline != u32::MAX {
            q.expire(r, deadline);
        }
        served += q.serve(r, s).0;
    }
    served
}

impl Fairness {
    pub(super) fn compute(env: &ClusterEnv, throughput: &[f64]) -> Self {
        let (n, m) = (env.n(), env.m());
        let sc = env.scenario();
        let rounds = env.totals().rounds as usize;
        let mu = env.rates();
        let w = crate::config::normalised_weights(&sc.agents.iter().map(|a| a.weight).collect::<Vec<_>>());
        let total_w: f64 = w.iter().sum();
        let arrivals = env.arrivals_log();
        let owners = env.owners_log();
        // Per-queue cap of the replays: the central backlog's, or the agent's total over its
        // per-accelerator queues.
        let cap = match sc.file.env.queues {
            Queues::Central => sc.queue_cap,
            Queues::PerAccelerator => sc.queue_cap.saturating_mul(m as u64),
        };
        let mut tables = PoissonTables {
            tables: Vec::new(),
            deterministic: sc.file.env.service == Service::Deterministic,
        };
        let mut q = Queue::default();

        // Sharing incentive: alone on one pooled server of its weighted share of the cluster.
        let phi = (0..n)
            .map(|i| {
                let share = w[i] / total_w * mu[i * m..(i + 1) * m].iter().sum::<f64>();
                let mut rng = stream(env.seed(), names::EXCLUSIVE, i as u64);
                let caps: Vec<u64> = (0..rounds).map(|_| tables.draw(share, unit(rng.next_u64()))).collect();
                let ex = replay(
                    (0..rounds).map(|r| u64::from(arrivals[r * n + i])),
                    caps.into_iter(),
                    cap,
                    sc.deadline,
                    &mut q,
                ) as f64
                    / rounds.max(1) as f64;
                if ex > 0.0 {
                    throughput[i] / ex
                } else {
                    1.0
                }
            })
            .collect();

        // Envy: i's arrivals on j's allocations, common random numbers per (round, c). For each
        // i, one pass over every round's allocation draws i's capacity on each accelerator once
        // and adds it to its owner's bucket: O(n m) per round for all j at once (it was
        // O(n^2 m): every j filtered the whole allocation again). The sums are of integers in
        // the same order per bucket, so every figure is bit-identical.
        let mut rngs: Vec<_> = (0..m).map(|c| stream(env.seed(), names::REPLAY, c as u64)).collect();
        let uniforms: Vec<f64> = (0..rounds * m).map(|k| unit(rngs[k % m].next_u64())).collect();
        let mut envy = vec![vec![0.0; n]; n];
        // caps[j * rounds + r]: i's capacity on j's round-r allocation.
        let mut caps = vec![0u64; n * rounds];
        for i in 0..n {
            caps.fill(0);
            for r in 0..rounds {
                for c in 0..m {
                    let j = owners[r * m + c];
                    if (j as usize) < n {
                        caps[j as usize * rounds + r] += tables.draw(mu[i * m + c], uniforms[r * m + c]);
                    }
                }
            }
            for j in 0..n {
                let served = replay(
                    (0..rounds).map(|r| u64::from(arrivals[r * n + i])),
                    caps[j * rounds..(j + 1) * rounds].iter().copied(),
                    cap,
                    sc.deadline,
                    &mut q,
                );
                envy[i][j] = served as f64 / rounds.max(1) as f64;
            }
        }
        let mut ef_violations = 0;
        for i in 0..n {
            for j in 0..n {
                if i != j && w[j] * envy[i][i] < w[i] * envy[i][j] - 1e-9 {
                    ef_violations += 1;
                }
            }
        }
        let pareto = pareto_share(env);
        Self {
            phi,
            envy,
            ef_violations,
            pareto,
        }
    }
}

/// Share of rounds where moving one accelerator (from its owner or from idle) to another
/// agent, or swapping two agents' accelerators, makes one strictly better off and nobody worse
/// (values as the mechanism saw them that round): a lower bound on Pareto violations.
fn pareto_share(env: &ClusterEnv) -> f64 {
    let (n, m) = (env.n(), env.m());
    let rounds = env.totals().rounds as usize;
    if rounds == 0 {
        return 0.0;
    }
    let central = env.scenario().file.env.queues == Queues::Central;
    let (mu, max_mu, owners, values) = (env.rates(), env.max_rates(), env.owners_log(), env.value_log());
    const EPS: f64 = 1e-9;
    let mut sums = vec![0.0; n];
    // Each agent's accelerators this round, ascending (CSR: `held[start[i]..start[i + 1]]`):
    // the swap search visits agent i's accelerators only, O(m) per round over all agents,
    // instead of scanning all m for each (c, i) pair. Same candidates in the same order.
    let (mut start, mut held, mut fill) = (vec![0usize; n + 1], vec![0usize; m], vec![0usize; n]);
    let mut bad = 0;
    for r in 0..rounds {
        let own = &owners[r * m..(r + 1) * m];
        start.fill(0);
        for &o in own.iter().filter(|&&o| o != IDLE) {
            start[o as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        fill.copy_from_slice(&start[..n]);
        for (c, &o) in own.iter().enumerate().filter(|(_, &o)| o != IDLE) {
            held[fill[o as usize]] = c;
            fill[o as usize] += 1;
        }
        // Central: v_i(S) = min(Q_i, sum of rates) / max rate; per-accelerator: sum of utilities.
        let gain = |i: usize, c: usize| if central { mu[i * m + c] } else { values[r * n * m + i * m + c] };
        let value = |i: usize, s: f64| if central { values[r * n + i].min(s) / max_mu[i] } else { s };
        sums.fill(0.0);
        for (c, &o) in own.iter().enumerate() {
            if o != IDLE {
                sums[o as usize] += gain(o as usize, c);
            }
        }
        let improves = || {
            for c in 0..m {
                let from = own[c];
                for i in 0..n {
                    if from == i as u32 {
                        continue;
                    }
                    let up = value(i, sums[i] + gain(i, c)) - value(i, sums[i]);
                    if up <= EPS {
                        continue;
                    }
                    // A transfer: the giver (if any) must lose nothing.
                    if from == IDLE {
                        return true;
                    }
                    let j = from as usize;
                    if value(j, sums[j]) - value(j, sums[j] - gain(j, c)) <= EPS {
                        return true;
                    }
                    // A swap: j takes one of i's accelerators in return.
                    for &d in &held[start[i]..start[i + 1]] {
                        let vi = value(i, sums[i] - gain(i, d) + gain(i, c)) - value(i, sums[i]);
                        let vj = value(j, sums[j] - gain(j, c) + gain(j, d)) - value(j, sums[j]);
                        if vi >= -EPS && vj >= -EPS && (vi > EPS || vj > EPS) {
                            return true;
                        }
                    }
                }
            }
            false
        };
        if improves() {
            bad += 1;
        }
    }
    bad as f64 / rounds as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ScenarioFile;
    use crate::policy::{Fixed, Policy};

    /// The envy matrix as it was computed before the one-pass buckets: for every (i, j), every
    /// round filters the whole allocation for j's accelerators.
    fn envy_by_filtering(env: &ClusterEnv) -> Vec<Vec<f64>> {
        let (n, m) = (env.n(), env.m());
        let sc = env.scenario();
        let rounds = env.totals().rounds as usize;
        let (mu, arrivals, owners) = (env.rates(), env.arrivals_log(), env.owners_log());
        let cap = match sc.file.env.queues {
            Queues::Central => sc.queue_cap,
            Queues::PerAccelerator => sc.queue_cap.saturating_mul(m as u64),
        };
        let mut tables = PoissonTables {
            tables: Vec::new(),
            deterministic: sc.file.env.service == Service::Deterministic,
        };
        let mut q = Queue::default();
        let mut rngs: Vec<_> = (0..m).map(|c| stream(env.seed(), names::REPLAY, c as u64)).collect();
        let uniforms: Vec<f64> = (0..rounds * m).map(|k| unit(rngs[k % m].next_u64())).collect();
        let mut envy = vec![vec![0.0; n]; n];
        let mut caps = vec![0u64; rounds];
        for i in 0..n {
            for j in 0..n {
                for r in 0..rounds {
                    caps[r] = (0..m)
                        .filter(|&c| owners[r * m + c] == j as u32)
                        .map(|c| tables.draw(mu[i * m + c], uniforms[r * m + c]))
                        .sum();
                }
                let served = replay(
                    (0..rounds).map(|r| u64::from(arrivals[r * n + i])),
                    caps.iter().copied(),
                    cap,
                    sc.deadline,
                    &mut q,
                );
                envy[i][j] = served as f64 / rounds.max(1) as f64;
            }
        }
        envy
    }

    /// The Pareto scan as it was, every accelerator for every swap. Share of rounds where moving one accelerator (from its owner or from idle) to another
    /// agent, or swapping two agents' accelerators, makes one strictly better off and nobody worse
    /// (values as the mechanism saw them that round): a lower bound on Pareto violations.
    fn pareto_by_scan(env: &ClusterEnv) -> f64 {
        let (n, m) = (env.n(), env.m());
        let rounds = env.totals().rounds as usize;
        if rounds == 0 {
            return 0.0;
        }
        let central = env.scenario().file.env.queues == Queues::Central;
        let (mu, max_mu, owners, values) = (env.rates(), env.max_rates(), env.owners_log(), env.value_log());
        const EPS: f64 = 1e-9;
        let mut sums = vec![0.0; n];
        let mut bad = 0;
        for r in 0..rounds {
            let own = &owners[r * m..(r + 1) * m];
            // Central: v_i(S) = min(Q_i, sum of rates) / max rate; per-accelerator: sum of utilities.
            let gain = |i: usize, c: usize| if central { mu[i * m + c] } else { values[r * n * m + i * m + c] };
            let value = |i: usize, s: f64| if central { values[r * n + i].min(s) / max_mu[i] } else { s };
            sums.fill(0.0);
            for (c, &o) in own.iter().enumerate() {
                if o != IDLE {
                    sums[o as usize] += gain(o as usize, c);
                }
            }
            let improves = || {
                for c in 0..m {
                    let from = own[c];
                    for i in 0..n {
                        if from == i as u32 {
                            continue;
                        }
                        let up = value(i, sums[i] + gain(i, c)) - value(i, sums[i]);
                        if up <= EPS {
                            continue;
                        }
                        // A transfer: the giver (if any) must lose nothing.
                        if from == IDLE {
                            return true;
                        }
                        let j = from as usize;
                        if value(j, sums[j]) - value(j, sums[j] - gain(j, c)) <= EPS {
                            return true;
                        }
                        // A swap: j takes one of i's accelerators in return.
                        for d in 0..m {
                            if own[d] != i as u32 {
                                continue;
                            }
                            let vi = value(i, sums[i] - gain(i, d) + gain(i, c)) - value(i, sums[i]);
                            let vj = value(j, sums[j] - gain(j, c) + gain(j, d)) - value(j, sums[j]);
                            if vi >= -EPS && vj >= -EPS && (vi > EPS || vj > EPS) {
                                return true;
                            }
                        }
                    }
                }
                false
            };
            if improves() {
                bad += 1;
            }
        }
        bad as f64 / rounds as f64
    }

    #[test]
    fn envy_and_pareto_from_one_pass_per_round_are_bit_identical_to_the_full_scans() {
        let mut pareto_seen = false;
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (config, sets) in [
            ("configs/quickstart.toml", vec!["env.rounds=60"]),
            ("configs/thesis/w124-mmpp.toml", vec!["env.rounds=40"]),
            ("configs/thesis-code.toml", vec!["env.rounds=40"]),
            (
                "configs/quickstart.toml",
                vec!["env.rounds=40", "mechanism.name=\"stride\"", "env.service=\"deterministic\""],
            ),
        ] {
            let sets: Vec<String> = sets.into_iter().map(String::from).collect();
            let sc = ScenarioFile::load(&root.join(config), &sets).unwrap();
            for (seed, level) in [(3u64, 0usize), (11, 5)] {
                let mut env = ClusterEnv::new(sc.clone());
                env.reset(seed);
                let mut policy = Fixed { level };
                let mut actions = vec![0; env.n()];
                let budgets = vec![0.0; env.n()];
                while !env.agents().is_empty() {
                    policy.act(env.observations(), &budgets, true, &mut actions);
                    env.step(&actions).unwrap();
                }
                let throughput = vec![1.0; env.n()];
                let fast = Fairness::compute(&env, &throughput).envy;
                let slow = envy_by_filtering(&env);
                let bits = |e: &Vec<Vec<f64>>| e.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fast), bits(&slow), "{config} {sets:?} seed {seed}");
                assert!(
                    fast.iter().flatten().any(|&x| x > 0.0),
                    "{config}: an empty envy matrix tests nothing"
                );
                let (fast, slow) = (pareto_share(&env), pareto_by_scan(&env));
                assert_eq!(fast.to_bits(), slow.to_bits(), "{config} {sets:?} seed {seed}");
                pareto_seen |= fast > 0.0 && fast < 1.0;
            }
        }
        assert!(pareto_seen, "no scenario had rounds with and without Pareto improvements");
    }
}

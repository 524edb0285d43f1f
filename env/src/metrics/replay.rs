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

/// Per-queue cap of the replays: the central backlog's, or the agent's total over its
/// per-accelerator queues.
fn replay_cap(sc: &crate::config::Scenario, m: usize) -> u64 {
    match sc.file.env.queues {
        Queues::Central => sc.queue_cap,
        Queues::PerAccelerator => sc.queue_cap.saturating_mul(m as u64),
    }
}

impl PoissonTables {
    /// Tables for `sc`'s service (deterministic: no draws).
    fn for_scenario(sc: &crate::config::Scenario) -> Self {
        PoissonTables {
            tables: Vec::new(),
            deterministic: sc.file.env.service == Service::Deterministic,
        }
    }
}

/// The envy replays' common random numbers: one uniform per (round, accelerator), each
/// accelerator its own stream.
fn replay_uniforms(env: &ClusterEnv) -> Vec<f64> {
    let (m, rounds) = (env.m(), env.totals().rounds as usize);
    let mut rngs: Vec<_> = (0..m).map(|c| stream(env.seed(), names::REPLAY, c as u64)).collect();
    (0..rounds * m).map(|k| unit(rngs[k % m].next_u64())).collect()
}

/// Whether agent i, with weights `w`, envies j: `w_j U[i][i] < w_i U[i][j]` (eq. 3.5).
fn envies(w: &[f64], i: usize, j: usize, own: f64, theirs: f64) -> bool {
    w[j] * own < w[i] * theirs - 1e-9
}

/// Index one round's allocation `own` by owner: `held[start[i]..start[i + 1]]` are agent i's
/// accelerators, ascending; idle ones are in none. `start` has n + 1 entries, `held` at least
/// as many as `own`.
fn index_by_owner(own: &[u32], start: &mut [usize], held: &mut [u32]) {
    let n = start.len() - 1;
    start.fill(0);
    for &o in own.iter().filter(|&&o| (o as usize) < n) {
        start[o as usize + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    // Place each accelerator at its owner's next slot (start[i] then ends where i + 1 starts),
    // and shift back.
    for (c, &o) in own.iter().enumerate().filter(|(_, &o)| (o as usize) < n) {
        held[start[o as usize]] = c as u32;
        start[o as usize] += 1;
    }
    for i in (1..=n).rev() {
        start[i] = start[i - 1];
    }
    start[0] = 0;
}

impl Fairness {
    pub(super) fn compute(env: &ClusterEnv, throughput: &[f64]) -> Self {
        Self::compute_with(env, throughput, super::ENVY_EXACT_AGENTS)
    }

    /// [`Fairness::compute`] with every pair's envy up to `exact` agents, sampled pairs above.
    pub(super) fn compute_with(env: &ClusterEnv, throughput: &[f64], exact: usize) -> Self {
        let (n, m) = (env.n(), env.m());
        let sc = env.scenario();
        let rounds = env.totals().rounds as usize;
        let mu = env.rates();
        let w = crate::config::normalised_weights(&sc.agents.iter().map(|a| a.weight).collect::<Vec<_>>());
        let total_w: f64 = w.iter().sum();
        let arrivals = env.arrivals_log();
        let owners = env.owners_log();
        let cap = replay_cap(sc, m);
        let mut tables = PoissonTables::for_scenario(sc);
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
        let uniforms = replay_uniforms(env);
        if n > exact {
            let (ef_violations, sample) = sampled_envy(env, &w, &uniforms, &mut tables, &mut q, cap);
            return Self {
                phi,
                envy: Vec::new(),
                ef_violations,
                envy_sample: Some(sample),
                pareto: pareto_share(env),
            };
        }
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
                if i != j && envies(&w, i, j, envy[i][i], envy[i][j]) {
                    ef_violations += 1;
                }
            }
        }
        let pareto = pareto_share(env);
        Self {
            phi,
            envy,
            ef_violations,
            envy_sample: None,
            pareto,
        }
    }
}

/// The envy of each agent against [`super::ENVY_SAMPLE_PER_AGENT`] others drawn without
/// replacement (its own stream per agent), each pair replayed exactly as the full matrix
/// would (the same capacity draws, summed in the same order), and the EF violations scaled from
/// the sampled pairs to all of them with their binomial standard error. Each round's
/// allocation is indexed by owner once, so a pair costs its owner's accelerators, not all m.
fn sampled_envy(
    env: &ClusterEnv,
    w: &[f64],
    uniforms: &[f64],
    tables: &mut PoissonTables,
    q: &mut Queue,
    cap: u64,
) -> (usize, super::EnvySample) {
    let (n, m) = (env.n(), env.m());
    let sc = env.scenario();
    let rounds = env.totals().rounds as usize;
    let (mu, arrivals, owners) = (env.rates(), env.arrivals_log(), env.owners_log());
    // Per round, each agent's accelerators ascending: held[r][start[r][j]..start[r][j + 1]].
    let mut start = vec![0usize; rounds * (n + 1)];
    let mut held = vec![0u32; rounds * m];
    for r in 0..rounds {
        index_by_owner(
            &owners[r * m..(r + 1) * m],
            &mut start[r * (n + 1)..(r + 1) * (n + 1)],
            &mut held[r * m..(r + 1) * m],
        );
    }
    let k = super::ENVY_SAMPLE_PER_AGENT.min(n - 1);
    let replayed = |i: usize, j: usize, tables: &mut PoissonTables, q: &mut Queue| -> f64 {
        let caps = (0..rounds).map(|r| {
            let st = &start[r * (n + 1)..];
            held[r * m + st[j]..r * m + st[j + 1]]
                .iter()
                .map(|&c| tables.draw(mu[i * m + c as usize], uniforms[r * m + c as usize]))
                .sum::<u64>()
        });
        let caps: Vec<u64> = caps.collect();
        replay(
            (0..rounds).map(|r| u64::from(arrivals[r * n + i])),
            caps.into_iter(),
            cap,
            sc.deadline,
            q,
        ) as f64
            / rounds.max(1) as f64
    };
    let (mut pairs, mut violating) = (0usize, 0usize);
    for i in 0..n {
        let mut rng = stream(env.seed(), names::ENVY_SAMPLE, i as u64);
        let mut others: Vec<usize> = Vec::with_capacity(k);
        while others.len() < k {
            let j = ((unit(rng.next_u64()) * n as f64) as usize).min(n - 1);
            if j != i && !others.contains(&j) {
                others.push(j);
            }
        }
        let own = replayed(i, i, tables, q);
        for j in others {
            pairs += 1;
            if envies(w, i, j, own, replayed(i, j, tables, q)) {
                violating += 1;
            }
        }
    }
    let share = violating as f64 / pairs.max(1) as f64;
    let all = (n * (n - 1)) as f64;
    let sample = super::EnvySample {
        pairs,
        violating,
        share,
        ef_violations_se: all * (share * (1.0 - share) / pairs.max(1) as f64).sqrt(),
    };
    ((share * all).round() as usize, sample)
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
    let (mut start, mut held) = (vec![0usize; n + 1], vec![0u32; m]);
    let mut bad = 0;
    for r in 0..rounds {
        let own = &owners[r * m..(r + 1) * m];
        index_by_owner(own, &mut start, &mut held);
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
                        let d = d as usize;
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
        let cap = replay_cap(sc, m);
        let mut tables = PoissonTables::for_scenario(sc);
        let mut q = Queue::default();
        let uniforms = replay_uniforms(env);
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
        for (config, sets) in [
            ("configs/quickstart.toml", vec!["env.rounds=60"]),
            ("configs/thesis/w124-mmpp.toml", vec!["env.rounds=40"]),
            ("configs/thesis-code.toml", vec!["env.rounds=40"]),
            (
                "configs/quickstart.toml",
                vec!["env.rounds=40", "mechanism.name=\"stride\"", "env.service=\"deterministic\""],
            ),
        ] {
            for (seed, level) in [(3u64, 0usize), (11, 5)] {
                let env = played(config, &sets, seed, level);
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

    fn played(config: &str, sets: &[&str], seed: u64, level: usize) -> ClusterEnv {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let sc = ScenarioFile::load(&root.join(config), &sets).unwrap();
        let mut env = ClusterEnv::new(sc);
        env.reset(seed);
        let mut policy = Fixed { level };
        let mut actions = vec![0; env.n()];
        let budgets = vec![0.0; env.n()];
        while !env.agents().is_empty() {
            policy.act(env.observations(), &budgets, true, &mut actions);
            env.step(&actions).unwrap();
        }
        env
    }

    /// With fewer agents than the sample size every pair is "sampled": the estimate is the
    /// exact count.
    #[test]
    fn sampling_every_pair_counts_the_exact_violations() {
        for (config, seed, level) in [("configs/quickstart.toml", 3, 0), ("configs/thesis/w124-mmpp.toml", 5, 7)] {
            let env = played(config, &["env.rounds=60"], seed, level);
            let t = vec![1.0; env.n()];
            let exact = Fairness::compute(&env, &t);
            let sampled = Fairness::compute_with(&env, &t, 0);
            let s = sampled.envy_sample.as_ref().unwrap();
            assert_eq!(s.pairs, env.n() * (env.n() - 1));
            assert_eq!(sampled.ef_violations, exact.ef_violations, "{config}");
            assert!(exact.ef_violations > 0 && sampled.envy.is_empty() && exact.envy_sample.is_none());
            assert_eq!(sampled.phi, exact.phi);
        }
    }

    /// 80 agents, 32 sampled others each: the estimate is within three of its standard errors
    /// of the exact count.
    #[test]
    fn sampled_pairs_estimate_the_violations_within_their_standard_error() {
        let sets = [
            "env.rounds=60",
            "env.agents.0.count=40",
            "env.agents.1.count=20",
            "env.agents.2.count=20",
            "env.cluster.0.count=80",
            "env.cluster.1.count=80",
        ];
        let env = played("configs/quickstart.toml", &sets, 7, 6);
        let t = vec![1.0; env.n()];
        let exact = Fairness::compute(&env, &t).ef_violations as f64;
        let sampled = Fairness::compute_with(&env, &t, 10);
        let s = sampled.envy_sample.unwrap();
        assert_eq!(s.pairs, 80 * 32);
        assert!(exact > 0.0 && s.ef_violations_se > 0.0);
        let z = (sampled.ef_violations as f64 - exact) / s.ef_violations_se;
        assert!(z.abs() < 3.0, "estimate {} vs exact {exact}: z = {z:.2}", sampled.ef_violations);
    }
}

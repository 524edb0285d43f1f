//! What a run will need in memory, estimated from its config before anything large is
//! allocated, and refused with the key that sizes it when it will not fit (issue 26, class 5:
//! the documented limits alone allowed an 8 GiB critic or a 4.7 GiB `mtf simulate`).
//!
//! The estimate is a sum of the few things that grow with a config, each multiplied by its
//! measured peak per byte (peak resident set size of one episode, `/usr/bin/time`; the
//! constants say where they come from): the learner's state ([`crate::learners::LearnerConfig::memory`]), the
//! per-episode fairness metrics (an n x n envy matrix per episode computed at once), the
//! environment copies, and the process's own floor. `scripts/bench-memory.sh` compares
//! estimates with measured peaks.

use crate::config::Experiment;
use env::config::Scenario;
use std::sync::atomic::{AtomicU64, Ordering};

/// The process's floor: the binary, its allocator and thread pools (the quickstart's
/// actor-critic, one 50-round episode: 19 MiB peak).
const BASE: u64 = 20 << 20;

/// Peak bytes per byte of the first n x n f64 envy matrix (`mtf simulate`, one thread: 1,200
/// agents 5.3x, 3,000 agents 5.5x), and per byte of each further one computed at the same time
/// on another thread (3,000 agents on 2 threads: +1.5x).
const METRICS_FIRST: f64 = 5.5;
const METRICS_MORE: f64 = 1.5;

/// Peak bytes per (agent, accelerator) cell of an environment copy (rates, utilities, the
/// round's input and its pending copy).
const ENV_PER_CELL: u64 = 48;

/// Peak bytes per byte of an episode's per-round records (arrivals, owners, won utilities,
/// the values the mechanism saw: what the fairness replays read), kept for every round of an
/// evaluation episode: vectors grown by doubling hold up to twice what they use.
const RECORDS_PEAK: f64 = 2.0;

/// A memory estimate: the total and its parts by the config key that sizes each.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Bytes at peak.
    pub total: u64,
    /// `(key, bytes)`, largest first.
    pub parts: Vec<(String, u64)>,
}

impl Estimate {
    fn of(mut parts: Vec<(String, u64)>) -> Estimate {
        parts.retain(|p| p.1 > 0);
        parts.sort_by(|a, b| b.1.cmp(&a.1));
        let total = BASE.saturating_add(parts.iter().map(|p| p.1).fold(0u64, u64::saturating_add));
        Estimate { total, parts }
    }
}

/// The fairness metrics of `concurrent` episodes computed at once, their per-round records,
/// and `copies` environments.
fn world_parts(sc: &Scenario, copies: usize, concurrent: usize) -> Vec<(String, u64)> {
    let (n, m) = (sc.n() as u64, sc.m() as u64);
    let envy = n.saturating_mul(n).saturating_mul(8) as f64;
    let metrics = envy * (METRICS_FIRST + METRICS_MORE * concurrent.saturating_sub(1) as f64);
    vec![
        ("env.agents (the per-episode envy matrix, n x n)".to_string(), metrics as u64),
        (
            "env.cluster (the environment copies, n x m)".to_string(),
            (copies as u64).saturating_mul(n).saturating_mul(m).saturating_mul(ENV_PER_CELL),
        ),
        (
            "env.rounds (each evaluation episode's per-round records)".to_string(),
            (records_per_round(sc) as f64 * f64::from(sc.file.env.rounds) * RECORDS_PEAK * concurrent as f64) as u64,
        ),
    ]
}

/// Bytes an evaluation episode records per round: arrivals (n u32), owners (m u32), won
/// utilities (m f64) and the values the mechanism saw (n f64 with central queues, n x m with
/// per-accelerator ones).
fn records_per_round(sc: &Scenario) -> u64 {
    let (n, m) = (sc.n() as u64, sc.m() as u64);
    let values = match sc.file.env.queues {
        env::config::Queues::Central => n,
        env::config::Queues::PerAccelerator => n.saturating_mul(m),
    };
    4 * n + 4 * m + 8 * m + 8 * values
}

/// A training run of `exp` on `threads` threads: its learner, its environment copies, its
/// metrics (the held-out evaluation's episodes on `threads` at once included). A run group
/// trains min(replicates, threads) replicates at once, one thread each.
pub fn training(exp: &Experiment, threads: usize) -> Estimate {
    let sc = &exp.scenario;
    let copies = exp.copies();
    let threads = threads.max(1);
    let runs = if exp.train.replicates > 1 {
        exp.train.replicates.min(threads)
    } else {
        1
    };
    let mut parts: Vec<(String, u64)> = exp
        .learner
        .chosen()
        .memory(sc, copies)
        .into_iter()
        .map(|(k, b)| (k, b.saturating_mul(runs as u64)))
        .collect();
    parts.extend(world_parts(sc, copies * runs, if runs > 1 { runs } else { threads }));
    Estimate::of(parts)
}

/// Evaluation episodes of `sc` on `threads` threads (`mtf simulate`, `compare`, `analyze`).
pub fn evaluation(sc: &Scenario, threads: usize) -> Estimate {
    Estimate::of(world_parts(sc, threads, threads))
}

/// Bytes per (copy, learning tenant, round, unit of the PPO width) of a market PPO rollout
/// kept for its update, as the queue world's (4-byte floats, 3 copies): three-types.toml, width
/// 351 (64 + 128 + 128 hidden, 16 levels, 15 features), peaked at 6.6 bytes per unit of width
/// with 8 copies x 12 learning tenants x 30,000 rounds (6.7 GB), 7.0 with 256 copies x 300
/// rounds (2.19 GiB) and 10.4 with 8 copies x 2,000 rounds (669 MiB): 8 was short of the last
/// two (issue 42's attack on its own fixes).
const MARKET_PPO_PER_WIDTH: u64 = 12;

/// `concurrent` episodes of a world behind the seam played at once (`mtf simulate`,
/// `compare`, `analyze`: one per thread), each holding what the world says it does
/// (`World::memory`).
pub fn world_episodes(world: &dyn env::worlds::World, concurrent: usize) -> Estimate {
    Estimate::of(world_parts_at(world, concurrent))
}

fn world_parts_at(world: &dyn env::worlds::World, concurrent: usize) -> Vec<(String, u64)> {
    world
        .memory()
        .into_iter()
        .map(|(k, b)| (k, b.saturating_mul(concurrent.max(1) as u64)))
        .collect()
}

/// Training in a world behind the seam: `episodes` episodes held at once (the rollout's
/// copies, or the evaluation's threads, whichever is more) and, for PPO, its rollout of every
/// agent over the episode in each copy, `width` floats a row (its hidden sizes, levels and
/// observation), at the market's measured peak per unit of width: where the world states its
/// episode's rounds (`World::episode_rounds`; Gavel's jobs decide, and its PPO keeps the rows
/// of the agents that acted: 212 MB measured on `configs/gavel/learn.toml`).
pub fn world_training(world: &dyn env::worlds::World, episodes: usize, ppo: Option<(usize, usize)>) -> Estimate {
    let mut parts = world_parts_at(world, episodes);
    if let Some((copies, width)) = ppo {
        let rounds = u64::from(world.episode_rounds().unwrap_or(0));
        parts.push((
            "learner.ppo (train.envs x learner.ppo.group copies x agents x env.rounds)".to_string(),
            (copies as u64)
                .saturating_mul(world.possible() as u64)
                .saturating_mul(rounds)
                .saturating_mul(width as u64)
                .saturating_mul(MARKET_PPO_PER_WIDTH),
        ));
    }
    Estimate::of(parts)
}

static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Set the limit every later [`check`] uses (`--max-memory`); `None`: the machine's available
/// memory.
pub fn set_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The machine's available memory (`MemAvailable` in /proc/meminfo), when it says.
pub fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// `512M`, `8G`, `1.5GiB`, `100000000`: bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let x: f64 = num.trim().parse().map_err(|_| format!("`{s}` is not a size (e.g. 512M, 8G)"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => return Err(format!("`{s}`: unknown unit `{u}` (B, K, M, G, T)")),
    };
    if !(x.is_finite() && x > 0.0) {
        return Err(format!("`{s}` must be a positive size"));
    }
    Ok((x * scale as f64).min(u64::MAX as f64) as u64)
}

fn gib(b: u64) -> String {
    if b < 1 << 30 {
        format!("{:.0} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.2} GiB", b as f64 / (1u64 << 30) as f64)
    }
}

/// Refuse `est` when it is above the limit (`--max-memory`, else the available memory): one
/// line naming what `doing` needs, the key that sizes most of it, and the limit.
pub fn check(est: &Estimate, doing: &str) -> crate::error::Result<()> {
    let (limit, name) = match LIMIT.load(Ordering::Relaxed) {
        0 => match available() {
            Some(a) => (a, "the machine's available memory"),
            None => return Ok(()),
        },
        l => (l, "--max-memory"),
    };
    if est.total <= limit {
        return Ok(());
    }
    let (key, bytes) = est.parts.first().cloned().unwrap_or_else(|| ("(the process)".into(), BASE));
    Err(crate::error::user(format!(
        "{doing} needs about {} at peak, more than {} ({name}); most of it is {key}: {}. Shrink it, or set --max-memory if the estimate is wrong for this machine",
        gib(est.total),
        gib(limit),
        gib(bytes)
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_bad_ones_say_why() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!(parse_size("8X").unwrap_err().contains("unknown unit"));
        assert!(parse_size("-1G").unwrap_err().contains("positive"));
        assert!(parse_size("lots").unwrap_err().contains("not a size"));
    }

    #[test]
    fn the_markets_measured_ppo_peaks_are_under_its_estimate() {
        // --max-memory meant nothing on a market file: no estimate existed (issue 42.3). PPO
        // in three-types.toml (12 learning tenants, width 351) peaked at 6.7 GB with 8 copies x
        // 30,000 rounds, 669 MiB with 8 x 2,000 and 2.19 GiB with 256 x 300 (measured on the
        // market's own trainer, whose rollout the seam's keeps row for row).
        let at = |rounds: u32| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/market/three-types.toml");
            env::registry::load(&path, &[format!("env.rounds={rounds}")]).unwrap()
        };
        let ppo = |rounds: u32, copies: usize| {
            let w = at(rounds);
            assert_eq!(w.possible(), 12);
            let est = world_training(w.as_ref(), 1, Some((copies, 351)));
            est.parts.iter().find(|(k, _)| k.starts_with("learner.ppo")).unwrap().1
        };
        let t = ppo(30_000, 8);
        assert!(t > 6_700_000_000 && t < 16 << 30, "{t}");
        assert!(ppo(2_000, 8) > 669 << 20);
        assert!(ppo(300, 256) > 2243 << 20);
        let none = world_training(at(30_000).as_ref(), 1, None);
        assert!(none.parts.iter().all(|(k, _)| !k.starts_with("learner.ppo")));
    }

    #[test]
    fn the_estimate_ignored_env_rounds() {
        // 20 MiB at 1e5, 1e6 and 1e7 rounds alike; a run keeps its records for every round.
        let at = |rounds: &str| {
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/quickstart.toml");
            let sc = env::config::ScenarioFile::load(&path, &[format!("env.rounds={rounds}")]).unwrap();
            evaluation(&sc, 2).total
        };
        let (a, b, c) = (at("100000"), at("1000000"), at("10000000"));
        assert!(b > a && c > b, "{a} {b} {c}");
        // Quickstart (8 agents, 16 accelerators, central): 288 bytes a round, x2 growth, x2
        // episodes at once: 10^7 rounds are about 10.7 GiB, far past 20 MiB.
        assert!(c > 8 << 30, "{c}");
    }

    #[test]
    fn every_world_behind_the_seam_states_what_its_episodes_hold() {
        let path = |f: &str| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs").join(f);
        let market = |sets: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            env::registry::load(&path("market/three-types.toml"), &sets).unwrap()
        };
        // Behind the seam the market's 30,000-round episode (jobs that never finish) peaked at
        // 135 MiB, one thread: 30,000 x (2,560 + 32 tenants x 160) bytes of records is above it.
        let never = ["env.rounds=30000", "market.tenants.*.work=1e9", "market.tenants.1.work_max=2e9"];
        let one = world_episodes(market(&never).as_ref(), 1);
        assert_eq!(one.total, BASE + 30_000 * (2_560 + 32 * 160));
        assert!(
            one.total > 135 << 20 && one.parts[0].0.starts_with("env.rounds x market.tenants"),
            "{one:?}"
        );
        assert_eq!(
            world_episodes(market(&never).as_ref(), 2).total,
            BASE + 2 * 30_000 * (2_560 + 32 * 160)
        );
        // The bandit and Gavel hold nothing that grows with their configs (Gavel's world
        // peaked at 13 MiB with 200,000 generated jobs as with 2,000): the floor.
        let gavel = env::registry::load(&path("gavel/paper.toml"), &["env.generate.jobs=200000".into()]).unwrap();
        assert_eq!(world_episodes(gavel.as_ref(), 2).total, BASE);
        // Training: PPO's rollout of every agent (the 12 learning inference services) over
        // the episode in each of train.envs x group copies, 64 + 64 + 64 hidden + the levels +
        // the observation floats a row, 12 bytes a float, beside the copies' episodes.
        let sets: Vec<String> = ["learner.kind=\"ppo\"", "train.envs=8", "env.rounds=2000"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let exp = crate::worlds::train::SeamExperiment::load(&path("market/three-types.toml"), &sets).unwrap();
        let (levels, dim) = (exp.world.levels().len() as u64, exp.world.layout().dim() as u64);
        let copies = 8 * exp.learner.ppo.group as u64;
        let est = exp.memory();
        // The market's default group (3 replicates) trains min(3, threads) at once, each on
        // its share of the threads.
        let threads = exp.train.threads as u64;
        let runs = (exp.train.replicates as u64).min(threads);
        assert_eq!(exp.train.replicates, 3);
        let ppo = copies * 12 * 2_000 * (192 + levels + dim) * 12 * runs;
        let episodes = copies.max(threads).max(copies.max(threads / runs) * runs) * 2_000 * (2_560 + 32 * 160);
        assert_eq!(exp.world.possible(), 12);
        assert_eq!(est.total, BASE + ppo + episodes, "{est:?}");
        assert!(est.parts.iter().any(|(k, b)| k.starts_with("learner.ppo") && *b == ppo), "{est:?}");
        // One replicate: one run's copies (at least one episode per thread).
        let one = crate::worlds::train::SeamExperiment::load(
            &path("market/three-types.toml"),
            &[sets.clone(), vec!["train.replicates=1".into()]].concat(),
        )
        .unwrap();
        assert_eq!(
            one.memory().total,
            BASE + ppo / runs + copies.max(threads) * 2_000 * (2_560 + 32 * 160)
        );
        // Gavel's episode has only a safety cap (10^7 rounds), not a length: estimating PPO's
        // rollout from it refused every Gavel PPO run (about 38 TiB for learn.toml).
        let exp = crate::worlds::train::SeamExperiment::load(&path("gavel/learn.toml"), &["learner.kind=\"ppo\"".into()]).unwrap();
        assert_eq!(exp.memory().total, BASE);
    }
}

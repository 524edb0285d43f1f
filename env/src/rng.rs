//! Named random streams derived from one root seed.
//!
//! Each stream's seed is a hash of `(root, name, index)`, so adding a stream never shifts
//! another, and a mechanism's or an agent's choices only ever consume their own streams:
//! mechanisms compared on one seed see the same arrivals.

use rand::rngs::SmallRng;
use rand::SeedableRng;

/// Stream names (one constant each, so a typo cannot silently create a new stream).
pub mod names {
    /// Arrivals and burst state of agent i.
    pub const ARRIVALS: &str = "arrivals";
    /// The round an episode starts at in its trace (`env.trace_start = "seeded"`).
    pub const TRACE_START: &str = "trace-start";
    /// Placement of agent i's arriving jobs (per-accelerator queues).
    pub const PLACEMENT: &str = "placement";
    /// Dispatch of agent i's backlog over its accelerators (central queues).
    pub const DISPATCH: &str = "dispatch";
    /// Service capacity of accelerator c.
    pub const SERVICE: &str = "service";
    /// Heterogeneity draw (`speedup_draw`) of agent i.
    pub const SPEEDUP: &str = "speedup";
    /// Pooled exclusive server of agent i (sharing incentive).
    pub const EXCLUSIVE: &str = "exclusive";
    /// Capacity draws of the envy replays, per accelerator.
    pub const REPLAY: &str = "replay";
    /// The agents agent i's envy is replayed against when the pairs are sampled.
    pub const ENVY_SAMPLE: &str = "envy-sample";
    /// MTF's weighted-random leftovers, and the auctions' tie draws.
    pub const LEFTOVERS: &str = "leftovers";
    /// Agent i's private values (the valuation world, SPEC 8).
    pub const VALUES: &str = "values";
    /// Agent i's action sampling (learners; per episode from [`POLICY_EPISODE`]).
    pub const POLICY: &str = "policy";
    /// A learner population's sampling seed for episode k.
    pub const POLICY_EPISODE: &str = "policy-episode";
    /// The environment seed of training episode k.
    pub const TRAIN_EPISODE: &str = "train-episode";
    /// Environment copy k's seed within a training episode (`train.envs`; copy 0 keeps the
    /// episode's own seed).
    pub const TRAIN_ENV: &str = "train-env";
    /// The environment seed of evaluation episode k (`mtf simulate`, held-out evaluation).
    pub const EVAL_EPISODE: &str = "episode";
    /// A learner's parameter initialisation.
    pub const INIT: &str = "init";
    /// The environment seed of selection episode k (`mtf analyze` picks its policies on these
    /// and scores them on [`EVAL_EPISODE`] seeds).
    pub const SELECT_EPISODE: &str = "select-episode";
    /// Replicate k's training seed (`train.replicate`; replicate 0 trains with the root seed).
    pub const REPLICATE: &str = "replicate";
    /// PPO's minibatch permutation of update k.
    pub const PPO_MINIBATCHES: &str = "ppo-minibatches";
    /// A sweep's sampler draws for trial k.
    pub const SWEEP_TRIAL: &str = "sweep-trial";
    /// Copy k's first seed in a batch of environments (the Python `VecEnv`).
    pub const COPY: &str = "copy";
    /// Episode k's seed after a reset without a seed (Python), from the copy's first seed.
    pub const NEXT_EPISODE: &str = "next-episode";
    /// The jobs a Gavel world generates (types, durations, arrivals).
    pub const GAVEL_JOBS: &str = "gavel-jobs";
    /// The toy bandit world's rewards.
    pub const BANDIT: &str = "bandit";
}

/// The seed of episode `episode` of environment copy `copy` in a batch reset with `root`
/// (the Python bindings' `VecEnv` and `parallel_env`): copy 0's first episode is `root`
/// itself, so one copy seeded with `s` plays the episode `reset(s)` plays everywhere else;
/// later episodes (auto-resets, resets without a seed) follow from the copy's first seed.
pub fn copy_seed(root: u64, copy: u64, episode: u64) -> u64 {
    let first = if copy == 0 { root } else { stream_seed(root, names::COPY, copy) };
    if episode == 0 {
        first
    } else {
        stream_seed(first, names::NEXT_EPISODE, episode)
    }
}

/// Environment copy `k`'s seed in training episode `episode` of the training seeded `root`:
/// copy 0 has the episode's seed (so one copy trains exactly as before copies existed), copy
/// k > 0 a stream of it. Every trainer's copies (`agents`' rollouts, ES's pairs, Hedge's
/// replays) draw their episodes from it.
pub fn env_seed(root: u64, episode: u64, k: usize) -> u64 {
    let seed = stream_seed(root, names::TRAIN_EPISODE, episode);
    if k == 0 {
        seed
    } else {
        stream_seed(seed, names::TRAIN_ENV, k as u64)
    }
}

/// FNV-1a 64 of some bytes: stream names here, checkpoint and exported-policy checksums in
/// `agents` (one implementation, so formats cannot drift apart).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    scheduler::fnv::bytes(bytes)
}

/// splitmix64's state increment (2^64 over the golden ratio).
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// splitmix64's output for state `z` (the state advances by the golden-ratio increment first):
/// the mixer of stream seeds here, and the exported agent runtime's sampling.
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seed of stream `(root, name, index)`: FNV-1a over the name, mixed with splitmix64.
pub fn stream_seed(root: u64, name: &str, index: u64) -> u64 {
    let h = fnv1a(name.as_bytes());
    splitmix(splitmix(root ^ splitmix(h)) ^ splitmix(index.wrapping_add(0x1234_5678)))
}

/// A generator for stream `(root, name, index)`.
pub fn stream(root: u64, name: &str, index: u64) -> SmallRng {
    SmallRng::seed_from_u64(stream_seed(root, name, index))
}

/// One uniform in [0, 1) from a raw 64-bit draw.
#[inline]
pub fn unit(x: u64) -> f64 {
    (x >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Poisson(lambda) by inversion of one uniform `u`: every draw consumes exactly one number,
/// so streams stay aligned whatever rate is drawn. Exact sequential search up to lambda 500;
/// beyond, the normal approximation (rates here are tens of jobs per round).
pub fn poisson_inv(lambda: f64, u: f64) -> u64 {
    if lambda <= 0.0 {
        return 0;
    }
    if lambda > 500.0 {
        // Normal approximation with continuity correction, still one uniform per draw.
        let z = normal_quantile(u);
        return (lambda + z * lambda.sqrt() + 0.5).floor().max(0.0) as u64;
    }
    let mut k = 0u64;
    let mut p = (-lambda).exp();
    let mut cdf = p;
    while u >= cdf && k < 10_000 {
        k += 1;
        p *= lambda / k as f64;
        cdf += p;
        if p == 0.0 && cdf < u {
            break;
        }
    }
    k
}

/// Standard normal quantile (Acklam's rational approximation, relative error < 1.2e-9).
fn normal_quantile(p: f64) -> f64 {
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383577518672690e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let plow = 0.02425;
    if p < plow {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - plow {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5]) / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_differ_by_name_and_index_and_repeat_by_seed() {
        let a = stream_seed(1, names::ARRIVALS, 0);
        assert_ne!(a, stream_seed(1, names::ARRIVALS, 1));
        assert_ne!(a, stream_seed(1, names::SERVICE, 0));
        assert_ne!(a, stream_seed(2, names::ARRIVALS, 0));
        assert_eq!(stream(1, names::ARRIVALS, 0).next_u64(), stream(1, names::ARRIVALS, 0).next_u64());
    }

    #[test]
    fn copy_seeds_start_at_the_root_and_never_collide() {
        assert_eq!(copy_seed(77, 0, 0), 77);
        let mut seen = std::collections::HashSet::new();
        for copy in 0..16 {
            for episode in 0..16 {
                assert!(seen.insert(copy_seed(77, copy, episode)), "copy {copy} episode {episode}");
            }
        }
        assert_eq!(
            copy_seed(77, 3, 2),
            stream_seed(stream_seed(77, names::COPY, 3), names::NEXT_EPISODE, 2)
        );
    }

    #[test]
    fn poisson_inversion_has_the_right_mean_and_variance() {
        let mut r = stream(9, "test", 0);
        for lambda in [0.5, 4.0, 40.0, 56.8, 800.0] {
            let n = 40_000;
            let xs: Vec<f64> = (0..n).map(|_| poisson_inv(lambda, unit(r.next_u64())) as f64).collect();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            assert!(
                (mean - lambda).abs() < 4.0 * (lambda / n as f64).sqrt() + 0.01,
                "lambda {lambda}: mean {mean}"
            );
            assert!((var / lambda - 1.0).abs() < 0.05, "lambda {lambda}: variance {var}");
        }
        assert_eq!(poisson_inv(3.0, 0.0), 0);
        assert_eq!(poisson_inv(0.0, 0.7), 0);
    }
}

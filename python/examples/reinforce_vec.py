"""Independent REINFORCE learners in NumPy against the batched API.

Every agent has its own linear softmax policy over the levels, reads its own observation, and
learns from its own per-round reward (a one-step policy gradient with a running-mean baseline,
so each agent treats the round as a contextual bandit). All agents of all copies act in one
vectorised pass. At the end the greedy policy is scored against every fixed level on held-out
seeds.

    python python/examples/reinforce_vec.py [--config FILE] [--num-envs 8] [--episodes 40]
"""

from __future__ import annotations

import argparse

import numpy as np

import mtf_env


def features(obs: np.ndarray) -> np.ndarray:
    # Unbounded ratios (backlog over arrival rate) are clipped; a constant feature is the bias.
    x = np.clip(obs, 0.0, 4.0)
    return np.concatenate([x, np.ones(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)


def softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def sample(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random(probs.shape[:-1] + (1,))
    return np.minimum((probs.cumsum(axis=-1) < u).sum(axis=-1), probs.shape[-1] - 1)


def train(config, overrides, num_envs, episodes, lr, seed, threads=None, log=print):
    vec = mtf_env.VecEnv(config, num_envs, overrides=overrides, threads=threads)
    n, k = vec.n_agents, len(vec.levels)
    rng = np.random.default_rng(seed)
    x = features(vec.reset(seed))
    w = np.zeros((n, x.shape[-1], k))
    baseline = np.zeros(n)
    history = []
    for episode in range(episodes):
        rewards, entropy = 0.0, 0.0
        for _ in range(vec.rounds):
            probs = softmax(np.einsum("end,ndk->enk", x, w))
            actions = sample(probs, rng)
            obs, r, _, _ = vec.step(actions)
            # grad log pi(a | x) = x (onehot(a) - probs), scaled by the advantage.
            g = (np.eye(k)[actions] - probs) * (r - baseline)[..., None]
            w += lr * np.einsum("end,enk->ndk", x, g) / num_envs
            baseline += 0.05 * (r.mean(axis=0) - baseline)
            x = features(obs)
            rewards += r.mean()
            entropy += -(probs * np.log(probs + 1e-12)).sum(axis=-1).mean()
        history.append(rewards / vec.rounds)
        log(f"episode {episode + 1:3d}: reward per agent-round {history[-1]:.4f}, policy entropy {entropy / vec.rounds:.3f}")
    return w, history


def score(config, overrides, policy, seed, episodes=4):
    """Mean reward per agent-round of `policy(x) -> actions` over held-out episodes."""
    vec = mtf_env.VecEnv(config, episodes, overrides=overrides)
    x = features(vec.reset(seed))
    total = 0.0
    for _ in range(vec.rounds):
        obs, r, _, _ = vec.step(policy(x))
        total += r.mean()
        x = features(obs)
    return total / vec.rounds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="configs/quickstart.toml")
    p.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    p.add_argument("--num-envs", type=int, default=8)
    p.add_argument("--episodes", type=int, default=40)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()

    w, _ = train(args.config, args.overrides, args.num_envs, args.episodes, args.lr, args.seed, args.threads)
    held_out = args.seed + 1_000_003
    greedy = score(args.config, args.overrides, lambda x: np.einsum("end,ndk->enk", x, w).argmax(axis=-1), held_out)
    vec = mtf_env.VecEnv(args.config, 1, overrides=args.overrides)
    fixed = [score(args.config, args.overrides, lambda x, j=j: np.full(x.shape[:2], j), held_out) for j in range(len(vec.levels))]
    best = int(np.argmax(fixed))
    print(f"held-out reward per agent-round: learned (greedy) {greedy:.4f}, "
          f"best fixed level {vec.levels[best]:g} {fixed[best]:.4f}, worst fixed {min(fixed):.4f}")


if __name__ == "__main__":
    main()

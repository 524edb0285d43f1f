"""Rounds per second of the Python APIs next to the Rust environment's own, at 20 agents x 40
accelerators (the 1/2/4-weight mmpp thesis scenario at load 0.8, 300-round episodes).

    scripts/bench-python.sh        (or: python python/benches/api_speed.py, with mtf_env installed)

Each figure is the median of 5 timed repetitions (1 with MTF_BENCH_QUICK set), whole episodes with auto-resets included,
every agent at level index 3 (no policy computation in the loop: this measures the API).
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

import mtf_env
from mtf_env import _native

CONFIG = "configs/thesis/w124-mmpp.toml"
OVERRIDES = ["env.agents.*.load=0.8"]
ROUNDS = 3000  # environment rounds per repetition (10 episodes of one copy)
# MTF_BENCH_QUICK: one short repetition (the README test runs this script as a smoke test).
QUICK = bool(os.environ.get("MTF_BENCH_QUICK"))
REPS = 1 if QUICK else 5
if QUICK:
    ROUNDS = 320


def median_rate(fn, rounds: int) -> float:
    fn(rounds // 10)  # warm up
    times = []
    for _ in range(REPS):
        t = time.perf_counter()
        fn(rounds)
        times.append(time.perf_counter() - t)
    return rounds / statistics.median(times)


def rust(rounds: int) -> None:
    _native.bench_rust(CONFIG, OVERRIDES, rounds, 3)


def vec_env(num_envs: int, threads: int):
    vec = mtf_env.VecEnv(CONFIG, num_envs, overrides=OVERRIDES, threads=threads)
    actions = np.full((num_envs, vec.n_agents), 3, dtype=np.int64)
    vec.reset(1)

    def run(rounds: int) -> None:
        for _ in range(rounds // num_envs):
            vec.step(actions)

    return run


def dict_env():
    env = mtf_env.parallel_env(CONFIG, overrides=OVERRIDES)
    actions = {a: 3 for a in env.possible_agents}
    env.reset(seed=1)

    def run(rounds: int) -> None:
        for _ in range(rounds):
            if not env.agents:
                env.reset()
            env.step(actions)

    return run


def main() -> None:
    shape = mtf_env.VecEnv(CONFIG, 1, overrides=OVERRIDES)
    print(f"{CONFIG} at load 0.8: {shape.n_agents} agents, obs_dim {shape.obs_dim}, {shape.rounds}-round episodes")
    base = median_rate(rust, ROUNDS)
    print(f"Rust environment, one copy, no Python:   {base:9.0f} rounds/s")
    for num_envs, threads in [(1, 1), (8, 1), (8, 2)]:
        r = median_rate(vec_env(num_envs, threads), ROUNDS * (1 if num_envs == 1 else 4))
        print(f"VecEnv, {num_envs} copies, {threads} thread(s):        {r:9.0f} rounds/s  ({r / base:.2f}x the Rust figure)")
    r = median_rate(dict_env(), ROUNDS)
    print(f"parallel_env (dict API), one copy:        {r:9.0f} rounds/s  ({r / base:.2f}x; "
          f"{1e6 / r - 1e6 / base:.1f} us of Python per round)")


if __name__ == "__main__":
    main()

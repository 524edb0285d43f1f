"""Environments pickle as the arguments that made them (issue 40: `cannot pickle
'mtf_env._native.Env'` broke supersuit's process-based vector envs, the SB3 tutorial path): a
copy, in this process or another, plays the same episodes on the same seeds; an episode in
progress is refused rather than silently restarted."""

from __future__ import annotations

import multiprocessing
import pickle

import numpy as np
import pytest

import mtf_env
from conftest import QUICKSTART, ROOT

FILES = {
    "queues": QUICKSTART,
    "market": str(ROOT / "configs/market/duel.toml"),
    "gavel": str(ROOT / "configs/gavel/small.toml"),
}


def play(env, seed: int | None, rounds: int) -> list:
    """Rewards of `rounds` steps from reset(seed) with every live agent at level 1."""
    env.reset(seed=seed)
    out = []
    for _ in range(rounds):
        if not env.agents:
            break
        _, rewards, _, _, _ = env.step({a: 1 for a in env.agents})
        out.append(sorted(rewards.items()))
    return out


@pytest.mark.parametrize("world", sorted(FILES))
def test_a_copy_plays_the_same_episodes_and_an_episode_in_progress_is_refused(world):
    env = mtf_env.parallel_env(FILES[world], ["env.rounds=12"] if world != "gavel" else [])
    copy = pickle.loads(pickle.dumps(env))
    assert type(copy) is type(env) and copy.possible_agents == env.possible_agents
    assert play(copy, 5, 6) == play(env, 5, 6)
    with pytest.raises(pickle.PicklingError, match="in an episode"):
        pickle.dumps(env)
    # After the episode, the copy continues the seed sequence where the original stands.
    while env.agents:
        env.step({a: 1 for a in env.agents})
    later = pickle.loads(pickle.dumps(env))
    assert play(later, None, 4) == play(env, None, 4)


def _episode_in_child(blob: bytes) -> list:
    return play(pickle.loads(blob), 9, 5)


def test_a_copy_in_another_process_plays_the_same_episode():
    # What a process-based vector env does: the environment crosses a process boundary.
    env = mtf_env.parallel_env(QUICKSTART, ["env.rounds=8"])
    blob = pickle.dumps(env)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        theirs = pool.apply(_episode_in_child, (blob,))
    assert theirs == play(env, 9, 5)


def test_a_vecenv_pickles_until_it_is_reset():
    vec = mtf_env.VecEnv(QUICKSTART, 2, ["env.rounds=8"], threads=1)
    copy = pickle.loads(pickle.dumps(vec))
    a, b = vec.reset(3), copy.reset(3)
    assert np.array_equal(a, b)
    acts = np.ones((2, vec.n_agents), dtype=np.int64)
    for x, y in zip(vec.step(acts), copy.step(acts)):
        assert np.array_equal(x, y)
    with pytest.raises(pickle.PicklingError, match="its copies reset themselves"):
        pickle.dumps(vec)

"""The market world (env.world = "market") from Python: PettingZoo's API tests, the duel's
hand-computed utilities, agreement with `mtf simulate` on the paper's example, and errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, run_json
from pettingzoo.test import parallel_api_test, parallel_seed_test

import mtf_env

DUEL = str(ROOT / "configs/market/duel.toml")
EXAMPLE = str(ROOT / "configs/market/laissezcloud-example.toml")
THREE = str(ROOT / "configs/market/three-types.toml")


@pytest.mark.parametrize("config", [DUEL, EXAMPLE, THREE])
def test_pettingzoo_parallel_api(config):
    env = mtf_env.parallel_env(config)
    assert isinstance(env, mtf_env.MarketParallelEnv)
    parallel_api_test(env, num_cycles=200)


def test_pettingzoo_seed_test():
    parallel_seed_test(lambda: mtf_env.parallel_env(THREE))


def play(env, seed, level_of):
    """A whole episode, each agent at level index level_of(agent): summed rewards, ends seen."""
    obs, _ = env.reset(seed=seed)
    total = {a: 0.0 for a in env.possible_agents}
    ends = {a: 0 for a in env.possible_agents}
    while env.agents:
        obs, rew, term, trunc, info = env.step({a: level_of(a) for a in env.agents})
        for a in rew:
            total[a] += rew[a]
            ends[a] += int(term[a] or trunc[a])
            assert env.observation_space(a).contains(obs[a]), (a, obs[a])
    return total, ends


@pytest.mark.parametrize(("f", "want"), [(0.5, 10.0), (0.9, 11.0), (1.2, 8.0)])
def test_the_duels_hand_computed_utility(f, want):
    # configs/market/duel.toml's header: first price, L pays 10 f when it outbids E's 0.8 for
    # work worth 20, else runs on demand for 10. The file marks L `learn = true`: the market
    # mtf train learns in, L the one agent (paid over its job's worth, 20), E at its own factor.
    env = mtf_env.parallel_env(DUEL)
    assert env.possible_agents == ["L"]
    at = {x: i for i, x in enumerate(env.levels)}
    mine = min(at, key=lambda x: abs(x - f))
    total, ends = play(env, 5, lambda a: at[mine])
    assert math.isclose(total["L"], want / 20.0, abs_tol=1e-12)
    assert ends == {"L": 1}
    assert math.isclose(env.metrics()["utility"][1], want, abs_tol=1e-9)


def test_every_tenant_is_an_agent_where_the_file_marks_no_learner():
    env = mtf_env.parallel_env(DUEL, overrides=["market.tenants.1.learn=false"])
    assert env.possible_agents == ["E", "L"]
    at = {x: i for i, x in enumerate(env.levels)}
    total, ends = play(env, 5, lambda a: at[0.9] if a == "L" else at[1.0])
    assert math.isclose(total["L"], 11.0, abs_tol=1e-9), "paid its utility's change, not over its worth"
    assert ends == {"E": 1, "L": 1}


def test_economic_agents_play_what_mtf_simulate_plays(mtf_bin):
    # The paper's example with every tenant at factor 1 (the economic agent) is the episode
    # `mtf simulate` runs on the file: the same prices, round by round, and utilities.
    env = mtf_env.parallel_env(EXAMPLE)
    one = env.levels.index(1.0)
    total, _ = play(env, 1, lambda a: one)
    mine = env.metrics()
    sim = run_json([mtf_bin, "simulate", "--config", EXAMPLE, "--json"])
    theirs = sim.get("metrics", sim)
    assert mine["prices"] == theirs["prices"]
    assert np.allclose(mine["utility"], theirs["utility"])
    assert np.allclose([total[a] for a in env.possible_agents], mine["utility"])


def test_the_learning_tenants_are_the_agents_of_a_file_that_marks_them():
    # three-types marks the 12 inference services: they are the agents and the 20 others play
    # their own factors (1: the economic agent), so with the services at 1 too the episode is the
    # one where every tenant is an agent at 1; each service is paid over its job's worth.
    assert mtf_env.VecEnv(THREE, num_envs=2).n_agents == 12
    env = mtf_env.parallel_env(THREE)
    assert len(env.possible_agents) == 12 and all(a.startswith("infer") for a in env.possible_agents)
    total, ends = play(env, 4, lambda a: env.levels.index(1.0))
    assert all(n == 1 for n in ends.values())
    everyone = mtf_env.parallel_env(THREE, overrides=["market.tenants.1.learn=false"])
    utility, _ = play(everyone, 4, lambda a: everyone.levels.index(1.0))
    assert env.metrics()["utility"] == everyone.metrics()["utility"]
    for a in env.possible_agents:
        # Its worth: value 1.2 x its size, drawn in [4, 8].
        if utility[a] == 0.0:
            assert total[a] == 0.0
        else:
            assert 1.2 * 4 - 1e-9 <= utility[a] / total[a] <= 1.2 * 8 + 1e-9, (a, total[a], utility[a])


def test_same_seed_same_episode():
    def trace(seed):
        env = mtf_env.parallel_env(THREE)
        rng = np.random.default_rng(0)
        env.reset(seed=seed)
        out = []
        while env.agents:
            step = env.step({a: int(rng.integers(len(env.levels))) for a in env.agents})
            out.append((sorted(step[1].items()), sorted((a, i["place"], i["price"]) for a, i in step[4].items())))
        return out, env.metrics()

    assert trace(3) == trace(3)
    assert trace(3)[1] != trace(4)[1], "three-types draws job sizes from the seed"


def test_bad_input_raises_instead_of_crashing(tmp_path):
    env = mtf_env.parallel_env(DUEL)
    with pytest.raises(ValueError, match="call reset"):
        env.step({})
    env.reset(seed=1)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step({"L": 99})
    # The first index past the levels is the market's named action `own` inside mtf (a
    # reference row); Python's action space stays the levels.
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step({"L": len(env.levels)})
    with pytest.raises(ValueError, match="no action for agent 'L'"):
        env.step({})
    with pytest.raises(ValueError, match="unknown or finished"):
        env.step({"L": 0, "E": 0})
    with pytest.raises(ValueError, match="learner.levels"):
        mtf_env.parallel_env(DUEL, overrides=["learner.levels=[0.5, 0.4]"])
    bad = tmp_path / "bad.toml"
    bad.write_text(Path(DUEL).read_text().replace("rounds = 30", "rounds = 0"))
    with pytest.raises(ValueError, match="env.rounds"):
        mtf_env.parallel_env(bad)


@pytest.mark.parametrize("threads", [1, 2])
def test_vecenv_copies_play_the_parallel_envs_episodes(threads):
    # Copy k of a VecEnv reset with seed s plays episode_seed(s, k, 0), as a ParallelEnv reset
    # with that seed does: the same rewards, ends and utilities, whatever the thread count.
    # Every tenant an agent (the file marks none as learning), so the rewards are utilities.
    everyone = ["market.tenants.1.learn=false"]
    vec = mtf_env.VecEnv(THREE, num_envs=3, threads=threads, overrides=everyone)
    assert vec.n_agents == 32 and vec.obs_dim == 6 + 3 * 3
    rng = np.random.default_rng(7)
    obs = vec.reset(seed=11)
    totals = np.zeros((3, vec.n_agents))
    ends = np.zeros((3, vec.n_agents), dtype=int)
    plays = []
    done = np.zeros(3, dtype=bool)
    while not done.all():
        a = rng.integers(len(vec.levels), size=(3, vec.n_agents))
        plays.append(a)
        obs, rew, term, trunc = vec.step(a)
        live = ~done
        totals[live] += rew[live]
        ends[live] += (term | trunc)[live]
        # Every tenant ends once an episode: then the copy was reset.
        done = (ends >= 1).all(axis=1)
    for k in range(3):
        env = mtf_env.parallel_env(THREE, overrides=everyone)
        env.reset(seed=mtf_env.episode_seed(11, k, 0))
        got = {a: 0.0 for a in env.possible_agents}
        t = 0
        while env.agents:
            _, rew, _, _, _ = env.step({a: int(plays[t][k, env._index[a]]) for a in env.agents})
            for a, r in rew.items():
                got[a] += r
            t += 1
        assert np.allclose(totals[k], [got[a] for a in env.possible_agents])
        assert (ends[k] == 1).all(), "every tenant ends exactly once"
        assert np.allclose(totals[k], env.metrics()["utility"])

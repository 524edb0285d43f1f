"""The worlds behind the seam (env::worlds) from Python: PettingZoo's API and seed tests on
Gavel's world and the toy bandit, agents that arrive and leave, and agreement with mtf."""

from __future__ import annotations

import math

import numpy as np

import pytest
from conftest import ROOT, run_json
from pettingzoo.test import parallel_api_test, parallel_seed_test

import mtf_env

SMALL = str(ROOT / "configs/gavel/small.toml")
LEARN = str(ROOT / "configs/gavel/learn.toml")
TINY = ["env.generate.jobs=30", "env.window=[5,25]"]


@pytest.mark.parametrize(("config", "overrides"), [(SMALL, ["env.rho=false"]), (LEARN, TINY)])
def test_pettingzoo_parallel_api(config, overrides):
    env = mtf_env.parallel_env(config, overrides)
    assert isinstance(env, mtf_env.WorldParallelEnv)
    parallel_api_test(env, num_cycles=100_000)


def test_pettingzoo_seed_test():
    parallel_seed_test(lambda: mtf_env.parallel_env(LEARN, TINY))


def test_jobs_arrive_and_leave_and_the_trace_ends_as_mtf_simulate_ends_it(mtf_bin):
    # Gavel's small trace under its FIFO-perf: jobs join over time, finish, and the episode's
    # average JCT is the one `mtf simulate` reports (and Gavel's 14.22 h, within 1%).
    env = mtf_env.parallel_env(SMALL, ['mechanism.name="fifo_perf"'])
    obs, _ = env.reset(seed=1)
    seen, finished = set(env.agents), set()
    while env.agents:
        obs, rew, term, trunc, _ = env.step({a: 0 for a in env.agents})
        seen |= set(env.agents)
        finished |= {a for a, t in term.items() if t}
        assert all(env.observation_space(a).contains(obs[a]) for a in env.agents)
    assert len(seen) == 100 and len(finished) == 100
    ours = env.figures()["avg_jct_h"]
    sim = run_json([mtf_bin, "simulate", "--config", SMALL, "--mechanism", "fifo_perf", "--json"])
    assert math.isclose(ours, sim["rows"][0]["eval"]["avg_jct_h"]["mean"], rel_tol=1e-12)
    assert abs(ours / 14.2228 - 1) < 0.01


def test_reset_seed_plays_the_episode_mtf_simulate_plays_on_it(mtf_bin):
    # Generated jobs: each of simulate's episode seeds, replayed here at the same fixed level,
    # gives the same average JCT to the bit.
    sets = [x for o in TINY for x in ("--set", o)]
    sim = run_json([mtf_bin, "simulate", "--config", LEARN, "--policy", "fixed:0.3", "--seeds", "2", "--json", *sets])
    env = mtf_env.parallel_env(LEARN, TINY)
    level = min(range(len(env.levels)), key=lambda k: abs(env.levels[k] - 0.3))
    assert len(sim["episode_seeds"]) == 2
    for seed, theirs in zip(sim["episode_seeds"], sim["rows"][0]["per_seed"]):
        env.reset(seed=seed)
        while env.agents:
            env.step({a: level for a in env.agents})
        assert env.figures()["avg_jct_h"] == theirs, seed


def test_bad_actions_are_value_errors():
    env = mtf_env.parallel_env(SMALL)
    env.reset(seed=1)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step({a: 99 for a in env.agents})
    with pytest.raises(ValueError, match="no action for agent"):
        env.step({})


QUICKSTART = str(ROOT / "configs/quickstart.toml")
DUEL = str(ROOT / "configs/market/duel.toml")


@pytest.mark.parametrize("config", [QUICKSTART, str(ROOT / "configs/auctions/second-price.toml"), DUEL, SMALL])
def test_every_world_is_played_by_the_one_adapter(config):
    # The queue and valuation worlds, the market and Gavel's cluster: one ParallelEnv over the
    # Rust trait, whose infos are the world's round records.
    env = mtf_env.parallel_env(config, ["env.rounds=12"] if config in (QUICKSTART,) else [])
    assert isinstance(env, mtf_env.WorldParallelEnv)
    _, infos = env.reset(seed=3)
    assert set(infos) == set(env.agents)
    steps = 0
    while env.agents and steps < 40:
        obs, rew, term, trunc, infos = env.step({a: 0 for a in env.agents})
        assert set(infos) == set(rew) == set(obs) == set(term) == set(trunc)
        steps += 1
    if config == QUICKSTART:
        assert set(infos["agent_0"]) == {"arrived", "rejected", "dropped", "served", "backlog", "won", "spent", "budget", "level"}
        assert env.agents == [] and all(trunc.values()) and steps == 12
        assert env.metrics()["rounds"] == 12
    if config == DUEL:
        assert {i["place"] for i in infos.values()} <= {"absent", "waiting", "on_demand", "auctioned", "done"}


def test_a_truncated_agent_gets_the_worlds_last_observation_not_a_blank():
    # The queue world's last observation at the truncation is the environment's (a value
    # bootstraps from it), as its VecEnv returns; a world without one gives a zero row.
    env = mtf_env.parallel_env(QUICKSTART, ["env.rounds=3"])
    env.reset(seed=1)
    while env.agents:
        obs, *_ = env.step({a: 2 for a in env.agents})
    assert any(o.any() for o in obs.values())
    assert obs["agent_0"][0] > 0, "the budget share after the last round"


@pytest.mark.parametrize("threads", [1, 2])
def test_a_gavel_vecenv_plays_the_parallel_envs_episodes(threads):
    # The batched API over the world trait: copy k reset with seed s plays episode_seed(s, k, 0)
    # as a ParallelEnv does; jobs are rows by id, absent ones carry reward 0; every job ends
    # once (terminated when it finishes); the same on 1 and 2 threads.
    vec = mtf_env.VecEnv(LEARN, num_envs=2, overrides=TINY, threads=threads)
    assert vec.n_agents == 30 and vec.rounds == 10_000_000  # env.max_rounds, the cap
    level = 2
    vec.reset(seed=7)
    totals = np.zeros((2, vec.n_agents))
    ends = np.zeros((2, vec.n_agents), dtype=int)
    done = np.zeros(2, dtype=bool)
    steps = 0
    while not done.all():
        _, rew, term, trunc = vec.step(np.full((2, vec.n_agents), level))
        live = ~done
        totals[live] += rew[live]
        ends[live] += (term | trunc)[live]
        done |= (ends >= 1).all(axis=1)
        steps += 1
        assert steps < 10_000
    for k in range(2):
        env = mtf_env.parallel_env(LEARN, TINY)
        env.reset(seed=mtf_env.episode_seed(7, k, 0))
        got = dict.fromkeys(env.possible_agents, 0.0)
        while env.agents:
            _, rew, _, _, _ = env.step({a: level for a in env.agents})
            for a, r in rew.items():
                got[a] += r
        assert np.allclose(totals[k], [got[a] for a in env.possible_agents])
        assert (ends[k] == 1).all(), "every job ends exactly once"


def test_bad_agent_ids_are_value_errors_that_leave_the_environment_working():
    # agent_name(10**6) panicked inside the lock in the queue world and the market, and every
    # later call then raised a poisoned-lock error.
    for config in (QUICKSTART, DUEL):
        env = mtf_env.parallel_env(config)
        for call in (env._native.agent_name, env._native.weight):
            with pytest.raises(ValueError, match="is not below"):
                call(10**6)
        with pytest.raises(ValueError, match="is not below"):
            env._native.infos([10**6])
        env.reset(seed=1)
        env.step({a: 0 for a in env.agents})


def test_the_markets_rounds_and_weights_are_kept_by_the_one_adapter():
    env = mtf_env.parallel_env(DUEL)
    assert env.rounds == 30 and set(env.weights) == set(env.possible_agents)
    # Per-episode overrides may not change a tenant's weight (env.weights would be stale).
    with pytest.raises(ValueError, match="their weights"):
        env.reset(seed=1, options={"overrides": ["market.tenants.1.weight=3.0"]})
    env = mtf_env.parallel_env(DUEL, overrides=["market.tenants.1.learn=false"])
    a, b = (env.action_space(x) for x in env.possible_agents)
    assert a is not b and a is env.action_space(env.possible_agents[0])


def test_the_stack_and_world_a_config_names_read_its_overrides(tmp_path):
    # `--set` values count, as on the command line (they were ignored: a queue world's file
    # with `env.stack="seam"` set by an override read as its own stack), and an iterator of
    # overrides reaches the environment as well as the world's name.
    from mtf_env import _native

    assert not _native.is_seam_world(QUICKSTART)
    assert _native.is_seam_world(QUICKSTART, ['env.stack="seam"'])
    assert _native.is_seam_world(LEARN)
    assert _native.world_name(QUICKSTART, ['env.world="valuations"']) == "valuations"
    env = mtf_env.parallel_env(QUICKSTART, iter(["env.rounds=3"]))
    env.reset(seed=1)
    steps = 0
    while env.agents:
        env.step({a: 0 for a in env.agents})
        steps += 1
    assert steps == 3
    # The environment's type follows the world the overrides name, not the file's.
    odd = tmp_path / "odd.toml"
    odd.write_text((ROOT / "configs/quickstart.toml").read_text().replace("[env]\n", '[env]\nworld = "nowhere"\n', 1))
    assert isinstance(mtf_env.parallel_env(str(odd), ['env.world="queues"']), mtf_env.MtfParallelEnv)

"""mtf_env.parallel_env as a PettingZoo ParallelEnv: PettingZoo's own tests, determinism,
agreement with `mtf simulate`, and errors that raise instead of crashing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import CONFIGS, QUICKSTART, ROOT, run_json
from pettingzoo.test import parallel_api_test, parallel_seed_test

import mtf_env


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pettingzoo_parallel_api(name):
    env = mtf_env.parallel_env(CONFIGS[name], overrides=["env.rounds=30"])
    parallel_api_test(env, num_cycles=100)
    # The API test stops at the truncation: every agent finished, none left.
    assert env.agents == []


@pytest.mark.parametrize("name", ["quickstart", "second-price"])
def test_pettingzoo_seed_test(name):
    parallel_seed_test(lambda: mtf_env.parallel_env(CONFIGS[name], overrides=["env.rounds=30"]))


def rollout(env, seed, actions):
    """A whole episode under a fixed action sequence: every observation, reward and info."""
    obs, infos = env.reset(seed=seed)
    trace = [(obs, infos)]
    t = 0
    while env.agents:
        step = env.step({a: int(actions[t % len(actions), i]) for i, a in enumerate(env.agents)})
        trace.append(step)
        t += 1
    return trace, t


def test_same_seed_gives_identical_whole_episodes():
    # PettingZoo's seed test stops after one step; this compares every round.
    a = mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=60"])
    b = mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=60"])
    rng = np.random.default_rng(5)
    actions = rng.integers(0, len(a.levels), size=(60, len(a.possible_agents)))
    ta, na = rollout(a, 11, actions)
    tb, nb = rollout(b, 11, actions)
    assert na == nb == 60
    for x, y in zip(ta, tb):
        for dx, dy in zip(x, y):
            assert dx.keys() == dy.keys()
            for k in dx:
                if isinstance(dx[k], dict):
                    assert dx[k] == dy[k]
                else:
                    np.testing.assert_array_equal(dx[k], dy[k])
    # A different seed is a different episode (so the comparison above could fail).
    tc, _ = rollout(mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=60"]), 12, actions)
    assert any(not np.array_equal(x[0]["agent_0"], y[0]["agent_0"]) for x, y in zip(ta[1:], tc[1:]))


@pytest.mark.parametrize("name,level", [("quickstart", "0.3"), ("second-price", "1")])
def test_same_seed_and_actions_as_mtf_simulate(mtf_bin, tmp_path, name, level):
    config = CONFIGS[name]
    sim = run_json(
        [mtf_bin, "simulate", "--config", config, "--policy", f"fixed:{level}", "--seeds", "2",
         "--set", "env.rounds=50", "--json", "--out", str(tmp_path / "sim"), "--quiet"]
    )
    rows = [json.loads(line) for line in (tmp_path / "sim/metrics.jsonl").read_text().splitlines()]
    env = mtf_env.parallel_env(config, overrides=["env.rounds=50"])
    index = min(range(len(env.levels)), key=lambda k: abs(env.levels[k] - float(level)))
    for seed, row in zip(sim["episode_seeds"], rows):
        env.reset(seed=seed)
        total = np.zeros(len(env.possible_agents))
        while env.agents:
            _, rew, _, _, _ = env.step({a: index for a in env.agents})
            total += [rew[a] for a in env.possible_agents]
        m = env.metrics()
        assert m["welfare"] == row["welfare"], (seed, m["welfare"], row["welfare"])
        assert m["throughput"] == row["throughput"]
        # The per-step rewards add up to the episode's reward, as mtf accounts it.
        np.testing.assert_allclose(total / m["rounds"], row["reward"], rtol=1e-12)


def test_reset_without_seed_continues_the_seed_sequence():
    env = mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=5"])
    first, _ = env.reset(seed=3)
    second, _ = env.reset()
    again, _ = mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=5"]).reset(seed=mtf_env.episode_seed(3, 0, 1))
    np.testing.assert_array_equal(second["agent_0"], again["agent_0"])
    assert not np.array_equal(first["agent_0"], second["agent_0"]) or first["agent_1"].tolist() != second["agent_1"].tolist()


def test_options_override_the_scenario_for_one_episode():
    env = mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=5"])
    env.reset(seed=1, options={"overrides": ["env.rounds=2"]})
    steps = 0
    while env.agents:
        env.step({a: 0 for a in env.agents})
        steps += 1
    assert steps == 2
    env.reset(seed=1)  # back to the constructor's scenario
    steps = 0
    while env.agents:
        env.step({a: 0 for a in env.agents})
        steps += 1
    assert steps == 5
    with pytest.raises(ValueError, match="may not change the agents"):
        env.reset(seed=1, options={"overrides": ["env.agents=[{ count = 3, load = 0.5 }]"]})


def test_spaces_and_infos():
    env = mtf_env.parallel_env(QUICKSTART)
    obs, infos = env.reset(seed=2)
    for a in env.possible_agents:
        assert env.observation_space(a) is env.observation_space(a)
        assert env.observation_space(a).contains(obs[a])
        assert obs[a].dtype == np.float32
        assert env.action_space(a).n == len(env.levels) == 10
    _, rew, term, trunc, infos = env.step({a: 9 for a in env.agents})
    assert set(infos["agent_0"]) == {"arrived", "rejected", "dropped", "served", "backlog", "won", "spent", "budget", "level"}
    assert all(math.isclose(i["level"], 0.9) for i in infos.values())
    assert not any(term.values()) and not any(trunc.values())
    # Accelerators won add up to the cluster's 16 or fewer.
    assert 0 < sum(i["won"] for i in infos.values()) <= 16


def test_bad_input_raises_with_the_rust_message():
    with pytest.raises(ValueError, match="no_such.toml"):
        mtf_env.parallel_env(str(ROOT / "configs/no_such.toml"))
    with pytest.raises(ValueError, match=r"env\.rounds"):
        mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=-3"])
    with pytest.raises(ValueError, match="nope"):
        mtf_env.parallel_env(QUICKSTART, overrides=["mechanism.name=\"nope\""])
    with pytest.raises(TypeError):
        mtf_env.parallel_env(QUICKSTART, overrides="env.rounds=3")
    env = mtf_env.parallel_env(QUICKSTART, overrides=["env.rounds=2"])
    with pytest.raises(ValueError, match="call reset"):
        env.step({})
    env.reset(seed=1)
    ok = {a: 0 for a in env.agents}
    with pytest.raises(ValueError, match="unknown"):
        env.step({**ok, "agent_99": 0})
    with pytest.raises(ValueError, match="no action for agent 'agent_0'"):
        env.step({a: 0 for a in env.agents[1:]})
    with pytest.raises(ValueError, match=r"agent 'agent_3': action 10 is outside Discrete\(10\)"):
        env.step({**ok, "agent_3": 10})
    with pytest.raises(ValueError, match=r"outside Discrete\(10\)"):
        env.step({**ok, "agent_3": -1})
    with pytest.raises(ValueError, match="not an integer"):
        env.step({**ok, "agent_3": 0.5})
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=-1)
    # After every error the environment still works, and np.int64 actions are fine.
    env.step({a: np.int64(1) for a in env.agents})
    env.step({a: 1 for a in env.agents})
    assert env.agents == []
    with pytest.raises(ValueError, match="call reset"):
        env.step({a: 1 for a in env.possible_agents})


def test_metrics_before_reset_and_bad_options_raised_the_wrong_error():
    """metrics() before reset() panicked (PanicException from an index out of bounds);
    reset(options=5) raised AttributeError. Both are ValueErrors with a message."""
    env = mtf_env.parallel_env(QUICKSTART)
    with pytest.raises(ValueError, match="before reset"):
        env.metrics()
    with pytest.raises(ValueError, match="options must be a dict or None, got int"):
        env.reset(seed=1, options=5)
    env.reset(seed=1)
    assert env.metrics()["rounds"] == 0

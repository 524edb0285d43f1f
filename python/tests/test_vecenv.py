"""mtf_env.VecEnv: shapes, auto-reset, the seed contract with parallel_env, independence
from the thread count, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import CONFIGS, QUICKSTART, ROOT

import mtf_env

ROUNDS = 12


def play(vec, seed, actions):
    """Every array a VecEnv returns over len(actions) steps, final observations included."""
    out = [vec.reset(seed)]
    for a in actions:
        step = vec.step(a)
        out.extend(step)
        out.append(vec.final_obs)
        out.extend(vec.infos().values())
    return out


def actions_for(vec, steps, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, len(vec.levels), size=(steps, vec.num_envs, vec.n_agents))


@pytest.mark.parametrize("name", ["quickstart", "second-price"])
def test_results_do_not_depend_on_threads(name):
    one = mtf_env.VecEnv(CONFIGS[name], 5, overrides=[f"env.rounds={ROUNDS}"], threads=1)
    two = mtf_env.VecEnv(CONFIGS[name], 5, overrides=[f"env.rounds={ROUNDS}"], threads=2)
    acts = actions_for(one, 2 * ROUNDS + 3)  # through two auto-resets
    for x, y in zip(play(one, 7, acts), play(two, 7, acts)):
        np.testing.assert_array_equal(x, y)


def test_shapes_and_dtypes():
    vec = mtf_env.VecEnv(QUICKSTART, 3, overrides=[f"env.rounds={ROUNDS}"])
    obs = vec.reset(1)
    assert obs.shape == (3, 8, vec.obs_dim) and obs.dtype == np.float32
    assert all(vec.observation_space.contains(o) for o in obs.reshape(-1, vec.obs_dim))
    obs, rew, term, trunc = vec.step(np.zeros((3, 8), dtype=np.int32))
    assert obs.shape == (3, 8, vec.obs_dim)
    assert rew.shape == term.shape == trunc.shape == (3, 8)
    assert rew.dtype == np.float64 and term.dtype == trunc.dtype == np.bool_
    assert not term.any() and not trunc.any()
    # Copies differ (each its own seed) unless the seeds say otherwise.
    assert not np.array_equal(obs[0], obs[1])


def test_copies_follow_the_seed_contract_and_match_parallel_env():
    """Copy k, episode e plays episode_seed(seed, k, e): the same episode parallel_env plays
    on that seed, round for round, with final_obs the observation it ended on and infos() its
    round records (at the end, the last round's, not the next episode's)."""
    vec = mtf_env.VecEnv(QUICKSTART, 3, overrides=[f"env.rounds={ROUNDS}"], threads=2)
    acts = actions_for(vec, 2 * ROUNDS, seed=3)
    obs0 = vec.reset(21)
    assert mtf_env.episode_seed(21, 0, 0) == 21
    pars = [mtf_env.parallel_env(QUICKSTART, overrides=[f"env.rounds={ROUNDS}"]) for _ in range(3)]
    for k, p in enumerate(pars):
        first, _ = p.reset(seed=mtf_env.episode_seed(21, k, 0))
        np.testing.assert_array_equal(obs0[k], np.stack([first[a] for a in p.possible_agents]))
    for t in range(2 * ROUNDS):
        obs, rew, _, trunc = vec.step(acts[t])
        infos = vec.infos()
        assert set(infos) == {"arrived", "rejected", "dropped", "served", "backlog", "won", "spent", "budget", "level"}
        for k, p in enumerate(pars):
            o, r, _, tr, inf = p.step({a: int(acts[t, k, i]) for i, a in enumerate(p.possible_agents)})
            np.testing.assert_array_equal(rew[k], [r[a] for a in p.possible_agents])
            for key, arr in infos.items():
                np.testing.assert_array_equal(arr[k], [float(inf[a][key]) for a in p.possible_agents])
            expected = np.stack([o[a] for a in p.possible_agents])
            assert trunc[k].all() == all(tr.values())
            if all(tr.values()):
                np.testing.assert_array_equal(vec.final_obs[k], expected)
                nxt, _ = p.reset()  # the next seed of the sequence: episode_seed(21, k, 1)
                np.testing.assert_array_equal(obs[k], np.stack([nxt[a] for a in p.possible_agents]))
            else:
                np.testing.assert_array_equal(obs[k], expected)
    assert trunc.all()  # the second episode ended on the last step


def test_bad_input_raises_and_changes_nothing():
    with pytest.raises(ValueError, match="num_envs is 0"):
        mtf_env.VecEnv(QUICKSTART, 0)
    with pytest.raises(ValueError, match="threads is 0"):
        mtf_env.VecEnv(QUICKSTART, 2, threads=0)
    with pytest.raises(ValueError, match="no_such"):
        mtf_env.VecEnv("configs/no_such.toml", 2)
    vec = mtf_env.VecEnv(QUICKSTART, 2, overrides=[f"env.rounds={ROUNDS}"])
    with pytest.raises(ValueError, match="before reset"):
        vec.step(np.zeros((2, 8), dtype=np.int64))
    vec.reset(4)
    with pytest.raises(ValueError, match=r"shape \[2, 7\], expected \[num_envs, n_agents\] = \[2, 8\]"):
        vec.step(np.zeros((2, 7), dtype=np.int64))
    with pytest.raises(ValueError, match=r"shape \[16\]"):
        vec.step(np.zeros(16, dtype=np.int64))
    with pytest.raises(ValueError, match="dtype float64"):
        vec.step(np.zeros((2, 8)))
    bad = np.zeros((2, 8), dtype=np.int64)
    bad[1, 5] = 10
    with pytest.raises(ValueError, match=r"env 1, agent 5: action 10 is outside Discrete\(10\)"):
        vec.step(bad)
    bad[1, 5] = -2
    with pytest.raises(ValueError, match="action -2"):
        vec.step(bad)
    # Nothing stepped: the same batch now matches a fresh one step for step.
    fresh = mtf_env.VecEnv(QUICKSTART, 2, overrides=[f"env.rounds={ROUNDS}"])
    fresh.reset(4)
    ok = np.ones((2, 8), dtype=np.int64)
    for x, y in zip(vec.step(ok), fresh.step(ok)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("threads", [2, 4])
def test_two_threads_stepping_one_vecenv_deadlocked_the_interpreter(threads):
    """step held the batch's lock while it released the GIL: a second thread waiting for the
    lock with the GIL kept the first from taking it back. A thread that finds the VecEnv in use
    now gets a RuntimeError at once; nothing hangs, and every step that ran is a whole step."""
    import threading

    vec = mtf_env.VecEnv(QUICKSTART, 8, overrides=["env.rounds=50"], threads=2)
    vec.reset(0)
    acts = np.zeros((vec.num_envs, vec.n_agents), dtype=np.int64)
    done, refused, other = [], [], []

    def worker():
        for _ in range(200):
            try:
                obs, rewards, _, _ = vec.step(acts)
                assert obs.shape[0] == vec.num_envs and np.isfinite(rewards).all()
                done.append(1)
            except RuntimeError as e:
                assert "in use by another thread" in str(e)
                refused.append(1)
            except Exception as e:  # noqa: BLE001 - reported below
                other.append(e)

    pool = [threading.Thread(target=worker, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in pool), "a thread hung"
    assert not other, other
    assert len(done) + len(refused) == 200 * threads and done


def test_a_batch_past_the_cell_limit_was_an_interpreter_abort():
    # 65,536 copies of 8 agents x 2,000 accelerators: the check is num_envs x cells, not
    # num_envs alone (issue 42.5: past memory the allocation aborted with SIGABRT).
    with pytest.raises(ValueError, match=r"num_envs x agents x accelerators = 65536 x 16000 .* more than the limit"):
        mtf_env.VecEnv(QUICKSTART, 65536, overrides=["env.cluster.0.count=1000", "env.cluster.1.count=1000"])
    market = str(ROOT / "configs/market/three-types.toml")
    with pytest.raises(ValueError, match=r"num_envs x agents x accelerators = 65536 x \d+ .* more than the limit"):
        mtf_env.VecEnv(market, 65536, overrides=["market.tenants.0.count=10000"])

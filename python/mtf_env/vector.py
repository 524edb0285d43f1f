"""Many environment copies at once, NumPy arrays in and out."""

from __future__ import annotations

import os
from typing import Iterable

import numpy as np
from gymnasium.spaces import Box, Discrete

from . import _native
from ._checks import _Picklable, _overrides, _seed


class VecEnv(_Picklable):
    """``num_envs`` copies of one scenario, stepped in parallel in Rust (``threads`` worker
    threads, default one per core) with the GIL released. Results do not depend on
    ``threads``.

    - ``reset(seed) -> obs``: ``[num_envs, n_agents, obs_dim]`` float32. Copy k's episode e
      plays ``mtf_env.episode_seed(seed, k, e)``; copy 0's first episode plays ``seed``.
    - ``step(actions) -> (obs, rewards, terminations, truncations)``: actions are integer
      level indices ``[num_envs, n_agents]``; rewards float64 and the flags bool, all
      ``[num_envs, n_agents]``. A copy whose episode is truncated is reset at once: ``obs``
      holds its new episode's first observation, and ``final_obs`` (same shape) the
      observation its old episode ended on, in the rows where ``truncations`` is True.
      The environment draws no round past the last, so that final observation is the last
      round's own. ``infos()`` gives the last step's round record as arrays (a copy whose
      episode ended then: that episode's last round).

    Every world is batched the same way, over the world trait, rows by agent id (the queue
    world's agents are all present every round): ``terminations`` is True in the step an agent leaves (a market
    tenant's job finishes; its later rows, until the copy resets, carry reward 0, and a
    market's features still move: deadline slack, prices; an agent with no observation of the
    world's gets a zero row clipped into the space), ``truncations`` for the agents still
    present when the episode ends; a copy resets when its episode ends. ``infos()`` gives the
    round records' numeric fields per agent (a market: ``price``, ``progress``, ``tokens``,
    ``level``, ``utility``). ``rounds`` is the most rounds an episode has (Gavel's ``env.max_rounds``
    cap; 0 where a world has none).
    """

    def __init__(
        self,
        config: str | os.PathLike,
        num_envs: int,
        overrides: Iterable[str] = (),
        threads: int | None = None,
    ):
        make = _native.WorldVecEnv
        overrides = _overrides(overrides, "overrides")
        self._args = (os.path.abspath(os.fspath(config)), int(num_envs), tuple(overrides), threads)
        self._started = False
        self._native = make(os.fspath(config), int(num_envs), overrides, threads)
        spec = self._native.spec
        self.num_envs = int(num_envs)
        self.possible_agents = list(spec.agents)
        self.n_agents = len(self.possible_agents)
        self.obs_dim = spec.dim
        self.levels = list(spec.levels)
        self.action_kind = spec.kind
        self.rounds = spec.rounds
        self.weights = np.asarray(spec.weights)
        self.observation_space = Box(
            np.asarray(spec.low, dtype=np.float32), np.asarray(spec.high, dtype=np.float32), dtype=np.float32
        )
        self.action_space = Discrete(len(self.levels))

    def _in_episode(self) -> bool:
        # Copies reset themselves: once reset, some episode is always in progress.
        return self._started

    def _in_episode_message(self) -> str:
        return (
            "VecEnv has been reset: its copies reset themselves, so an episode is always in progress "
            "and lives in Rust; pickle it before its first reset()"
        )

    def reset(self, seed: int) -> np.ndarray:
        obs = self._native.reset(_seed(seed))
        self._started = True
        return obs

    def step(self, actions) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        a = np.asarray(actions)
        want = (self.num_envs, self.n_agents)
        if a.shape != want:
            raise ValueError(f"actions have shape {list(a.shape)}, expected [num_envs, n_agents] = {list(want)}")
        if not np.issubdtype(a.dtype, np.integer):
            raise ValueError(f"actions have dtype {a.dtype}, expected integer level indices")
        return self._native.step(a.astype(np.int64, copy=False))

    @property
    def final_obs(self) -> np.ndarray:
        return self._native.final_obs

    def infos(self) -> dict[str, np.ndarray]:
        return self._native.infos()

    def close(self) -> None:
        pass

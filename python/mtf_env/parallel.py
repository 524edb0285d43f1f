"""The environment as a PettingZoo ``ParallelEnv``."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from typing import Iterable

import numpy as np
from gymnasium.spaces import Box, Discrete
from pettingzoo import ParallelEnv

from . import _native
from ._checks import _Picklable, _actions, _overrides, _seed
from .market import MarketParallelEnv
from .worlds import WorldParallelEnv


class MtfParallelEnv(_Picklable, ParallelEnv):
    """A cluster of accelerators shared by agents under one mechanism (MTF, an auction or a
    baseline), one round per step.

    Observations are float32 vectors (SPEC 2.4 and the configured extras); an action is the
    index of a level (a utility threshold, or a bid factor in the auctions); rewards are the
    round's rewards (SPEC 2.8). Episodes end by truncation after ``env.rounds`` rounds,
    never by termination. ``infos[agent]`` is the round's record: ``arrived``,
    ``rejected``, ``dropped``, ``served``, ``backlog``, ``won``, ``spent``, ``budget`` (after
    the round) and ``level`` (the value of the action played).
    """

    metadata = {"name": "mtf_v0", "render_modes": [], "is_parallelizable": True}
    _pickled_state = ("_root", "_episode")

    def __init__(self, config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode: {render_mode!r}; mtf has no renderer, use None")
        self.render_mode = None
        self._config = os.fspath(config)
        self._base = _overrides(overrides, "overrides")
        self._args = (os.path.abspath(self._config), tuple(self._base))
        self._active = self._base
        self._native = _native.Env(self._config, self._base)
        spec = self._native.spec
        self._spec = spec
        self.possible_agents = list(spec.agents)
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self.levels = list(spec.levels)
        self.action_kind = spec.kind
        self.weights = dict(zip(self.possible_agents, spec.weights))
        low = np.asarray(spec.low, dtype=np.float32)
        high = np.asarray(spec.high, dtype=np.float32)
        self.observation_spaces = {a: Box(low, high, dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: Discrete(len(self.levels)) for a in self.possible_agents}
        self._root: int | None = None
        self._episode = 0

    def observation_space(self, agent: str) -> Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Discrete:
        return self.action_spaces[agent]

    def _rebuild(self, overrides: list[str]) -> None:
        native = _native.Env(self._config, overrides)
        spec = native.spec
        old = self._spec
        if (list(spec.agents), spec.dim, list(spec.levels), spec.kind) != (
            list(old.agents),
            old.dim,
            list(old.levels),
            old.kind,
        ) or not (np.array_equal(spec.low, old.low) and np.array_equal(spec.high, old.high)):
            raise ValueError(
                "options['overrides'] may not change the agents, the levels or the observation space; "
                "make a new environment for that"
            )
        self._native = native
        self._active = overrides

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. ``options={"overrides": ["env.load=0.6", ...]}`` changes the
        scenario for this episode (on top of the constructor's overrides; other option keys
        are ignored, as PettingZoo's API test passes its own). Without a seed, the next
        episode of the last seed's sequence (``mtf_env.episode_seed(seed, 0, k)``)."""
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
        extra = _overrides((options or {}).get("overrides", ()), "options['overrides']")
        wanted = self._base + extra
        if wanted != self._active:
            self._rebuild(wanted)
        if seed is not None:
            self._root, self._episode = _seed(seed), 0
        elif self._root is None:
            self._root, self._episode = secrets.randbits(64), 0
        obs, infos = self._native.reset(_native.episode_seed(self._root, 0, self._episode))
        self._episode += 1
        self.agents = list(self.possible_agents)
        return (
            {a: obs[i] for i, a in enumerate(self.possible_agents)},
            {a: infos[i] for i, a in enumerate(self.possible_agents)},
        )

    def _action_list(self, actions: dict) -> list[int]:
        # Every agent is live until the last round (nothing terminates early).
        out = _actions(actions, self.agents, self._index, len(self.levels))
        return out

    def step(self, actions: dict):
        obs, rewards, truncated, infos = self._native.step(self._action_list(actions))
        agents = self.possible_agents
        out = (
            {a: obs[i] for i, a in enumerate(agents)},
            {a: float(rewards[i]) for i, a in enumerate(agents)},
            {a: False for a in agents},
            {a: truncated for a in agents},
            {a: infos[i] for i, a in enumerate(agents)},
        )
        if truncated:
            self.agents = []
        return out

    def metrics(self) -> dict:
        """The episode's SPEC 5 figures so far (throughput, welfare, drops, wait, ...), as
        ``mtf simulate`` computes them (without the fairness replays)."""
        return json.loads(self._native.metrics_json())

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass


def parallel_env(config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None) -> ParallelEnv:
    """The scenario in ``config`` (a TOML file as ``mtf`` reads it; ``overrides`` are
    ``--set`` values such as ``"env.rounds=100"``) as a PettingZoo ``ParallelEnv``: an
    ``MtfParallelEnv``, for a market file (``env.world = "market"``) a ``MarketParallelEnv``,
    and for a world behind the seam (``env.world = "gavel"``, ``"bandit"``) a
    ``WorldParallelEnv``."""
    if _native.is_market_file(os.fspath(config)):
        return MarketParallelEnv(config, overrides, render_mode)
    if _native.is_seam_world(os.fspath(config)):
        return WorldParallelEnv(config, overrides, render_mode)
    return MtfParallelEnv(config, overrides, render_mode)

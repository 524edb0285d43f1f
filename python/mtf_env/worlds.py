"""The worlds behind mtf's seam (``env::worlds``: Gavel's GPU cluster, the toy bandit) as a
PettingZoo ``ParallelEnv``: one adapter for every such world."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from typing import Iterable

import numpy as np
from gymnasium.spaces import Box, Discrete
from pettingzoo import ParallelEnv

from . import _native
from ._checks import _Picklable, _actions, _overrides, _seed


class WorldParallelEnv(_Picklable, ParallelEnv):
    """A world whose agents arrive and leave (a Gavel world's jobs), one round per step.

    ``possible_agents`` names every agent an episode can have (``job_0``, ``job_1``, ... in a
    Gavel world); ``agents`` those present now. An agent that arrives during a step appears in
    the step's observations (with reward 0, not terminated); an agent whose job finishes is
    terminated; when the episode ends (a Gavel world: every measured job finished) the agents
    still present are truncated; rounds with nobody present are played through inside ``step``
    (an empty ``agents`` means the episode is over). An action is the index of a level (``levels``: thresholds, or
    bid factors under an auction; Gavel's own policies ignore them). ``figures()``: the world's
    figures (a Gavel world: average, median and p95 JCT in hours, makespan, utilisation, rho).
    ``reset(seed)`` plays the episode ``mtf simulate`` plays on that seed.
    """

    metadata = {"name": "mtf_world_v0", "render_modes": [], "is_parallelizable": True}
    _pickled_state = ("_root", "_episode")

    def __init__(self, config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode: {render_mode!r}; mtf has no renderer, use None")
        self.render_mode = None
        self._config = os.fspath(config)
        overrides = _overrides(overrides, "overrides")
        self._args = (os.path.abspath(self._config), tuple(overrides))
        self._native = _native.WorldEnv(self._config, overrides)
        spec = self._spec = self._native.spec
        self.possible_agents = [self._native.agent_name(i) for i in range(spec.possible)]
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self.agents: list[str] = []
        self._live: list[int] = []
        self.levels = list(spec.levels)
        self.action_kind = spec.kind
        self.features = list(spec.features)
        low = np.asarray(spec.low, dtype=np.float32)
        high = np.asarray(spec.high, dtype=np.float32)
        # One space object, shared: the same object for every agent, as PettingZoo asks.
        box, discrete = Box(low, high, dtype=np.float32), Discrete(len(self.levels))
        # A finished agent's last observation: a point of the space (zeros, clipped into it).
        self._blank = np.clip(np.zeros(len(self.features), dtype=np.float32), low, high)
        self.observation_spaces = dict.fromkeys(self.possible_agents, box)
        self.action_spaces = dict.fromkeys(self.possible_agents, discrete)
        self._root: int | None = None
        self._episode = 0

    def observation_space(self, agent: str) -> Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Discrete:
        return self.action_spaces[agent]

    def _names(self, ids) -> list[str]:
        return [self.possible_agents[i] for i in ids]

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode (without a seed: the next one of the last seed's sequence)."""
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
        if seed is not None:
            self._root, self._episode = _seed(seed), 0
        elif self._root is None:
            self._root, self._episode = secrets.randbits(64), 0
        live, obs = self._native.reset(_native.episode_seed(self._root, 0, self._episode))
        self._episode += 1
        self._live = list(live)
        self.agents = self._names(live)
        return {a: obs[k] for k, a in enumerate(self.agents)}, {a: {} for a in self.agents}

    def step(self, actions: dict):
        acts = _actions(actions, self.agents, self._index, len(self.levels))
        acted, rewards, terminated, over, live, obs = self._native.step(acts)
        acted_names = self._names(acted)
        self._live = list(live)
        self.agents = [] if over else self._names(live)
        observations = {a: obs[k] for k, a in enumerate(self._names(live))}
        rew = {a: float(r) for a, r in zip(acted_names, rewards)}
        term = {a: bool(t) for a, t in zip(acted_names, terminated)}
        trunc = {a: bool(over and not t) for a, t in zip(acted_names, terminated)}
        for a in self.agents:
            # Arrived during the step: present, not yet rewarded.
            rew.setdefault(a, 0.0)
            term.setdefault(a, False)
            trunc.setdefault(a, False)
        keys = set(rew)
        for a in list(observations):
            if a not in keys:
                del observations[a]
        # An agent that finished has its last observation only if still listed: give it one.
        for a in keys:
            observations.setdefault(a, self._blank.copy())
        return observations, rew, term, trunc, {a: {} for a in keys}

    def figures(self) -> dict:
        """The world's figures of the episode so far (final once it is over)."""
        return dict(self._native.figures())

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass

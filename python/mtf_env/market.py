"""The LaissezCloud market world (``env.world = "market"``) as a PettingZoo ``ParallelEnv``."""

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


class MarketParallelEnv(_Picklable, ParallelEnv):
    """A market of long jobs on heterogeneous accelerators (docs/market.md): every tenant an
    agent, one round per step.

    An action is the index of a level: the tenant's bid factor on its break-even prices (the
    economic agent plays 1), or under ``mechanism.kind = "mtf"`` its threshold; the levels are
    the file's ``learner.levels`` (default 0.5 to 1.5, or 0 to 1 under MTF). A level matters
    when the tenant decides (it arrives, waits, or reached a checkpoint: observation feature
    3). Observations are ``Market::observe``'s float32 features; rewards are each tenant's
    utility change in money (value of finished work minus what it paid). A tenant whose job
    finishes is terminated; when ``env.rounds`` run out the others are truncated. ``reset(seed)``
    plays the market of that seed (job sizes drawn from it when the file gives ranges), the one
    ``mtf simulate --set seed=S`` plays. ``infos[agent]``: ``place`` (absent, waiting,
    on_demand, auctioned, done), ``type`` (the accelerator type it ran on, or None), ``price``
    (per hour), ``progress``, ``tokens`` (MTF), ``level`` (the value played) and ``utility``.
    """

    metadata = {"name": "mtf_market_v0", "render_modes": [], "is_parallelizable": True}
    _pickled_state = ("_root", "_episode")

    def __init__(self, config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode: {render_mode!r}; mtf has no renderer, use None")
        self.render_mode = None
        self._config = os.fspath(config)
        self._base = _overrides(overrides, "overrides")
        self._args = (os.path.abspath(self._config), tuple(self._base))
        self._active = self._base
        self._native = _native.MarketEnv(self._config, self._base)
        spec = self._spec = self._native.spec
        self.possible_agents = list(spec.agents)
        self.agents: list[str] = []
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self.levels = list(spec.levels)
        self.action_kind = spec.kind
        self.rounds = spec.rounds
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

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. ``options={"overrides": [...]}`` changes the market for this
        episode (not its tenants, types or levels). Without a seed, the next episode of the
        last seed's sequence (``mtf_env.episode_seed(seed, 0, k)``)."""
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
        wanted = self._base + _overrides((options or {}).get("overrides", ()), "options['overrides']")
        if wanted != self._active:
            native = _native.MarketEnv(self._config, wanted)
            s, old = native.spec, self._spec
            if (list(s.agents), s.dim, list(s.levels), s.kind, s.rounds, list(s.weights)) != (
                list(old.agents), old.dim, list(old.levels), old.kind, old.rounds, list(old.weights)
            ):
                raise ValueError(
                    "options['overrides'] may not change the tenants, the types, the levels, the rounds or the weights; "
                    "make a new environment for that"
                )
            self._native, self._active = native, wanted
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

    def step(self, actions: dict):
        out = [0] * len(self.possible_agents)
        for a, level in zip(self.agents, _actions(actions, self.agents, self._index, len(self.levels))):
            out[self._index[a]] = level
        obs, rewards, terminated, truncated, infos = self._native.step(out)
        live = self.agents
        result = (
            {a: obs[self._index[a]] for a in live},
            {a: float(rewards[self._index[a]]) for a in live},
            {a: terminated[self._index[a]] for a in live},
            {a: truncated[self._index[a]] for a in live},
            {a: infos[self._index[a]] for a in live},
        )
        self.agents = [a for a in live if not (terminated[self._index[a]] or truncated[self._index[a]])]
        return result

    def metrics(self) -> dict:
        """The episode's figures so far: utilisation, revenue, cost per unit of work, utility
        per tenant, migrations, work lost, welfare and the price series, as ``mtf simulate``
        computes them for a market file."""
        return json.loads(self._native.metrics_json())

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass

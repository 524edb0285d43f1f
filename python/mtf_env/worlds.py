"""Every world of mtf (``env::worlds``: the queue and valuation worlds, the market, Gavel's GPU
cluster, the toy bandit) as a PettingZoo ``ParallelEnv``: the one adapter, over the Rust trait
every world implements. ``MtfParallelEnv`` and ``MarketParallelEnv`` are this class with their
worlds' names for ``metrics()`` and ``weights``."""

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
    # Whether per-episode overrides may not change the episode's length (the market's).
    _rounds_fixed = False
    _pickled_state = ("_root", "_episode")

    def __init__(self, config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None):
        if render_mode is not None:
            raise ValueError(f"render_mode: {render_mode!r}; mtf has no renderer, use None")
        self.render_mode = None
        self._config = os.fspath(config)
        self._base = _overrides(overrides, "overrides")
        self._args = (os.path.abspath(self._config), tuple(self._base))
        self._active = self._base
        self._native = _native.WorldEnv(self._config, self._base)
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
        # One space object per agent (the same object on every call, as PettingZoo asks; its
        # own random stream, as before the adapters were one).
        self.observation_spaces = {a: Box(low, high, dtype=np.float32) for a in self.possible_agents}
        self.action_spaces = {a: Discrete(len(self.levels)) for a in self.possible_agents}
        self.rounds = spec.rounds
        self._root: int | None = None
        self._episode = 0

    def observation_space(self, agent: str) -> Box:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> Discrete:
        return self.action_spaces[agent]

    def _names(self, ids) -> list[str]:
        return [self.possible_agents[i] for i in ids]

    def _rebuild(self, overrides: list[str]) -> None:
        native = _native.WorldEnv(self._config, overrides)
        s, old = native.spec, self._spec
        same = (s.possible, list(s.features), list(s.levels), s.kind) == (
            old.possible, list(old.features), list(old.levels), old.kind
        ) and np.array_equal(s.low, old.low) and np.array_equal(s.high, old.high)
        same = same and (s.rounds == old.rounds or not self._rounds_fixed)
        weights = getattr(self, "weights", None)
        if same and weights is not None:
            same = all(native.weight(i) == weights[a] for i, a in enumerate(self.possible_agents))
        if not same:
            raise ValueError(
                "options['overrides'] may not change the agents, their weights, the levels, the observation "
                "space" + (" or the rounds" if self._rounds_fixed else "") + "; make a new environment for that"
            )
        self._native, self._spec, self._active = native, s, overrides
        self.rounds = s.rounds

    def reset(self, seed: int | None = None, options: dict | None = None):
        """Start an episode. ``options={"overrides": ["env.load=0.6", ...]}`` changes the world
        for this episode (on top of the constructor's overrides; not its agents, levels or
        observation space; other option keys are ignored, as PettingZoo's API test passes its
        own). Without a seed, the next episode of the last seed's sequence
        (``mtf_env.episode_seed(seed, 0, k)``)."""
        if options is not None and not isinstance(options, Mapping):
            raise ValueError(f"options must be a dict or None, got {type(options).__name__}")
        wanted = self._base + _overrides((options or {}).get("overrides", ()), "options['overrides']")
        if wanted != self._active:
            self._rebuild(wanted)
        if seed is not None:
            self._root, self._episode = _seed(seed), 0
        elif self._root is None:
            self._root, self._episode = secrets.randbits(64), 0
        live, obs = self._native.reset(_native.episode_seed(self._root, 0, self._episode))
        self._episode += 1
        self._live = list(live)
        self.agents = self._names(live)
        infos = self._native.infos(self._live)
        return {a: obs[k] for k, a in enumerate(self.agents)}, dict(zip(self.agents, infos))

    def step(self, actions: dict):
        acts = _actions(actions, self.agents, self._index, len(self.levels))
        acted, rewards, terminated, over, live, obs, ended, last, arrived, infos = self._native.step(acts)
        names = self.possible_agents
        acted_names = [names[i] for i in acted]
        live_names = acted_names if live == acted else [names[i] for i in live]
        self._live = live
        self.agents = [] if over else live_names
        observations = dict(zip(live_names, obs))
        if ended:
            for a, row in zip((names[i] for i in ended), last):
                observations[a] = row
        rew = dict(zip(acted_names, rewards))
        term = dict(zip(acted_names, terminated))
        trunc = {a: over and not t for a, t in zip(acted_names, terminated)}
        if arrived:
            # Arrived during the step: present, not yet rewarded.
            arrived_names = [names[i] for i in arrived]
            acted_names = acted_names + arrived_names
            for a in arrived_names:
                rew[a], term[a], trunc[a] = 0.0, False, False
        return observations, rew, term, trunc, dict(zip(acted_names, infos))

    def figures(self) -> dict:
        """The world's figures of the episode so far (final once it is over)."""
        return dict(self._native.figures())

    def record(self) -> dict:
        """The episode's whole record so far: the queue world's SPEC 5 figures per agent, the
        market's utilisation, prices and utilities, a Gavel world's figures; as ``mtf
        simulate`` computes them."""
        if self._root is None:
            raise ValueError("metrics before reset: call reset(seed) first")
        return json.loads(self._native.record_json())

    def render(self) -> None:
        return None

    def close(self) -> None:
        pass

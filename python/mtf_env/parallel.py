"""The environment as a PettingZoo ``ParallelEnv``."""

from __future__ import annotations

import os
from typing import Iterable

from pettingzoo import ParallelEnv

from . import _native
from ._checks import _overrides
from .market import MarketParallelEnv
from .worlds import WorldParallelEnv


class MtfParallelEnv(WorldParallelEnv):
    """A cluster of accelerators shared by agents under one mechanism (MTF, an auction or a
    baseline), one round per step: the queue and valuation worlds through the one adapter.

    Observations are float32 vectors (SPEC 2.4 and the configured extras); an action is the
    index of a level (a utility threshold, or a bid factor in the auctions); rewards are the
    round's rewards (SPEC 2.8). Episodes end by truncation after ``env.rounds`` rounds,
    never by termination. ``infos[agent]`` is the round's record: ``arrived``,
    ``rejected``, ``dropped``, ``served``, ``backlog``, ``won``, ``spent``, ``budget`` (after
    the round) and ``level`` (the value of the action played). ``weights``: each agent's
    weight, as configured.
    """

    metadata = {"name": "mtf_v0", "render_modes": [], "is_parallelizable": True}

    def __init__(self, config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None):
        super().__init__(config, overrides, render_mode)
        self.weights = {a: self._native.weight(i) for i, a in enumerate(self.possible_agents)}

    def metrics(self) -> dict:
        """The episode's SPEC 5 figures so far (throughput, welfare, drops, wait, ...), as
        ``mtf simulate`` computes them (without the fairness replays)."""
        return self.record()


def parallel_env(config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None) -> ParallelEnv:
    """The scenario in ``config`` (a TOML file as ``mtf`` reads it; ``overrides`` are
    ``--set`` values such as ``"env.rounds=100"``) as a PettingZoo ``ParallelEnv``: an
    ``MtfParallelEnv``, for a market file (``env.world = "market"``) a ``MarketParallelEnv``,
    and for a world behind the seam (``env.world = "gavel"``, ``"bandit"``) a
    ``WorldParallelEnv``."""
    overrides = _overrides(overrides, "overrides")  # read twice: an iterator would be spent by the first
    world = _native.world_name(os.fspath(config), overrides)
    if world == "market":
        return MarketParallelEnv(config, overrides, render_mode)
    if world in ("queues", "valuations"):
        return MtfParallelEnv(config, overrides, render_mode)
    return WorldParallelEnv(config, overrides, render_mode)

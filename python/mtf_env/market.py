"""The LaissezCloud market world (``env.world = "market"``) as a PettingZoo ``ParallelEnv``."""

from __future__ import annotations

import os
from typing import Iterable

from .worlds import WorldParallelEnv


class MarketParallelEnv(WorldParallelEnv):
    """A market of long jobs on heterogeneous accelerators (docs/market.md): every tenant an
    agent, one round per step.

    An action is the index of a level: the tenant's bid factor on its break-even prices (the
    economic agent plays 1), or under ``mechanism.kind = "mtf"`` its threshold; the levels are
    the file's ``learner.levels`` (default 0.5 to 1.5, or 0 to 1 under MTF). A level matters
    when the tenant decides (it arrives, waits, or reached a checkpoint: observation feature
    3). Observations are ``Market::observe``'s float32 features; rewards are each tenant's
    utility change in money (value of finished work minus what it paid). A tenant whose job
    finishes is terminated (its last observation is its features after that round); when
    ``env.rounds`` (``rounds``) run out the others are truncated. ``reset(seed)``
    plays the market of that seed (job sizes drawn from it when the file gives ranges), the one
    ``mtf simulate --set seed=S`` plays. ``infos[agent]``: ``place`` (absent, waiting,
    on_demand, auctioned, done), ``type`` (the accelerator type it ran on, or None), ``price``
    (per hour), ``progress``, ``tokens`` (MTF), ``level`` (the value played) and ``utility``.
    """

    metadata = {"name": "mtf_market_v0", "render_modes": [], "is_parallelizable": True}
    _rounds_fixed = True

    def __init__(self, config: str | os.PathLike, overrides: Iterable[str] = (), render_mode: str | None = None):
        super().__init__(config, overrides, render_mode)
        self.weights = {a: self._native.weight(i) for i, a in enumerate(self.possible_agents)}

    def metrics(self) -> dict:
        """The episode's figures so far: utilisation, revenue, cost per unit of work, utility
        per tenant, migrations, work lost, welfare and the price series, as ``mtf simulate``
        computes them for a market file."""
        return self.record()

"""Checks shared by the environments' Python fronts: overrides, seeds and actions."""

from __future__ import annotations

import operator
from typing import Any, Iterable

import numpy as np


def _overrides(xs: Iterable[str], what: str) -> list[str]:
    if isinstance(xs, str):
        raise TypeError(f"{what}: expected a list of 'key.path=value' strings, got one string")
    out = list(xs)
    for x in out:
        if not isinstance(x, str):
            raise TypeError(f"{what}: {x!r} is not a 'key.path=value' string")
    return out


def _level_index(agent: str, v: Any, k: int) -> int:
    """An action as a level index in ``Discrete(k)``, or a ValueError naming the agent."""
    try:
        x = operator.index(v.item() if isinstance(v, np.ndarray) and v.ndim == 0 else v)
    except TypeError:
        raise ValueError(f"agent {agent!r}: action {v!r} is not an integer in Discrete({k})") from None
    if not 0 <= x < k:
        raise ValueError(f"agent {agent!r}: action {x} is outside Discrete({k})")
    return x


def _seed(seed: Any) -> int:
    try:
        s = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed: {seed!r} is not an integer") from None
    if not 0 <= s < 2**64:
        raise ValueError(f"seed: {s} is outside [0, 2**64)")
    return s

"""The mtf accelerator-sharing environment from Python.

- ``parallel_env(config, overrides=[...])``: a PettingZoo ``ParallelEnv``, one environment,
  dictionaries keyed by agent name: the one adapter over every world, ``WorldParallelEnv``
  (``MtfParallelEnv`` for the queue and valuation worlds and ``MarketParallelEnv`` for a
  market file are it, with their worlds' ``metrics()`` and ``weights``).
- ``VecEnv(config, num_envs, overrides=[...])``: many copies stepped in parallel in Rust
  with the GIL released, NumPy arrays in and out.
- ``schedule(mechanism, round)``: one mechanism round, what ``mtf schedule`` prints.

The environment, the mechanisms and the random streams are the Rust crates ``mtf`` runs:
the same config, seed and actions give the same episode here and in ``mtf simulate``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from . import _native
from .market import MarketParallelEnv
from .parallel import MtfParallelEnv, parallel_env
from .vector import VecEnv
from .worlds import WorldParallelEnv

__all__ = ["MarketParallelEnv", "MtfParallelEnv", "VecEnv", "WorldParallelEnv", "episode_seed", "parallel_env", "schedule"]


def episode_seed(seed: int, copy: int = 0, episode: int = 0) -> int:
    """The environment seed of episode ``episode`` of copy ``copy`` after ``reset(seed)``.

    Copy 0's first episode plays ``seed`` itself, so one environment reset with ``seed``
    plays the episode ``mtf simulate`` plays on that seed; later episodes (auto-resets,
    resets without a seed) follow from the copy's first seed.
    """
    return _native.episode_seed(seed, copy, episode)


def _jsonable(x: Any) -> Any:
    if hasattr(x, "tolist"):  # NumPy arrays and scalars
        return x.tolist()
    raise TypeError(f"round: {type(x).__name__} is not a JSON value")


def schedule(mechanism: str, round: Mapping[str, Any] | str, fairness: float | None = None) -> dict:
    """One allocation round of ``mechanism`` on a SPEC 3 round (a dict, or its JSON text).

    Returns what ``mtf schedule --mechanism NAME`` prints, as a dict: ``owners`` (an agent
    index or None per accelerator), ``budgets``, ``turn``, ``spent``, ``paid``, and
    ``prices`` / ``state`` for the mechanisms that have them. Bad input raises ValueError
    with the message ``mtf schedule`` gives.
    """
    try:
        text = round if isinstance(round, str) else json.dumps(round, default=_jsonable)
    except RecursionError:
        raise ValueError("the round nests too deeply to be a SPEC 3 round") from None
    return json.loads(_native.schedule(mechanism, text, fairness))

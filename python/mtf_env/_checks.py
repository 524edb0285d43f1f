"""Checks shared by the environments' Python fronts: overrides, seeds and actions."""

from __future__ import annotations

import operator
import pickle
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


def _actions(actions: Any, acting: list[str], known: Any, k: int) -> list[int]:
    """Each acting agent's level index, in ``acting``'s order: a ValueError for an action of an
    agent that is not acting (finished, not arrived, unknown), for an acting agent without one,
    and once the episode is over (no agent acting)."""
    if not acting:
        raise ValueError("the episode is over (no agent left): call reset")
    unknown = [a for a in actions if a not in known or a not in acting]
    if unknown:
        raise ValueError(f"actions for unknown or finished agent(s) {unknown[:5]}; the live agents are {acting[:10]}")
    out = []
    for a in acting:
        if a not in actions:
            raise ValueError(f"no action for agent {a!r}: every live agent acts every round")
        out.append(_level_index(a, actions[a], k))
    return out


def _seed(seed: Any) -> int:
    try:
        s = operator.index(seed)
    except TypeError:
        raise TypeError(f"seed: {seed!r} is not an integer") from None
    if not 0 <= s < 2**64:
        raise ValueError(f"seed: {s} is outside [0, 2**64)")
    return s


def _remake(cls: type, args: tuple, state: dict) -> Any:
    env = cls(*args)
    env.__dict__.update(state)
    return env


class _Picklable:
    """Pickled as the arguments that made it (and, for the parallel environments, where its seed
    sequence stands), so process-based vector envs (supersuit's ``concat_vec_envs_v1``,
    multiprocessing) can copy it: the Rust state is rebuilt from the config in the copy. An
    episode in progress lives in Rust and is not copied: pickling one is refused rather than
    silently restarted (before, every pickle failed: ``cannot pickle 'mtf_env._native.Env'``)."""

    _args: tuple
    _pickled_state: tuple[str, ...] = ()

    def _in_episode(self) -> bool:
        return bool(getattr(self, "agents", None))

    def _in_episode_message(self) -> str:
        return (
            f"{type(self).__name__} is in an episode; pickle it before reset() or after its episode "
            "ends (the episode in progress lives in Rust and is not copied)"
        )

    def __reduce__(self):
        if self._in_episode():
            raise pickle.PicklingError(self._in_episode_message())
        state = {k: self.__dict__[k] for k in self._pickled_state}
        return (_remake, (type(self), self._args, state))

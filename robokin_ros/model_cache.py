"""The registry of per-model derived state: plans, generated kernels, IK problems and chains,
collision models. One home, one eviction rule.

Everything robokin derives from a :class:`~robokin_ros.model.RobotModel` and keeps for later
calls lives here, under a *kind* (``"fk plan"``, ``"fk kernels"``, ``"ik calls"``, ...) and a
key within the kind. The rule:

- entries are held per model and go when the model goes (the model itself is not held);
- each (model, kind) holds at most :data:`MAX_ENTRIES` entries (a heavy kind's owner passes a
  smaller ``bound``); beyond that the least recently used entry is dropped.

So what a network request can key (tip sets, joint sets, options of ``/compute_ik``) is bounded
per model, whatever the requests. Values must not hold their model strongly (they would keep
it alive): they hold a ``weakref``, or nothing of it.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

#: Entries kept per model and kind.
MAX_ENTRIES = 64


# id(model) -> {kind: OrderedDict}. Keyed by id, not by a weak reference (a hit costs no
# weakref object: the single-configuration paths look kernels up here on every call); a
# weakref.finalize drops a model's entry when the model is collected, before its id can be reused.
_STATE: dict[int, dict[str, OrderedDict]] = {}
_LOCK = threading.Lock()


def cached(model, kind: str, key: Hashable, build: Callable[..., Any], args: tuple = (),
           bound: int | None = None) -> Any:
    """The entry ``key`` of ``kind`` for ``model``, made by ``build(*args)`` on first use; the
    kind keeps at most ``bound`` entries per model (None: :data:`MAX_ENTRIES`; the owner of a
    heavy kind passes fewer).

    ``args`` is a tuple rather than a closure: the single-configuration paths look entries up on
    every call, and a closure would be made on each.

    ``build`` runs outside the registry's lock (it may take seconds, and may itself use the
    registry); two threads may both build a missing entry, and the first stored wins.
    """
    try:
        store = _STATE[id(model)][kind]
        value = store[key]
        store.move_to_end(key)
        return value
    except KeyError:
        pass
    value = build(*args)
    with _LOCK:
        kinds = _STATE.get(id(model))
        if kinds is None:
            kinds = _STATE[id(model)] = {}
            weakref.finalize(model, _STATE.pop, id(model), None)
        store = kinds.get(kind)
        if store is None:
            store = kinds[kind] = OrderedDict()
        if key in store:
            return store[key]
        store[key] = value
        limit = MAX_ENTRIES if bound is None else bound
        while len(store) > limit:
            store.popitem(last=False)
    return value


def peek(model, kind: str, key: Hashable, default=None) -> Any:
    """The entry if present (no build, no reordering), else ``default``."""
    try:
        return _STATE[id(model)][kind][key]
    except KeyError:
        return default


def sizes(model) -> dict[str, int]:
    """Entries held for ``model``, by kind."""
    with _LOCK:
        return {kind: len(store) for kind, store in _STATE.get(id(model), {}).items()}


def clear(model=None) -> None:
    """Drop every entry of ``model`` (None: of every model)."""
    with _LOCK:
        if model is None:
            _STATE.clear()
        else:
            _STATE.pop(id(model), None)

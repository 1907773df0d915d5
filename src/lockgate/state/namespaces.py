"""Namespaced keyed state: state per key and namespace (a window), as Flink's windows keep it.

A backend's namespaced states read its namespaced key context, whose key is ``(key,
namespace)``; they are stored and snapshotted per key group like any keyed state, so windows
are checkpointed, restored and rescaled with their keys. ``NamespaceMerging`` is Flink's
``InternalMergingState.mergeNamespaces``: session windows that merge fold their states into
one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

NAMESPACED = "/ns"  # suffix of the kind of a namespaced state


def namespaced_kind(kind: str) -> str:
    return kind + NAMESPACED


class NamespaceMerging:
    """Merges the values of several namespaces of the current key into one.

    For states bound to a namespaced key context (``_ctx``); subclasses read and write the
    raw stored value of the context's current key and namespace, and merge two of them.
    """

    _ctx: Any

    def _raw(self) -> Any:
        """The stored value (an accumulator for aggregating state), or None."""
        raise NotImplementedError

    def _store(self, value: Any) -> None:
        """Store ``value``; None removes it."""
        raise NotImplementedError

    def _merge(self, a: Any, b: Any) -> Any:
        raise NotImplementedError

    def merge_namespaces(self, target: Any, sources: Iterable[Any]) -> None:
        """Fold the values of ``sources`` into ``target`` and remove them; the current key
        is that of the context, whose namespace is ``target`` afterwards."""
        ctx = self._ctx
        key = ctx.key[0]
        merged = None
        for source in sources:
            ctx.key = (key, source)
            raw = self._raw()
            if raw is not None:
                self._store(None)
                merged = raw if merged is None else self._merge(merged, raw)
        ctx.key = (key, target)
        if merged is not None:
            current = self._raw()
            self._store(merged if current is None else self._merge(current, merged))

"""State descriptors: the name and kind of a keyed state, as declared by a user function.

These are PyFlink's classes (re-exported at ``lockgate.datastream.state``); they live here
so that state backends do not depend on the API layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lockgate.state.ttl_config import StateTtlConfig


class StateDescriptor:
    kind = "abstract"

    def __init__(self, name: str, type_info: Any = None) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a state descriptor needs a non-empty name, got {name!r}")
        self.name = name
        self.type_info = type_info
        self.ttl_config: StateTtlConfig | None = None

    def get_name(self) -> str:
        return self.name

    def enable_time_to_live(self, ttl_config: StateTtlConfig) -> None:
        """Let the state's values expire (``StateTtlConfig``): expired values become
        invisible (or visible until cleaned up, as configured) and are cleaned up."""
        if not isinstance(ttl_config, StateTtlConfig):
            raise TypeError(
                f"state {self.name!r}: enable_time_to_live needs a StateTtlConfig, "
                f"got {ttl_config!r}"
            )
        ttl_ms = ttl_config.get_ttl().to_milliseconds()
        if ttl_ms <= 0:
            raise ValueError(f"state {self.name!r}: the TTL must be positive, got {ttl_ms} ms")
        self.ttl_config = ttl_config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ValueStateDescriptor(StateDescriptor):
    kind = "value"

    def __init__(self, name: str, value_type_info: Any = None):
        super().__init__(name, value_type_info)


class ListStateDescriptor(StateDescriptor):
    kind = "list"

    def __init__(self, name: str, elem_type_info: Any = None):
        super().__init__(name, elem_type_info)


class MapStateDescriptor(StateDescriptor):
    kind = "map"

    def __init__(self, name: str, key_type_info: Any = None, value_type_info: Any = None):
        super().__init__(name, (key_type_info, value_type_info))


class ReducingStateDescriptor(StateDescriptor):
    kind = "reducing"

    def __init__(self, name: str, reduce_function: Any, type_info: Any = None):
        super().__init__(name, type_info)
        reduce = getattr(reduce_function, "reduce", reduce_function)
        if not callable(reduce):
            raise TypeError(
                f"ReducingStateDescriptor {name!r} needs a ReduceFunction or a callable, "
                f"got {reduce_function!r}"
            )
        self.reduce_function = reduce_function
        self.reduce: Callable[[Any, Any], Any] = reduce

    def get_reduce_function(self) -> Any:
        return self.reduce_function


class AggregatingStateDescriptor(StateDescriptor):
    kind = "aggregating"

    def __init__(self, name: str, agg_function: Any, state_type_info: Any = None):
        super().__init__(name, state_type_info)
        for method in ("create_accumulator", "add", "get_result"):
            if not callable(getattr(agg_function, method, None)):
                raise TypeError(
                    f"AggregatingStateDescriptor {name!r} needs an AggregateFunction with "
                    f"{method}(), got {agg_function!r}"
                )
        self.agg_function = agg_function

    def get_agg_function(self) -> Any:
        return self.agg_function

"""What the job graph says of an operator: a picklable description, built in each subtask by
the host (``runtime.subtaskhost.operators.create_operator``).

The description is shipped to executors once per job inside the graph; the driver reads it
too (the states an operator keeps, its sink's committer, checks before the job starts),
without loading the code that runs the operator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from lockgate.core.two_phase_commit import Committer
from lockgate.state.descriptors import ReducingStateDescriptor

#: the state a keyed reduce keeps its running value in
REDUCE_STATE_NAME = "_lockgate_reduce"


class OperatorKind(Enum):
    """A built-in operator, or ``FACTORY``: ``function(ctx)`` builds an operator defined
    elsewhere (two-input, broadcast, window and watermark operators, connectors' writers)."""

    MAP = "map"
    FLAT_MAP = "flat_map"
    FILTER = "filter"
    PROCESS = "process"
    KEYED_PROCESS = "keyed_process"
    REDUCE = "reduce"
    PRINT = "print"
    COLLECT = "collect"
    DISCARD = "discard"
    FACTORY = "factory"


@dataclass
class OperatorSpec:
    """A picklable description of an operator, in the job graph."""

    kind: OperatorKind
    function: Any = None
    options: dict[str, Any] | None = None
    validator: Callable[[], None] | None = None
    #: commits the operator's committables on the driver (two-phase-commit sinks)
    committer: Committer | None = None
    #: a sink whose guarantee needs checkpoints in EXACTLY_ONCE mode (it commits only there)
    exactly_once: bool = False
    #: keyed states a factory-built operator keeps itself: name -> the kind its backend records
    states: dict[str, str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, OperatorKind):
            raise TypeError(f"an operator's kind is an OperatorKind, not {self.kind!r}")

    def declared_states(self) -> dict[str, str]:
        """The keyed states the operator keeps itself, known before it runs (a user
        function's are known once it registers them)."""
        if self.kind is OperatorKind.REDUCE:
            return {REDUCE_STATE_NAME: ReducingStateDescriptor.kind}
        return dict(self.states or {})

    def validate(self) -> None:
        """Checks on the driver before the job starts (e.g. that a sink can write)."""
        if self.validator is not None:
            self.validator()

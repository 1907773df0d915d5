"""What the API records: one transformation per DataStream call.

Operators are opaque here (an ``operator`` object the runtime knows how to run), which keeps
the graph layer free of execution concerns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import count
from typing import Any

_ids = count(1)


@dataclass(frozen=True)
class Partitioning:
    """How records travel to the next operator when they leave their task."""

    #: "forward", "rebalance" (round-robin), "rescale" (round-robin over a subset of the
    #: targets), "shuffle" (uniformly random), "key_group", "broadcast" (to every subtask)
    #: or "custom" (the subtask a ``partitioner`` chooses for a record's key)
    kind: str
    key_selector: Any = None
    key_type: Any = None  # the type information keys are converted to (``key_by``'s)
    partitioner: Any = None  # a Partitioner, or a function (key, num_partitions) -> int


FORWARD = Partitioning("forward")
REBALANCE = Partitioning("rebalance")
RESCALE = Partitioning("rescale")
SHUFFLE = Partitioning("shuffle")
BROADCAST = Partitioning("broadcast")


@dataclass(eq=False)
class Transformation:
    """A node of the user's program.

    ``kind`` is "source", "operator" or "sink" for nodes that run, and "partition",
    "union" or "side_output" for virtual nodes that only shape the edges between them.
    """

    kind: str
    name: str
    inputs: list[Transformation] = field(default_factory=list)
    operator: Any = None  # runtime operator spec (sources, operators, sinks)
    partitioning: Partitioning | None = None  # for "partition" nodes
    output_tag: str | None = None  # for "side_output" nodes: the id of the side output
    keyed: bool = False  # an operator whose input is partitioned by key group
    parallelism: int | None = None
    max_parallelism: int | None = None
    fixed_parallelism: bool = False  # ``force_non_parallel()``: its parallelism stays 1
    uid: str | None = None
    #: the operator gives its outputs timestamps (an assigner, a timer or window operator)
    timestamps: bool = False
    two_input: bool = False  # inputs[0] and inputs[1] are its first and second input
    watermark_strategy: Any = None  # of a source read with one (from_source)
    #: the type information its records are converted to when they leave it (PyFlink's
    #: ``output_type``; None: unchanged)
    output_type: Any = None
    #: its records are of its (first) input's type: filter, reduce, timestamps, ...
    preserves_type: bool = False
    #: "always" (chained where the edges allow), "head" (``start_new_chain()``: starts a
    #: chain) or "never" (``disable_chaining()``: chained to neither side)
    chaining: str = "always"
    description: str | None = None  # ``set_description()``: shown in the execution plan
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def runs(self) -> bool:
        return self.kind in ("source", "operator", "sink")


def stream_type(t: Transformation) -> Any:
    """The declared type information of the records ``t`` gives (None: none declared,
    they are pickled Python values)."""
    if t.output_type is not None:
        return t.output_type
    if t.kind == "partition" or t.preserves_type:
        return stream_type(t.inputs[0])
    if t.kind == "union":
        return common_type([stream_type(branch) for branch in t.inputs])
    return None


def common_type(types: list[Any]) -> Any:
    """The type information all of ``types`` declare (None: they differ, or there are none):
    a union, or an operator's inputs, have a type only when every input has the same."""
    return types[0] if types and all(t == types[0] for t in types) else None

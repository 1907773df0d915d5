"""What the API records: one transformation per DataStream call.

An operator is its description here (an ``OperatorSpec``, or the ``Source`` a source reads),
which keeps the graph layer free of the code that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from itertools import count
from typing import Any

from lockgate.common.typeinfo import TypeInformation
from lockgate.common.watermark_strategy import WatermarkStrategy
from lockgate.core.source import Source
from lockgate.graph.operator_spec import OperatorSpec

_ids = count(1)


class PartitioningKind(Enum):
    """How records reach the subtasks of the next operator (the values name them in derived
    uids, so they never change)."""

    FORWARD = "forward"  # subtask i to subtask i
    REBALANCE = "rebalance"  # round-robin
    RESCALE = "rescale"  # round-robin over a subset of the targets
    SHUFFLE = "shuffle"  # uniformly random
    KEY_GROUP = "key_group"  # to the subtask that owns the record's key group
    BROADCAST = "broadcast"  # to every subtask
    CUSTOM = "custom"  # to the subtask a ``partitioner`` chooses for the record's key


@dataclass(frozen=True)
class Partitioning:
    """How records travel to the next operator when they leave their task."""

    kind: PartitioningKind
    key_selector: Any = None  # a KeySelector or a function
    key_type: TypeInformation | None = None  # what keys are converted to (``key_by``'s)
    partitioner: Any = None  # a Partitioner, or a function (key, num_partitions) -> int


FORWARD = Partitioning(PartitioningKind.FORWARD)
REBALANCE = Partitioning(PartitioningKind.REBALANCE)
RESCALE = Partitioning(PartitioningKind.RESCALE)
SHUFFLE = Partitioning(PartitioningKind.SHUFFLE)
BROADCAST = Partitioning(PartitioningKind.BROADCAST)


class TransformationKind(Enum):
    """Sources, operators and sinks run; partition, union and side-output nodes only shape
    the edges between them (the values name them in derived uids, so they never change)."""

    SOURCE = "source"
    OPERATOR = "operator"
    SINK = "sink"
    PARTITION = "partition"
    UNION = "union"
    SIDE_OUTPUT = "side_output"


class ChainingStrategy(Enum):
    """Flink's ``ChainingStrategy``: chained where the edges allow, ``start_new_chain()``
    (heads a chain), or ``disable_chaining()`` (chained to neither side)."""

    ALWAYS = "always"
    HEAD = "head"
    NEVER = "never"


@dataclass(eq=False)
class Transformation:
    """A node of the user's program."""

    kind: TransformationKind
    name: str
    inputs: list[Transformation] = field(default_factory=list)
    operator: OperatorSpec | Source | None = None  # a Source for sources
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
    watermark_strategy: WatermarkStrategy | None = None  # of a source read with one
    #: the type information its records are converted to when they leave it (PyFlink's
    #: ``output_type``; None: unchanged)
    output_type: TypeInformation | None = None
    #: its records are of its (first) input's type: filter, reduce, timestamps, ...
    preserves_type: bool = False
    chaining: ChainingStrategy = ChainingStrategy.ALWAYS
    description: str | None = None  # ``set_description()``: shown in the execution plan
    id: int = field(default_factory=lambda: next(_ids))

    @property
    def runs(self) -> bool:
        return self.kind in _RUNNING


_RUNNING = (TransformationKind.SOURCE, TransformationKind.OPERATOR, TransformationKind.SINK)


def stream_type(t: Transformation) -> TypeInformation | None:
    """The declared type information of the records ``t`` gives (None: none declared,
    they are pickled Python values)."""
    if t.output_type is not None:
        return t.output_type
    if t.kind is TransformationKind.PARTITION or t.preserves_type:
        return stream_type(t.inputs[0])
    if t.kind is TransformationKind.UNION:
        return common_type([stream_type(branch) for branch in t.inputs])
    return None


def common_type(types: list[TypeInformation | None]) -> TypeInformation | None:
    """The type information all of ``types`` declare (None: they differ, or there are none):
    a union, or an operator's inputs, have a type only when every input has the same."""
    return types[0] if types and all(t == types[0] for t in types) else None

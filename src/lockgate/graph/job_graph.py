"""StreamGraph and JobGraph: resolve parallelism and uids, chain operators into tasks.

Operators joined by a forward edge with equal parallelism run in one task (a chain) as
plain Python calls, unless chaining is disabled for the job or an operator breaks it
(``start_new_chain``, ``disable_chaining``): then the forward edge crosses tasks, subtask i
to subtask i. Every other edge crosses tasks through Spark's shuffle, which cuts the
job into stages; partition i of a stage is subtask i.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from lockgate.common.typeinfo import TypeInformation
from lockgate.core.source import Source
from lockgate.graph.operator_spec import OperatorSpec
from lockgate.graph.transformations import (
    FORWARD,
    REBALANCE,
    ChainingStrategy,
    Partitioning,
    PartitioningKind,
    Transformation,
    TransformationKind,
    common_type,
    stream_type,
)
from lockgate.state.key_groups import check_parallelism, default_max_parallelism


class GraphError(ValueError):
    """A program that cannot be turned into a job."""


@dataclass(eq=False)
class StreamNode:
    """A transformation that runs, with its parallelism and uid resolved."""

    transformation: Transformation
    parallelism: int
    max_parallelism: int
    uid: str
    #: its records can carry timestamps: it or an operator before it gives them some
    timestamped: bool = False
    #: set on the operator or the environment; the default one yields to a restored one
    max_parallelism_configured: bool = False
    inputs: list[StreamEdge] = field(default_factory=list)
    outputs: list[StreamEdge] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.transformation.name

    @property
    def operator(self) -> OperatorSpec | Source | None:
        return self.transformation.operator

    @property
    def spec(self) -> OperatorSpec:
        """The description of an operator or sink (not a source)."""
        operator = self.transformation.operator
        if not isinstance(operator, OperatorSpec):
            raise TypeError(f"'{self.name}' (uid '{self.uid}') is a source, not an operator")
        return operator

    @property
    def source(self) -> Source:
        """What a source node reads."""
        operator = self.transformation.operator
        if not isinstance(operator, Source):
            raise TypeError(f"'{self.name}' (uid '{self.uid}') is not a source")
        return operator

    @property
    def keyed(self) -> bool:
        return self.transformation.keyed

    @property
    def is_source(self) -> bool:
        return self.transformation.kind is TransformationKind.SOURCE

    @property
    def is_sink(self) -> bool:
        return self.transformation.kind is TransformationKind.SINK

    @property
    def input_type(self) -> TypeInformation | None:
        """The declared type information of the records it receives, when all its inputs
        declare the same (None: none declared)."""
        return common_type(
            [
                edge.side_output_type
                if edge.output_tag is not None
                else stream_type(edge.source.transformation)
                for edge in self.inputs
            ]
        )


@dataclass(eq=False)
class StreamEdge:
    source: StreamNode
    target: StreamNode
    partitioning: Partitioning
    output_tag: str | None = None  # the side output it carries (None: the main output)
    side_output_type: TypeInformation | None = None  # its OutputTag's type information
    input_index: int = 1  # which input of a two-input target it feeds (1 or 2)


@dataclass(eq=False)
class JobEdge:
    """An edge between two tasks; records cross it through a shuffle."""

    id: int
    source: JobVertex
    target: JobVertex
    stream_edge: StreamEdge

    @property
    def partitioning(self) -> Partitioning:
        return self.stream_edge.partitioning


@dataclass(eq=False)
class JobVertex:
    """A chain of operators that runs as one task per parallel subtask."""

    id: int
    nodes: list[StreamNode]
    inputs: list[JobEdge] = field(default_factory=list)
    outputs: list[JobEdge] = field(default_factory=list)

    @property
    def head(self) -> StreamNode:
        return self.nodes[0]

    @property
    def parallelism(self) -> int:
        return self.head.parallelism

    @property
    def max_parallelism(self) -> int:
        return self.head.max_parallelism

    @property
    def name(self) -> str:
        return " -> ".join(node.name for node in self.nodes)

    @property
    def is_source(self) -> bool:
        return self.head.is_source

    @property
    def keyed(self) -> bool:
        return self.head.keyed


@dataclass(eq=False)
class JobGraph:
    vertices: list[JobVertex]  # in topological order
    edges: list[JobEdge]
    #: Flink's BATCH execution: no watermarks but the end of input, processing time
    #: standing still until then, keyed reductions emitting only their final values
    batch: bool = False
    #: what functions read with ``RuntimeContext.get_job_parameter``
    job_parameters: dict[str, str] = field(default_factory=dict)

    def vertex(self, vertex_id: int) -> JobVertex:
        return self.vertices[vertex_id]

    @property
    def sources(self) -> list[JobVertex]:
        return [v for v in self.vertices if v.is_source]

    @property
    def stateful_nodes(self) -> list[tuple[JobVertex, StreamNode]]:
        return [(v, v.head) for v in self.vertices if v.keyed]


def build_job_graph(
    transformations: Iterable[Transformation],
    default_parallelism: int,
    max_parallelism: int | None,
    runtime_mode: str = "STREAMING",
    chaining: bool = True,
    job_parameters: Mapping[str, str] | None = None,
) -> JobGraph:
    """``runtime_mode``: STREAMING, BATCH, or AUTOMATIC (BATCH when every source is
    bounded), as Flink's ``execution.runtime-mode``; ``chaining``: False puts every
    operator in a task of its own (Flink's ``pipeline.operator-chaining.enabled``);
    ``job_parameters``: Flink's global job parameters."""
    nodes = _stream_nodes(transformations, default_parallelism, max_parallelism)
    if not nodes:
        raise GraphError("the job has no operators: add a source and a sink before executing")
    graph = _chain(nodes, chaining)
    continuous = [n for n in nodes if n.is_source and not n.source.bounded]
    if runtime_mode == "BATCH" and continuous:
        raise GraphError(
            f"execution.runtime-mode BATCH needs bounded sources, but source "
            f"'{continuous[0].name}' (uid '{continuous[0].uid}') reads continuously: run "
            "it in STREAMING (or AUTOMATIC) mode, or read its input once"
        )
    graph.batch = runtime_mode == "BATCH" or (runtime_mode == "AUTOMATIC" and not continuous)
    graph.job_parameters = dict(job_parameters or {})
    return graph


def _collect(transformations: Iterable[Transformation]) -> list[Transformation]:
    seen: dict[int, Transformation] = {}
    stack = list(transformations)
    while stack:
        t = stack.pop()
        if t.id not in seen:
            seen[t.id] = t
            stack.extend(t.inputs)
    return [seen[i] for i in sorted(seen)]  # ids grow with creation: a topological order


def _upstream(
    t: Transformation, partitioning: Partitioning | None, side: Transformation | None
) -> Iterator[tuple[Transformation, Partitioning | None, Transformation | None]]:
    """Runnable inputs of a transformation, seen through partition, union and side-output
    nodes: (input, partitioning, the side-output node it is read through)."""
    if t.runs:
        yield t, partitioning, side
    elif t.kind is TransformationKind.PARTITION:
        yield from _upstream(t.inputs[0], partitioning or t.partitioning, side)
    elif t.kind is TransformationKind.SIDE_OUTPUT:
        yield from _upstream(t.inputs[0], partitioning, t)
    else:  # union
        for branch in t.inputs:
            yield from _upstream(branch, partitioning, side)


def _stream_nodes(
    transformations: Iterable[Transformation], default_parallelism: int, max_p: int | None
) -> list[StreamNode]:
    by_id: dict[int, StreamNode] = {}
    ordered: list[StreamNode] = []
    basis_count: dict[str, int] = {}
    given_uids: dict[str, Transformation] = {}
    for t in _collect(transformations):
        if not t.runs:
            continue
        parallelism = t.parallelism or default_parallelism
        try:
            node_max = t.max_parallelism or max_p or default_max_parallelism(parallelism)
            check_parallelism(parallelism, node_max)
        except ValueError as exc:
            raise GraphError(f"operator '{t.name}': {exc}") from None
        upstream = [
            (by_id[u.id], p, side, index + 1 if t.two_input else 1)
            for index, branch in enumerate(t.inputs)
            for u, p, side in _upstream(branch, None, None)
        ]
        basis = "|".join(
            [
                t.kind.value,
                t.name,
                *(
                    f"{u.uid}:{p.kind.value if p else '-'}"
                    + (f":{side.output_tag}" if side else "")
                    for u, p, side, _ in upstream
                ),
            ]
        )
        occurrence = basis_count.get(basis, 0)
        basis_count[basis] = occurrence + 1
        if t.uid is not None:
            if t.uid in given_uids:
                raise GraphError(
                    f"uid '{t.uid}' is used by both '{given_uids[t.uid].name}' and '{t.name}': "
                    "uids must be unique within a job"
                )
            given_uids[t.uid] = t
        uid = t.uid or _derived_uid(t.name, basis, occurrence)
        timestamped = t.timestamps or any(up.timestamped for up, _, _, _ in upstream)
        configured = bool(t.max_parallelism or max_p)
        node = StreamNode(t, parallelism, node_max, uid, timestamped, configured)
        for up, partitioning, side, input_index in upstream:
            edge = StreamEdge(
                up,
                node,
                _edge_partitioning(up, node, partitioning),
                side.output_tag if side else None,
                side.output_type if side else None,
                input_index,
            )
            up.outputs.append(edge)
            node.inputs.append(edge)
        by_id[t.id] = node
        ordered.append(node)
    return ordered


def _edge_partitioning(
    up: StreamNode, down: StreamNode, requested: Partitioning | None
) -> Partitioning:
    if requested is not None and requested.kind is not PartitioningKind.FORWARD:
        return requested
    if up.parallelism == down.parallelism:
        return FORWARD
    if requested is not None:
        raise GraphError(
            f"forward partitioning needs equal parallelism, but '{up.name}' has "
            f"{up.parallelism} and '{down.name}' has {down.parallelism}"
        )
    return REBALANCE


def _derived_uid(name: str, basis: str, occurrence: int) -> str:
    digest = hashlib.sha256(f"{basis}#{occurrence}".encode()).hexdigest()[:12]
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "operator"
    return f"{slug}-{digest}"


def _chain(nodes: list[StreamNode], chaining: bool) -> JobGraph:
    chain_of: dict[int, list[StreamNode]] = {}
    chains: list[list[StreamNode]] = []
    for node in nodes:
        parents = {id(chain_of[id(e.source)]) for e in node.inputs}
        chainable = (
            chaining
            and node.inputs
            and node.transformation.chaining is ChainingStrategy.ALWAYS
            and all(
                e.source.transformation.chaining is not ChainingStrategy.NEVER for e in node.inputs
            )
            and len(parents) == 1
            and not node.keyed
            and not node.transformation.two_input  # it takes each input from its own edges
            and all(
                e.partitioning.kind is PartitioningKind.FORWARD
                and e.source.parallelism == node.parallelism
                for e in node.inputs
            )
        )
        if chainable:
            chain = chain_of[id(node.inputs[0].source)]
            chain.append(node)
        else:
            chain = [node]
            chains.append(chain)
        chain_of[id(node)] = chain
    vertices = [JobVertex(i, chain) for i, chain in enumerate(chains)]
    vertex_of = {id(node): v for v in vertices for node in v.nodes}
    edges: list[JobEdge] = []
    for vertex in vertices:
        for edge in vertex.head.inputs:
            job_edge = JobEdge(len(edges), vertex_of[id(edge.source)], vertex, edge)
            edges.append(job_edge)
            job_edge.source.outputs.append(job_edge)
            vertex.inputs.append(job_edge)
    return JobGraph(vertices, edges)


# Flink's names of how records travel between tasks
SHIP_STRATEGIES = {
    PartitioningKind.FORWARD: "FORWARD",
    PartitioningKind.REBALANCE: "REBALANCE",
    PartitioningKind.RESCALE: "RESCALE",
    PartitioningKind.SHUFFLE: "SHUFFLE",
    PartitioningKind.KEY_GROUP: "HASH",
    PartitioningKind.BROADCAST: "BROADCAST",
    PartitioningKind.CUSTOM: "CUSTOM",
}
_PACTS = {TransformationKind.SOURCE: "Data Source", TransformationKind.SINK: "Data Sink"}


def execution_plan(graph: JobGraph) -> str:
    """The job's operators as JSON, in the shape of Flink's streaming plan (``nodes``, each
    with ``id``, ``type`` (its name), ``pact``, ``contents`` (its description, else its
    name), ``parallelism`` and ``predecessors`` with their ``ship_strategy``), plus what is
    lockgate's: each operator's ``uid`` and the ``task`` (job vertex) it is chained into."""
    plan = []
    for vertex in graph.vertices:
        for node in vertex.nodes:
            t = node.transformation
            entry: dict[str, Any] = {
                "id": t.id,
                "type": t.name,
                "pact": _PACTS.get(t.kind, "Operator"),
                "contents": t.description or t.name,
                "parallelism": node.parallelism,
                "uid": node.uid,
                "task": vertex.id,
            }
            if node.inputs:
                entry["predecessors"] = [
                    {
                        "id": edge.source.transformation.id,
                        "ship_strategy": SHIP_STRATEGIES[edge.partitioning.kind],
                        "side": "second" if edge.input_index == 2 else "first",
                    }
                    for edge in node.inputs
                ]
            plan.append(entry)
    return json.dumps({"nodes": plan}, indent=2)

"""build_job_graph on programs built through the public API, without executing them."""

from __future__ import annotations

import pytest

from lockgate.common import Duration, WatermarkStrategy
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat
from lockgate.graph.job_graph import GraphError, JobGraph, build_job_graph


class Passthrough(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def key(x):
    return x % 3


def build(env: StreamExecutionEnvironment, parallelism: int = 1, max_p: int | None = None):
    return build_job_graph(env._transformations, parallelism, max_p)


def chains(graph: JobGraph) -> list[str]:
    return [v.name for v in graph.vertices]


def edges(graph: JobGraph) -> list[tuple[int, int, str]]:
    return [(e.source.id, e.target.id, e.partitioning.kind.value) for e in graph.edges]


def uids(graph: JobGraph) -> list[str]:
    return [node.uid for v in graph.vertices for node in v.nodes]


# Chaining ------------------------------------------------------------------------------------


def test_forward_edges_with_equal_parallelism_are_chained():
    env = StreamExecutionEnvironment()
    env.from_collection([1, 2]).map(str).filter(bool).flat_map(list).print()
    graph = build(env, 1)
    assert chains(graph) == ["Collection Source -> Map -> Filter -> FlatMap -> Print to Std. Out"]
    assert graph.edges == []
    vertex = graph.vertices[0]
    assert vertex.is_source and not vertex.keyed
    assert graph.sources == [vertex]
    assert graph.stateful_nodes == []


def test_parallelism_change_cuts_the_chain_with_a_rebalance_edge():
    env = StreamExecutionEnvironment()
    env.from_collection([1, 2]).map(str).filter(bool).print()  # the source is non-parallel
    graph = build(env, 2)
    assert chains(graph) == ["Collection Source", "Map -> Filter -> Print to Std. Out"]
    assert [v.parallelism for v in graph.vertices] == [1, 2]
    assert edges(graph) == [(0, 1, "rebalance")]


def test_explicit_operator_parallelism_cuts_before_and_after():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).map(str).set_parallelism(3).filter(bool).print()
    graph = build(env, 1)
    assert chains(graph) == ["Collection Source", "Map", "Filter -> Print to Std. Out"]
    assert [v.parallelism for v in graph.vertices] == [1, 3, 1]
    assert edges(graph) == [(0, 1, "rebalance"), (1, 2, "rebalance")]


def test_rebalance_cuts_even_with_equal_parallelism():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).map(str).rebalance().filter(bool).print()
    graph = build(env, 1)
    assert chains(graph) == ["Collection Source -> Map", "Filter -> Print to Std. Out"]
    assert edges(graph) == [(0, 1, "rebalance")]


def test_key_by_cuts_and_makes_a_keyed_head():
    env = StreamExecutionEnvironment()
    env.from_collection([1, 2, 3]).map(int).key_by(key).process(Passthrough()).map(str).print()
    graph = build(env, 1)
    assert chains(graph) == [
        "Collection Source -> Map",
        "KeyedProcess -> Map -> Print to Std. Out",
    ]
    assert edges(graph) == [(0, 1, "key_group")]
    keyed = graph.vertices[1]
    assert keyed.keyed and not graph.vertices[0].keyed
    assert keyed.head.keyed
    assert [n.keyed for n in keyed.nodes] == [True, False, False]
    assert graph.edges[0].partitioning.key_selector is key
    assert graph.stateful_nodes == [(keyed, keyed.head)]


@pytest.mark.parametrize(
    ("method", "name"),
    [("sum", "Sum"), ("min", "Min"), ("max", "Max"), ("min_by", "MinBy"), ("max_by", "MaxBy")],
)
def test_keyed_aggregations_are_keyed_heads(method, name):
    env = StreamExecutionEnvironment()
    getattr(env.from_collection([(1, 2)]).key_by(lambda t: t[0]), method)(1).print()
    graph = build(env, 1)
    assert chains(graph) == ["Collection Source", f"{name} -> Print to Std. Out"]
    assert graph.vertices[1].keyed


@pytest.mark.parametrize("method", ["map", "flat_map", "filter", "reduce"])
def test_keyed_stream_functions_are_keyed_heads(method):
    env = StreamExecutionEnvironment()
    getattr(env.from_collection([1]).key_by(key), method)(lambda *a: a[0]).print()
    graph = build(env, 1)
    assert len(graph.vertices) == 2
    assert graph.vertices[1].keyed
    assert edges(graph) == [(0, 1, "key_group")]


def test_two_key_bys_in_a_row_give_two_keyed_tasks():
    env = StreamExecutionEnvironment()
    keyed_once = env.from_collection([1]).key_by(key).process(Passthrough())
    keyed_once.key_by(str).process(Passthrough()).print()
    graph = build(env, 2)
    assert chains(graph) == [
        "Collection Source",
        "KeyedProcess",
        "KeyedProcess -> Print to Std. Out",
    ]
    assert edges(graph) == [(0, 1, "key_group"), (1, 2, "key_group")]


def test_key_by_on_a_keyed_stream_rekeys_the_original_input():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).map(int).key_by(key).key_by(str).process(Passthrough()).print()
    graph = build(env, 1)
    assert chains(graph) == ["Collection Source -> Map", "KeyedProcess -> Print to Std. Out"]
    assert graph.edges[0].partitioning.key_selector is str


def test_union_of_one_task_stays_chained():
    env = StreamExecutionEnvironment()
    mapped = env.from_collection([1]).map(int)
    mapped.filter(bool).union(mapped.map(str)).print()
    graph = build(env, 1)
    assert len(graph.vertices) == 1
    assert [n.name for n in graph.vertices[0].nodes] == [
        "Collection Source",
        "Map",
        "Filter",
        "Map",
        "Print to Std. Out",
    ]
    sink = graph.vertices[0].nodes[-1]
    assert [e.source.name for e in sink.inputs] == ["Filter", "Map"]


def test_union_of_different_tasks_cuts():
    env = StreamExecutionEnvironment()
    left = env.from_collection([1]).map(int)
    right = env.from_collection([2]).map(int)
    left.union(right).map(str).print()
    graph = build(env, 1)
    assert chains(graph) == [
        "Collection Source -> Map",
        "Collection Source -> Map",
        "Map -> Print to Std. Out",
    ]
    assert edges(graph) == [(0, 2, "forward"), (1, 2, "forward")]
    assert [e.source.id for e in graph.vertices[2].inputs] == [0, 1]


def test_union_with_one_branch_needing_a_rebalance_cuts():
    env = StreamExecutionEnvironment()
    source = env.from_collection([1])
    parallel = source.map(int).set_parallelism(2)
    parallel.union(parallel.map(str).set_parallelism(1)).print()
    graph = build(env, 2)
    assert chains(graph) == ["Collection Source", "Map", "Map", "Print to Std. Out"]
    assert [v.parallelism for v in graph.vertices] == [1, 2, 1, 2]
    assert edges(graph) == [
        (0, 1, "rebalance"),
        (1, 2, "rebalance"),
        (1, 3, "forward"),
        (2, 3, "rebalance"),
    ]


def test_vertices_are_in_topological_order():
    env = StreamExecutionEnvironment()
    stream = env.from_collection([1]).map(int).set_parallelism(2)
    stream.key_by(key).process(Passthrough()).rebalance().map(str).set_parallelism(3).print()
    graph = build(env, 1)
    position = {v.id: i for i, v in enumerate(graph.vertices)}
    for edge in graph.edges:
        assert position[edge.source.id] < position[edge.target.id]
    for vertex in graph.vertices:
        assert graph.vertex(vertex.id) is vertex
        for edge in vertex.inputs:
            assert edge.target is vertex and edge in edge.source.outputs


def test_a_job_without_operators_is_rejected():
    with pytest.raises(GraphError, match="no operators"):
        build(StreamExecutionEnvironment())


# Uids ----------------------------------------------------------------------------------------


def program(env: StreamExecutionEnvironment) -> None:
    source = env.from_collection([1, 2, 3])
    mapped = source.map(int)
    mapped.key_by(key).process(Passthrough()).map(str).print()
    mapped.key_by(key).sum(0).print()
    source.map(int).filter(bool).print()


def test_derived_uids_are_deterministic_across_builds():
    first, second = StreamExecutionEnvironment(), StreamExecutionEnvironment()
    program(first)
    program(second)
    assert uids(build(first, 2)) == uids(build(second, 2))


def test_derived_uids_do_not_depend_on_parallelism():
    first, second = StreamExecutionEnvironment(), StreamExecutionEnvironment()
    program(first)
    program(second)
    assert sorted(uids(build(first, 1))) == sorted(uids(build(second, 4)))


def test_derived_uids_are_distinct_and_readable():
    env = StreamExecutionEnvironment()
    program(env)
    graph = build(env, 2)
    all_uids = uids(graph)
    assert len(all_uids) == len(set(all_uids))
    names = [node.name for v in graph.vertices for node in v.nodes]
    for name, uid in zip(names, all_uids, strict=True):
        slug = name.lower().replace(" ", "-").replace(".", "")
        assert uid.startswith(slug.split("-")[0]), (name, uid)


def test_identical_sibling_operators_get_distinct_uids():
    env = StreamExecutionEnvironment()
    source = env.from_collection([1])
    source.map(int).print()
    source.map(int).print()
    all_uids = uids(build(env, 1))
    assert len(all_uids) == 5
    assert len(set(all_uids)) == 5


def test_adding_operators_later_keeps_earlier_derived_uids():
    small, large = StreamExecutionEnvironment(), StreamExecutionEnvironment()
    program(small)
    program(large)
    large.from_collection([9]).map(str).print()
    small_uids = uids(build(small, 2))
    assert set(small_uids) <= set(uids(build(large, 2)))


def test_user_uids_are_kept():
    env = StreamExecutionEnvironment()
    stream = env.from_collection([1]).uid("my-source").map(int).uid("my-map")
    stream.key_by(key).process(Passthrough()).uid("my-process").print().uid("my-sink")
    graph = build(env, 1)
    assert uids(graph) == ["my-source", "my-map", "my-process", "my-sink"]


def test_user_uid_replaces_the_derived_one():
    plain, named = StreamExecutionEnvironment(), StreamExecutionEnvironment()
    plain.from_collection([1]).map(int).print()
    named.from_collection([1]).map(int).uid("the-map").print()
    plain_uids, named_uids = uids(build(plain, 1)), uids(build(named, 1))
    assert named_uids[1] == "the-map"
    assert plain_uids[1] != "the-map"
    assert plain_uids[0] == named_uids[0]  # upstream of the named operator is unaffected


def test_duplicate_user_uid_is_rejected_naming_both_operators():
    env = StreamExecutionEnvironment()
    source = env.from_collection([1])
    source.map(int).uid("dup").print()
    source.filter(bool).uid("dup").print()
    with pytest.raises(GraphError, match=r"uid 'dup'.*'Map'.*'Filter'"):
        build(env, 1)


def test_duplicate_uid_on_a_sink_is_rejected():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).uid("same").print().uid("same")
    with pytest.raises(GraphError, match="'same'"):
        build(env, 1)


def test_uid_on_a_keyed_stream_or_a_partitioned_stream_is_refused():
    env = StreamExecutionEnvironment()
    keyed = env.from_collection([1]).key_by(key)
    with pytest.raises(ValueError, match="uid"):
        keyed.uid("x")
    with pytest.raises(ValueError, match="uid"):
        env.from_collection([1]).rebalance().uid("x")
    with pytest.raises(ValueError, match="non-empty"):
        env.from_collection([1]).uid("")


# Max parallelism -----------------------------------------------------------------------------


def test_default_max_parallelism_is_derived_per_operator():
    env = StreamExecutionEnvironment()
    stream = env.from_collection([1]).map(int)
    stream.key_by(key).process(Passthrough()).set_parallelism(200).print()
    graph = build(env, 100)
    by_name = {v.head.name: v for v in graph.vertices}
    assert by_name["Collection Source"].max_parallelism == 128  # parallelism 1
    assert by_name["Map"].max_parallelism == 256  # parallelism 100
    assert by_name["KeyedProcess"].max_parallelism == 512  # parallelism 200
    assert by_name["Print to Std. Out"].max_parallelism == 256


def test_job_max_parallelism_applies_to_every_operator():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).map(int).key_by(key).process(Passthrough()).print()
    graph = build(env, 4, 64)
    assert {node.max_parallelism for v in graph.vertices for node in v.nodes} == {64}


def test_operator_max_parallelism_wins():
    env = StreamExecutionEnvironment()
    keyed = env.from_collection([1]).key_by(key).process(Passthrough()).set_max_parallelism(1000)
    keyed.print()
    graph = build(env, 4, 64)
    assert graph.vertices[1].head.max_parallelism == 1000
    assert graph.vertices[1].nodes[1].max_parallelism == 64


def test_parallelism_above_max_parallelism_is_rejected_naming_the_operator():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).key_by(key).process(Passthrough()).set_parallelism(100).print()
    with pytest.raises(GraphError, match=r"'KeyedProcess'.*parallelism 100.*64"):
        build(env, 4, 64)


def test_parallelism_above_the_upper_bound_names_the_operator():
    env = StreamExecutionEnvironment()
    env.from_collection([1]).map(int).set_parallelism(40000).print()
    with pytest.raises(GraphError, match="'Map'"):
        build(env, 1)


# Runtime mode --------------------------------------------------------------------------------


def two_sources(env: StreamExecutionEnvironment, continuous: bool):
    files = FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/tmp")
    if continuous:
        files = files.monitor_continuously(Duration.of_seconds(1))
    lines = env.from_source(files.build(), WatermarkStrategy.no_watermarks(), "files")
    env.from_collection([1, 2]).union(lines.map(len)).print()


@pytest.mark.parametrize(
    ("mode", "continuous", "batch"),
    [
        ("STREAMING", False, False),
        ("BATCH", False, True),
        ("AUTOMATIC", False, True),
        ("AUTOMATIC", True, False),
    ],
)
def test_the_runtime_mode_decides_batch_execution_as_flink_s(mode, continuous, batch):
    env = StreamExecutionEnvironment()
    two_sources(env, continuous)
    assert build_job_graph(env._transformations, 1, None, mode).batch is batch


def test_batch_mode_refuses_a_continuous_source_before_the_job_starts():
    env = StreamExecutionEnvironment()
    two_sources(env, continuous=True)
    with pytest.raises(GraphError) as info:
        build_job_graph(env._transformations, 1, None, "BATCH")
    assert str(info.value).startswith(
        "execution.runtime-mode BATCH needs bounded sources, but source 'files' (uid"
    )


def test_derived_uids_do_not_change_between_versions():
    """A restore finds state by uid, so a job without explicit uids must derive the same ones
    from one lockgate version to the next (these were derived before the graph's kinds became
    enums)."""
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    source = env.from_collection([1, 2, 3])
    reduced = source.map(lambda x: x).key_by(lambda x: x).reduce(lambda a, b: a + b)
    reduced.rebalance().filter(bool).union(source.broadcast().map(str)).print()
    graph = build_job_graph(env._transformations, 2, None)
    assert sorted(node.uid for vertex in graph.vertices for node in vertex.nodes) == [
        "collection-source-c941d22c8c00",
        "filter-f945b821e0c3",
        "map-979f81f98421",
        "map-b5c5d0aaa738",
        "print-to-std-out-2515427d4e0b",
        "reduce-4b8454863c14",
    ]

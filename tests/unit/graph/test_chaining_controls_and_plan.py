"""Chain breaks (start_new_chain, disable_chaining, disable_operator_chaining), the
partitionings rescale/shuffle/forward, and the execution plan, on build_job_graph."""

from __future__ import annotations

import json

import pytest

from lockgate.common import Configuration
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.graph.job_graph import GraphError, JobGraph


def env_of(parallelism: int = 1) -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment().set_parallelism(parallelism)


def build(env: StreamExecutionEnvironment) -> JobGraph:
    return env._job_graph(env._transformations)


def chains(graph: JobGraph) -> list[str]:
    return [v.name for v in graph.vertices]


def edges(graph: JobGraph) -> list[tuple[int, int, str]]:
    return [(e.source.id, e.target.id, e.partitioning.kind.value) for e in graph.edges]


def test_start_new_chain_starts_a_task_joined_by_a_forward_edge():
    env = env_of()
    env.from_collection([1, 2]).map(str).filter(bool).start_new_chain().flat_map(list).print()
    graph = build(env)
    assert chains(graph) == ["Collection Source -> Map", "Filter -> FlatMap -> Print to Std. Out"]
    assert edges(graph) == [(0, 1, "forward")]


def test_disable_chaining_chains_the_operator_to_neither_side():
    env = env_of()
    env.from_collection([1, 2]).map(str).filter(bool).disable_chaining().flat_map(list).print()
    graph = build(env)
    assert chains(graph) == [
        "Collection Source -> Map",
        "Filter",
        "FlatMap -> Print to Std. Out",
    ]
    assert edges(graph) == [(0, 1, "forward"), (1, 2, "forward")]


def test_a_sink_can_run_in_a_task_of_its_own():
    env = env_of()
    env.from_collection([1, 2]).map(str).print().disable_chaining()
    assert chains(build(env)) == ["Collection Source -> Map", "Print to Std. Out"]


def test_disable_operator_chaining_puts_every_operator_in_its_own_task():
    env = env_of()
    env.from_collection([1, 2]).map(str).filter(bool).print()
    assert len(build(env).vertices) == 1 and env.is_chaining_enabled()
    env.disable_operator_chaining()
    assert not env.is_chaining_enabled()
    graph = build(env)
    assert len(graph.vertices) == 4
    assert edges(graph) == [(0, 1, "forward"), (1, 2, "forward"), (2, 3, "forward")]


def test_the_chaining_setting_is_the_flink_key():
    config = Configuration().set_string("pipeline.operator-chaining.enabled", "false")
    env = StreamExecutionEnvironment(config).set_parallelism(1)
    env.from_collection([1]).map(str).print()
    assert not env.is_chaining_enabled() and len(build(env).vertices) == 3


def test_forward_needs_equal_parallelism_and_fails_before_the_job_starts():
    env = env_of(2)
    env.from_collection([1, 2]).forward().map(str).print()  # the source has parallelism 1
    with pytest.raises(GraphError, match="forward partitioning needs equal parallelism"):
        build(env)


def test_forward_with_equal_parallelism_chains():
    env = env_of(2)
    env.from_collection([1, 2]).set_parallelism(2).forward().map(str).print()
    assert chains(build(env)) == ["Collection Source -> Map -> Print to Std. Out"]


@pytest.mark.parametrize("method", ["rescale", "shuffle", "partition_custom"])
def test_rescale_shuffle_and_custom_cut_the_chain_even_at_equal_parallelism(method):
    env = env_of(2)
    stream = env.from_collection([1, 2]).set_parallelism(2)
    args = (lambda key, n: key % n, lambda r: r) if method == "partition_custom" else ()
    getattr(stream, method)(*args).map(str).print()
    graph = build(env)
    assert chains(graph) == ["Collection Source", "Map -> Print to Std. Out"]
    assert edges(graph) == [(0, 1, "custom" if method == "partition_custom" else method)]


def test_partition_custom_checks_its_arguments():
    stream = env_of().from_collection([1])
    with pytest.raises(TypeError, match="partitioner should be type of Partitioner"):
        stream.partition_custom(3, lambda r: r)
    with pytest.raises(TypeError, match="key_selector should be type of KeySelector"):
        stream.partition_custom(lambda k, n: 0, "key")


def test_force_non_parallel_fixes_parallelism_one():
    env = env_of(4)
    mapped = env.from_collection([1, 2]).rebalance().map(str).force_non_parallel()
    mapped.print()
    graph = build(env)
    assert [(v.parallelism, v.max_parallelism) for v in graph.vertices] == [
        (1, 128),
        (1, 1),
        (4, 128),
    ]
    with pytest.raises(ValueError, match="non-parallel"):
        mapped.set_parallelism(2)
    mapped.set_parallelism(1)  # its parallelism stays what it is


def test_the_execution_plan_lists_operators_in_flinks_shape():
    env = env_of(2)
    source = env.from_collection([("a", 1)]).set_description("the test records")
    keyed = source.map(lambda r: r).key_by(lambda r: r[0]).reduce(lambda a, b: a)
    keyed.uid("reduce").rescale().map(str).name("Render").print().set_description("stdout")
    plan = json.loads(env.get_execution_plan())
    nodes = plan["nodes"]
    summary = [(n["type"], n["pact"], n["contents"], n["parallelism"], n["task"]) for n in nodes]
    assert summary == [
        ("Collection Source", "Data Source", "the test records", 1, 0),
        ("Map", "Operator", "Map", 2, 1),
        ("Reduce", "Operator", "Reduce", 2, 2),
        ("Render", "Operator", "Render", 2, 3),
        ("Print to Std. Out", "Data Sink", "stdout", 2, 3),
    ]
    ids = [n["id"] for n in nodes]
    strategies = [
        [(ids.index(p["id"]), p["ship_strategy"]) for p in n.get("predecessors", [])] for n in nodes
    ]
    assert strategies == [[], [(0, "REBALANCE")], [(1, "HASH")], [(2, "RESCALE")], [(3, "FORWARD")]]
    assert nodes[2]["uid"] == "reduce" and "predecessors" not in nodes[0]
    # the plan does not consume the declared job
    assert json.loads(env.get_execution_plan()) == plan

"""EpochJob's restore routing: every subtask gets its own restore, carried from the sources
through the partitions and shuffles the epoch has anyway (no extra Spark task)."""

from __future__ import annotations

from driver_parts import Passthrough

from lockgate.datastream import StreamExecutionEnvironment
from lockgate.graph.job_graph import build_job_graph
from lockgate.runtime.jobmaster.epoch_job import EpochJob, _ToConsumer
from lockgate.runtime.jobmaster.placement import SubtaskPlacement
from lockgate.runtime.taskexecutor.epoch_task import RESTORE_EDGE


def branching_job():
    """source (1) -> key_by -> counter (3) -> key_by -> totals (2); the source also feeds a
    second keyed branch (2), so it has two consumers."""
    env = StreamExecutionEnvironment()
    source = env.from_collection([1, 2, 3]).uid("numbers")
    counted = source.key_by(lambda x: x % 3).process(Passthrough()).uid("counter")
    counted.set_parallelism(3)
    totals = counted.key_by(lambda x: x % 2).process(Passthrough()).uid("totals")
    totals.set_parallelism(2)
    source.key_by(lambda x: x).process(Passthrough()).uid("other").set_parallelism(2)
    return build_job_graph(env._transformations, 2, 128)


def forwarded(bundle, depth=0):
    """(vertex, subtask, own restore, hops) of every bundle a bundle carries, recursively."""
    found = []
    for target_vertex, index, inner in bundle[1]:
        found.append((target_vertex, index, inner[0], depth))
        found += forwarded(inner, depth + 1)
    return found


def test_each_restore_is_carried_once_from_the_sources_by_the_first_input():
    job = branching_job()
    restores = {
        v.id: [f"{v.head.uid}-{i}".encode() for i in range(v.parallelism)] for v in job.vertices
    }
    bundles = EpochJob(None, job, SubtaskPlacement())._restore_bundles(restores)  # type: ignore[arg-type]
    for vertex in job.vertices:
        assert [b[0] for b in bundles[vertex.id]] == restores[vertex.id]
    [source] = job.sources
    carried = [f for b in bundles[source.id] for f in forwarded(b)]
    expected = {
        (v.id, i, restores[v.id][i])
        for v in job.vertices
        if not v.is_source
        for i in range(v.parallelism)
    }
    assert sorted((v, i, r) for v, i, r, _ in carried) == sorted(expected)
    assert {depth for *_, depth in carried} == {0, 1}  # totals' restores ride via counter
    for vertex in job.vertices:  # subtask j of a task rides with subtask j % p of its carrier
        for carrier_index, bundle in enumerate(bundles[vertex.id]):
            for target_vertex, index, _ in bundle[1]:
                target = job.vertex(target_vertex)
                assert target.inputs[0].source.id == vertex.id
                assert index % vertex.parallelism == carrier_index


def test_a_task_with_several_consumers_sends_each_only_its_restores():
    keep = _ToConsumer(frozenset({4}), consumer=2)
    assert keep((0, (4, 0, "a", 0, [1])))
    assert not keep((0, (5, 0, "a", 0, [1])))
    assert keep((1, (RESTORE_EDGE, 2, "", 0, (b"r", []))))
    assert not keep((1, (RESTORE_EDGE, 3, "", 0, (b"r", []))))
    assert not keep((-2, ("collected",)))

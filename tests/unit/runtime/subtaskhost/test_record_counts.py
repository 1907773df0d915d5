"""numRecordsIn and numRecordsOut of the operators of a chain, whichever way each is counted:
in batches (a source, a head), derived from the upstream operator (a chained operator whose
only input is that operator's whole output; a one-to-one operator's output), or one by one
(the output of the others, the input of operators behind side outputs and unions)."""

from __future__ import annotations

from lockgate.datastream import OutputTag, ProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors import DiscardingSink
from lockgate.graph.job_graph import build_job_graph
from lockgate.runtime.messages.metric_value import CounterValue
from lockgate.runtime.messages.task_deployment import BatchBounds, SubtaskRestore
from lockgate.runtime.subtaskhost.subtask import Subtask
from lockgate.state.backend_settings import KeyedStateSettings
from lockgate.state.manifests import HASHMAP
from lockgate.state.rocksdb import RocksDBSettings

LARGE = OutputTag("large")


class SplitLarge(ProcessFunction):
    """Every value to the main output, and those of 4 and more to the side output too."""

    def process_element(self, value, ctx):
        yield value
        if value >= 4:
            yield LARGE, value


def counts(subtask: Subtask) -> dict[str, tuple[int, int]]:
    """(numRecordsIn, numRecordsOut) by operator uid."""
    return {
        uid: (values["numRecordsIn"].count, values["numRecordsOut"].count)
        for uid, values in subtask.metrics().items()
    }


def test_every_operator_of_a_chain_counts_what_it_takes_and_emits():
    env = StreamExecutionEnvironment.get_execution_environment()
    source = env.from_collection(list(range(10))).uid("source")
    evens = source.map(lambda v: v).uid("map").filter(lambda v: v % 2 == 0).uid("filter")
    doubled = evens.flat_map(lambda v: [v, v]).uid("flat-map")
    split = doubled.process(SplitLarge()).uid("split")
    split.get_side_output(LARGE).map(str).uid("large").sink_to(DiscardingSink()).uid("sink-1")
    both = split.union(split.map(lambda v: -v).uid("negate"))
    both.map(abs).uid("after-union").sink_to(DiscardingSink()).uid("sink-2")
    job = build_job_graph(env._transformations, 1, None)
    [vertex] = job.vertices  # one chain
    restore = SubtaskRestore(vertex.id, 0, "job#0", None, None, {}, {}, True, {}, None)
    settings = KeyedStateSettings(HASHMAP, "job", False, (), RocksDBSettings())
    subtask = Subtask(job, vertex, 0, 0, restore, settings, BatchBounds(2048, 1 << 20, 1 << 30))
    subtask.open()
    assert subtask.source_operator is not None
    subtask.source_operator.emit_chunk("split-0", list(range(6)))
    subtask.source_operator.emit_chunk("split-0", list(range(6, 10)))
    # flat-map emits 0 0 2 2 4 4 6 6 8 8; split sends 6 of them (4 and more) aside as well
    assert counts(subtask) == {
        "source": (10, 10),
        "map": (10, 10),
        "filter": (10, 5),
        "flat-map": (5, 10),
        "split": (10, 16),
        "large": (6, 6),
        "sink-1": (6, 0),
        "negate": (10, 10),
        "after-union": (20, 20),
        "sink-2": (20, 0),
    }
    assert subtask.metrics()["filter"] == {
        "numRecordsIn": CounterValue(10),
        "numRecordsOut": CounterValue(5),
    }

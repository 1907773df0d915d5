"""JobState: the driver's view of positions and state versions, into and out of checkpoints."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lockgate.checkpoint import metadata
from lockgate.checkpoint.metadata import (
    CheckpointFormatError,
    CheckpointMetadata,
    OperatorSubtaskState,
)
from lockgate.common import Encoder
from lockgate.connectors.file.committable import PartCommittable
from lockgate.connectors.file.committer import FileCommitter
from lockgate.connectors.offset_splits import OffsetSplitsState
from lockgate.core.source import SplitProgress
from lockgate.datastream import (
    KeyedProcessFunction,
    ProcessWindowFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors.file_system import FileSink
from lockgate.graph.job_graph import build_job_graph
from lockgate.runtime.jobmaster.job_state import JobState, adopt_max_parallelism
from lockgate.runtime.messages.acknowledgement import SubtaskAck
from lockgate.runtime.messages.task_deployment import SubtaskRestore
from lockgate.state.manifests import HeapManifest, KeyedStateSnapshot
from lockgate.state.snapshot import GroupHandle

PATH = "file:///ckpts/job/chk-3"
NOW = 1_700_000_000_000  # the driver's clock
DATA = list(range(10))


class Passthrough(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def key(x):
    return x % 3


def job(
    parallelism: int = 2,
    max_parallelism: int | None = 128,
    extra_branch: bool = False,
    sink_apart: bool = False,
):
    env = StreamExecutionEnvironment()
    source = env.from_collection(DATA).uid("numbers")
    keyed = source.key_by(key).process(Passthrough()).uid("counter")
    if sink_apart:
        keyed = keyed.rebalance()
    sink = FileSink.for_row_format("/unused", Encoder.simple_string_encoder()).build()
    keyed.sink_to(sink).uid("files")
    if extra_branch:
        source.map(str).uid("extra-map").print().uid("extra-print")
    return build_job_graph(env._transformations, parallelism, max_parallelism)


def vertex(graph, uid: str):
    [found] = [v for v in graph.vertices if v.head.uid == uid]
    return found


def state_files(state: JobState) -> set[str]:
    return set().union(*state.subtask_files().values())


def handle(name: str, size: int = 10) -> GroupHandle:
    return GroupHandle(f"file:///ckpts/job/shared/counter/{name}", 0, size, 12345)


def committable(epoch: int, index: int) -> dict:
    return PartCommittable(
        epoch, f"file:///out/.part-{index}.inprogress", f"file:///out/p{index}", 10
    ).to_json()


def ack(vertex_id: int, index: int, epoch: int, **fields) -> SubtaskAck:
    values = {
        "operators": {},
        "watermarks": {},
        "next_timer_in_ms": None,
        "source_progress": {},
        "state": None,
        "records_in": 0,
        "restored": False,
        "location": "",
        "duration_ms": 1.0,
        "consumed": {},
        "metrics": {},
        **fields,
    }
    return SubtaskAck(vertex_id, index, epoch, "job#0", f"e{epoch}a{vertex_id}{index}", **values)


def acks_for(graph, epoch: int, position: int) -> list[SubtaskAck]:
    source, counter = vertex(graph, "numbers"), vertex(graph, "counter")
    progress = {"0": SplitProgress(position, position >= len(DATA))}
    acks = [ack(source.id, 0, epoch, source_progress=progress)]
    for index in range(counter.parallelism):
        acks.append(
            ack(
                counter.id,
                index,
                epoch,
                operators={
                    "files": {"next_part": epoch, "committables": [committable(epoch, index)]}
                },
                state=KeyedStateSnapshot(
                    HeapManifest(
                        {"count": "value"}, {64 * index + epoch: handle(f"{index}-e{epoch}")}
                    ),
                    10,
                    1,
                ),
            )
        )
    return acks


def positions_at(position: int) -> dict:
    """The checkpoint state of the collection source (one split) at ``position``."""
    return OffsetSplitsState({"0": position}).to_json()


def state_after_two_epochs(graph) -> JobState:
    state = JobState(graph, "hashmap")
    state.apply_acks(1, acks_for(graph, 1, position=4), NOW)
    state.apply_acks(2, acks_for(graph, 2, position=7), NOW)
    return state


def test_the_test_job_has_the_expected_shape():
    graph = job()
    assert [v.name for v in graph.vertices] == ["Collection Source", "KeyedProcess -> FileSink"]
    assert [v.parallelism for v in graph.vertices] == [1, 2]


def test_a_new_job_state_starts_from_nothing():
    graph = job()
    state = JobState(graph, "hashmap")
    counter = vertex(graph, "counter")
    assert (state.epoch, state.committed_epoch) == (0, 0)
    assert state.manifests[counter.id] == {0: HeapManifest({}, {}), 1: HeapManifest({}, {})}
    assert state_files(state) == set()
    assert state.state_bytes() == 0
    assert state.enumerators[vertex(graph, "numbers").id].snapshot() == positions_at(0)


def test_acks_accumulate_key_groups_and_advance_sources():
    graph = job()
    state = state_after_two_epochs(graph)
    counter = vertex(graph, "counter")
    assert state.epoch == 2
    assert state.committed_epoch == 0
    assert state.manifests[counter.id][1].groups == {65: handle("1-e1"), 66: handle("1-e2")}
    assert state_files(state) == {handle(name).file for name in ("0-e1", "0-e2", "1-e1", "1-e2")}
    assert state.state_bytes() == 40
    assert state.enumerators[vertex(graph, "numbers").id].snapshot() == positions_at(7)
    restore = state.restore_for(counter, "job#0")
    assert [r.subtask for r in restore] == [0, 1]
    assert restore[0].keyed == HeapManifest(
        {"count": "value"}, {1: handle("0-e1"), 2: handle("0-e2")}
    )
    assert restore[0].operators["files"]["next_part"] == 2
    assert restore[0].claimed is True
    assert [restore[i].attempt for i in (0, 1)] == ["e2a10", "e2a11"]  # the accepted acks
    decoded = SubtaskRestore.for_subtask(restore[1].encode(), counter.id, 1, "job#0")
    assert decoded == restore[1]


def checkpoint_of(state: JobState, epoch: int = 2) -> CheckpointMetadata:
    """What a checkpoint of ``state`` holds, as read back from its _metadata."""
    written = CheckpointMetadata("job", 1, epoch, state.checkpoint_operators())
    return metadata.decode(metadata.encode(written, None), PATH, None)


def test_a_checkpoint_holds_every_operator_by_uid_not_by_chain():
    graph = job()
    operators = state_after_two_epochs(graph).checkpoint_operators()
    assert set(operators) == {"numbers", "counter", "files"}  # files is chained to counter
    source, counter, files = operators["numbers"], operators["counter"], operators["files"]
    assert (source.name, source.parallelism, source.max_parallelism) == (
        "Collection Source",
        1,
        128,
    )
    assert source.subtasks == (OperatorSubtaskState(0, None, None, None),)
    assert source.coordinator_state == positions_at(7)
    assert (counter.parallelism, counter.max_parallelism) == (2, 128)
    assert [s.key_groups for s in counter.subtasks] == [(0, 63), (64, 127)]
    assert counter.subtasks[0].keyed == HeapManifest(
        {"count": "value"}, {1: handle("0-e1"), 2: handle("0-e2")}
    )
    assert [s.keyed for s in files.subtasks] == [None, None]
    assert files.subtasks[1].operator_state["committables"] == [committable(2, 1)]


def test_checkpoint_operators_are_a_snapshot_not_a_view():
    graph = job()
    state = state_after_two_epochs(graph)
    operators = state.checkpoint_operators()
    state.apply_acks(3, acks_for(graph, 3, position=10), NOW)
    assert 3 not in operators["counter"].subtasks[0].keyed.groups
    assert operators["numbers"].coordinator_state == positions_at(7)


def test_checkpoint_and_restore_round_trip_through_metadata():
    graph = job()
    state = state_after_two_epochs(graph)
    restored = JobState(job(), "hashmap")  # a new run declares the same program
    restored.restore(checkpoint_of(state), PATH, ignore_unclaimed=False)
    assert (restored.epoch, restored.committed_epoch) == (2, 2)
    assert restored.checkpoint_operators() == state.checkpoint_operators()
    assert state_files(restored) == state_files(state)
    assert restored.state_bytes() == state.state_bytes()
    enumerator = restored.enumerators[vertex(restored.job, "numbers").id]
    [assignment] = enumerator.plan(100)[0]
    assert assignment.start == 7
    assert enumerator.payload(assignment) == DATA[7:]


def test_state_of_another_job_is_copied_by_the_first_epoch():
    """Restored from another job's checkpoint, subtasks rewrite their state into this job
    (claimed False) until an epoch has completed; a failover back to the start claims again."""
    graph = job()
    checkpoint = checkpoint_of(state_after_two_epochs(graph))
    state = JobState(job(), "hashmap")
    state.restore(checkpoint, PATH, ignore_unclaimed=False, foreign=True)
    counter = vertex(state.job, "counter")
    assert {r.claimed for r in state.restore_for(counter, "job#1")} == {False}
    state.apply_acks(3, acks_for(state.job, 3, position=10), NOW)
    assert {r.claimed for r in state.restore_for(counter, "job#1")} == {True}
    state.restore(checkpoint, PATH, ignore_unclaimed=False, foreign=True)
    state.reset()
    assert {r.claimed for r in state.restore_for(counter, "job#2")} == {True}


def test_subtasks_are_restored_from_any_checkpoint_even_of_epoch_0():
    """A state processor's new savepoint is of epoch (checkpoint) 0, as Flink's are: a job
    started from it restores its subtasks (CheckpointedFunction.is_restored), as one started
    from nothing does not."""
    graph = job()
    state = JobState(graph, "hashmap")
    counter = vertex(graph, "counter")
    assert {r.restored_epoch for r in state.restore_for(counter, "job#0")} == {None}
    state.restore(checkpoint_of(JobState(job(), "hashmap"), epoch=0), PATH, False)
    assert {r.restored_epoch for r in state.restore_for(counter, "job#1")} == {0}
    state.apply_acks(1, acks_for(graph, 1, position=4), NOW)
    assert {r.restored_epoch for r in state.restore_for(counter, "job#1")} == {1}
    state.reset()  # a failover back to the start
    assert {r.restored_epoch for r in state.restore_for(counter, "job#2")} == {None}


def test_state_restores_by_uid_when_the_chaining_changed():
    """The sink was chained to the counter; now a rebalance puts it in a task of its own."""
    checkpoint = checkpoint_of(state_after_two_epochs(job()))
    restored = JobState(job(sink_apart=True), "hashmap")
    restored.restore(checkpoint, PATH, ignore_unclaimed=False)
    sink = vertex(restored.job, "files")
    assert sink is not vertex(restored.job, "counter")
    assert restored.operator_states[sink.id][1]["files"]["committables"] == [committable(2, 1)]
    found = [c for _, c in restored.committables(checkpoint)]
    assert found == [committable(2, 0), committable(2, 1)]


def test_restore_discards_progress_made_after_the_checkpoint():
    graph = job()
    state = state_after_two_epochs(graph)
    checkpoint = checkpoint_of(state)
    state.apply_acks(3, acks_for(graph, 3, position=10), NOW)
    state.restore(checkpoint, PATH, ignore_unclaimed=False)
    assert state.epoch == 2
    counter = vertex(graph, "counter")
    assert 3 not in state.manifests[counter.id][0].groups
    assert handle("0-e3").file not in state_files(state)
    assert state.enumerators[vertex(graph, "numbers").id].snapshot() == positions_at(7)
    assert state.operator_states[counter.id][0]["files"]["next_part"] == 2


def test_committables_of_a_checkpoint():
    graph = job()
    checkpoint = checkpoint_of(state_after_two_epochs(graph))
    found = list(JobState(graph, "hashmap").committables(checkpoint))
    assert [committable for _, committable in found] == [committable(2, 0), committable(2, 1)]
    assert all(isinstance(committer, FileCommitter) for committer, _ in found)


def test_a_checkpoint_without_committables_yields_none():
    graph = job()
    checkpoint = checkpoint_of(JobState(graph, "hashmap"))
    assert list(JobState(graph, "hashmap").committables(checkpoint)) == []


def test_a_reset_goes_back_to_the_start():
    graph = job()
    state = state_after_two_epochs(graph)
    state.reset()
    assert state.epoch == 0
    assert state_files(state) == set()
    assert state.enumerators[vertex(graph, "numbers").id].snapshot() == positions_at(0)
    assert state.operator_states[vertex(graph, "counter").id] == {}


# Restoring into a different job -------------------------------------------------------------------


def test_unclaimed_operator_state_is_rejected_naming_the_uids():
    body = checkpoint_of(state_after_two_epochs(job(extra_branch=True)))
    state = JobState(job(), "hashmap")
    with pytest.raises(CheckpointFormatError) as info:
        state.restore(body, PATH, ignore_unclaimed=False)
    message = str(info.value)
    assert PATH in message
    assert "extra-map" in message
    assert "execution.state-recovery.ignore-unclaimed-state" in message
    assert state.epoch == 0


def test_unclaimed_operator_state_is_dropped_when_allowed():
    body = checkpoint_of(state_after_two_epochs(job(extra_branch=True)))
    state = JobState(job(), "hashmap")
    state.restore(body, PATH, ignore_unclaimed=True)
    assert state.epoch == 2
    assert state.enumerators[vertex(state.job, "numbers").id].snapshot() == positions_at(7)


def test_an_operator_new_to_the_job_starts_empty():
    body = checkpoint_of(state_after_two_epochs(job()))
    state = JobState(job(extra_branch=True), "hashmap")
    state.restore(body, PATH, ignore_unclaimed=False)
    assert state.operator_states[vertex(state.job, "extra-map").id] == {}
    assert len(state_files(state)) == 4


@pytest.mark.parametrize(
    ("parallelism", "expected"),
    [
        # ranges at 3: 0-42, 43-85, 86-127
        (3, [{1: "0-e1", 2: "0-e2"}, {65: "1-e1", 66: "1-e2"}, {}]),
        (1, [{1: "0-e1", 2: "0-e2", 65: "1-e1", 66: "1-e2"}]),
    ],
)
def test_at_another_parallelism_keyed_state_moves_by_key_group(parallelism, expected):
    body = checkpoint_of(state_after_two_epochs(job(2, 128)))
    graph = job(parallelism, 128)
    state = JobState(graph, "hashmap")
    state.restore(body, PATH, ignore_unclaimed=False)
    counter = vertex(graph, "counter")
    restored = state.manifests[counter.id]
    assert [
        {kg: h.file.rpartition("/")[2] for kg, h in restored[i].groups.items()}
        for i in range(parallelism)
    ] == expected
    # the sink's part counter is per subtask: it starts over (its committables were
    # committed by the restore)
    assert all("files" not in state.operator_states[counter.id].get(i, {}) for i in range(3))


def test_a_changed_max_parallelism_is_rejected_naming_the_operator_and_uid():
    body = checkpoint_of(state_after_two_epochs(job(2, 128)))
    state = JobState(job(2, 256), "hashmap")
    with pytest.raises(CheckpointFormatError) as info:
        state.restore(body, PATH, ignore_unclaimed=False)
    assert str(info.value) == (
        f"checkpoint {PATH}: operator 'Collection Source' (uid 'numbers') has max parallelism "
        "128, but the job now has 256: key groups cannot be split or merged (set the "
        "operator's max parallelism, or 'pipeline.max-parallelism', to 128)"
    )


@pytest.mark.parametrize("parallelism", [2, 3])
def test_a_default_max_parallelism_yields_to_the_restored_one(parallelism):
    body = checkpoint_of(state_after_two_epochs(job(2, 256)))
    graph = job(parallelism, None)  # the default, 128
    adopt_max_parallelism(graph, body, PATH)
    assert {n.uid: n.max_parallelism for v in graph.vertices for n in v.nodes} == {
        "numbers": 256,
        "counter": 256,
        "files": 256,
    }
    state = JobState(graph, "hashmap")
    state.restore(body, PATH, ignore_unclaimed=False)
    counter = state.checkpoint_operators()["counter"]
    assert [s.key_groups for s in counter.subtasks] == (
        [(0, 127), (128, 255)] if parallelism == 2 else [(0, 85), (86, 170), (171, 255)]
    )


def test_a_configured_max_parallelism_is_kept_and_a_parallelism_above_the_restored_one_fails():
    body = checkpoint_of(state_after_two_epochs(job(2, 8)))
    graph = job(2, 16)
    adopt_max_parallelism(graph, body, PATH)
    assert {n.max_parallelism for v in graph.vertices for n in v.nodes} == {16}
    with pytest.raises(
        CheckpointFormatError, match="has max parallelism 8, but the job now has 16"
    ):
        JobState(graph, "hashmap").restore(body, PATH, ignore_unclaimed=False)
    with pytest.raises(CheckpointFormatError) as info:
        adopt_max_parallelism(job(9, None), body, PATH)
    assert str(info.value) == (
        f"checkpoint {PATH}: operator 'KeyedProcess' (uid 'counter') runs at parallelism "
        "9, above the max parallelism 8 its state was taken with"
    )


def windowed_job(contents: str):
    env = StreamExecutionEnvironment()
    windows = env.from_collection(DATA).uid("numbers").key_by(key).count_window(2)
    out = windows.reduce(lambda a, b: a + b) if contents == "reduce" else windows.process(Firsts())
    out.uid("counter").print().uid("out")
    return build_job_graph(env._transformations, 1, 128)


class Firsts(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield next(iter(elements))


def test_a_built_in_operator_s_state_of_another_kind_fails_before_the_job_runs():
    graph = windowed_job("reduce")
    counter = vertex(graph, "counter")
    saved = JobState(graph, "hashmap")
    saved.apply_acks(
        1,
        [
            ack(
                counter.id,
                0,
                1,
                state=KeyedStateSnapshot(
                    HeapManifest({"window-contents": "reducing/ns"}, {3: handle("c")}), 10, 1
                ),
            )
        ],
        NOW,
    )
    body = checkpoint_of(saved, epoch=1)
    JobState(windowed_job("reduce"), "hashmap").restore(body, PATH, ignore_unclaimed=False)
    with pytest.raises(CheckpointFormatError) as info:
        JobState(windowed_job("process"), "hashmap").restore(body, PATH, ignore_unclaimed=False)
    assert str(info.value) == (
        f"checkpoint {PATH}: operator 'CountTumblingWindowAssigner' (uid 'counter'): state "
        "'window-contents' was saved as reducing/ns state, but the operator now keeps it as "
        "list/ns state"
    )


# Damaged source positions ------------------------------------------------------------------------


def with_coordinator_state(coordinator_state) -> CheckpointMetadata:
    """A checkpoint (written, read back) whose source enumerator state is ``coordinator_state``."""
    checkpoint = checkpoint_of(state_after_two_epochs(job()))
    source = replace(checkpoint.operators["numbers"], coordinator_state=coordinator_state)
    written = replace(checkpoint, operators={**checkpoint.operators, "numbers": source})
    return metadata.decode(metadata.encode(written, None), PATH, None)


@pytest.mark.parametrize(
    ("coordinator_state", "what"),
    [
        ({"positions": {"0": 7}}, "is not a lockgate-offset-splits record"),
        (
            {**positions_at(7), "positions": {"0": "7"}},
            r"field 'positions'\['0'\] is str '7', not int",
        ),
        ({**positions_at(7), "positions": {}}, r"splits \[\], but now has \['0'\]"),
        (positions_at(11), "position 11 of split '0' is outside its range \\[0, 10\\]"),
    ],
)
def test_damaged_source_positions_fail_naming_the_checkpoint_and_the_operator(
    coordinator_state, what
):
    state = JobState(job(), "hashmap")
    with pytest.raises(CheckpointFormatError, match=what) as info:
        state.restore(with_coordinator_state(coordinator_state), PATH, ignore_unclaimed=False)
    assert str(info.value).startswith(
        f"checkpoint {PATH}: the split enumerator of 'Collection Source' (uid 'numbers')"
    )


@pytest.mark.parametrize(("foreign", "kept"), [(True, None), (False, 2**63 - 1)])
def test_a_resumed_job_starts_without_the_end_of_time_watermark(foreign, kept):
    """A finished run's last checkpoint holds watermark 2**63-1 (its input ended): a job
    resumed from it reads new input, which would all be late. A failover keeps it."""
    graph = job()
    checkpoint = checkpoint_of(state_after_two_epochs(graph))
    counter = checkpoint.operators["counter"]
    ended = tuple(replace(s, watermark=2**63 - 1) for s in counter.subtasks)
    checkpoint = replace(
        checkpoint, operators={**checkpoint.operators, "counter": replace(counter, subtasks=ended)}
    )
    state = JobState(graph, "hashmap")
    state.restore(checkpoint, PATH, ignore_unclaimed=False, foreign=foreign)
    assert state.watermarks[vertex(graph, "counter").id].get(0, {}).get("counter") == kept


@pytest.mark.parametrize("parallelism", [2, 3])
def test_a_checkpoint_restores_only_into_the_backend_that_wrote_it(parallelism):
    body = checkpoint_of(state_after_two_epochs(job(2, 128)))
    state = JobState(job(parallelism, 128), "rocksdb")
    with pytest.raises(
        CheckpointFormatError,
        match=r"'counter'\): its state was written by "
        r"the hashmap state backend, but the job uses the rocksdb backend",
    ):
        state.restore(body, PATH, ignore_unclaimed=False)

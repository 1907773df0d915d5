"""AckCollector: the driver accepts the attempts whose output the epoch used, whichever
attempt wrote its ack last."""

from __future__ import annotations

import json

import pytest

from lockgate.core.fs.storage import Storage
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.graph.job_graph import build_job_graph
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.jobmaster.ack_collector import AckCollector
from lockgate.runtime.messages.acknowledgement import SubtaskAck, ack_name
from lockgate.state.manifests import HeapManifest, KeyedStateSnapshot
from lockgate.state.snapshot import GroupHandle

RUN = "job#0"
EPOCH = 3
ACKS = "epochs/3-g0t3"


class Passthrough(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


@pytest.fixture
def job():
    env = StreamExecutionEnvironment()
    env.from_collection(list(range(10))).set_parallelism(2).key_by(lambda x: x % 3).process(
        Passthrough()
    ).print()
    return build_job_graph(env._transformations, 2, 128)


def state_files(tmp_path) -> Storage:
    return Storage(f"file://{tmp_path}")


@pytest.fixture
def work(tmp_path) -> Storage:
    return Storage(f"file://{tmp_path}/work")


def write_ack(work, vertex, index, attempt, consumed=None, state=None, **changes) -> None:
    values = dict(
        vertex=vertex,
        subtask=index,
        epoch=EPOCH,
        run=RUN,
        attempt=attempt,
        records_in=5,
        source_progress={},
        state=state,
        operators={},
        watermarks={},
        next_timer_in_ms=None,
        restored=False,
        location="",
        duration_ms=1.0,
        consumed=consumed or {},
        metrics={},
    )
    values.update(changes)
    document = json.dumps(SubtaskAck(**values).to_json()).encode()
    work.create(ack_name(ACKS, vertex, index, attempt), document)


def epoch_with_two_keyed_attempts(work, job) -> None:
    """Keyed subtask 0 ran twice; attempt k0-b read other source attempts and wrote last."""
    source, keyed = job.vertices
    [edge] = keyed.inputs
    for index in (0, 1):
        write_ack(work, source.id, index, f"s{index}-a")
        write_ack(work, source.id, index, f"s{index}-b")
    read_a = {f"{edge.id}/0": "s0-a", f"{edge.id}/1": "s1-a"}
    read_b = {f"{edge.id}/0": "s0-b", f"{edge.id}/1": "s1-b"}
    write_ack(work, keyed.id, 0, "k0-a", read_a)
    write_ack(work, keyed.id, 1, "k1-a", read_a)
    write_ack(work, keyed.id, 0, "k0-b", read_b)  # the zombie, written last


def test_the_attempts_whose_output_was_used_are_accepted(work, job, tmp_path):
    epoch_with_two_keyed_attempts(work, job)
    source, keyed = job.vertices
    collector = AckCollector(job, work, state_files(tmp_path), ACKS, EPOCH)
    acks = collector.accepted(RUN, {(keyed.id, 0): {"k0-a"}, (keyed.id, 1): {"k1-a"}})
    assert [(a.vertex, a.subtask, a.attempt) for a in acks] == [
        (source.id, 0, "s0-a"),
        (source.id, 1, "s1-a"),
        (keyed.id, 0, "k0-a"),
        (keyed.id, 1, "k1-a"),
    ]


def test_an_epoch_resting_on_two_attempts_of_one_subtask_fails(work, job, tmp_path):
    epoch_with_two_keyed_attempts(work, job)
    _, keyed = job.vertices
    collector = AckCollector(job, work, state_files(tmp_path), ACKS, EPOCH)
    with pytest.raises(JobExecutionError, match="outputs of 2 attempts of subtask 0 of"):
        collector.accepted(RUN, {(keyed.id, 0): {"k0-b"}, (keyed.id, 1): {"k1-a"}})


def test_a_missing_ack_of_a_used_attempt_names_the_file(work, job, tmp_path):
    _, keyed = job.vertices
    collector = AckCollector(job, work, state_files(tmp_path), ACKS, EPOCH)
    with pytest.raises(JobExecutionError, match=r"finished without acknowledging .*1-0-k0-a"):
        collector.accepted(RUN, {(keyed.id, 0): {"k0-a"}, (keyed.id, 1): {"k1-a"}})


def test_an_ack_of_another_run_is_rejected_naming_the_file(work, job, tmp_path):
    _, keyed = job.vertices
    write_ack(work, keyed.id, 0, "k0-a", run="job#7")
    collector = AckCollector(job, work, state_files(tmp_path), ACKS, EPOCH)
    with pytest.raises(JobExecutionError, match=r"acknowledgement .*1-0-k0-a.json acknowledges"):
        collector.accepted(RUN, {(keyed.id, 0): {"k0-a"}})


def test_a_damaged_ack_is_rejected_naming_the_file(work, job, tmp_path):
    _, keyed = job.vertices
    work.create(ack_name(ACKS, keyed.id, 0, "k0-a"), b'{"format": "lockgate-subtask-ack", "ver')
    collector = AckCollector(job, work, state_files(tmp_path), ACKS, EPOCH)
    with pytest.raises(JobExecutionError, match=r"1-0-k0-a.json is not JSON"):
        collector.accepted(RUN, {(keyed.id, 0): {"k0-a"}})


def test_losing_attempts_state_files_are_deleted_unless_needed(work, job, tmp_path):
    _, keyed = job.vertices
    files = {name: tmp_path / name for name in ("winner.lgks", "loser.lgks", "shared.lgks")}
    for path in files.values():
        path.write_bytes(b"x")

    def state(*names):
        groups = {n: GroupHandle(f"file://{files[name]}", 0, 1, 0) for n, name in enumerate(names)}
        return KeyedStateSnapshot(HeapManifest({}, groups), 1, 1)

    epoch_with_two_keyed_attempts(work, job)
    work.remove(ack_name(ACKS, keyed.id, 0, "k0-b"))
    source_edge = keyed.inputs[0].id
    read_b = {f"{source_edge}/0": "s0-b", f"{source_edge}/1": "s1-b"}
    write_ack(work, keyed.id, 0, "k0-b", read_b, state=state("loser.lgks", "shared.lgks"))
    collector = AckCollector(job, work, state_files(tmp_path), ACKS, EPOCH)
    collector.accepted(RUN, {(keyed.id, 0): {"k0-a"}, (keyed.id, 1): {"k1-a"}})
    collector.discard_losers(lambda: {f"file://{files['shared.lgks']}"})
    assert not files["loser.lgks"].exists()
    assert files["shared.lgks"].exists() and files["winner.lgks"].exists()


def test_a_losing_ack_naming_a_file_outside_the_state_directory_deletes_nothing(
    work, job, tmp_path
):
    _, keyed = job.vertices
    outside = tmp_path / "elsewhere" / "precious.txt"
    outside.parent.mkdir()
    outside.write_text("not the job's")
    epoch_with_two_keyed_attempts(work, job)
    work.remove(ack_name(ACKS, keyed.id, 0, "k0-b"))
    source_edge = keyed.inputs[0].id
    read_b = {f"{source_edge}/0": "s0-b", f"{source_edge}/1": "s1-b"}
    foreign = KeyedStateSnapshot(
        HeapManifest({}, {0: GroupHandle(f"file://{outside}", 0, 1, 0)}), 1, 1
    )
    write_ack(work, keyed.id, 0, "k0-b", read_b, state=foreign)
    collector = AckCollector(job, work, Storage(f"file://{tmp_path}/state"), ACKS, EPOCH)
    collector.accepted(RUN, {(keyed.id, 0): {"k0-a"}, (keyed.id, 1): {"k1-a"}})
    collector.discard_losers(set)
    assert outside.exists()

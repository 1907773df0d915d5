"""The state processor: a savepoint and retained checkpoints of both backends read as
DataFrames (every state kind, window state, timers, metadata), a checkpoint converted into a
savepoint; a savepoint modified and
written anew (a value fixed, a key dropped, a new operator's state bootstrapped, the max
parallelism changed, an operator renamed and others removed) restores into a job at another
parallelism, whose output equals the plain-Python reference; operator list, union and
broadcast state bootstrapped into a new savepoint restores, subtask by subtask, at another
parallelism."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest
from exactly_once_job import (
    checkpointed_env,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)
from lockgate_it_support import forge_crc
from pyspark.sql import functions as F
from pyspark.sql import types as T
from rescale_job import Tally, reports
from state_processor_job import (
    FIRST_EPOCH,
    RECORDS,
    TIMER_AT,
    USERS,
    WINDOW_MS,
    build,
    descriptors,
    replay,
    window_sums,
)

from lockgate.checkpoint.metadata import CheckpointSignatureError
from lockgate.common import Configuration, RestartStrategies, Types
from lockgate.datastream import CheckpointingMode, ExternalizedCheckpointRetention
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ValueStateDescriptor,
)
from lockgate.runtime.errors import JobExecutionError
from lockgate.state_processor import SavepointReader, SavepointWriter, StateProcessorError

USER_IDS = [f"u{i}" for i in range(USERS)]
JOB_A_UIDS = {
    "events",
    "timestamps",
    "state-kinds",
    "window-sums",
    "window-labels",
    "obsolete",
    "obsolete-sink",
    "discard",
}


def configure(env, **settings: str) -> None:
    config = Configuration()
    for key, value in settings.items():
        config.set_string(key, value)
    env.configure(config)


def values(frame) -> dict:
    return {row.key: row.value for row in frame.collect()}


def check_first_epoch_state(reader: SavepointReader, uid: str) -> None:
    """The state of job A after its first epoch, read back kind by kind."""
    expected, _ = replay({}, RECORDS[:FIRST_EPOCH])
    read = {d.name: values(reader.keyed_state(uid, d.name)) for d in descriptors()}
    assert read["count"] == {u: s["count"] for u, s in expected.items()}
    assert read["amounts"] == {u: s["amounts"] for u, s in expected.items()}
    assert read["by_parity"] == {u: s["by_parity"] for u, s in expected.items()}
    assert read["total"] == {u: s["total"] for u, s in expected.items()}
    assert {k: tuple(v) for k, v in read["sum_count"].items()} == {
        u: s["sum_count"] for u, s in expected.items()
    }
    assert read["last_seen"] == {u: s["last_seen"] for u, s in expected.items()}

    timers = {tuple(row) for row in reader.timers(uid).collect()}
    assert timers == {(u, TIMER_AT, None, "user", "event") for u in USER_IDS}

    # The window still open after the first epoch: [20000, 30000), its contents and timers
    start = 2 * WINDOW_MS
    sums = window_sums(RECORDS[20:FIRST_EPOCH])
    contents = reader.keyed_state("window-sums", "window-contents")
    assert contents.columns == ["key", "namespace", "value"]
    assert {(r.key, tuple(r.namespace), tuple(r.value)) for r in contents.collect()} == {
        (u, (start, start + WINDOW_MS), sums[(u, start)]) for u in USER_IDS
    }
    timers_of_windows = reader.timers("window-sums")
    window = T.StructType(
        [T.StructField("start", T.LongType()), T.StructField("end", T.LongType())]
    )
    assert contents.schema["namespace"].dataType == window  # the TimeWindow's names
    assert timers_of_windows.schema["namespace"].dataType == window
    window_timers = {
        (r.key, r.timestamp, tuple(r.namespace), r.timer_service, r.time_domain)
        for r in timers_of_windows.collect()
    }
    assert window_timers == {
        (u, start + WINDOW_MS - 1, (start, start + WINDOW_MS), "window", "event") for u in USER_IDS
    }


def test_a_savepoint_read_modified_and_written_restores_into_a_rescaled_job(
    make_env, spark, tmp_path
):
    started_ms = time.time() * 1000
    env = make_env(2, FIRST_EPOCH)
    build(env, renamed=False)
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    reader = SavepointReader.read(spark, savepoint)
    assert set(reader.uids()) == JOB_A_UIDS

    meta = {(r.uid, r.subtask): r for r in reader.metadata().collect()}
    first, second = meta[("state-kinds", 0)], meta[("state-kinds", 1)]
    assert (first.parallelism, first.max_parallelism, first.backend) == (2, 128, "canonical")
    assert (first.key_group_start, first.key_group_end) == (0, 63)
    assert (second.key_group_start, second.key_group_end) == (64, 127)
    assert first.states["last_seen"] == "ttl-value"
    assert first.states["_timers/user/event"] == "timers"
    files = Path(savepoint.removeprefix("file://")).rglob("*.lgcs")
    sizes = sum(f.stat().st_size for f in files if f.parent.name == "state-kinds")
    assert first.state_bytes > 0 and second.state_bytes > 0
    assert first.state_bytes + second.state_bytes < sizes  # the blobs, without the headers
    assert meta[("events", 0)].key_group_start is None

    check_first_epoch_state(reader, "state-kinds")

    typed = reader.keyed_state(
        "state-kinds", ValueStateDescriptor("count", Types.INT()), key_type=Types.STRING()
    )
    assert typed.schema["value"].dataType == T.IntegerType()
    assert typed.schema["key"].dataType == T.StringType()
    stamped = reader.keyed_state("state-kinds", "last_seen", ttl_timestamps=True).collect()
    assert {row.key for row in stamped} == set(values(reader.keyed_state("state-kinds", "count")))
    assert all(started_ms <= row.last_access_timestamp <= time.time() * 1000 for row in stamped)
    with pytest.raises(StateProcessorError, match=r"no operator with uid 'nope'.*'state-kinds'"):
        reader.keyed_state("nope", "count")
    with pytest.raises(StateProcessorError, match=r"no keyed state 'nope'.*'count' \(value\)"):
        reader.keyed_state("state-kinds", "nope")

    # Modify: every state of the operator replaced by the joined DataFrame in which u0's
    # count is fixed and u1 is dropped; a new operator bootstrapped; max parallelism doubled
    joined = None
    for descriptor in descriptors():
        frame = reader.keyed_state("state-kinds", descriptor.name)
        frame = frame.withColumnRenamed("value", descriptor.name)
        joined = frame if joined is None else joined.join(frame, "key", "full_outer")
    fixed = joined.filter(F.col("key") != "u1").withColumn(
        "count", F.when(F.col("key") == "u0", F.lit(100)).otherwise(F.col("count"))
    )
    greetings = spark.createDataFrame(
        [("u0", "hello u0"), ("u2", "hi u2")], "key string, greeting string"
    )
    target = tmp_path / "rewritten"
    written = (
        SavepointWriter.from_existing_savepoint(spark, savepoint)
        .remove_operator("obsolete")
        .remove_operator("obsolete-sink")
        .remove_operator("discard")
        .change_operator_identifier("state-kinds", "state-kinds-v2")
        .with_keyed_state("state-kinds-v2", fixed, descriptors())
        .with_keyed_state("greeter", greetings, [ValueStateDescriptor("greeting")])
        .with_max_parallelism(256)
        .write(str(target))
    )
    with pytest.raises(StateProcessorError, match=r"not empty"):
        SavepointWriter.from_existing_savepoint(spark, savepoint).write(str(target))

    rewritten = SavepointReader.read(spark, written)
    assert set(rewritten.uids()) == JOB_A_UIDS - {
        "obsolete",
        "obsolete-sink",
        "discard",
        "state-kinds",
    } | {"state-kinds-v2", "greeter"}
    assert {r.max_parallelism for r in rewritten.metadata().collect()} == {256}
    counts = values(rewritten.keyed_state("state-kinds-v2", "count"))
    assert counts == {"u0": 100, "u2": 6, "u3": 6, "u4": 6}
    assert values(rewritten.keyed_state("greeter", "greeting")) == {
        "u0": "hello u0",
        "u2": "hi u2",
    }
    timers = {(r.key, r.timestamp) for r in rewritten.timers("state-kinds-v2").collect()}
    assert timers == {(u, TIMER_AT) for u in USER_IDS}  # kept, u1's too (timers are not states)

    # Restore at parallelism 3 and run to the end: the job, whose max parallelism is not
    # set, takes the savepoint's 256 key groups
    env = make_env(3, FIRST_EPOCH)
    configure(env, **{"execution.state-recovery.path": written})
    output = Counter(tuple(r) for r in build(env, renamed=True).execute_and_collect())

    states, _ = replay({}, RECORDS[:FIRST_EPOCH])
    del states["u1"]
    states["u0"]["count"] = 100
    _, state_lines = replay(states, RECORDS[FIRST_EPOCH:])
    greeting = {"u0": "hello u0", "u2": "hi u2"}
    expected = Counter(state_lines)
    expected.update(("timer", u, TIMER_AT) for u in USER_IDS)
    expected.update(
        ("window", *record)
        for (_, start), record in window_sums(RECORDS).items()
        if start >= 2 * WINDOW_MS
    )
    expected.update(("greeting", r[0], greeting.get(r[0])) for r in RECORDS[FIRST_EPOCH:])
    assert output == expected


@pytest.mark.parametrize("backend", ["hashmap", "rocksdb-incremental"])
def test_a_retained_checkpoint_reads_as_its_savepoint_would(make_env, spark, tmp_path, backend):
    poison = tmp_path / "poison"
    poison.write_text("")
    env = make_env(2, FIRST_EPOCH)
    env.enable_checkpointing(1, CheckpointingMode.EXACTLY_ONCE)
    checkpoint_config = env.get_checkpoint_config()
    checkpoint_config.set_checkpoint_storage(FileSystemCheckpointStorage(str(tmp_path / "chk")))
    checkpoint_config.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
    )
    env.set_restart_strategy(RestartStrategies.no_restart())
    build(env, renamed=False, poison=str(poison), fail_at=FIRST_EPOCH + 5)
    with pytest.raises(JobExecutionError, match="poisoned record"):
        env.execute("job A, failing in its second epoch")
    (job_dir,) = (tmp_path / "chk").iterdir()
    reader = SavepointReader.read(spark, str(job_dir / "chk-1"))
    backends = {r.backend for r in reader.metadata().collect() if r.uid == "state-kinds"}
    assert backends == {backend.partition("-")[0]}
    check_first_epoch_state(reader, "state-kinds")

    # ... and becomes a savepoint, which the writer makes self-contained and canonical
    converted = SavepointWriter.from_existing_savepoint(spark, str(job_dir / "chk-1")).write(
        str(tmp_path / "converted")
    )
    reader = SavepointReader.read(spark, converted)
    assert {r.backend for r in reader.metadata().collect() if r.uid == "state-kinds"} == {
        "canonical"
    }
    check_first_epoch_state(reader, "state-kinds")


def test_a_new_savepoint_from_dataframes_and_the_writer_s_checks(spark, tmp_path):
    with pytest.raises(StateProcessorError, match=r"max parallelism must be an int in 1..32768"):
        SavepointWriter.new_savepoint(spark, 0)
    frame = spark.createDataFrame(
        [((1, "a"), 3, [1, 2]), ((2, "b"), None, [])],
        "key struct<_1 int, _2 string>, n int, l array<int>",
    )
    writer = SavepointWriter.new_savepoint(spark, 64)
    with pytest.raises(
        StateProcessorError, match=r"no key column 'user' \(its columns: key, n, l\)"
    ):
        writer.with_keyed_state("op", frame, [ValueStateDescriptor("n")], key_column="user")
    with pytest.raises(StateProcessorError, match=r"list state 'n' needs an array column, not int"):
        writer.with_keyed_state("op", frame, [ListStateDescriptor("n")])
    with pytest.raises(StateProcessorError, match=r"has no operator with uid 'op'"):
        writer.remove_operator("op")

    writer.with_keyed_state(
        "op", frame, [ValueStateDescriptor("n"), ListStateDescriptor("l")], parallelism=2
    )
    writer.with_keyed_state("other", frame.select("key", "n"), [ValueStateDescriptor("n")])
    with pytest.raises(StateProcessorError, match=r"an operator with uid 'other' exists already"):
        writer.change_operator_identifier("op", "other")
    written = writer.write(str(tmp_path / "new"))
    reader = SavepointReader.read(spark, written)
    assert {(r.uid, r.subtask, r.max_parallelism) for r in reader.metadata().collect()} == {
        ("op", 0, 64),
        ("op", 1, 64),
        ("other", 0, 64),  # Spark's default parallelism (local[2]) for a new operator
        ("other", 1, 64),
    }
    assert {tuple(r.key): r.value for r in reader.keyed_state("op", "n").collect()} == {(1, "a"): 3}
    assert {tuple(r.key): r.value for r in reader.keyed_state("op", "l").collect()} == {
        (1, "a"): [1, 2]
    }

    twice = spark.createDataFrame([("a", 1), ("a", 2)], "key string, n int")
    target = tmp_path / "failed"
    with pytest.raises(StateProcessorError, match=r"operator 'dup', state 'n': the key 'a' has"):
        SavepointWriter.new_savepoint(spark, 8).with_keyed_state(
            "dup", twice, [ValueStateDescriptor("n")]
        ).write(str(target))
    assert not target.exists()  # what the failed write wrote is gone


def test_operator_state_bootstrapped_into_a_new_savepoint_restores_at_another_parallelism(
    make_env, spark, tmp_path
):
    """rescale_job's Tally (uid 'tally', on a keyed stream: keyed state too) bootstrapped at
    parallelism 2 with list state 'seen' (cut into chunks), union state 'counts' (placed by
    a subtask column) and broadcast state 'latest', read back, and restored by a job at 3."""
    seen = [("u0", 0, 0), ("u1", 1, 1000), ("u2", 2, 2000), ("u3", 3, 3000), ("u4", 4, 4000)]
    seen_frame = spark.createDataFrame(  # two Spark partitions, in order
        [(s,) for s in seen], "value struct<_1 string, _2 int, _3 bigint>"
    )
    counts = spark.createDataFrame([(0, [0, 3]), (1, [1, 2])], "subtask int, value array<int>")
    latest = spark.createDataFrame([("epoch", 7)], "key string, value bigint")
    keyed = spark.createDataFrame([("u0", 10)], "key string, n bigint")
    written = (
        SavepointWriter.new_savepoint(spark, 128)
        .with_list_state("tally", seen_frame, ListStateDescriptor("seen"), parallelism=2)
        .with_keyed_state("tally", keyed, [ValueStateDescriptor("n")])
        .with_union_state("tally", counts, ListStateDescriptor("counts"))
        .with_broadcast_state("tally", latest, MapStateDescriptor("latest"))
        .write(str(tmp_path / "bootstrapped"))
    )

    reader = SavepointReader.read(spark, written)
    modes = {"seen": "list", "counts": "union list", "latest": "broadcast"}
    assert {(r.subtask, r.key_group_start) for r in reader.metadata().collect()} == {
        (0, 0),
        (1, 64),
    }
    assert all(r.operator_states == modes for r in reader.metadata().collect())
    element = Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
    read_seen = reader.list_state("tally", ListStateDescriptor("seen", element)).collect()
    # 5 elements in chunks of 3 and 2, in the DataFrame's order
    assert [(r.subtask, tuple(r.value)) for r in read_seen] == [
        (0, seen[0]),
        (0, seen[1]),
        (0, seen[2]),
        (1, seen[3]),
        (1, seen[4]),
    ]
    read_counts = reader.union_state("tally", "counts").collect()
    assert [(r.subtask, r.value) for r in read_counts] == [(0, [0, 3]), (1, [1, 2])]
    assert [tuple(r) for r in reader.broadcast_state("tally", "latest").collect()] == [("epoch", 7)]
    assert values(reader.keyed_state("tally", "n")) == {"u0": 10}

    report_dir = tmp_path / "reports"
    report_dir.mkdir()
    env = checkpointed_env(
        make_env, tmp_path / "checkpoints", 3, settings=recovery_settings(written)
    )
    (
        env.from_collection([("u5", 5, 5000), ("u6", 6, 6000)])
        .key_by(lambda r: r[0])
        .map(Tally(report_dir, "restored"))
        .uid("tally")
        .sink_to(DiscardingSink())
    )
    env.execute("restored from the bootstrapped savepoint")
    opened = reports(report_dir, "restored", "open")
    # list state cut again, into chunks of 2, 2 and 1; the union and the broadcast copy
    # everywhere
    chunks = [seen[0:2], seen[2:4], seen[4:]]
    assert opened == {
        index: {
            "is_restored": True,
            "seen": [list(s) for s in chunk],
            "counts": [[0, 3], [1, 2]],
            "latest": {"epoch": 7},
        }
        for index, chunk in enumerate(chunks)
    }


def test_signed_savepoints_are_written_and_read_with_their_key(spark, tmp_path):
    """The state processor signs what it writes with the key it is given, reads only what
    that key signed, and its tasks check every state file's digest before reading it."""
    key, other = tmp_path / "key", tmp_path / "other-key"
    for path, secret in ((key, b"k" * 32), (other, b"o" * 32)):
        path.write_bytes(secret)
        path.chmod(0o600)
    counts = spark.createDataFrame([("a", 1), ("b", 2)], "key string, n int")
    elements = spark.createDataFrame([(1,), (2,), (3,)], "value int")
    unsigned = (
        SavepointWriter.new_savepoint(spark, 8)
        .with_keyed_state("op", counts, [ValueStateDescriptor("n")])
        .with_list_state("buffer", elements, ListStateDescriptor("seen"))
        .write(str(tmp_path / "unsigned"))
    )
    with pytest.raises(CheckpointSignatureError, match=r"_metadata is not signed"):
        SavepointReader.read(spark, unsigned, signing_key_file=str(key))
    # A savepoint written without a key, trusted, signed anew: its files get digests too
    signed = SavepointWriter.from_existing_savepoint(spark, unsigned).write(
        str(tmp_path / "signed"), signing_key_file=str(key)
    )
    reader = SavepointReader.read(spark, signed, signing_key_file=str(key))
    assert values(reader.keyed_state("op", "n")) == {"a": 1, "b": 2}
    assert sorted(r.value for r in reader.list_state("buffer", "seen").collect()) == [1, 2, 3]
    with pytest.raises(CheckpointSignatureError, match=r"_metadata is signed with another key"):
        SavepointWriter.from_existing_savepoint(spark, signed, signing_key_file=str(other))

    directory = Path(signed.removeprefix("file://"))
    body = json.loads((directory / "_metadata").read_text())["body"]
    groups = [s["keyed"]["groups"] for s in body["operators"]["op"]["subtasks"] if s["keyed"]]
    file, offset, length, crc, _ = next(iter(groups[0].values()))
    data = bytearray((directory / file).read_bytes())
    blob = bytearray(data[offset : offset + length])
    blob[0] ^= 0xFF  # a key group's blob altered, its CRC-32 put right
    data[offset : offset + length] = forge_crc(bytes(blob), 1, crc)
    (directory / file).write_bytes(bytes(data))
    with pytest.raises(Exception, match=r"does not match the SHA-256 digest"):
        reader.keyed_state("op", "n").collect()

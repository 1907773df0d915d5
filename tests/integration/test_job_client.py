"""``execute_async`` and its ``JobClient``: status, savepoints while the job runs, stop with a
savepoint, cancel, and the job's result, on a continuous job whose output is exactly-once
across the runs."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from exactly_once_job import checkpointed_env, committed_lines, file_sink, recovery_settings

from lockgate.common import Duration, JobExecutionResult, JobStatus, Time, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import KeyedProcessFunction, ProcessWindowFunction
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.datastream.window import TumblingEventTimeWindows
from lockgate.runtime.errors import JobCancellationError, JobExecutionError
from lockgate.runtime.jobmaster.savepoints import SavepointError

WORDS = 5
PER_FILE = 50
WAIT_S = 120


class CountPerWord(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value},{count}"


def add_file(directory: Path, name: str) -> None:
    lines = "".join(f"w{i % WORDS}\n" for i in range(PER_FILE))
    (directory / f".{name}").write_text(lines)
    (directory / f".{name}").rename(directory / name)  # appears whole


def wait_for_lines(out: Path, count: int) -> None:
    deadline = time.monotonic() + WAIT_S
    while sum(committed_lines(out).values()) < count:
        assert time.monotonic() < deadline, f"fewer than {count} lines committed in {out}"
        time.sleep(0.1)


def build(env, source_dir: Path, out: Path) -> None:
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(source_dir))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "words")
        .uid("words")
        .key_by(lambda word: word)
        .process(CountPerWord())
        .uid("count-per-word")
        .sink_to(file_sink(out))
        .uid("file-sink")
    )


def test_savepoints_stop_and_cancel_through_the_job_client(make_env, tmp_path):
    source_dir, out = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2, interval_ms=1)
    assert env.get_default_savepoint_directory() is None
    env.set_default_savepoint_directory(str(tmp_path / "savepoints"))
    assert env.get_default_savepoint_directory() == str(tmp_path / "savepoints")
    build(env, source_dir, out)
    add_file(source_dir, "a")

    client = env.execute_async("first run")
    wait_for_lines(out, PER_FILE)
    assert client.get_job_status().result() is JobStatus.RUNNING
    first = client.trigger_savepoint().result(timeout=WAIT_S)
    assert Path(first.removeprefix("file://"), "_metadata").is_file()
    assert Path(first.removeprefix("file://")).parent == tmp_path / "savepoints"
    assert client.get_job_status().result() is JobStatus.RUNNING  # a savepoint does not stop
    add_file(source_dir, "b")
    wait_for_lines(out, 2 * PER_FILE)
    second = client.stop_with_savepoint(savepoint_directory=str(tmp_path / "stops"))
    second_path = second.result(timeout=WAIT_S)
    result = client.get_job_execution_result().result(timeout=WAIT_S)
    assert isinstance(result, JobExecutionResult)
    assert result.get_job_id() == client.get_job_id()
    assert len(str(client.get_job_id())) == 32
    assert client.get_job_status().result() is JobStatus.FINISHED
    with pytest.raises(SavepointError, match=r"job \w+ is finished"):
        client.trigger_savepoint().result(timeout=WAIT_S)
    with pytest.raises(JobExecutionError, match=r"was not cancelled: it is FINISHED"):
        client.cancel().result(timeout=WAIT_S)

    env = checkpointed_env(
        make_env, tmp_path / "checkpoints-2", 3, settings=recovery_settings(second_path)
    )
    build(env, source_dir, out)
    client = env.execute_async("second run")
    add_file(source_dir, "c")
    wait_for_lines(out, 3 * PER_FILE)
    assert client.cancel().result(timeout=WAIT_S) is None
    assert client.get_job_status().result() is JobStatus.CANCELED
    with pytest.raises(JobCancellationError, match=r"was cancelled"):
        client.get_job_execution_result().result(timeout=WAIT_S)

    # every word counted 1, 2, ... across the three files and two runs, each line once
    expected = Counter(
        f"w{w},{n}" for w in range(WORDS) for n in range(1, 3 * PER_FILE // WORDS + 1)
    )
    assert committed_lines(out) == expected
    assert Path(first.removeprefix("file://"), "_metadata").is_file()  # never deleted


class FailOn:
    def __call__(self, value):
        raise ValueError(f"bad record {value}")


def test_a_failed_job_reports_failed_and_its_error(make_env, tmp_path):
    env = make_env(1)
    env.from_collection([1, 2, 3]).map(FailOn()).uid("fails").print()
    client = env.execute_async("fails")
    with pytest.raises(JobExecutionError, match=r"bad record"):
        client.get_job_execution_result().result(timeout=WAIT_S)
    assert client.get_job_status().result() is JobStatus.FAILED
    assert client.get_job_status().result().is_globally_terminal_state()


def test_a_savepoint_without_a_directory_fails_naming_the_setting(make_env, tmp_path):
    env = make_env(1)
    env.from_collection(list(range(10))).map(lambda x: x).print()
    client = env.execute_async("no savepoint directory")
    with pytest.raises(SavepointError, match=r"savepoint-dir.*set_default_savepoint_directory"):
        client.trigger_savepoint().result(timeout=WAIT_S)
    client.get_job_execution_result().result(timeout=WAIT_S)


class TimestampField(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return int(value.split(",")[1])


class CountPerWindow(ProcessWindowFunction):
    def process(self, key, context, elements):
        yield f"{key},{context.window().start},{len(list(elements))}"


def test_stop_with_savepoint_advancing_to_the_end_of_event_time_fires_every_window(
    make_env, tmp_path
):
    source_dir, out = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    (source_dir / "a").write_text("".join(f"k{i % 2},{i}\n" for i in range(40)))
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(source_dir))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        TimestampField()
    )
    (
        env.from_source(source, strategy, "lines")
        .uid("lines")
        .key_by(lambda line: line.split(",")[0])
        .window(TumblingEventTimeWindows.of(Time.milliseconds(1000)))
        .process(CountPerWindow())
        .uid("windows")
        .sink_to(file_sink(out))
        .uid("file-sink")
    )
    client = env.execute_async("windows")
    deadline = time.monotonic() + WAIT_S
    while not any(e.records for e in client._job.master.summary.epochs):
        assert time.monotonic() < deadline, "the job read nothing"
        time.sleep(0.05)
    assert committed_lines(out) == Counter()  # the window [0, 1000) is still open
    savepoint = client.stop_with_savepoint(True, str(tmp_path / "savepoints"))
    assert Path(savepoint.result(timeout=WAIT_S).removeprefix("file://"), "_metadata").is_file()
    client.get_job_execution_result().result(timeout=WAIT_S)
    assert committed_lines(out) == Counter({"k0,0,20": 1, "k1,0,20": 1})

"""Failures name where they happened; bad configuration fails before any Spark job."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from lockgate_it_support import SparkJobCounter, collect

from lockgate.common import Configuration, ConfigurationError, RestartStrategies
from lockgate.datastream import KeyedProcessFunction, MapFunction, StreamExecutionEnvironment
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.jobmaster.job_state import JobState


class ParseAmount(MapFunction):
    def map(self, value):
        return value[0], int(value[1])


class RiskRule(KeyedProcessFunction):
    """Fails on the record with sequence number ``bad``; notes its subtask in a file."""

    def __init__(self, bad: int, marker: str):
        self.bad = bad
        self.marker = marker

    def open(self, runtime_context):
        self.total = runtime_context.get_state(ValueStateDescriptor("total"))

    def process_element(self, value, ctx):
        if value[2] == self.bad:
            Path(self.marker).write_text(ctx.get_current_key())
            raise ValueError(f"amount rejected for {ctx.get_current_key()}")
        self.total.update((self.total.value() or 0) + value[1])
        yield ctx.get_current_key(), self.total.value()


def test_failing_map_function_names_operator_uid_subtask_epoch_and_record(make_env):
    records = [(f"acct-{i % 4}", str(i)) for i in range(50)]
    records[25] = ("acct-1", "12,5")  # epoch 3 with 10 records per epoch
    env = make_env(parallelism=1, max_records_per_split=10)
    stream = env.from_collection(records).map(ParseAmount()).name("parse-amounts").uid("my-uid")
    with pytest.raises(JobExecutionError) as failure:
        collect(stream)
    message = str(failure.value)
    assert "parse-amounts" in message
    assert "my-uid" in message
    assert re.search(r"subtask\D{0,3}0\b", message), message
    assert re.search(r"epoch\D{0,3}3\b", message), message
    assert "('acct-1', '12,5')" in message  # a preview of the record
    assert "ValueError" in message and "12,5" in message
    assert "\n" not in message.strip()


def test_failing_keyed_process_function_names_its_subtask(make_env, tmp_path):
    records = [(f"acct-{i % 6}", i % 7, i) for i in range(80)]
    marker = tmp_path / "failed-key"
    env = make_env(parallelism=2, max_records_per_split=20)
    stream = (
        env.from_collection(records)
        .key_by(lambda r: r[0])
        .process(RiskRule(bad=47, marker=str(marker)))
        .name("risk-rule")
        .uid("my-uid")
    )
    with pytest.raises(JobExecutionError) as failure:
        collect(stream)
    message = str(failure.value)
    assert marker.read_text() == "acct-5"
    assert "risk-rule" in message
    assert "my-uid" in message
    assert "subtask" in message
    assert re.search(r"epoch\D{0,3}3\b", message), message  # record 47 of 20 per epoch
    assert "('acct-5', 5, 47)" in message
    assert "amount rejected for acct-5" in message


class EmitsALock(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value[0], threading.Lock()


class Forward(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def test_an_output_that_cannot_be_pickled_names_the_operator_that_emitted_it(make_env):
    """Outputs go on as they are yielded; one that cannot cross the shuffle fails the
    operator that emitted it, on the record it was processing."""
    env = make_env(parallelism=2)
    stream = (
        env.from_collection([("acct-1", 1), ("acct-2", 2)])
        .key_by(lambda r: r[0])
        .process(EmitsALock())
        .name("emits-a-lock")
        .key_by(lambda r: r[0])
        .map(lambda r: r[0])
    )
    with pytest.raises(JobExecutionError) as failure:
        collect(stream)
    message = str(failure.value)
    assert "emits-a-lock" in message, message
    assert "failed on record ('acct-" in message, message
    assert "cannot pickle '_thread.lock' object" in message, message


def test_a_record_above_the_maximum_size_names_operator_uid_subtask_and_size(make_env):
    env = make_env(parallelism=2)
    env.configure(Configuration().set_string("lockgate.record.max-size", "4kb"))
    stream = (
        env.from_collection([("acct-1", 1), ("acct-2", 20_000)])
        .map(lambda r: (r[0], "x" * r[1]))
        .name("pads")
        .uid("pads-uid")
        .key_by(lambda r: r[0])
        .map(lambda r: len(r[1]))
    )
    with pytest.raises(JobExecutionError) as failure:
        collect(stream)
    message = str(failure.value)
    assert "operator 'pads' (uid 'pads-uid', subtask " in message, message
    assert re.search(
        r"pickles to 200\d\d bytes, more than lockgate.record.max-size \(4096", message
    )


def test_a_chained_operator_s_failure_names_that_operator_not_the_one_before(make_env):
    env = make_env(parallelism=1)
    stream = (
        env.from_collection([("acct-1", "7"), ("acct-2", "x")])
        .key_by(lambda r: r[0])
        .process(Forward())
        .name("forward")
        .map(lambda r: int(r[1]))
        .name("parse-amount")
    )
    with pytest.raises(JobExecutionError) as failure:
        collect(stream)
    message = str(failure.value)
    assert "operator 'parse-amount'" in message, message
    assert "failed on record ('acct-2', 'x')" in message, message
    assert "forward" not in message, message


class FailingOpen(KeyedProcessFunction):
    def open(self, runtime_context):
        raise ConnectionError("rules service unreachable")

    def process_element(self, value, ctx):
        yield value


def test_failing_open_names_the_operator(make_env):
    env = make_env(parallelism=2)
    stream = env.from_collection([("a", 1), ("b", 2)]).key_by(lambda r: r[0])
    with pytest.raises(JobExecutionError) as failure:
        collect(stream.process(FailingOpen()).name("load-rules").uid("my-uid"))
    message = str(failure.value)
    assert "load-rules" in message
    assert "my-uid" in message
    assert "open()" in message
    assert "rules service unreachable" in message


class SubtaskOfFailure(KeyedProcessFunction):
    def __init__(self, marker: str):
        self.marker = marker

    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def process_element(self, value, ctx):

        Path(self.marker).write_text(str(self.index))
        raise RuntimeError("boom")


def test_error_names_the_subtask_that_failed(make_env, tmp_path):
    marker = tmp_path / "subtask"
    env = make_env(parallelism=3)
    stream = env.from_collection([("only-key", 1)]).key_by(lambda r: r[0])
    with pytest.raises(JobExecutionError) as failure:
        collect(stream.process(SubtaskOfFailure(str(marker))).uid("my-uid"))
    subtask = marker.read_text()
    assert re.search(rf"subtask\D{{0,3}}{subtask}\b", str(failure.value)), str(failure.value)


def test_long_record_preview_is_shortened(make_env):
    record = "x" * 5000
    env = make_env(parallelism=1)
    stream = env.from_collection([record]).map(lambda s: 1 // 0).uid("my-uid")
    with pytest.raises(JobExecutionError) as failure:
        collect(stream)
    message = str(failure.value)
    assert "ZeroDivisionError" in message
    assert "xxxxxxxxxx" in message
    assert len(message) < 600


def test_failing_key_selector_is_reported(make_env):
    env = make_env(parallelism=2)
    stream = env.from_collection([{"id": 1}, {"name": "no id"}]).key_by(lambda r: r["id"])
    with pytest.raises(JobExecutionError) as failure:
        collect(stream.map(lambda r: r).name("after-key-by"))
    message = str(failure.value)
    assert "KeyError" in message
    assert "after-key-by" in message
    assert "'no id'" in message
    assert "epoch" in message


# Configuration ---------------------------------------------------------------------------


def test_unknown_lockgate_key_fails_before_any_spark_job(make_env, spark):
    jobs = SparkJobCounter(spark)
    with pytest.raises(ConfigurationError) as failure:
        make_env(lockgate_x="1")  # the factory turns '_' into '.'
    message = str(failure.value)
    assert "'lockgate.x'" in message
    assert "lockgate.epoch.max-records-per-split" in message  # the keys that do exist
    config = Configuration().set_string("lockgate.x", "1")
    with pytest.raises(ConfigurationError, match=r"lockgate\.x"):
        StreamExecutionEnvironment.get_execution_environment(config)
    assert jobs.none_started()


@pytest.mark.parametrize("value", ["0", "-5", "ten", "1.5", ""])
def test_invalid_max_records_per_split_fails_before_any_spark_job(make_env, spark, value):
    jobs = SparkJobCounter(spark)
    key = "lockgate.epoch.max-records-per-split"
    with pytest.raises(ConfigurationError) as failure:
        make_env(**{key: value})
    message = str(failure.value)
    assert key in message
    assert "positive integer" in message  # the allowed values
    assert repr(value) in message
    assert jobs.none_started()


def test_invalid_value_set_after_configure_fails_at_execute(make_env, spark):
    """A bad value that reaches the environment later still fails before the job starts."""
    env = make_env(parallelism=1)
    stream = env.from_collection([1, 2, 3]).map(lambda v: v)
    jobs = SparkJobCounter(spark)
    with pytest.raises(ConfigurationError, match="max-records-per-split"):
        env.configure(Configuration().set_string("lockgate.epoch.max-records-per-split", "0"))
    assert collect(stream) == [1, 2, 3]  # the failed configure left the environment as it was
    assert jobs.count(at_least=1) == 1


def test_a_bug_in_the_driver_fails_the_job_at_once_with_its_traceback(
    make_env, tmp_path, monkeypatch
):
    """Only failed Spark jobs, storage errors and damaged checkpoints go to the restart
    strategy; an error in lockgate's own driver code is not retried."""
    calls = []

    def broken(self, epoch, acks, now_ms):
        calls.append(epoch)
        raise KeyError("a bug in the driver")

    monkeypatch.setattr(JobState, "apply_acks", broken)
    env = make_env(parallelism=1, max_records_per_split=10)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 10))
    env.enable_checkpointing(1)
    env.from_collection(list(range(30))).map(str).print()
    with pytest.raises(KeyError, match="a bug in the driver") as info:
        env.execute("driver bug")
    assert calls == [1], "the bug was retried as if it were a task failure"
    assert any(entry.name == "broken" for entry in info.traceback)

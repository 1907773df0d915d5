"""A function instance lives as long as its subtask's run: ``open()`` once, ``close()`` once.

Each instance of the counting function below writes its life to a log file: "open" when
built, "close" with the number of records it saw. Spark runs a subtask's task in whatever
Python worker is free, every epoch; the instance must not notice. After a failure, the
failed run's instances are closed before the new run opens its own; a cancelled job closes
its instances too.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest
from lockgate_it_support import BACKENDS
from process_tree import descends_from_us, processes

from lockgate.common import RestartStrategies
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.connectors import DiscardingSink
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.sparktask import python_daemon

RECORDS = [(f"k{i % 7}", i) for i in range(200)]
PER_EPOCH = 20  # one split (from_collection): 10 epochs


class LoggedCount(KeyedProcessFunction):
    """Counts per key in state and, per instance, in a field; logs open() and close()."""

    def __init__(self, log: Path):
        self.log = str(log)

    def _write(self, line: str) -> None:
        with open(self.log, "a") as out:  # one short append: atomic between processes
            out.write(line + "\n")

    def open(self, runtime_context):
        self.name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.seen = 0
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self._write(f"open {self.name} {self.subtask}")

    def process_element(self, value, ctx):
        self.seen += 1
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield value[0], count

    def close(self):
        self._write(f"close {self.name} {self.subtask} {self.seen}")


def life(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def opened(log: Path) -> list[str]:
    return [event[1] for event in life(log) if event[0] == "open"]


def closed(log: Path) -> list[str]:
    return [event[1] for event in life(log) if event[0] == "close"]


def keyed_count(env, log: Path):
    return env.from_collection(RECORDS).key_by(lambda r: r[0]).process(LoggedCount(log))


@BACKENDS
def test_each_instance_opens_once_and_closes_once_in_a_job_of_ten_epochs(make_env, tmp_path):
    log = tmp_path / "life.log"
    env = make_env(parallelism=2, max_records_per_split=PER_EPOCH)
    keyed_count(env, log).sink_to(DiscardingSink())

    result = env.execute("ten epochs")

    assert len(result.epochs) == 10
    assert sorted(event[2] for event in life(log) if event[0] == "open") == ["0", "1"]
    assert Counter(closed(log)) == Counter(opened(log))
    assert sum(int(event[3]) for event in life(log) if event[0] == "close") == len(RECORDS)
    # Built once, in the first epoch (from_collection's one source subtask and the two keyed
    # subtasks), then kept
    assert [epoch.restored_subtasks for epoch in result.epochs] == [3] + [0] * 9


@BACKENDS
def test_a_failover_closes_the_failed_runs_instances_before_the_new_run_opens(make_env, tmp_path):
    log = tmp_path / "life.log"
    env = make_env(
        parallelism=2,
        max_records_per_split=PER_EPOCH,
        **{"lockgate.testing.inject-failure": "after-snapshot-before-ack@4"},
    )
    env.enable_checkpointing(1)
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(1, 0))
    keyed_count(env, log).sink_to(DiscardingSink())

    result = env.execute("one failover")

    assert result.restarts == 1
    events = life(log)
    assert len(opened(log)) == 4  # two per run
    assert Counter(closed(log)) == Counter(opened(log))
    first_run, second_run = opened(log)[:2], opened(log)[2:]
    last_close_of_first = max(
        i for i, event in enumerate(events) if event[0] == "close" and event[1] in first_run
    )
    first_open_of_second = min(
        i for i, event in enumerate(events) if event[0] == "open" and event[1] in second_run
    )
    assert last_close_of_first < first_open_of_second


def test_a_cancelled_job_closes_its_instances(make_env, tmp_path):
    log = tmp_path / "life.log"
    env = make_env(parallelism=2, max_records_per_split=PER_EPOCH)
    results = keyed_count(env, log).execute_and_collect()

    assert next(results) is not None
    results.close()  # cancels the job after the epoch it is in

    assert len(opened(log)) == 2
    assert Counter(closed(log)) == Counter(opened(log))


# The executors' Python daemon in a session lockgate starts
DAEMON = python_daemon.__name__


def spark_python_workers() -> list[int]:
    """The Python workers of this session's executor: the children of its Python daemon,
    which descends from this process (not another test process's)."""
    commands, parents = processes()
    daemons = {
        pid
        for pid, command in commands.items()
        if DAEMON in command
        and DAEMON not in commands.get(parents[pid], "")
        and descends_from_us(pid, parents)
    }
    return [pid for pid, parent in parents.items() if parent in daemons]


@pytest.mark.parametrize("backend", ["rocksdb"])
def test_subtasks_outlive_the_python_workers_that_ran_their_tasks(make_env, tmp_path):
    """Spark closes idle Python workers after a minute without tasks, and a worker may be
    lost any time: the subtasks live elsewhere and are neither rebuilt nor reopened."""
    log = tmp_path / "life.log"
    env = make_env(parallelism=2, max_records_per_split=PER_EPOCH)
    results = keyed_count(env, log).execute_and_collect()

    seen = [next(results)]
    workers = spark_python_workers()
    assert workers  # idle between epochs: the job's iterator is not asking for more
    for pid in workers:
        os.kill(pid, signal.SIGKILL)
    seen.extend(results)

    assert len(seen) == len(RECORDS)
    assert len(opened(log)) == 2
    assert Counter(closed(log)) == Counter(opened(log))

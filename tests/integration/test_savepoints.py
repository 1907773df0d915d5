"""Savepoints that cannot be restored (damaged, not a savepoint, a state asked for as
another kind) and savepoints that cannot be taken (keys without a portable encoding).
Restoring moved savepoints at other parallelisms and backends: test_savepoint_rescale."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from exactly_once_job import (
    UIDS,
    CountPerKey,
    build_job,
    checkpointed_env,
    committed_lines,
    file_sink,
    records,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)
from lockgate_it_support import OpaqueKey

from lockgate.common import RestartStrategies
from lockgate.core.fs.storage import Storage
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ListStateDescriptor
from lockgate.runtime.errors import JobExecutionError
from lockgate.runtime.jobmaster.savepoints import SavepointError

SPLITS = 2


def test_a_damaged_savepoint_is_refused_naming_the_file(make_env, tmp_path):
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", SPLITS)
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    meta = Path(savepoint.removeprefix("file://")) / "_metadata"
    meta.write_bytes(meta.read_bytes().replace(b'"epoch":1', b'"epoch":7'))
    env = checkpointed_env(make_env, tmp_path / "again", 2, settings=recovery_settings(savepoint))
    build_job(env, tmp_path / "out", SPLITS)
    with pytest.raises(JobExecutionError, match=r"_metadata fails its checksum"):
        env.execute("from a damaged savepoint")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("nowhere", r"nowhere does not exist"),
        ("empty", r"is not a savepoint or a chk-<n> checkpoint: .*_metadata is missing"),
    ],
)
def test_a_path_that_is_not_a_savepoint_is_refused(make_env, tmp_path, path, message):
    (tmp_path / "empty").mkdir()
    env = checkpointed_env(
        make_env, tmp_path / "again", 2, settings=recovery_settings(tmp_path / path)
    )
    build_job(env, tmp_path / "out", SPLITS)
    with pytest.raises(JobExecutionError, match=message):
        env.execute("from no savepoint")


def test_a_stop_whose_savepoint_fails_does_not_stop_the_job(make_env, tmp_path):
    """Keys without a portable encoding fail the savepoint, not the job; and a stop whose
    savepoint failed does not stop it (Flink's job also keeps running)."""
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    records = 5 * 40  # five epochs of 40
    (
        env.from_collection([(0, i) for i in range(records)])
        .key_by(lambda r: OpaqueKey(r[1] % 4))
        .process(CountPerKey())
        .uid("opaque-counts")
        .sink_to(file_sink(tmp_path / "out"))
    )
    master = env._job_master("opaque keys")
    future = master.trigger_savepoint(str(tmp_path / "savepoints"), stop=True)
    assert [r.stats.epoch for r in master.run() if r.stats is not None] == [1, 2, 3, 4, 5]
    with pytest.raises(SavepointError, match=r"opaque-counts.*state 'count'.*OpaqueKey"):
        future.result(timeout=0)
    assert sum(committed_lines(tmp_path / "out").values()) == records
    target = tmp_path / "savepoints"
    assert not target.exists() or list(target.iterdir()) == []  # the failed one is gone


class CountAsList(KeyedProcessFunction):
    """``count``, which the savepoint holds as value state, asked for as list state."""

    def open(self, runtime_context):
        self.count = runtime_context.get_list_state(ListStateDescriptor("count"))

    def process_element(self, value, ctx):
        yield value


def test_a_user_function_asking_for_its_state_as_another_kind_fails_naming_it(make_env, tmp_path):
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", SPLITS)
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")
    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        2,
        settings=recovery_settings(savepoint),
        restart=RestartStrategies.no_restart(),
    )
    (
        env.from_collection(records(SPLITS))
        .uid(UIDS[0])
        .key_by(lambda r: r[0])
        .process(CountAsList())
        .uid(UIDS[1])
        .sink_to(file_sink(tmp_path / "out"))
        .uid(UIDS[2])
    )
    with pytest.raises(JobExecutionError) as info:
        env.execute("count as a list")
    message = str(info.value)
    assert f"uid '{UIDS[1]}'" in message
    assert "state 'count' was registered as value state and cannot be used as list state" in (
        message
    )


def test_acks_a_cancelled_task_still_writes_do_not_fail_the_job_or_its_savepoint(
    make_env, tmp_path, monkeypatch
):
    """A task of a cancelled stage (a dropped run-ahead's) may still write its ack while
    the driver removes the epoch's ack directory: the removal fails with ENOTEMPTY, and the
    directory is left for the job's end (it failed the job over, losing the savepoint)."""
    remove = Storage.remove
    refused = []

    def busy(self, relative):
        if relative.startswith("epochs/"):
            refused.append(relative)
            raise OSError(errno.ENOTEMPTY, "Directory not empty", self.path(relative))
        remove(self, relative)

    monkeypatch.setattr(Storage, "remove", busy)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", SPLITS)
    master = env._job_master("busy ack directories")
    future = master.trigger_savepoint(str(tmp_path / "savepoints"), stop=True)
    results = list(master.run())
    assert [r.stats.epoch for r in results if r.stats is not None] == [1]
    assert refused and future.result(timeout=0).startswith(str(tmp_path / "savepoints"))
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())

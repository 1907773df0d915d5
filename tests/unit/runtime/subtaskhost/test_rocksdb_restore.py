"""Building a subtask's RocksDB instance from a manifest, and failing to.

A restore must leave checkpoint storage as it found it, name what it was restoring when a
state file is missing or damaged, and leave no instance behind when it (or the user's
``open()`` after it) fails.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from epoch_harness import Cluster, FailingOpen

from lockgate.common import Encoder
from lockgate.datastream.connectors.file_system import BucketAssigner, FileSink
from lockgate.state.rocksdb import StateBackendError

FIVE_KEYS = [(n % 5, n) for n in range(40)]


def stored_path(url: str) -> Path:
    assert url.startswith("file://")
    return Path(url.removeprefix("file://"))


def checkpointed(cluster) -> Cluster:
    """A cluster whose first epoch ended with a checkpoint taken on host a."""
    c: Cluster = cluster(FIVE_KEYS)
    c.epoch("w1", host="a", checkpoint=True)
    return c


def an_sst(c: Cluster) -> Path:
    return next(
        stored_path(u) for n, h in c.manifest().files.items() if n.endswith(".sst") for u in [h.url]
    )


def restore_failure(c: Cluster) -> str:
    """How a failed restore of the counting subtask's epoch-1 state starts its message."""
    return (
        f"cannot restore the RocksDB state of '{c.counter.name}' (uid '{c.counter.head.uid}') "
        f"subtask 0, state version {c.manifest().snapshot}: "
    )


def truncate(path: Path) -> None:
    data = path.read_bytes()
    path.unlink()  # other hard links (the local snapshot's) keep the whole file
    path.write_bytes(data[: len(data) // 2])


def test_a_truncated_state_file_fails_the_restore_naming_what_was_restored(cluster):
    c = checkpointed(cluster)
    truncate(an_sst(c))

    with pytest.raises(StateBackendError) as failure:
        c.epoch("w2", host="b")  # another executor: reads checkpoint storage

    assert str(failure.value).startswith(restore_failure(c))
    assert re.search(r"has \d+ bytes; its manifest says \d+$", str(failure.value))


def test_a_missing_state_file_fails_the_restore_naming_what_was_restored(cluster):
    c = checkpointed(cluster)
    sst = an_sst(c)
    sst.unlink()

    with pytest.raises(StateBackendError) as failure:
        c.epoch("w2", host="b")

    assert str(failure.value).startswith(restore_failure(c))
    assert str(sst) in str(failure.value)


def test_a_missing_state_file_is_called_missing(cluster):
    c = checkpointed(cluster)
    an_sst(c).unlink()

    with pytest.raises(StateBackendError) as failure:
        c.epoch("w2", host="b")

    cause = str(failure.value).removeprefix(restore_failure(c)).replace(str(c.root), "<root>")
    assert re.search(r"no such file|not found|missing|does not exist", cause, re.I)


def test_a_failed_restore_leaves_no_instance_directory(cluster):
    c = checkpointed(cluster)
    truncate(an_sst(c))

    with pytest.raises(StateBackendError):
        c.epoch("w2", host="b")

    assert c.instance_dirs("b") == []


def test_a_restore_from_storage_leaves_the_checkpoint_files_untouched(cluster):
    """rocksdict rewrites its rocksdict-config.json whenever it opens an instance: a file
    shared with checkpoint storage (a hard link) would be rewritten in the checkpoint."""
    c = checkpointed(cluster)
    stored = {
        name: stored_path(url)
        for name, (url, _) in ((n, (h.url, h.size)) for n, h in c.manifest().files.items())
    }

    def stat(path: Path) -> tuple[int, bytes]:
        return path.stat().st_mtime_ns, path.read_bytes()

    before = {name: stat(path) for name, path in stored.items()}

    c.epoch("w2", host="b")  # another executor: builds an instance from storage, runs an epoch
    [instance] = c.instance_dirs("b")
    shared = sorted(
        name
        for name, path in stored.items()
        if (instance / name).exists() and os.path.samefile(instance / name, path)
    )
    c.close()

    assert sorted(name for name, path in stored.items() if stat(path) != before[name]) == []
    assert all(name.endswith(".sst") for name in shared)  # RocksDB never changes an SST


def test_a_failing_user_open_leaves_no_instance_behind(cluster):
    c: Cluster = cluster(FIVE_KEYS, function=FailingOpen())

    for worker in ("w1", "w2"):  # Spark's retry on another worker fails alike
        with pytest.raises(Exception, match="user open\\(\\) failed"):
            c.epoch(worker, host="a")

    assert c.instance_dirs("a") == []
    assert c.live("w1") == {} and c.live("w2") == {}


def test_an_operator_that_cannot_be_created_leaves_no_instance_behind(cluster, tmp_path):
    assigner = BucketAssigner.date_time_bucket_assigner("yyyy-MM-dd", "Mars/Olympus_Mons")
    sink = (
        FileSink.for_row_format(str(tmp_path / "out"), Encoder.simple_string_encoder())
        .with_bucket_assigner(assigner)
        .build()
    )
    c: Cluster = cluster(FIVE_KEYS, then=lambda counted: counted.sink_to(sink))

    for worker in ("w1", "w2"):
        with pytest.raises(Exception, match="Mars/Olympus_Mons"):
            c.epoch(worker, host="a")

    assert c.instance_dirs("a") == []

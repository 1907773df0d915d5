"""Savepoint requests on the driver: taken in order, failed when the job ends or their epoch
fails, and a failed savepoint's directory removed."""

from __future__ import annotations

import pytest

from lockgate.checkpoint.metadata import CheckpointMetadata
from lockgate.checkpoint.savepoint import complete_savepoint, load_savepoint
from lockgate.runtime.jobmaster import savepoints
from lockgate.runtime.jobmaster.savepoints import (
    PendingSavepoints,
    SavepointError,
    SavepointRequest,
)


def test_requests_are_taken_in_order_and_fail_once_the_job_ends():
    pending = PendingSavepoints()
    first = SavepointRequest("/a", stop=False, drain=False)
    second = SavepointRequest("/b", stop=True, drain=False)
    pending.add(first)
    pending.add(second)
    assert pending.take() is first
    pending.close("job 1 is finished")
    with pytest.raises(SavepointError, match="job 1 is finished"):
        second.future.result(timeout=0)
    late = pending.add(SavepointRequest("/c", stop=False, drain=False))
    with pytest.raises(SavepointError, match="job 1 is finished"):
        late.result(timeout=0)
    assert pending.take() is None


def test_a_failed_savepoint_removes_its_directory(tmp_path):
    request = SavepointRequest(str(tmp_path), stop=False, drain=False)
    directory = savepoints.begin(request, "0123456789abcdef")
    assert directory.url.rpartition("/")[2].startswith("savepoint-012345-")
    directory.write_bytes("op/0-t.lgcs", b"half")
    savepoints.fail(request, SavepointError("its epoch failed: task lost"))
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(SavepointError, match="its epoch failed: task lost"):
        request.future.result(timeout=0)


def test_a_completed_savepoint_keeps_only_the_files_its_metadata_names(tmp_path):
    request = SavepointRequest(str(tmp_path), stop=False, drain=False)
    directory = savepoints.begin(request, "job")
    directory.write_bytes("op/0-loser.lgcs", b"an attempt that lost")
    complete_savepoint(directory, CheckpointMetadata("job", 0, 3, {}), None)
    assert sorted(p.name for p in (tmp_path / directory.url.rpartition("/")[2]).rglob("*")) == [
        "_metadata"
    ]
    assert load_savepoint(directory.url, None).epoch == 3

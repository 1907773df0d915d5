"""The task side of the storage check, run in this process: what a probe reads, writes and
reports, and its records' JSON form."""

from __future__ import annotations

import json
import os

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.runtime.messages.storage_probe import (
    DRIVER_FILE,
    LOCAL,
    READ,
    SHARED,
    ProbeFailure,
    ProbeOrder,
    ProbeReport,
    ProbeTarget,
)
from lockgate.runtime.sparktask.storage_probe import StorageProbe, probe

TOKEN = "t0k3n"


def shared_dir(tmp_path, name="work", token=TOKEN):
    directory = tmp_path / name
    directory.mkdir()
    (directory / DRIVER_FILE).write_text(token)
    return directory


def test_a_reachable_shared_directory_is_read_and_written(tmp_path):
    work = shared_dir(tmp_path)
    order = ProbeOrder(TOKEN, (ProbeTarget("lockgate.work-dir", str(work), SHARED),), "3")
    report = probe(order, "3", "host-a")
    assert report.failures == ()
    assert report.placed_on == "3" and report.executor == "3" and report.hostname == "host-a"
    ((key, url),) = report.written
    assert key == "lockgate.work-dir"
    assert url.startswith(f"file://{work}/executor-3-")
    # the driver reads back what the executor wrote: its own URL
    assert (work / url.rsplit("/", 1)[1]).read_text() == url


def test_a_directory_without_the_drivers_file_fails_the_read(tmp_path):
    """What an executor sees when the path is on its own disk, not the driver's."""
    elsewhere = tmp_path / "executors-own-disk"
    elsewhere.mkdir()
    order = ProbeOrder(TOKEN, (ProbeTarget("lockgate.work-dir", str(elsewhere), SHARED),), "")
    (failure,) = probe(order, None, "h").failures
    assert failure.key == "lockgate.work-dir"
    assert failure.action == "read"
    assert failure.url == f"file://{elsewhere}/{DRIVER_FILE}"
    assert "FileNotFoundError" in failure.error


def test_another_checks_file_fails_the_read(tmp_path):
    work = shared_dir(tmp_path, token="another-check")
    order = ProbeOrder(TOKEN, (ProbeTarget("k", str(work), SHARED),), "")
    (failure,) = probe(order, "1", "h").failures
    assert failure.action == "read" and "not what the driver wrote" in failure.error


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_directory_fails_the_write(tmp_path):
    work = shared_dir(tmp_path)
    work.chmod(0o555)
    try:
        order = ProbeOrder(TOKEN, (ProbeTarget("k", str(work), SHARED),), "")
        (failure,) = probe(order, "1", "h").failures
    finally:
        work.chmod(0o755)
    assert failure.action == "write" and "PermissionError" in failure.error


def test_a_file_in_place_of_the_directory_fails_the_write(tmp_path):
    """Writable by nobody, root included: the location is a file."""
    blocker = tmp_path / "rocks"
    blocker.write_text("not a directory")
    order = ProbeOrder(
        TOKEN, (ProbeTarget("state.backend.rocksdb.localdir", str(blocker), LOCAL),), ""
    )
    (failure,) = probe(order, "1", "h").failures
    assert failure.action == "write"
    assert failure.url.startswith(f"file://{blocker}/executor-1-")


def test_a_local_directory_is_written_and_left_empty(tmp_path):
    order = ProbeOrder(
        TOKEN, (ProbeTarget("state.backend.rocksdb.localdir", str(tmp_path), LOCAL),), ""
    )
    report = probe(order, "1", "h")
    assert report.failures == () and report.written == ()
    assert list(tmp_path.iterdir()) == []


def test_a_checkpoint_to_resume_from_is_read(tmp_path):
    metadata = tmp_path / "chk-3" / "_metadata"
    metadata.parent.mkdir()
    metadata.write_text("{}")
    key = "execution.state-recovery.path"
    ok = ProbeOrder(TOKEN, (ProbeTarget(key, str(metadata), READ),), "")
    assert probe(ok, "1", "h").failures == ()
    missing = ProbeOrder(
        TOKEN, (ProbeTarget(key, str(tmp_path / "chk-4" / "_metadata"), READ),), ""
    )
    (failure,) = probe(missing, "1", "h").failures
    assert failure.action == "read" and "chk-4" in failure.url


def test_the_spark_function_turns_json_orders_into_json_reports(tmp_path):
    work = shared_dir(tmp_path)
    order = ProbeOrder(TOKEN, (ProbeTarget("k", str(work), SHARED),), "7")
    (raw,) = list(StorageProbe()([json.loads(json.dumps(order.to_json()))]))
    report = ProbeReport.from_json(json.loads(json.dumps(raw)), "report")
    assert report.placed_on == "7" and report.failures == () and len(report.written) == 1


def test_records_round_trip():
    order = ProbeOrder(
        TOKEN,
        (ProbeTarget("a", "s3://b/c", SHARED), ProbeTarget("d", "/x/_metadata", READ)),
        "2",
    )
    assert ProbeOrder.from_json(order.to_json(), "order") == order
    report = ProbeReport(
        "0.1.0",
        "2",
        None,
        "h",
        (("a", "s3://b/c/executor-2-x"),),
        (ProbeFailure("d", "/x", "read", "E"),),
    )
    assert ProbeReport.from_json(report.to_json(), "report") == report


@pytest.mark.parametrize(
    "change, message",
    [
        ({"format": "other"}, "is not a lockgate-storage-probe record"),
        ({"version": 9}, "of version 9"),
        ({"targets": [{"key": "k", "url": "u", "mode": "delete"}]}, "unknown probe mode"),
        ({"targets": ["k"]}, r"targets\[0\] is not an object"),
        ({"token": 5}, "field 'token' is int"),
    ],
)
def test_damaged_orders_are_refused(change, message):
    raw = {**ProbeOrder(TOKEN, (ProbeTarget("k", "u", SHARED),), "").to_json(), **change}
    with pytest.raises(RecordFormatError, match=message):
        ProbeOrder.from_json(raw, "order")


def test_damaged_reports_are_refused():
    raw = ProbeReport("0.1.0", "1", "1", "h", (), ()).to_json()
    with pytest.raises(
        RecordFormatError, match=r"field 'written'\[0\] is list \['only-a-key'\], not \[str, str\]"
    ):
        ProbeReport.from_json({**raw, "written": [["only-a-key"]]}, "report")
    with pytest.raises(RecordFormatError, match="lacks the field 'failures'"):
        ProbeReport.from_json({k: v for k, v in raw.items() if k != "failures"}, "report")

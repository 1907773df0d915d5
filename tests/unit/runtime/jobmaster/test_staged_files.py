"""Staging records: files staged by task attempts are aborted by their recorded names."""

from __future__ import annotations

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.connectors.file.committer import FileCommitter
from lockgate.core.fs.storage import Storage
from lockgate.runtime.jobmaster.staged_files import ZOMBIE_EPOCHS, StagedFilesRegistry
from lockgate.runtime.messages.staged_files import StagedFiles
from lockgate.runtime.subtaskhost.staging_log import StagingLog


@pytest.fixture
def registry(tmp_path) -> StagedFilesRegistry:
    sink = FileCommitter(f"file://{tmp_path}/out")
    return StagedFilesRegistry(Storage(f"file://{tmp_path}/job/staging"), [sink])


def stage(registry, tmp_path, epoch: int, subtask: int, attempt: str, *names: str) -> list:
    """An attempt records each file before it creates it (as FileSinkWriter does)."""
    log = StagingLog(registry.storage, epoch, 3, subtask, attempt)
    paths = []
    for name in names:
        path = tmp_path / "out" / f".{name}.inprogress.0"
        log.stage(f"file://{path}")
        path.parent.mkdir(exist_ok=True)
        path.write_text(name)
        paths.append(path)
    return paths


def records(registry) -> set[tuple[int, int, str]]:
    return {(r.epoch, r.subtask, r.attempt) for r in registry.records()}


def test_a_record_lists_every_file_its_attempt_staged(registry, tmp_path):
    stage(registry, tmp_path, 4, 0, "e4a7", "part-a-0", "part-a-1")
    [record] = registry.records()
    assert record == StagedFiles(
        4,
        3,
        0,
        "e4a7",
        (
            f"file://{tmp_path}/out/.part-a-0.inprogress.0",
            f"file://{tmp_path}/out/.part-a-1.inprogress.0",
        ),
    )


def test_the_sweep_deletes_only_what_losing_attempts_staged(registry, tmp_path):
    kept = stage(registry, tmp_path, 1, 0, "e1a1", "winner")
    lost = stage(registry, tmp_path, 1, 0, "e1a2", "speculative-copy")
    failed = stage(registry, tmp_path, 1, 1, "e1a3", "failed-attempt")
    other = stage(registry, tmp_path, 1, 1, "e1a4", "other-winner")
    registry.accept(1, 3, 0, "e1a1")
    registry.accept(1, 3, 1, "e1a4")
    registry.sweep(settled=0, epoch=1)
    assert all(p.exists() for p in kept + other)
    assert not any(p.exists() for p in lost + failed)
    # Winners wait for their checkpoint; losers' records wait for late zombies.
    assert records(registry) == {(1, 0, "e1a1"), (1, 0, "e1a2"), (1, 1, "e1a3"), (1, 1, "e1a4")}


def test_a_zombie_that_stages_after_the_sweep_is_cleaned_by_the_next_one(registry, tmp_path):
    registry.accept(1, 3, 0, "e1a1")
    stage(registry, tmp_path, 1, 0, "e1a1", "winner")
    registry.sweep(settled=0, epoch=1)
    late = stage(registry, tmp_path, 1, 0, "e1a9", "zombie")
    registry.sweep(settled=0, epoch=2)
    assert not late[0].exists()


def test_records_are_forgotten_once_settled_or_past_the_zombie_epochs(registry, tmp_path):
    registry.accept(1, 3, 0, "e1a1")
    winner = stage(registry, tmp_path, 1, 0, "e1a1", "winner")
    stage(registry, tmp_path, 1, 0, "e1a2", "loser")
    registry.sweep(settled=1, epoch=1)  # checkpoint 1 committed the winner's files
    assert winner[0].exists(), "a settled record is forgotten, its files are not touched"
    assert records(registry) == {(1, 0, "e1a2")}
    assert registry.accepted == {}
    registry.sweep(settled=1, epoch=1 + ZOMBIE_EPOCHS)
    assert records(registry) == set()
    assert registry.storage.list("") == [], "an epoch's directory goes with its last record"


def test_records_of_later_epochs_are_left_to_their_epoch(registry, tmp_path):
    running = stage(registry, tmp_path, 5, 0, "e5a1", "in-flight")
    registry.sweep(settled=3, epoch=4)
    assert running[0].exists() and records(registry) == {(5, 0, "e5a1")}


def test_abort_all_keeps_only_what_the_restored_checkpoint_commits(registry, tmp_path):
    pending = stage(registry, tmp_path, 2, 0, "e2a1", "committable", "after-checkpoint")
    registry.accept(2, 3, 0, "e2a1")
    registry.abort_all({f"file://{pending[0]}"})
    assert pending[0].exists() and not pending[1].exists()
    assert records(registry) == set()
    assert registry.accepted == {}, "the restored job decides its epochs again"


def test_abort_all_of_another_jobs_records_leaves_the_records(registry, tmp_path):
    pending = stage(registry, tmp_path, 2, 0, "e2a1", "staged")
    registry.abort_all(set(), forget=False)
    assert not pending[0].exists()
    assert records(registry) == {(2, 0, "e2a1")}


def test_a_damaged_record_is_rejected_naming_the_file(registry):
    registry.storage.write_bytes("e1/3-0-e1a1.json", b'{"format": "lockgate-staged-files"')
    with pytest.raises(RecordFormatError, match=r"staging record .*e1/3-0-e1a1.json is not JSON"):
        list(registry.records())
    registry.storage.write_json(
        "e1/3-0-e1a1.json", {"format": "lockgate-staged-files", "version": 1, "epoch": 1}
    )
    with pytest.raises(RecordFormatError, match=r"3-0-e1a1.json lacks the field 'vertex'"):
        list(registry.records())


@pytest.mark.parametrize(
    "planted",
    ["{tmp}/secret", "{tmp}/out/part-a-0", "{tmp}/out/../secret/.x.inprogress.1"],
)
def test_a_record_naming_a_file_no_sink_stages_deletes_nothing(registry, tmp_path, planted):
    """A hand-written record: outside the sink's base path, or a committed (visible) file."""
    target = planted.format(tmp=tmp_path)
    log = StagingLog(registry.storage, 1, 3, 0, "e1a9")
    log.stage(f"file://{target}")
    victim = tmp_path / "victim"
    victim.write_text("keep")

    with pytest.raises(RecordFormatError, match=f"names file://{target}, which no sink"):
        registry.sweep(settled=0, epoch=1)
    with pytest.raises(RecordFormatError):
        registry.abort_all(set())
    assert victim.read_text() == "keep"


def test_a_planted_record_naming_an_accepted_attempts_file_does_not_delete_it(registry, tmp_path):
    """Staging records are in checkpoint storage: one written by someone else, naming the
    pending file of an accepted attempt (or of an epoch still running), deletes neither."""
    [pending] = stage(registry, tmp_path, 1, 0, "e1a1", "winner")
    [running] = stage(registry, tmp_path, 2, 1, "e2a1", "next-epoch")
    registry.accept(1, 3, 0, "e1a1")
    planted = StagingLog(registry.storage, 1, 3, 1, "e1a9")
    planted.stage(f"file://{pending}")
    planted.stage(f"file://{running}")
    registry.sweep(settled=0, epoch=1)
    assert pending.read_text() == "winner" and running.read_text() == "next-epoch"

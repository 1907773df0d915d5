"""CheckpointCoordinator: when checkpoints are due, _metadata, retention, and load_checkpoint."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace

import pytest

from lockgate.checkpoint import coordinator as coordinator_module
from lockgate.checkpoint import metadata
from lockgate.checkpoint.coordinator import (
    CheckpointCoordinator,
    CheckpointSettings,
    load_checkpoint,
)
from lockgate.checkpoint.metadata import (
    CheckpointFormatError,
    CheckpointSignatureError,
    OperatorState,
    OperatorSubtaskState,
)
from lockgate.checkpoint.signing_key import CheckpointSigningKey
from lockgate.core.fs.storage import Storage, read_url
from lockgate.state.manifests import HeapManifest
from lockgate.state.snapshot import GroupHandle

JOB = "0123456789abcdef"


class Clock:
    """Stands in for the ``time`` module inside the coordinator."""

    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def perf_counter(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(coordinator_module, "time", fake)
    return fake


def settings(**overrides) -> CheckpointSettings:
    values = {
        "interval_ms": 1000,
        "min_pause_ms": 0,
        "timeout_ms": 600_000,
        "tolerable_failures": 0,
        "num_retained": 1,
        "retention": "NO_EXTERNALIZED_CHECKPOINTS",
        "exactly_once": True,
    }
    values.update(overrides)
    return CheckpointSettings(**values)


def make(tmp_path, **overrides) -> CheckpointCoordinator:
    root = Storage(str(tmp_path / "checkpoints")).child(JOB)
    root.write_bytes("taskowned/.keep", b"")
    return CheckpointCoordinator(settings(**overrides), JOB, root, None)


def body_with(*files: tuple[str, int], uid: str = "keyedprocess-1") -> dict[str, OperatorState]:
    """Operator states as JobState.checkpoint_operators gives: one keyed subtask per file."""
    subtasks = tuple(
        OperatorSubtaskState(
            index,
            None,
            HeapManifest({"count": "value"}, {index: GroupHandle(url, 0, size, 99)}),
            (index, index),
        )
        for index, (url, size) in enumerate(files)
    )
    return {
        uid: OperatorState(uid, "KeyedProcess", len(files), 128, subtasks),
        "collection-source-0": OperatorState(
            "collection-source-0",
            "Collection Source",
            1,
            128,
            (OperatorSubtaskState(0, None, None, None),),
            {"positions": {"0": 4}},
        ),
    }


def shared_file(coordinator: CheckpointCoordinator, name: str, data: bytes = b"x" * 10) -> str:
    shared = coordinator.job_root.child("shared")
    shared.write_bytes(name, data)
    return shared.url_of(name)


def raw_metadata(coordinator: CheckpointCoordinator, checkpoint_id: int) -> dict:
    """The body of a ``_metadata`` as JSON (after checking that it decodes)."""
    url = coordinator.job_root.url_of(f"chk-{checkpoint_id}/_metadata")
    metadata.decode(read_url(url), url, None)
    return json.loads(read_url(url))["body"]


# due() --------------------------------------------------------------------------------------------


def test_nothing_is_due_when_checkpointing_is_off(tmp_path, clock):
    coordinator = make(tmp_path, interval_ms=None)
    assert not coordinator.settings.enabled
    clock.advance(10_000)
    assert not coordinator.due(end_of_input=False)
    assert not coordinator.due(end_of_input=True)


def test_due_after_the_interval_since_the_last_trigger(tmp_path, clock):
    coordinator = make(tmp_path, interval_ms=1000)
    coordinator.triggered()
    assert not coordinator.due(False)
    clock.advance(0.999)
    assert not coordinator.due(False)
    clock.advance(0.001)
    assert coordinator.due(False)
    coordinator.triggered()
    assert not coordinator.due(False)


def test_end_of_input_is_always_due(tmp_path, clock):
    coordinator = make(tmp_path, interval_ms=60_000, min_pause_ms=60_000)
    coordinator.triggered()
    coordinator.complete(1, body_with(), clock.perf_counter(), 0)
    assert not coordinator.due(False)
    assert coordinator.due(True)


def test_min_pause_counts_from_the_last_completion(tmp_path, clock):
    coordinator = make(tmp_path, interval_ms=100, min_pause_ms=2000)
    coordinator.triggered()
    clock.advance(0.5)
    coordinator.complete(1, body_with(), clock.perf_counter(), 0)
    clock.advance(1.0)  # interval long passed, pause not
    assert not coordinator.due(False)
    clock.advance(0.999)
    assert not coordinator.due(False)
    clock.advance(0.001)
    assert coordinator.due(False)


def test_a_fresh_coordinator_waits_one_interval(tmp_path):
    coordinator = make(tmp_path, interval_ms=3_600_000)
    assert not coordinator.due(False)


# complete() ---------------------------------------------------------------------------------------


def test_complete_writes_metadata_with_paths_relative_to_the_job_dir(tmp_path, clock):
    coordinator = make(tmp_path)
    mine = shared_file(coordinator, "keyedprocess-1/0/epoch-1")
    other = shared_file(coordinator, "keyedprocess-1/1/epoch-1")
    checkpoint = coordinator.complete(3, body_with((mine, 10), (other, 5)), clock.now, 15)

    assert checkpoint.id == 1
    assert checkpoint.epoch == 3
    assert checkpoint.path == coordinator.job_root.url_of("chk-1")
    assert coordinator.job_root.list("chk-1") == ["_metadata"]
    stored = raw_metadata(coordinator, 1)
    assert stored["job_id"] == JOB
    assert stored["checkpoint_id"] == 1
    assert stored["epoch"] == 3
    groups = [s["keyed"]["groups"] for s in stored["operators"]["keyedprocess-1"]["subtasks"]]
    assert groups == [
        {"0": ["shared/keyedprocess-1/0/epoch-1", 0, 10, 99]},
        {"1": ["shared/keyedprocess-1/1/epoch-1", 0, 5, 99]},
    ]
    source = stored["operators"]["collection-source-0"]
    assert source["coordinator_state"] == {"positions": {"0": 4}}
    # the checkpoint held in memory keeps absolute URLs
    assert checkpoint.files() == {mine, other}
    assert coordinator.latest is checkpoint


def test_complete_does_not_change_the_callers_body(tmp_path, clock):
    coordinator = make(tmp_path)
    url = shared_file(coordinator, "f")
    body = body_with((url, 10))
    coordinator.complete(1, body, clock.now, 0)
    assert body == body_with((url, 10))


def test_load_checkpoint_makes_paths_absolute_again(tmp_path, clock):
    coordinator = make(tmp_path)
    mine = shared_file(coordinator, "keyedprocess-1/0/epoch-1")
    checkpoint = coordinator.complete(3, body_with((mine, 10)), clock.now, 0)
    for path in (checkpoint.path, checkpoint.path + "/", checkpoint.path + "/_metadata"):
        loaded, skipped = load_checkpoint(path, None)
        assert skipped == []
        assert (loaded.id, loaded.epoch, loaded.path) == (1, 3, checkpoint.path)
        assert loaded.metadata == checkpoint.metadata
        assert loaded.files() == {mine}


def test_a_checkpoint_is_never_written_naming_a_file_outside_the_job(tmp_path, clock):
    coordinator = make(tmp_path)
    elsewhere = f"file://{tmp_path}/other-job/shared/f"
    with pytest.raises(ValueError, match=f"{elsewhere}, outside the job's directory"):
        coordinator.complete(3, body_with((elsewhere, 5)), clock.now, 0)


@pytest.mark.parametrize(
    "reference",
    ["../../secrets/f", "/etc/shadow", "file:///etc/shadow", "shared/../../x", "shared//f"],
)
def test_a_checkpoint_naming_a_file_outside_its_job_is_refused(tmp_path, clock, reference):
    """A hand-crafted _metadata (its checksum made to match) that points elsewhere."""
    coordinator = make(tmp_path)
    mine = shared_file(coordinator, "k/0/e1")
    checkpoint = coordinator.complete(1, body_with((mine, 10)), clock.now, 0)
    crafted = metadata.decode(read_url(checkpoint.path + "/_metadata"), "crafted", None)
    crafted = crafted.map_files(lambda _: reference)
    Storage(checkpoint.path).write_bytes("_metadata", metadata.encode(crafted, None))

    with pytest.raises(CheckpointFormatError) as refused:
        load_checkpoint(checkpoint.path, None)

    message = str(refused.value)
    assert f"{checkpoint.path}/_metadata names the state file {reference!r}" in message


def test_load_checkpoint_from_a_plain_local_path(tmp_path, clock):
    coordinator = make(tmp_path)
    mine = shared_file(coordinator, "f")
    coordinator.complete(1, body_with((mine, 10)), clock.now, 0)
    loaded, _ = load_checkpoint(str(tmp_path / "checkpoints" / JOB / "chk-1"), None)
    assert loaded.files() == {mine}
    assert read_url(mine) == b"x" * 10


def test_a_moved_job_directory_still_resolves_its_own_files(tmp_path, clock):
    coordinator = make(tmp_path)
    mine = shared_file(coordinator, "k/0/e1", b"state")
    coordinator.complete(1, body_with((mine, 5)), clock.now, 0)
    moved = tmp_path / "moved" / JOB
    shutil.copytree(tmp_path / "checkpoints" / JOB, moved)
    shutil.rmtree(tmp_path / "checkpoints")
    loaded, _ = load_checkpoint(str(moved / "chk-1"), None)
    [url] = loaded.files()
    assert url == f"file://{moved}/shared/k/0/e1"
    assert read_url(url) == b"state"


def test_statistics_of_a_completed_checkpoint(tmp_path, clock):
    coordinator = make(tmp_path)
    a = shared_file(coordinator, "a")
    b = shared_file(coordinator, "b")
    started = clock.perf_counter()
    clock.advance(0.25)
    coordinator.complete(5, body_with((a, 10), (b, 32)), started, 42)
    [stats] = coordinator.history
    assert stats.id == 1
    assert stats.epoch == 5
    assert stats.status == "COMPLETED"
    assert stats.duration_ms == pytest.approx(250)
    assert stats.trigger_timestamp == pytest.approx(clock.time() - 0.25)
    assert stats.size_bytes == 42
    assert stats.written_bytes == 42
    assert stats.state_size_per_operator == {"keyedprocess-1": 42, "collection-source-0": 0}
    assert stats.path == coordinator.job_root.url_of("chk-1")
    assert stats.failure is None


def test_checkpoints_in_driver_memory_write_nothing(tmp_path, clock):
    coordinator = CheckpointCoordinator(settings(), JOB, None, None)
    url = f"file://{tmp_path}/state/f"
    checkpoint = coordinator.complete(1, body_with((url, 3)), clock.now, 3)
    assert checkpoint.path is None
    assert checkpoint.files() == {url}
    assert coordinator.history[0].path is None
    assert list(tmp_path.iterdir()) == []
    assert coordinator.shutdown("FAILED") is False


# subsume() -----------------------------------------------------------------------------------


@pytest.mark.parametrize("num_retained", [1, 2, 3])
def test_subsume_keeps_num_retained_and_deletes_older_chk_dirs(tmp_path, clock, num_retained):
    coordinator = make(tmp_path, num_retained=num_retained)
    for epoch in range(1, 6):
        url = shared_file(coordinator, f"e{epoch}")
        coordinator.complete(epoch, body_with((url, 10)), clock.now, 10)
        coordinator.subsume()
    kept = list(range(6 - num_retained, 6))
    assert [c.id for c in coordinator.retained] == kept
    chk_dirs = sorted(n for n in coordinator.job_root.list("") if n.startswith("chk-"))
    assert chk_dirs == sorted(f"chk-{n}" for n in kept)
    # subsume drops checkpoints, never shared files (the job master does, by reference)
    assert coordinator.job_root.list("shared") == [f"e{n}" for n in range(1, 6)]
    assert coordinator.job_root.exists("taskowned/.keep")
    assert coordinator.latest.id == 5


def test_subsume_keeps_everything_up_to_the_retained_count(tmp_path, clock):
    coordinator = make(tmp_path, num_retained=3)
    coordinator.complete(1, body_with(), clock.now, 0)
    coordinator.complete(2, body_with(), clock.now, 0)
    coordinator.subsume()
    assert [c.id for c in coordinator.retained] == [1, 2]
    assert coordinator.job_root.exists("chk-1/_metadata")


def test_subsume_returns_the_dropped_checkpoints(tmp_path, clock):
    coordinator = make(tmp_path, num_retained=2)
    for epoch in (1, 2, 3):
        coordinator.complete(epoch, body_with(), clock.now, 0)
    assert [c.id for c in coordinator.subsume()] == [1]
    assert coordinator.subsume() == []


# failed() -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("tolerable", [0, 1, 3])
def test_failures_beyond_the_tolerable_number_fail_the_job(tmp_path, clock, tolerable):
    coordinator = make(tmp_path, tolerable_failures=tolerable)
    verdicts = [coordinator.failed(e, f"timeout {e}", clock.now) for e in range(tolerable + 1)]
    assert verdicts == [False] * tolerable + [True]


def test_a_completed_checkpoint_resets_the_failure_count(tmp_path, clock):
    coordinator = make(tmp_path, tolerable_failures=1)
    assert coordinator.failed(1, "timeout", clock.now) is False
    coordinator.complete(2, body_with(), clock.now, 0)
    assert coordinator.failed(3, "timeout", clock.now) is False
    assert coordinator.failed(4, "timeout", clock.now) is True


def test_failed_checkpoints_use_up_ids_and_are_in_the_history(tmp_path, clock):
    coordinator = make(tmp_path, tolerable_failures=5)
    started = clock.perf_counter()
    clock.advance(0.1)
    coordinator.failed(1, "checkpoint of epoch 1 failed: timeout", started)
    checkpoint = coordinator.complete(2, body_with(), clock.now, 0)
    assert checkpoint.id == 2
    assert coordinator.job_root.exists("chk-2/_metadata")
    assert not coordinator.job_root.exists("chk-1")
    failed, completed = coordinator.history
    assert (failed.id, failed.epoch, failed.status) == (1, 1, "FAILED")
    assert failed.failure == "checkpoint of epoch 1 failed: timeout"
    assert failed.duration_ms == pytest.approx(100)
    assert failed.path is None
    assert failed.size_bytes == 0
    assert completed.status == "COMPLETED"
    assert [c.id for c in coordinator.retained] == [2]


# shutdown() ---------------------------------------------------------------------------------------

RETENTIONS = ["NO_EXTERNALIZED_CHECKPOINTS", "RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION"]


@pytest.mark.parametrize(
    ("status", "retention", "kept"),
    [
        ("FINISHED", "NO_EXTERNALIZED_CHECKPOINTS", False),
        ("FINISHED", "RETAIN_ON_CANCELLATION", False),
        ("FINISHED", "DELETE_ON_CANCELLATION", False),
        ("CANCELED", "NO_EXTERNALIZED_CHECKPOINTS", False),
        ("CANCELED", "RETAIN_ON_CANCELLATION", True),
        ("CANCELED", "DELETE_ON_CANCELLATION", False),
        ("FAILED", "NO_EXTERNALIZED_CHECKPOINTS", False),
        ("FAILED", "RETAIN_ON_CANCELLATION", True),
        ("FAILED", "DELETE_ON_CANCELLATION", True),
    ],
)
def test_shutdown_retention_rules(tmp_path, clock, status, retention, kept):
    coordinator = make(tmp_path, retention=retention)
    url = shared_file(coordinator, "f")
    coordinator.complete(1, body_with((url, 10)), clock.now, 0)
    result = coordinator.shutdown(status)
    assert bool(result) is kept
    job_dir = tmp_path / "checkpoints" / JOB
    assert job_dir.exists() is kept
    if kept:
        assert load_checkpoint(str(job_dir / "chk-1"), None)[0].files() == {url}
    assert (tmp_path / "checkpoints").exists()  # only this job's directory goes


@pytest.mark.parametrize("status", ["CANCELED", "FAILED"])
def test_shutdown_without_a_completed_checkpoint_removes_the_job_dir(tmp_path, status):
    coordinator = make(tmp_path, retention="RETAIN_ON_CANCELLATION")
    assert not coordinator.shutdown(status)
    assert not (tmp_path / "checkpoints" / JOB).exists()


# load_checkpoint(): damage and bad paths ----------------------------------------------------------


def two_checkpoints(tmp_path, clock) -> CheckpointCoordinator:
    coordinator = make(tmp_path, num_retained=2)
    for epoch in (4, 8):
        url = shared_file(coordinator, f"e{epoch}")
        coordinator.complete(epoch, body_with((url, 10)), clock.now, 0)
    return coordinator


def test_a_truncated_metadata_falls_back_to_the_previous_checkpoint(tmp_path, clock):
    coordinator = two_checkpoints(tmp_path, clock)
    meta = tmp_path / "checkpoints" / JOB / "chk-2" / "_metadata"
    meta.write_bytes(meta.read_bytes()[:40])
    loaded, skipped = load_checkpoint(coordinator.retained[1].path, None)
    assert (loaded.id, loaded.epoch) == (1, 4)
    assert loaded.path == coordinator.job_root.url_of("chk-1")
    [reason] = skipped
    assert coordinator.job_root.url_of("chk-2/_metadata") in reason
    assert "truncated" in reason


def test_a_wrong_checksum_falls_back_and_says_why(tmp_path, clock):
    two_checkpoints(tmp_path, clock)
    meta = tmp_path / "checkpoints" / JOB / "chk-2" / "_metadata"
    meta.write_bytes(meta.read_bytes().replace(b'"epoch":8', b'"epoch":9'))
    loaded, [reason] = load_checkpoint(str(meta), None)
    assert loaded.id == 1
    assert "checksum" in reason
    assert str(meta) in reason


def test_a_missing_metadata_falls_back(tmp_path, clock):
    coordinator = two_checkpoints(tmp_path, clock)
    (tmp_path / "checkpoints" / JOB / "chk-2" / "_metadata").unlink()
    loaded, [reason] = load_checkpoint(coordinator.retained[1].path, None)
    assert loaded.id == 1
    assert reason == f"{coordinator.job_root.url_of('chk-2/_metadata')} is missing"


def test_newer_checkpoints_than_the_requested_one_are_not_used(tmp_path, clock):
    coordinator = two_checkpoints(tmp_path, clock)
    loaded, skipped = load_checkpoint(coordinator.retained[0].path, None)
    assert (loaded.id, skipped) == (1, [])


def test_no_usable_checkpoint_names_the_path_and_every_reason(tmp_path, clock):
    coordinator = two_checkpoints(tmp_path, clock)
    for n in (1, 2):
        meta = tmp_path / "checkpoints" / JOB / f"chk-{n}" / "_metadata"
        meta.write_bytes(b"{not json")
    path = coordinator.retained[1].path
    with pytest.raises(CheckpointFormatError) as info:
        load_checkpoint(path, None)
    message = str(info.value)
    assert message.startswith(f"no usable checkpoint at {path}: ")
    assert coordinator.job_root.url_of("chk-1/_metadata") in message
    assert coordinator.job_root.url_of("chk-2/_metadata") in message


def test_a_metadata_of_an_unknown_version_is_reported(tmp_path, clock):
    coordinator = make(tmp_path)
    coordinator.complete(1, body_with(), clock.now, 0)
    meta = tmp_path / "checkpoints" / JOB / "chk-1" / "_metadata"
    meta.write_bytes(meta.read_bytes().replace(b'"version":4', b'"version":7'))
    with pytest.raises(CheckpointFormatError, match="version 7") as info:
        load_checkpoint(str(meta), None)
    assert str(meta) in str(info.value)


@pytest.mark.parametrize("name", ["savepoint-1", "chk-", "chk-x", "chk-1a", "_metadata"])
def test_a_path_that_is_not_a_chk_dir_is_rejected_naming_it(tmp_path, name):
    path = f"{tmp_path}/{JOB}/{name}"
    with pytest.raises(CheckpointFormatError) as info:
        load_checkpoint(path, None)
    assert str(info.value) == (
        f"state recovery path {path} is not a chk-<n> directory or its _metadata file"
    )


@pytest.mark.parametrize("suffix", ["", "/_metadata"])
def test_a_path_that_does_not_exist_is_rejected_naming_it(tmp_path, suffix):
    path = f"{tmp_path}/nowhere/{JOB}/chk-5{suffix}"
    with pytest.raises(CheckpointFormatError) as info:
        load_checkpoint(path, None)
    assert str(info.value) == f"state recovery path {path} does not exist"


def test_memory_url_checkpoints_round_trip(clock):
    root = Storage("memory://lockgate-tests/coordinator").child(JOB)
    try:
        coordinator = CheckpointCoordinator(settings(num_retained=1), JOB, root, None)
        url = root.child("shared").url_of("s")
        root.child("shared").write_bytes("s", b"1")
        checkpoint = coordinator.complete(2, body_with((url, 1)), clock.now, 0)
        assert checkpoint.path.startswith("memory://")
        stored = raw_metadata(coordinator, 1)
        assert stored["operators"]["keyedprocess-1"]["subtasks"][0]["keyed"]["groups"] == {
            "0": ["shared/s", 0, 1, 99]
        }
        loaded, _ = load_checkpoint(checkpoint.path, None)
        assert loaded.files() == {url}
    finally:
        root.remove("")


# A failed _metadata write -------------------------------------------------------------------------


def test_a_failed_metadata_write_leaves_no_checkpoint_directory(tmp_path, clock):
    coordinator = make(tmp_path, tolerable_failures=1)

    def fail_mid_write(checkpoint_id: int) -> None:
        chk = coordinator.job_root.child(f"chk-{checkpoint_id}")
        chk.fs.makedirs(chk.root, exist_ok=True)
        chk.fs.pipe_file(f"{chk.root}/._metadata.partial.tmp", b'{"format": "lockg')
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        coordinator.complete(1, body_with(), clock.perf_counter(), 0, fail_mid_write)
    assert not coordinator.job_root.exists("chk-1")
    assert coordinator.latest is None
    assert not coordinator.failed(1, "disk full", clock.perf_counter())
    assert [(c.id, c.status) for c in coordinator.history] == [(1, "FAILED")]
    checkpoint = coordinator.complete(2, body_with(), clock.perf_counter(), 0)
    assert checkpoint.id == 2 and coordinator.job_root.exists("chk-2/_metadata")


def test_the_write_hook_runs_for_checkpoints_in_driver_memory_too(clock):
    coordinator = CheckpointCoordinator(settings(), JOB, None, None)
    seen: list[int] = []
    coordinator.complete(1, body_with(), clock.perf_counter(), 0, seen.append)
    assert seen == [1]


def test_only_the_most_recent_checkpoint_statistics_are_kept(tmp_path, clock):
    coordinator = CheckpointCoordinator(settings(), JOB, None, None, history_size=3)
    for epoch in range(1, 6):
        coordinator.complete(epoch, body_with(), clock.perf_counter(), 0)
    assert [c.id for c in coordinator.history] == [3, 4, 5]


# Signed checkpoints -------------------------------------------------------------------------------


def signed_checkpoints(tmp_path, clock) -> tuple[CheckpointCoordinator, CheckpointSigningKey]:
    """Two checkpoints signed with a key, their state files named with digests."""
    key_path = tmp_path / "key"
    key_path.write_bytes(b"k" * 32)
    key_path.chmod(0o600)
    key = CheckpointSigningKey.load(str(key_path))
    root = Storage(str(tmp_path / "checkpoints")).child(JOB)
    coordinator = CheckpointCoordinator(settings(num_retained=2), JOB, root, key)
    for epoch in (4, 8):
        url = shared_file(coordinator, f"e{epoch}")
        operators = body_with((url, 10))
        [subtask] = operators["keyedprocess-1"].subtasks
        groups = {kg: replace(h, sha256="ab" * 32) for kg, h in subtask.keyed.groups.items()}
        keyed = HeapManifest(subtask.keyed.kinds, groups)
        operators["keyedprocess-1"] = replace(
            operators["keyedprocess-1"], subtasks=(replace(subtask, keyed=keyed),)
        )
        coordinator.complete(epoch, operators, clock.now, 0)
    return coordinator, key


def test_a_signed_checkpoint_restores_with_its_key(tmp_path, clock):
    coordinator, key = signed_checkpoints(tmp_path, clock)
    loaded, skipped = load_checkpoint(coordinator.retained[1].path, key)
    assert (loaded.id, skipped) == (2, [])
    assert loaded.metadata == coordinator.retained[1].metadata


def test_an_altered_signed_checkpoint_is_refused_not_passed_over(tmp_path, clock):
    """An older checkpoint is no safer than whoever altered the newer one: the restore stops,
    naming the file, where a damaged one would fall back."""
    coordinator, key = signed_checkpoints(tmp_path, clock)
    meta = tmp_path / "checkpoints" / JOB / "chk-2" / "_metadata"
    envelope = json.loads(meta.read_bytes())
    envelope["body"]["epoch"] = 9
    canonical = json.dumps(envelope["body"], sort_keys=True, separators=(",", ":")).encode()
    envelope["sha256"] = hashlib.sha256(canonical).hexdigest()
    meta.write_text(json.dumps(envelope))
    with pytest.raises(CheckpointSignatureError, match=rf"{meta} fails its signature"):
        load_checkpoint(coordinator.retained[1].path, key)


def test_unsigned_checkpoints_are_refused_by_a_job_with_a_key(tmp_path, clock):
    coordinator = two_checkpoints(tmp_path, clock)
    (tmp_path / "other").mkdir()
    _, key = signed_checkpoints(tmp_path / "other", clock)
    with pytest.raises(CheckpointSignatureError, match=r"chk-2/_metadata is not signed"):
        load_checkpoint(coordinator.retained[1].path, key)


def test_a_job_with_a_key_does_not_fall_back_past_a_damaged_or_missing_checkpoint(tmp_path, clock):
    """Falling back would let whoever can write the storage roll the job back to older state
    by damaging the newest checkpoint, without knowing the key."""
    coordinator, key = signed_checkpoints(tmp_path, clock)
    meta = tmp_path / "checkpoints" / JOB / "chk-2" / "_metadata"
    signed = meta.read_bytes()
    for damage, message in (
        (signed[:40], r"is truncated or not a lockgate checkpoint"),
        (signed.replace(b'"version":4', b'"version":99'), r"has format version 99"),
        (None, r"chk-2/_metadata is missing"),
    ):
        if damage is None:
            meta.unlink()
        else:
            meta.write_bytes(damage)
        with pytest.raises(CheckpointSignatureError, match=rf"{message}.*does not fall back"):
            load_checkpoint(coordinator.retained[1].path, key)


def test_a_checkpoint_moved_into_another_checkpoints_directory_is_not_that_checkpoint(
    tmp_path, clock
):
    coordinator, key = signed_checkpoints(tmp_path, clock)
    job_dir = tmp_path / "checkpoints" / JOB
    (job_dir / "chk-2" / "_metadata").write_bytes((job_dir / "chk-1" / "_metadata").read_bytes())
    loaded, [reason] = load_checkpoint(coordinator.retained[1].path, None)
    assert loaded.id == 1 and "chk-2/_metadata holds checkpoint 1, not 2" in reason
    with pytest.raises(CheckpointSignatureError, match=r"holds checkpoint 1, not 2"):
        load_checkpoint(coordinator.retained[1].path, key)

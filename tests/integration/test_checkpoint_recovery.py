"""Failure tests: after any failure, the committed output equals that of a failure-free run.

In the spirit of Flink's own fault-tolerance tests: a source of unique increasing numbers
per split, a keyed stage counting per key in ``ValueState``, and an exactly-once
``FileSink``. Every record ``(split, i)`` has key ``(split, i % KEYS)``, so its count is
``i // KEYS + 1`` in a run without failures: a lost state update, a state update applied
twice, a lost record or a record written twice all change the committed lines, which are
compared with that reference exactly. Failures are injected inside a user function and at
the named points of ``lockgate.testing.inject-failure``; checkpoints are damaged on disk;
jobs are resumed in a new run from a retained checkpoint. The failure and recovery tests
that involve keyed state run on both state backends (``@BACKENDS``: heap and RocksDB; one
of them in `make test`, both in `make integration-full`).
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from exactly_once_job import (
    EPOCHS,
    KEYS,
    MAX_RECORDS,
    PARALLELISMS,
    PER_SPLIT,
    RETAIN,
    UIDS,
    CountPerKey,
    Trap,
    assert_committed_output_exact,
    assert_exactly_once,
    assert_ran_epochs,
    build_job,
    checkpointed_env,
    chk_dirs,
    committed_lines,
    file_sink,
    job_dirs,
    lines_of_epochs,
    metadata_body,
    only_job_dir,
    record_in_epoch,
    records,
    recovery_settings,
    reference,
    referenced_state_files,
    run_until_failure,
    visible_files,
)
from lockgate_it_support import BACKENDS, BACKENDS_AND_INCREMENTAL, FULL, SparkJobCounter

from lockgate.checkpoint.coordinator import load_checkpoint
from lockgate.common import RestartStrategies, WatermarkStrategy
from lockgate.datastream import (
    ExternalizedCheckpointRetention,
    MapFunction,
)
from lockgate.datastream.connectors.file_system import (
    FileSource,
    StreamFormat,
)
from lockgate.runtime.errors import JobExecutionError

# 1. A user function fails --------------------------------------------------------------------


@BACKENDS_AND_INCREMENTAL
# (1, 1) in `make integration-full` only: parallelism 1 is the same restore, without shuffles
@pytest.mark.parametrize(
    "parallelism, interval_ms", [(3, 1), (3, 400), pytest.param(1, 1, marks=FULL)]
)
def test_user_function_failure_restores_latest_checkpoint(
    make_env, tmp_path, parallelism, interval_ms
):
    # Two raises exhaust Spark's one task retry (local[2,2]): the restart strategy takes over.
    trap = Trap(record_in_epoch(4, split=parallelism - 1), tmp_path / "markers", times=2)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", parallelism, interval_ms=interval_ms)
    build_job(env, tmp_path / "out", parallelism, trap)
    result = env.execute("user function failure")
    assert trap.fired() == 2
    assert result.restarts == 1
    if interval_ms == 1:
        assert_ran_epochs(result)
    else:  # checkpoints every few epochs: recovery may run some epochs again
        assert max(e.epoch for e in result.epochs) == EPOCHS
        assert result.checkpoints and result.checkpoints[-1].epoch == EPOCHS
    assert_committed_output_exact(tmp_path / "out", parallelism)


# 2-5. Failures at the named injection points -------------------------------------------------


@BACKENDS
@PARALLELISMS
@pytest.mark.parametrize(
    "inject, restarts",
    [
        # every point in one job (`make test`), then each in a job of its own
        (
            "after-snapshot-before-ack@2,after-metadata-before-commit@3,mid-commit@4,"
            "during-restore@1,during-restore@3",
            5,
        ),
        pytest.param("after-snapshot-before-ack@3", 1, marks=FULL),
        pytest.param("after-metadata-before-commit@3", 1, marks=FULL),
        pytest.param("mid-commit@3", 1, marks=FULL),
        pytest.param("after-metadata-before-commit@2,during-restore@1", 2, marks=FULL),
        pytest.param("mid-commit@4,during-restore@1,during-restore@2", 3, marks=FULL),
    ],
    ids=lambda v: str(v),
)
def test_injected_failure_leaves_exactly_once_output(
    make_env, tmp_path, parallelism, inject, restarts
):
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": inject},
        retained=2,
        restart=RestartStrategies.fixed_delay_restart(max(3, restarts), 10),
    )
    build_job(env, tmp_path / "out", parallelism)
    result = env.execute("injected failure")
    after_metadata = ("after-metadata-before-commit", "mid-commit")
    assert_ran_epochs(result, unlisted=max(1, sum(inject.count(p) for p in after_metadata)))
    assert result.restarts == restarts, "every injected failure fires exactly once"
    assert_committed_output_exact(tmp_path / "out", parallelism)


def test_mid_commit_failure_falls_between_two_commits_of_one_checkpoint(make_env, tmp_path):
    """When mid-commit fires, checkpoint 3 is partly committed; recovery completes it."""
    seen: list[int] = []
    out = tmp_path / "out"

    class Watch(logging.Handler):
        def emit(self, record):
            if "injected failure at mid-commit" in record.getMessage():
                seen.append(sum(committed_lines(out).values()))

    handler = Watch()
    logging.getLogger("lockgate").addHandler(handler)
    try:
        env = checkpointed_env(
            make_env,
            tmp_path / "checkpoints",
            3,
            settings={"lockgate.testing.inject-failure": "mid-commit@3"},
        )
        build_job(env, out, 3)
        result = env.execute("mid commit")
    finally:
        logging.getLogger("lockgate").removeHandler(handler)
    assert result.restarts == 1
    assert len(seen) == 1, "the mid-commit failure did not fire (or was not logged)"
    per_epoch = MAX_RECORDS * 3
    assert 2 * per_epoch < seen[0] < 3 * per_epoch, (
        f"{seen[0]} lines visible at the failure: expected epochs 1-2 and part of epoch 3"
    )
    assert_committed_output_exact(out, 3)


@pytest.mark.parametrize(
    "parallelism, inject", [(1, "mid-commit@3"), (3, "after-snapshot-before-ack@4")]
)
def test_file_source_positions_are_restored_exactly(make_env, tmp_path, parallelism, inject):
    """A FileSource over several files resumes at the byte offsets of the restored barrier."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    for split in range(3):
        lines = [f"{split},{i}" for i in range(PER_SPLIT)]
        (inputs / f"numbers-{split}.txt").write_text("\n".join(lines) + "\n")
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": inject},
    )
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(inputs)
    ).build()
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
        .uid(UIDS[0])
        .map(lambda line: tuple(int(x) for x in line.split(",")))
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey())
        .uid(UIDS[1])
        .sink_to(file_sink(tmp_path / "out"))
        .uid(UIDS[2])
    )
    result = env.execute("file source")
    assert result.restarts == 1
    epochs = [e.epoch for e in result.epochs]
    assert max(epochs) >= EPOCHS and epochs == sorted(set(epochs)), epochs
    assert len([c for c in result.checkpoints if c.status == "COMPLETED"]) >= 5
    assert_committed_output_exact(tmp_path / "out", 3)


# 6. Restart strategies -----------------------------------------------------------------------


@PARALLELISMS
def test_no_restart_strategy_fails_the_job_naming_the_failure(make_env, tmp_path, parallelism):
    trap = Trap(record_in_epoch(2), tmp_path / "markers", times=2)
    env = checkpointed_env(
        make_env, tmp_path / "checkpoints", parallelism, restart=RestartStrategies.no_restart()
    )
    build_job(env, tmp_path / "out", parallelism, trap)
    with pytest.raises(JobExecutionError) as info:
        env.execute("no restart")
    message = str(info.value)
    assert "trap fired on record (0, 47)" in message
    assert UIDS[1] in message and "epoch 2" in message, message
    assert trap.fired() == 2, "no restart: the record is seen only by Spark's two attempts"
    # FAILED with NO_EXTERNALIZED_CHECKPOINTS (the default): no checkpoint is kept.
    assert job_dirs(tmp_path / "checkpoints") == []
    # Only what checkpoint 1 committed is visible: the first epoch's output, exactly.
    lines = committed_lines(tmp_path / "out")
    expected = Counter(
        line for line in reference(parallelism) if int(line.split(",")[1]) < MAX_RECORDS
    )
    assert lines == expected


@PARALLELISMS
def test_fixed_delay_strategy_gives_up_after_its_attempts(make_env, tmp_path, parallelism):
    trap = Trap(record_in_epoch(3), tmp_path / "markers", times=4)  # two job failures
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        restart=RestartStrategies.fixed_delay_restart(1, 10),
    )
    build_job(env, tmp_path / "out", parallelism, trap)
    with pytest.raises(JobExecutionError) as info:
        env.execute("fixed delay, one attempt")
    message = str(info.value)
    assert "trap fired" in message and "fixed-delay" in message, message
    assert "no restarts left" in message, message
    assert trap.fired() == 4


# Checkpoint statistics -----------------------------------------------------------------------


@BACKENDS
@PARALLELISMS
def test_checkpoint_statistics_in_job_result(make_env, tmp_path, parallelism):
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(make_env, checkpoints, parallelism)
    build_job(env, tmp_path / "out", parallelism)
    before = time.time()
    result = env.execute("statistics")
    after = time.time()
    stats = result.checkpoints
    assert [c.id for c in stats] == list(range(1, EPOCHS + 1))
    assert [c.epoch for c in stats] == list(range(1, EPOCHS + 1))
    assert all(c.status == "COMPLETED" and c.failure is None for c in stats)
    triggers = [c.trigger_timestamp for c in stats]
    assert triggers == sorted(triggers)
    assert before - 1 <= triggers[0] and triggers[-1] <= after
    for c in stats:
        assert 0 < c.duration_ms < (after - before) * 1000
        assert c.trigger_timestamp + c.duration_ms / 1000 <= after + 0.5
        assert set(c.state_size_per_operator) >= {UIDS[1]}, c.state_size_per_operator
        assert c.state_size_per_operator[UIDS[1]] > 0
        assert c.size_bytes == sum(c.state_size_per_operator.values())
        assert c.written_bytes > 0  # every key changes in every epoch
        assert c.path and c.path.endswith(f"chk-{c.id}")
        assert str(checkpoints) in c.path
    # Each epoch's stats names the checkpoint it ended with.
    assert [e.checkpoint_id for e in result.epochs] == [c.id for c in stats]
    # The job finished with NO_EXTERNALIZED_CHECKPOINTS: its checkpoints are gone.
    assert job_dirs(checkpoints) == []
    assert_committed_output_exact(tmp_path / "out", parallelism)


class SlowOnce(MapFunction):
    """Sleeps once (per marker file) on one record: its epoch exceeds the checkpoint timeout."""

    def __init__(self, record, marker: Path, seconds: float):
        self.record = tuple(record)
        self.marker = str(marker)
        self.seconds = seconds

    def map(self, value):
        if tuple(value) == self.record and not Path(self.marker).exists():
            Path(self.marker).write_text("")
            time.sleep(self.seconds)
        return value


def test_checkpoint_timeout_is_a_failed_checkpoint_in_statistics(make_env, tmp_path):
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 1)
    # 8 s: an epoch that starts subtask hosts takes several seconds on a loaded 2-core
    # machine, and only the slept epoch may time out
    env.get_checkpoint_config().set_checkpoint_timeout(8000)
    env.get_checkpoint_config().set_tolerable_checkpoint_failure_number(2)
    marker = tmp_path / "slept"
    build_job(env, tmp_path / "out", 1, observer=SlowOnce(record_in_epoch(3), marker, 16))
    result = env.execute("timeout")
    assert marker.exists()
    failed = [c for c in result.checkpoints if c.status == "FAILED"]
    assert 3 in [c.epoch for c in failed], [(c.id, c.epoch, c.status) for c in result.checkpoints]
    assert all("timeout" in c.failure and c.size_bytes == 0 for c in failed), failed
    assert result.restarts == 0, "a tolerated checkpoint failure is not a job failure"
    ids = [c.id for c in result.checkpoints]
    assert ids == sorted(set(ids))
    assert result.checkpoints[-1].status == "COMPLETED"
    assert_committed_output_exact(tmp_path / "out", 1)


# Retention and shared state files ------------------------------------------------------------


class ObserveCheckpoints(MapFunction):
    """Records, inside Spark tasks, how many chk-<n> directories exist at epoch starts."""

    def __init__(self, checkpoints: Path, notes: Path):
        self.checkpoints = str(checkpoints)
        self.notes = str(notes)

    def map(self, value):
        if value[1] % MAX_RECORDS == 0:
            count = len(list(Path(self.checkpoints).glob("*/chk-*")))
            Path(self.notes).mkdir(exist_ok=True)
            (Path(self.notes) / f"{value[1]}-{uuid.uuid4().hex}").write_text(str(count))
        return value


@PARALLELISMS
def test_retention_keeps_num_retained_and_only_needed_shared_files(make_env, tmp_path, parallelism):
    """num-retained 2: never more than 2 chk dirs; shared files live exactly as long as needed.

    Even records update one "hot" key per split in every epoch; odd records update a "cold"
    key that changes only in epochs (1, 2), (3, 4), (5, 6). So the state files of epochs 1
    and 3 are superseded entirely, while epoch 2's files stay needed by later checkpoints.
    """
    checkpoints = tmp_path / "checkpoints"
    notes = tmp_path / "notes"
    poison = tmp_path / "poison"
    poison.write_text("")
    env = checkpointed_env(
        make_env,
        checkpoints,
        parallelism,
        retained=2,
        retention=RETAIN,
        restart=RestartStrategies.no_restart(),
    )
    trap = Trap(record_in_epoch(6), tmp_path / "markers", poison=poison)

    def key(r):
        return (r[0], "hot") if r[1] % 2 == 0 else (r[0], "cold", r[1] // (2 * MAX_RECORDS))

    (
        env.from_collection(records(parallelism))
        .set_parallelism(parallelism)
        .uid(UIDS[0])
        .map(ObserveCheckpoints(checkpoints, notes))
        .key_by(key)
        .process(CountPerKey(trap))
        .uid(UIDS[1])
        .sink_to(file_sink(tmp_path / "out"))
        .uid(UIDS[2])
    )
    with pytest.raises(JobExecutionError, match="trap fired"):
        env.execute("retention")
    observed = [int(p.read_text()) for p in notes.iterdir()]
    assert observed and max(observed) == 2, sorted(observed)
    job_dir = only_job_dir(checkpoints)
    retained = chk_dirs(job_dir)
    assert [p.name for p in retained] == ["chk-4", "chk-5"]
    referenced: set[Path] = set()
    for chk in retained:
        referenced |= referenced_state_files(job_dir, chk)
    missing = [str(p) for p in referenced if not p.exists()]
    assert not missing, f"retained checkpoints refer to deleted state files: {missing}"
    assert all(job_dir / "shared" in p.parents for p in referenced), referenced
    on_disk = {p for p in (job_dir / "shared").rglob("*.lgks")}
    unreferenced = sorted(str(p) for p in on_disk - referenced)
    assert not unreferenced, f"state files no retained checkpoint needs: {unreferenced}"

    def epoch_of(path: Path) -> int:
        match = re.search(r"(?:^|[^a-z0-9])e(\d+)-", path.name)
        assert match, path.name
        return int(match.group(1))

    epochs_on_disk = {epoch_of(p) for p in on_disk}
    assert 2 in epochs_on_disk, "epoch 2's cold-key state is shared by chk-4 and chk-5"
    assert not epochs_on_disk & {1, 3}, f"superseded files kept: {sorted(epochs_on_disk)}"
    # What the failed job committed is exactly the output of its first 5 epochs.
    lines = committed_lines(tmp_path / "out")
    assert len(lines) == sum(lines.values()) == 5 * MAX_RECORDS * parallelism


# RocksDB: incremental checkpoints share SST files, reference-counted --------------------------


def url_path(url: str) -> Path:
    return Path(url.removeprefix("file://"))


def stored_files(job_dir: Path) -> set[Path]:
    """Files under the job's shared/ directory, but for uploads still under a temporary name."""
    shared = job_dir / "shared"
    return {p for p in shared.rglob("*") if p.is_file() and not p.name.startswith(".")}


def run_observing_checkpoints(make_env, tmp_path: Path, incremental: bool, parallelism: int = 2):
    """Run the counting job on RocksDB with one checkpoint per epoch and 2 retained, and
    look at checkpoint storage after every checkpoint.

    Collected results of an epoch are released once its checkpoint completed, and the job
    waits while they are consumed: when the first result of epoch n arrives, checkpoint n
    is complete and what it made unnecessary is deleted. Returns, per checkpoint, the files
    (URLs) of the retained checkpoints' ``_metadata`` files, as ``load_checkpoint`` reads them.
    """
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(
        make_env,
        checkpoints,
        parallelism,
        settings={"execution.checkpointing.incremental": str(incremental).lower()},
        retained=2,
    )
    stream = (
        env.from_collection(records(parallelism))
        .set_parallelism(parallelism)
        .uid(UIDS[0])
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey())
        .uid(UIDS[1])
    )
    observed: list[dict[str, set[str]]] = []
    received: list[str] = []
    with stream.execute_and_collect() as results:
        for line in results:
            received.append(line)
            epoch = int(line.split(",")[1]) // MAX_RECORDS + 1
            if epoch == len(observed):
                continue
            assert epoch == len(observed) + 1, (epoch, len(observed))
            job_dir = only_job_dir(checkpoints)
            retained = chk_dirs(job_dir)
            expected = [f"chk-{n}" for n in range(max(1, epoch - 1), epoch + 1)]
            assert [p.name for p in retained] == expected
            files = {}
            for chk in retained:
                checkpoint, skipped = load_checkpoint(str(chk), None)
                assert not skipped and checkpoint.epoch == int(chk.name[4:])
                for operator in checkpoint.metadata.operators.values():
                    for subtask in operator.subtasks:
                        keyed = subtask.keyed
                        assert keyed is None or keyed.backend == "rocksdb", keyed
                files[chk.name] = checkpoint.files()
            referenced = {url_path(url) for urls in files.values() for url in urls}
            missing = sorted(str(p) for p in referenced if not p.exists())
            assert not missing, f"after chk-{epoch}: retained checkpoints lack {missing[:3]}"
            assert all(job_dir / "shared" in p.parents for p in referenced), referenced
            unneeded = sorted(str(p) for p in stored_files(job_dir) - referenced)
            assert not unneeded, f"after chk-{epoch}: files nothing refers to: {unneeded[:3]}"
            observed.append(files)
    assert Counter(received) == reference(parallelism)
    assert len(observed) == EPOCHS
    return observed


def ssts(urls: set[str]) -> set[str]:
    """The SST files (a full checkpoint's copies are named <instance>-<n>.sst-<tag>)."""
    return {url for url in urls if ".sst" in url.rsplit("/", 1)[1]}


ROCKSDB_ONLY = pytest.mark.parametrize("backend", ["rocksdb"])


@ROCKSDB_ONLY
def test_rocksdb_incremental_checkpoints_share_files_and_delete_unreferenced_ones(
    make_env, tmp_path
):
    """execution.checkpointing.incremental: a checkpoint uploads only new SST files and
    refers to the older ones; num-retained 2. After every checkpoint, every file of a
    retained checkpoint exists and shared/ holds nothing else."""
    observed = run_observing_checkpoints(make_env, tmp_path, incremental=True)
    shared_pairs = 0
    for epoch, files in enumerate(observed[1:], start=2):
        previous, latest = files[f"chk-{epoch - 1}"], files[f"chk-{epoch}"]
        assert previous == observed[epoch - 2][f"chk-{epoch - 1}"]
        shared_pairs += bool(ssts(previous) & ssts(latest))
    assert shared_pairs >= EPOCHS - 2, "consecutive checkpoints share SST files (same URLs)"
    # Files only the checkpoints that left the retained window had were deleted
    everything = {url for files in observed for urls in files.values() for url in urls}
    gone = {url for url in everything if not url_path(url).exists()}
    assert ssts(gone), "no superseded SST was ever deleted"


@ROCKSDB_ONLY
def test_rocksdb_full_checkpoints_share_no_sst(make_env, tmp_path):
    """execution.checkpointing.incremental false: every checkpoint holds its own copies."""
    observed = run_observing_checkpoints(make_env, tmp_path, incremental=False)
    pairs = [files.values() for files in observed if len(files) == 2]
    assert len(pairs) == EPOCHS - 1
    for first, second in pairs:
        assert ssts(first) and ssts(second)
        assert not ssts(first) & ssts(second), "an SST file is shared by two checkpoints"


@ROCKSDB_ONLY
def test_rocksdb_resume_from_the_older_retained_incremental_checkpoint(make_env, tmp_path):
    """The older of two retained incremental checkpoints shares files with the newer one;
    after the job failed, a new run resumes from it and commits exactly the reference."""
    incremental = {"execution.checkpointing.incremental": "true"}
    job_dir = run_until_failure(
        make_env, tmp_path, 3, fail_epoch=5, retained=2, settings=incremental
    )
    older, newer = chk_dirs(job_dir)
    assert (older.name, newer.name) == ("chk-3", "chk-4")
    shared = {p for p in referenced_state_files(job_dir, older) if ".sst" in p.name}
    assert shared & referenced_state_files(job_dir, newer), "no SST shared by chk-3 and chk-4"
    files = referenced_state_files(job_dir, older) | referenced_state_files(job_dir, newer)
    contents = {p: p.read_bytes() for p in files}
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        3,
        settings=recovery_settings(older, **incremental),
        retained=2,
    )
    build_job(env, tmp_path / "out", 3)
    result = env.execute("resumed from the older checkpoint")
    assert [e.epoch for e in result.epochs] == [4, 5, 6]
    # chk-4 had committed epoch 4's output: it is committed again
    assert committed_lines(tmp_path / "out") == reference(3) + lines_of_epochs(3, 4, 4)
    # Restoring (files are hard-linked where they can be) left the checkpoints as they were
    changed = sorted(str(p) for p, data in contents.items() if p.read_bytes() != data)
    assert not changed, f"restoring changed files of the checkpoint: {changed[:3]}"


# Checkpoints restore only into the backend that wrote them -------------------------------------


@BACKENDS
def test_checkpoint_of_another_backend_fails_before_running_naming_both(
    make_env, spark, tmp_path, backend
):
    job_dir = run_until_failure(make_env, tmp_path, 3, fail_epoch=3)
    latest = chk_dirs(job_dir)[-1]
    before = committed_lines(tmp_path / "out")
    other = "rocksdb" if backend == "hashmap" else "hashmap"
    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        3,
        settings=recovery_settings(latest, **{"state.backend.type": other}),
        restart=RestartStrategies.no_restart(),
    )
    build_job(env, tmp_path / "out", 3)
    jobs = SparkJobCounter(spark)
    with pytest.raises(JobExecutionError) as info:
        env.execute("other backend")
    message = str(info.value)
    assert str(latest) in message, message
    assert f"written by the {backend} state backend" in message, message
    assert f"uses the {other} backend" in message, message
    assert "savepoint" in message, message
    assert UIDS[1] in message, message
    assert jobs.none_started()
    assert committed_lines(tmp_path / "out") == before


# 7. Damaged and foreign checkpoints ----------------------------------------------------------


def truncate(metadata: Path) -> None:
    data = metadata.read_bytes()
    metadata.write_bytes(data[: len(data) // 2])


def break_checksum(metadata: Path) -> None:
    """Change one byte of the body (an epoch number), keeping the JSON valid."""
    data = metadata.read_bytes()
    match = re.search(rb'"epoch": ?(\d)', data)
    assert match, data[:200]
    digit = match.group(1)
    flipped = b"9" if digit != b"9" else b"8"
    metadata.write_bytes(data[: match.start(1)] + flipped + data[match.end(1) :])


@BACKENDS
@pytest.mark.parametrize(
    "parallelism, damaged",
    # p3 damages both ways at once; each damage alone in `make integration-full`
    [
        pytest.param(3, {4: truncate, 3: break_checksum}, id="p3-truncated-and-checksum"),
        pytest.param(1, {4: truncate}, id="p1-truncated", marks=FULL),
        pytest.param(1, {4: break_checksum}, id="p1-checksum", marks=FULL),
    ],
)
def test_damaged_metadata_recovery_takes_previous_checkpoint(
    make_env, tmp_path, caplog, parallelism, damaged
):
    job_dir = run_until_failure(make_env, tmp_path, parallelism, fail_epoch=5)
    retained = chk_dirs(job_dir)
    assert [p.name for p in retained] == ["chk-2", "chk-3", "chk-4"]
    for checkpoint_id, damage in damaged.items():
        damage(job_dir / f"chk-{checkpoint_id}" / "_metadata")
    latest = retained[-1]
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings=recovery_settings(latest),
        retention=RETAIN,
    )
    build_job(env, tmp_path / "out", parallelism)
    with caplog.at_level(logging.WARNING, logger="lockgate"):
        result = env.execute("resume past a damaged checkpoint")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    for checkpoint_id, damage in damaged.items():
        path = str(job_dir / f"chk-{checkpoint_id}" / "_metadata")
        words = "truncated" if damage is truncate else "checksum"
        assert any(path in w and words in w for w in warnings), (path, warnings)
    # Restored from the newest intact checkpoint: the epochs after it ran again, and what
    # the first run had committed of them is committed again, into new part files.
    restored_epoch = min(damaged) - 1
    assert [e.epoch for e in result.epochs] == list(range(restored_epoch + 1, EPOCHS + 1))
    replayed = lines_of_epochs(parallelism, restored_epoch + 1, 4)  # chk-4: the first run's last
    assert committed_lines(tmp_path / "out") == reference(parallelism) + replayed


def test_unknown_metadata_version_without_earlier_checkpoint_fails_naming_path_and_version(
    make_env, tmp_path
):
    job_dir = run_until_failure(make_env, tmp_path, 3, fail_epoch=5)
    earliest = chk_dirs(job_dir)[0]
    metadata = earliest / "_metadata"
    envelope = json.loads(metadata.read_text())
    envelope["version"] = 99
    metadata.write_text(json.dumps(envelope, sort_keys=True, indent=1))
    before = committed_lines(tmp_path / "out")
    env = checkpointed_env(make_env, tmp_path / "again", 3, settings=recovery_settings(earliest))
    build_job(env, tmp_path / "out", 3)
    with pytest.raises(Exception) as info:
        env.execute("unknown version")
    message = str(info.value)
    assert str(metadata) in message and "version 99" in message, message
    assert committed_lines(tmp_path / "out") == before


@pytest.mark.parametrize("what", ["missing-job-dir", "missing-chk", "missing-metadata-file"])
def test_recovery_path_that_does_not_exist_fails_naming_it(make_env, tmp_path, what):
    job_dir = tmp_path / "checkpoints" / "0123abcd"
    if what == "missing-job-dir":
        path = job_dir / "chk-3"
    else:
        (job_dir / "chk-1").mkdir(parents=True)
        path = job_dir / "chk-7" if what == "missing-chk" else job_dir / "chk-7" / "_metadata"
    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        1,
        settings=recovery_settings(path),
        restart=RestartStrategies.no_restart(),
    )
    build_job(env, tmp_path / "out", 1)
    with pytest.raises(Exception) as info:
        env.execute("missing path")
    message = str(info.value)
    assert str(path) in message and "does not exist" in message, message
    assert committed_lines(tmp_path / "out") == Counter()


def test_checkpoint_of_another_job_fails_unless_unclaimed_state_is_ignored(make_env, tmp_path):
    other_uids = ("other-numbers", "other-count", "other-sink")
    job_dir = run_until_failure(
        make_env, tmp_path, 3, fail_epoch=4, uids=other_uids, out=tmp_path / "other-out"
    )
    latest = chk_dirs(job_dir)[-1]
    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        3,
        settings=recovery_settings(latest),
        restart=RestartStrategies.no_restart(),
    )
    build_job(env, tmp_path / "out", 3)
    with pytest.raises(Exception) as info:
        env.execute("foreign checkpoint")
    message = str(info.value)
    assert str(latest) in message, message
    assert "other-numbers" in message and "other-count" in message, message
    assert committed_lines(tmp_path / "out") == Counter()

    env = checkpointed_env(
        make_env,
        tmp_path / "again",
        3,
        settings=recovery_settings(
            latest, **{"execution.state-recovery.ignore-unclaimed-state": "true"}
        ),
    )
    build_job(env, tmp_path / "out", 3)
    env.execute("foreign checkpoint, ignored")
    # No operator of this job had state there: it starts from the beginning.
    assert_committed_output_exact(tmp_path / "out", 3)


@BACKENDS_AND_INCREMENTAL
def test_damaged_latest_checkpoint_in_run_restores_the_previous_one(make_env, tmp_path, caplog):
    """In-run recovery reads the latest checkpoint's _metadata; a damaged one is skipped."""
    checkpoints = tmp_path / "checkpoints"

    class TruncateLatest(Trap):
        """Damages chk-3, then fails the task (twice: Spark's retry too). A trap of the
        counting function, which runs after the checkpoint of the epoch before (a source
        task's map may run ahead of it)."""

        def __init__(self, checkpoints: Path, record, marker_dir: Path):
            super().__init__(record, marker_dir, times=2)
            self.checkpoints = str(checkpoints)

        def __call__(self, value):
            if tuple(value) == self.record:
                latest = sorted(Path(self.checkpoints).glob("*/chk-*"), key=lambda p: p.name)
                metadata = latest[-1] / "_metadata"
                if latest[-1].name == "chk-3" and metadata.stat().st_size > 20:
                    truncate(metadata)
            super().__call__(value)

    env = checkpointed_env(make_env, checkpoints, 1, retained=2)
    trap = TruncateLatest(checkpoints, record_in_epoch(4, offset=0), tmp_path / "markers")
    build_job(env, tmp_path / "out", 1, trap)
    with caplog.at_level(logging.WARNING, logger="lockgate"):
        result = env.execute("damaged in run")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("chk-3/_metadata" in w and "truncated" in w for w in warnings), warnings
    assert result.restarts == 1
    # Restored from chk-2: epoch 3 ran again after the failure of epoch 4, and what chk-3
    # had committed of it is committed again (into new files: none is replaced).
    assert [e.epoch for e in result.epochs] == [1, 2, 3, 3, 4, 5, 6]
    assert committed_lines(tmp_path / "out") == reference(1) + lines_of_epochs(1, 3, 3)


@BACKENDS
@pytest.mark.parametrize(
    "retention, kept",
    [(RETAIN, True), (ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION, False)],
    ids=["retain", "delete"],
)
def test_cancel_applies_externalized_retention(make_env, tmp_path, retention, kept):
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(make_env, checkpoints, 1, retained=2, retention=retention)
    stream = (
        env.from_collection(records(1)).key_by(lambda r: (r[0], r[1] % KEYS)).process(CountPerKey())
    )
    received = []
    with stream.execute_and_collect() as results:
        for value in results:
            received.append(value)
            if len(received) == 3 * MAX_RECORDS:
                break
    # Collected results are released by checkpoints: the first three epochs, exactly.
    assert Counter(received) == Counter(list(reference(1))[: 3 * MAX_RECORDS])
    if kept:
        job = only_job_dir(checkpoints)
        assert [p.name for p in chk_dirs(job)] == ["chk-2", "chk-3"]
        for chk in chk_dirs(job):
            missing = [p for p in referenced_state_files(job, chk) if not p.exists()]
            assert not missing, missing
    else:
        assert job_dirs(checkpoints) == []


@BACKENDS
def test_resumed_job_checkpoints_do_not_need_the_old_job_directory(make_env, tmp_path):
    """After a resume, the new job's checkpoints hold all state they need (as Flink's
    NO_CLAIM mode): the first job's directory can be deleted."""
    first_dir = run_until_failure(make_env, tmp_path, 3, fail_epoch=3)
    poison = tmp_path / "poison"
    poison.write_text("")
    env = checkpointed_env(
        make_env,
        tmp_path / "second-checkpoints",
        3,
        settings=recovery_settings(chk_dirs(first_dir)[-1]),
        retained=2,
        retention=RETAIN,
        restart=RestartStrategies.no_restart(),
    )
    trap = Trap(record_in_epoch(5), tmp_path / "markers-second", poison=poison)
    build_job(env, tmp_path / "out", 3, trap)
    with pytest.raises(JobExecutionError, match="trap fired"):
        env.execute("second run")
    poison.unlink()
    second_dir = only_job_dir(tmp_path / "second-checkpoints")
    latest = chk_dirs(second_dir)[-1]
    assert metadata_body(latest)["epoch"] == 4
    for chk in chk_dirs(second_dir):
        outside = [
            p for p in referenced_state_files(second_dir, chk) if second_dir not in p.parents
        ]
        assert not outside, f"{chk.name} refers to files of the first job: {outside[:3]}"
    shutil.rmtree(first_dir)
    env = checkpointed_env(
        make_env, tmp_path / "third-checkpoints", 3, settings=recovery_settings(latest)
    )
    build_job(env, tmp_path / "out", 3)
    result = env.execute("third run")
    assert [e.epoch for e in result.epochs] == [5, 6]
    assert_committed_output_exact(tmp_path / "out", 3)


# 8. Resume in a new run ----------------------------------------------------------------------


@BACKENDS
@pytest.mark.parametrize(
    "parallelism, use_metadata_file", [(1, True), (3, False)], ids=["p1-metadata", "p3-chk-dir"]
)
def test_resume_in_new_run_continues_output_exactly_once(
    make_env, tmp_path, parallelism, use_metadata_file
):
    job_dir = run_until_failure(make_env, tmp_path, parallelism, fail_epoch=4)
    latest = chk_dirs(job_dir)[-1]
    assert latest.name == "chk-3"
    before = {p: p.read_bytes() for p in visible_files(tmp_path / "out")}
    before_lines = committed_lines(tmp_path / "out")
    assert sum(before_lines.values()) == 3 * MAX_RECORDS * parallelism
    path = latest / "_metadata" if use_metadata_file else latest
    env = checkpointed_env(
        make_env, tmp_path / "checkpoints", parallelism, settings=recovery_settings(path)
    )
    build_job(env, tmp_path / "out", parallelism)
    result = env.execute("resumed")
    assert [e.epoch for e in result.epochs] == [4, 5, 6]
    assert result.restarts == 0
    # The first run's committed files are untouched; the second run adds the rest.
    assert {p: p.read_bytes() for p in before} == before
    after_lines = Counter(
        line
        for part in visible_files(tmp_path / "out")
        if part not in before
        for line in part.read_text().splitlines()
    )
    assert_exactly_once(before_lines + after_lines, parallelism)
    assert_committed_output_exact(tmp_path / "out", parallelism)
    # The resumed job finished: its own checkpoints are gone, the old job's are kept.
    assert [p.name for p in chk_dirs(job_dir)] == ["chk-1", "chk-2", "chk-3"]


@BACKENDS_AND_INCREMENTAL
def test_resume_then_fail_again_restores_the_resumed_checkpoint(make_env, tmp_path):
    """A failed restore of the recovery path is retried; a failure before the resumed job's
    first checkpoint goes back to the recovery path."""
    job_dir = run_until_failure(make_env, tmp_path, 1, fail_epoch=4)
    latest = chk_dirs(job_dir)[-1]
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        1,
        settings=recovery_settings(
            latest,
            **{"lockgate.testing.inject-failure": "during-restore@1,after-snapshot-before-ack@4"},
        ),
    )
    build_job(env, tmp_path / "out", 1)
    result = env.execute("resumed, failing")
    assert result.restarts == 2
    assert [e.epoch for e in result.epochs] == [4, 5, 6]
    assert_committed_output_exact(tmp_path / "out", 1)


# Collected results are exactly-once too -------------------------------------------------------


@PARALLELISMS
def test_execute_and_collect_is_exactly_once_when_commit_fails(make_env, tmp_path, parallelism):
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": "after-metadata-before-commit@3"},
    )
    stream = (
        env.from_collection(records(parallelism))
        .set_parallelism(parallelism)
        .key_by(lambda r: (r[0], r[1] % KEYS))
        .process(CountPerKey())
    )
    with stream.execute_and_collect() as results:
        collected = Counter(results)
    assert_exactly_once(collected, parallelism)

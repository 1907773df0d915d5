"""A run of a job killed before its first checkpoint leaves what its sinks staged: the next
run of the job (the Dispatcher's restart, which names the earlier runs) aborts it.

The kill is simulated in process: the first run is held in its third epoch while the test
copies what it staged so far (staging records and in-progress part files), then cancelled
(which cleans up), and the copies are put back, as a SIGKILL would have left them."""

from __future__ import annotations

import shutil
import threading
import time
import uuid
from pathlib import Path

import pytest
from exactly_once_job import committed_lines, file_sink

from lockgate.common import Types
from lockgate.datastream import CheckpointingMode, MapFunction
from lockgate.datastream.checkpoint_storage import FileSystemCheckpointStorage
from lockgate.runtime.jobmaster import program_context

pytestmark = pytest.mark.integration

RECORDS = 60
PER_EPOCH = 10  # per split: 2 splits, 3 epochs


class HoldAt(MapFunction):
    """Waits at record ``at`` until ``release`` exists, having said so with ``held``."""

    def __init__(self, at: int, held: Path, release: Path):
        self.at, self.held, self.release = at, str(held), str(release)

    def map(self, value):
        if value == self.at:
            Path(self.held).touch()
            deadline = time.monotonic() + 120
            while not Path(self.release).exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return f"line {value}"


def build(make_env, tmp_path: Path, hold: MapFunction | None):
    env = make_env(parallelism=2, max_records_per_split=PER_EPOCH)
    env.enable_checkpointing(600_000, CheckpointingMode.EXACTLY_ONCE)  # only the final one
    config = env.get_checkpoint_config()
    config.set_checkpoint_storage(FileSystemCheckpointStorage(f"file://{tmp_path / 'ck'}"))
    stream = env.from_collection(list(range(RECORDS)), type_info=Types.INT()).uid("numbers")
    mapped = stream.map(hold or (lambda v: f"line {v}"), output_type=Types.STRING()).uid("lines")
    mapped.sink_to(file_sink(tmp_path / "out")).uid("out")
    return env


def staged(tmp_path: Path, run: str) -> list[Path]:
    found = [p for p in (tmp_path / "ck" / run / "staging").rglob("*") if p.is_file()]
    return found + [p for p in (tmp_path / "out").rglob(".*") if "inprogress" in p.name]


def test_the_next_run_aborts_what_a_killed_run_staged(make_env, tmp_path):
    killed, next_run = uuid.uuid4().hex, uuid.uuid4().hex
    held, release = tmp_path / "held", tmp_path / "release"
    program_context.install(program_context.ProgramContext(job_id=killed))
    try:
        client = build(make_env, tmp_path, HoldAt(2 * PER_EPOCH + 1, held, release)).execute_async(
            "killed"
        )
        deadline = time.monotonic() + 120
        while not held.exists():
            assert time.monotonic() < deadline, "the first run never reached its third epoch"
            time.sleep(0.05)
        left = staged(tmp_path, killed)
        assert left, "the first run staged nothing before its first checkpoint"
        backup = tmp_path / "backup"
        for path in left:
            target = backup / path.relative_to(tmp_path)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        cancelling = threading.Thread(target=lambda: client.cancel().result(timeout=120))
        cancelling.start()
        release.touch()
        cancelling.join()
        for path in left:  # what a SIGKILL would have left
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(backup / path.relative_to(tmp_path), path)
        assert not committed_lines(tmp_path / "out")

        program_context.install(
            program_context.ProgramContext(job_id=next_run, earlier_runs=(killed,))
        )
        build(make_env, tmp_path, None).execute("next run")
    finally:
        program_context.install(None)
    assert not [p for p in left if p.exists()], "the killed run's staged files stayed"
    assert committed_lines(tmp_path / "out") == {f"line {v}": 1 for v in range(RECORDS)}

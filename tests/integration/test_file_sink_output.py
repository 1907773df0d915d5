"""FileSink writes every record once into visible part files, also when a task is retried."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from lockgate.common import Encoder
from lockgate.datastream import MapFunction
from lockgate.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    OutputFileConfig,
)
from lockgate.runtime.errors import JobExecutionError


def _sink(path: Path) -> FileSink:
    return (
        FileSink.for_row_format(str(path), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(OutputFileConfig("out", ".txt"))
        .build()
    )


def _visible_lines(path: Path) -> list[str]:
    return [
        line.rstrip("\n")
        for part in sorted(path.iterdir())
        if not part.name.startswith(".")
        for line in part.read_text().splitlines(keepends=True)
    ]


class FailFirstAttemptOnce(MapFunction):
    """Fails the first attempt of the subtask that sees record 1234, after some output."""

    def __init__(self, marker: str):
        self.marker = marker

    def open(self, runtime_context):
        self.attempt = runtime_context.get_attempt_number()

    def map(self, value: int) -> str:
        if value == 1234 and self.attempt == 0:
            Path(self.marker).write_text("failed")
            raise RuntimeError("injected sink-side failure")
        return f"v{value}"


@pytest.mark.parametrize("parallelism", [1, 3])
def test_file_sink_writes_each_record_once_despite_retry(make_env, tmp_path, parallelism):
    env = make_env(parallelism=parallelism, max_records_per_split=300)
    out = tmp_path / "out"
    marker = tmp_path / "marker"
    values = list(range(2000))
    (
        env.from_collection(values)
        .rebalance()
        .map(FailFirstAttemptOnce(str(marker)))
        .sink_to(_sink(out))
    )
    result = env.execute("file sink")
    assert marker.exists(), "the injected failure never fired"
    assert len(result.epochs) >= 5
    assert Counter(_visible_lines(out)) == Counter(f"v{v}" for v in values)
    names = [p.name for p in out.iterdir()]
    assert not [n for n in names if n.startswith(".")], "in-progress files left behind"
    assert all(n.startswith("out-") and n.endswith(".txt") for n in names)


def test_file_sink_base_path_not_writable_fails_before_first_epoch(make_env, tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    env = make_env()
    env.from_collection([1, 2, 3]).sink_to(_sink(blocker / "out"))
    with pytest.raises(Exception, match="not writable") as info:
        env.execute()
    assert not isinstance(info.value, JobExecutionError)


# Committed output is never replaced ---------------------------------------------------------


def _part_contents(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in path.iterdir() if not p.name.startswith(".")}


@pytest.mark.parametrize("checkpointing", [False, True])
def test_a_second_run_into_the_same_directory_replaces_nothing(make_env, tmp_path, checkpointing):
    """Part names carry a writer id unique to each writer instance (as Flink's), so a run
    that starts without state writes new names next to what an earlier run committed."""
    out = tmp_path / "out"
    runs = []
    for run in range(2):
        env = make_env(parallelism=2, max_records_per_split=100)
        if checkpointing:
            env.enable_checkpointing(1)
        env.from_collection(list(range(500))).set_parallelism(2).map(str).sink_to(_sink(out))
        env.execute(f"run {run}")
        runs.append(_part_contents(out))
    first, second = runs
    assert all(second[name] == data for name, data in first.items()), "a part was replaced"
    assert len(second) > len(first)
    assert Counter(_visible_lines(out)) == Counter({str(v): 2 for v in range(500)})

"""FileSink writes every record once into visible part files, also when a task is retried."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark import TaskContext

from lockgate.common import Encoder
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


class FailFirstAttemptOnce:
    """Fails the first attempt of the subtask that sees record 1234, after some output."""

    def __init__(self, marker: str):
        self.marker = marker

    def __call__(self, value: int) -> str:
        if value == 1234 and TaskContext.get().attemptNumber() == 0:
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

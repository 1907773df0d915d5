"""The final checkpoint is mandatory, and checkpoints follow the clock, not the input.

A job whose sinks commit on checkpoints finishes only after a checkpoint taken after the end
of input has completed: a failure there fails over (or is retried), whatever the number of
tolerable checkpoint failures. A continuous job whose input stops still checkpoints on its
interval, so everything it read is committed within about one interval.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from exactly_once_job import (
    EPOCHS,
    MAX_RECORDS,
    PER_SPLIT,
    CountPerKey,
    assert_committed_output_exact,
    assert_exactly_once,
    build_job,
    checkpointed_env,
    committed_lines,
    file_sink,
    records,
)
from lockgate_it_support import BACKENDS, run_in_thread

from lockgate.common import Duration, WatermarkStrategy
from lockgate.datastream import CheckpointingMode
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat


def tolerant_env(make_env, tmp_path: Path, parallelism: int, inject: str, tolerable: int = 2):
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": inject},
    )
    env.get_checkpoint_config().set_tolerable_checkpoint_failure_number(tolerable)
    return env


def statuses(result) -> list[tuple[int, int, str]]:
    return [(c.id, c.epoch, c.status) for c in result.checkpoints]


@BACKENDS
@pytest.mark.parametrize("parallelism", [1, 3])
def test_a_failed_final_checkpoint_fails_over_despite_tolerance(make_env, tmp_path, parallelism):
    # One checkpoint per epoch: checkpoint EPOCHS is the final one.
    env = tolerant_env(make_env, tmp_path, parallelism, f"metadata-write@{EPOCHS}")
    build_job(env, tmp_path / "out", parallelism)
    result = env.execute("final checkpoint fails")
    assert (EPOCHS, EPOCHS, "FAILED") in statuses(result), statuses(result)
    assert result.restarts == 1, "the final checkpoint's failure must fail over"
    completed = [c for c in result.checkpoints if c.status == "COMPLETED"]
    assert completed[-1].epoch == EPOCHS and completed[-1].id > EPOCHS, statuses(result)
    assert_committed_output_exact(tmp_path / "out", parallelism)


def test_a_failed_checkpoint_before_the_end_is_tolerated(make_env, tmp_path):
    env = tolerant_env(make_env, tmp_path, 3, "metadata-write@3", tolerable=1)
    build_job(env, tmp_path / "out", 3)
    result = env.execute("a tolerated checkpoint failure")
    assert (3, 3, "FAILED") in statuses(result), statuses(result)
    assert result.restarts == 0
    assert_committed_output_exact(tmp_path / "out", 3)


def test_a_metadata_write_failure_beyond_tolerance_fails_over(make_env, tmp_path):
    env = tolerant_env(make_env, tmp_path, 1, "metadata-write@2", tolerable=0)
    build_job(env, tmp_path / "out", 1)
    result = env.execute("an intolerable checkpoint failure")
    assert result.restarts == 1
    assert_committed_output_exact(tmp_path / "out", 1)


def test_collect_delivers_the_last_results_when_the_final_checkpoint_failed(make_env, tmp_path):
    env = tolerant_env(make_env, tmp_path, 2, f"metadata-write@{EPOCHS}")
    stream = (
        env.from_collection(records(2))
        .set_parallelism(2)
        .key_by(lambda r: (r[0], r[1] % 4))
        .process(CountPerKey())
    )
    with stream.execute_and_collect() as results:
        lines = Counter(results)
    assert_exactly_once(lines, 2)


# Checkpoints follow the clock -----------------------------------------------------------------


def continuous_counts(env, directory: Path):
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
        .monitor_continuously(Duration.of_millis(100))
        .build()
    )
    return (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
        .uid("numbers")
        .map(lambda line: tuple(int(x) for x in line.split(",")))
        .key_by(lambda r: (r[0], r[1] % 4))
        .process(CountPerKey())
        .uid("count-per-key")
    )


def write_numbers(directory: Path, splits: int) -> None:
    for split in range(splits):
        lines = [f"{split},{i}" for i in range(PER_SPLIT)]
        (directory / f"numbers-{split}.txt").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("mode", [CheckpointingMode.EXACTLY_ONCE, CheckpointingMode.AT_LEAST_ONCE])
def test_a_continuous_job_commits_everything_it_read_within_an_interval(make_env, tmp_path, mode):
    """All input arrives at once and is read in a few epochs; no more input follows. The
    checkpoint interval is longer than those epochs, so only a checkpoint taken on the clock,
    without new input, commits the last epochs' output."""
    directory = tmp_path / "incoming"
    directory.mkdir()
    write_numbers(directory, 2)
    env = make_env(2, MAX_RECORDS, **{"lockgate.source.idle-poll-ms": 50})
    env.enable_checkpointing(2000, mode)
    counts = continuous_counts(env, directory)
    counts.sink_to(file_sink(tmp_path / "out")).uid("file-sink")
    expected = 2 * PER_SPLIT

    def collect_all() -> Counter:
        with counts.execute_and_collect("continuous") as results:
            return Counter(record for _, record in zip(range(expected), results, strict=False))

    collected = run_in_thread(collect_all, 60)
    assert_exactly_once(collected, 2)
    # Results are released only after the checkpoint's commits: the files are there too.
    assert_exactly_once(committed_lines(tmp_path / "out"), 2)

"""FileSource jobs: bounded files and directories, and a directory monitored continuously."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from exactly_once_job import (
    checkpointed_env,
    chk_dirs,
    committed_lines,
    file_sink,
    job_dirs,
    metadata_body,
    recovery_settings,
)
from lockgate_it_support import SparkJobCounter, by_key, collect, run_in_thread

from lockgate.common import Duration, WatermarkStrategy
from lockgate.connectors.file.enumerator import FileEnumeratorState
from lockgate.datastream import ExternalizedCheckpointRetention
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat


def file_source(*paths: Path | str, monitor_ms: int | None = None) -> FileSource:
    builder = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), *(str(p) for p in paths)
    )
    if monitor_ms is not None:
        builder = builder.monitor_continuously(Duration.of_millis(monitor_ms))
    return builder.build()


def read_lines(env, source: FileSource):
    return env.from_source(source, WatermarkStrategy.no_watermarks(), "files")


def word_counts(lines_stream):
    return (
        lines_stream.flat_map(lambda line: [(w, 1) for w in line.split()])
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
    )


def assert_word_counts(actual: list[tuple[str, int]], lines: list[str]) -> None:
    expected = Counter(w for line in lines for w in line.split())
    assert len(actual) == sum(expected.values())
    outputs = by_key(actual, lambda pair: pair[0])
    assert {w: counts[-1][1] for w, counts in outputs.items()} == dict(expected)
    for word, counts in outputs.items():  # rolling: 1, 2, ..., n per word
        assert [c for _, c in counts] == list(range(1, expected[word] + 1)), word


WORDS = ["alpha", "beta", "gamma", "delta", "über", "日本", "naïve", "x"]


def text(n_lines: int, seed: int) -> list[str]:
    return [
        " ".join(WORDS[(seed * 7 + i * (j + 3)) % len(WORDS)] for j in range(i % 5))
        for i in range(n_lines)
    ]


def test_single_file_over_many_epochs(make_env, spark, tmp_path):
    lines = text(300, seed=1)
    path = tmp_path / "input.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    env = make_env(parallelism=2, max_records_per_split=40)
    jobs = SparkJobCounter(spark)
    actual = collect(word_counts(read_lines(env, file_source(path))))
    assert jobs.count(at_least=8) >= 8  # 300 lines, 40 per epoch
    assert_word_counts(actual, lines)


def test_lines_come_back_exactly(make_env, tmp_path):
    lines = [*text(50, seed=2), "", "  spaced  out  ", "tab\there", "trailing"]
    path = tmp_path / "exact.txt"
    path.write_bytes(("\n".join(lines)).encode("utf-8"))  # no newline after the last line
    env = make_env(parallelism=1, max_records_per_split=7)  # epochs end mid-file, mid-UTF-8
    actual = collect(read_lines(env, file_source(path)))
    assert actual == lines


def write_tree(root: Path) -> list[str]:
    """A directory with nested dirs, hidden files and dirs, CRLF lines; returns the
    lines that must be read."""
    visible: list[str] = []

    def put(relative: str, lines: list[str], newline: str = "\n", hidden: bool = False):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
        if not hidden:
            visible.extend(lines)

    put("a.txt", text(60, seed=3))
    put("nested/b.txt", text(45, seed=4))
    put("nested/deeper/c.log", text(30, seed=5))
    put("nested/deeper/empty-line.txt", [""])
    put("nested/exactly-one-epoch.txt", text(9, seed=8))  # as many lines as the cap below
    put("nested/exactly-two-epochs.txt", text(18, seed=9))
    (root / "zero-bytes.txt").write_bytes(b"")
    put("windows.txt", [*text(25, seed=6), "", "last"], newline="\r\n")
    put(".hidden.txt", ["never", "read"], hidden=True)
    put("_SUCCESS", ["never"], hidden=True)
    put("nested/_temporary/part.txt", ["never", "read"], hidden=True)
    put(".staging/deeper/d.txt", ["never", "read"], hidden=True)
    put("nested/.d.txt.crc", ["never"], hidden=True)
    return visible


def test_directory_tree_skips_hidden_files_and_strips_crlf(make_env, spark, tmp_path):
    root = tmp_path / "tree"
    visible = write_tree(root)
    env = make_env(parallelism=2, max_records_per_split=9)
    jobs = SparkJobCounter(spark)
    actual = collect(read_lines(env, file_source(root)))
    assert jobs.count(at_least=7) >= 7  # the largest file has 60 lines, 9 per epoch
    assert not any("\r" in line or "\n" in line for line in actual)
    assert Counter(actual) == Counter(visible)


def test_directory_tree_word_count(make_env, tmp_path):
    root = tmp_path / "tree"
    visible = write_tree(root)
    env = make_env(parallelism=3, max_records_per_split=15)
    assert_word_counts(collect(word_counts(read_lines(env, file_source(root)))), visible)


def test_several_paths_files_and_directories(make_env, tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("\n".join(text(20, seed=7)) + "\n", encoding="utf-8")
    root = tmp_path / "dir"
    visible = write_tree(root)
    env = make_env(parallelism=2, max_records_per_split=25)
    source = read_lines(env, file_source(one, root)).set_parallelism(2)
    actual = collect(source)
    assert Counter(actual) == Counter([*text(20, seed=7), *visible])


class SlowWriter(threading.Thread):
    """Adds files to a directory, each written under a hidden name and renamed."""

    def __init__(self, directory: Path, batches: list[list[str]], pause_s: float):
        super().__init__(daemon=True)
        self.directory = directory
        self.batches = batches
        self.pause_s = pause_s

    def run(self) -> None:
        for number, lines in enumerate(self.batches):
            time.sleep(self.pause_s)
            temp = self.directory / f".part-{number}.inprogress"
            with open(temp, "w", encoding="utf-8") as handle:
                for line in lines:  # written in pieces: readers must never see them
                    handle.write(line + "\n")
                    handle.flush()
            os.rename(temp, self.directory / f"part-{number}.txt")


def test_continuous_monitoring_reads_files_added_while_running(make_env, spark, tmp_path):
    directory = tmp_path / "incoming"
    directory.mkdir()
    first = [f"initial {i}" for i in range(5)]
    (directory / "part-initial.txt").write_text("\n".join(first) + "\n")
    (directory / "_ignored.txt").write_text("hidden\n")
    batches = [[f"batch {b} line {i}" for i in range(6)] for b in range(5)]
    expected = first + [line for batch in batches for line in batch]
    env = make_env(parallelism=2, max_records_per_split=4, **{"lockgate.source.idle-poll-ms": 50})
    stream = read_lines(env, file_source(directory, monitor_ms=100)).map(str.upper)
    writer = SlowWriter(directory, batches, pause_s=0.15)
    jobs = SparkJobCounter(spark)
    writer.start()
    actual = run_in_thread(lambda: stream.execute_and_collect(limit=len(expected)), 90)
    writer.join(5)
    assert Counter(actual) == Counter(line.upper() for line in expected)
    assert jobs.count(at_least=3) >= 3
    # Lines of one file arrive in file order.
    for name, lines in by_key(actual, lambda line: line.rsplit(" ", 2)[0]).items():
        assert lines == sorted(lines, key=lambda line: int(line.rsplit(" ", 1)[1])), name


def test_a_resumed_continuous_job_reads_each_file_once(make_env, tmp_path):
    """A new run resumes from the retained checkpoint of a cancelled one. Meanwhile a file
    that was read is deleted (and forgotten), a file is added and a file written long ago
    elsewhere is moved in (an old modification time): only the two new files are read."""
    directory = tmp_path / "incoming"
    directory.mkdir()
    checkpoints = tmp_path / "checkpoints"
    out = tmp_path / "out"
    lines = {name: [f"{name} {i}" for i in range(5)] for name in ("a", "b", "c", "d", "old")}

    def put(path: Path, name: str) -> None:
        path.write_text("\n".join(lines[name]) + "\n")

    def run(names: list[str], settings: dict[str, str]) -> list[str]:
        env = checkpointed_env(
            make_env,
            checkpoints,
            2,
            settings={"lockgate.source.idle-poll-ms": "50", **settings},
            retention=ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
        )
        stream = read_lines(env, file_source(directory, monitor_ms=50)).uid("files")
        stream.sink_to(file_sink(out)).uid("out")
        expected = sum(len(lines[name]) for name in names)
        return run_in_thread(lambda: stream.execute_and_collect(limit=expected), 90)

    for name in ("a", "b", "c"):
        put(directory / f"{name}.txt", name)
    first = run(["a", "b", "c"], {})
    [first_job] = job_dirs(checkpoints)

    (directory / "a.txt").unlink()
    put(directory / "d.txt", "d")
    staged = tmp_path / "staging" / "old.txt"
    staged.parent.mkdir()
    put(staged, "old")
    os.utime(staged, (1_000_000, 1_000_000))
    os.rename(staged, directory / "old.txt")
    second = run(["d", "old"], recovery_settings(chk_dirs(first_job)[-1]))

    assert Counter(first) == Counter(lines["a"] + lines["b"] + lines["c"])
    assert Counter(second) == Counter(lines["d"] + lines["old"])
    # What the second run's first checkpoint committed: every line once, none read again
    assert committed_lines(out) == Counter(line for name in lines for line in lines[name])
    [second_job] = [job for job in job_dirs(checkpoints) if job != first_job]
    source = metadata_body(chk_dirs(second_job)[-1])["operators"]["files"]
    state = FileEnumeratorState.from_json(source["coordinator_state"], "test")
    assert state.reading == ()
    assert state.finished == tuple(f"{directory}/{n}.txt" for n in ("b", "c", "d", "old"))


@pytest.mark.parametrize("use_execute", [False, True])
def test_missing_input_path_fails_before_the_job_starts(make_env, spark, tmp_path, use_execute):
    missing = tmp_path / "no" / "such" / "input"
    existing = tmp_path / "present.txt"
    existing.write_text("here\n")
    env = make_env(parallelism=2)
    jobs = SparkJobCounter(spark)
    stream = read_lines(env, file_source(existing, missing)).map(str.upper)
    with pytest.raises(Exception, match="does not exist") as failure:
        if use_execute:
            stream.print()
            env.execute()
        else:
            collect(stream)
    assert str(missing) in str(failure.value)
    assert jobs.none_started()


def test_carriage_returns_end_lines_as_in_flink(make_env, tmp_path):
    path = tmp_path / "cr.txt"
    path.write_bytes(b"one\rtwo\r\nthree\r\r\nfour\n")
    env = make_env(parallelism=1)
    # PyFlink 2.3 (checked): ['one', 'two', 'three', '', 'four']
    assert collect(read_lines(env, file_source(path))) == ["one", "two", "three", "", "four"]

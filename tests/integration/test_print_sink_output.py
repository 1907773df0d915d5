"""``print()`` writes PyFlink's prefixes: "N> " with parallelism > 1, "id:N> " / "id> ".

The print sink writes from Spark's Python workers; their output reaches the driver's
stderr through the JVM, which pytest's ``capfd`` cannot capture (the JVM keeps the file
descriptors it inherited when the session started). The tests therefore point the
workers' stdout and stderr at a file with ``CaptureWorkerOutput``, chained right before
the sink, and read the file.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lockgate_it_support import CaptureWorkerOutput, collect

from lockgate.datastream import MapFunction


class TagWithSubtask(MapFunction):
    def open(self, runtime_context):
        self.index = runtime_context.get_index_of_this_subtask()

    def map(self, value):
        return f"{value}@{self.index}"


def printed_lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def run_print_job(make_env, path: Path, parallelism: int, identifier: str | None):
    records = [f"r{i}" for i in range(30)]
    env = make_env(parallelism=parallelism)  # one epoch
    stream = (
        env.from_collection(records)
        .rebalance()
        .map(CaptureWorkerOutput(str(path)))
        .map(TagWithSubtask())
    )
    if identifier is None:
        stream.print()
    else:
        stream.print(identifier)
    env.execute()
    return records


@pytest.mark.parametrize(
    ("parallelism", "identifier", "prefix"),
    [
        (1, None, ""),
        (1, "audit", "audit> "),
        (2, None, "{n}> "),
        (2, "audit", "audit:{n}> "),
        (3, "id", "id:{n}> "),
    ],
)
def test_print_prefixes(make_env, tmp_path, parallelism, identifier, prefix):
    path = tmp_path / "stdout.txt"
    records = run_print_job(make_env, path, parallelism, identifier)
    lines = printed_lines(path)
    expected = []
    for line in lines:
        value, subtask = line.rsplit("@", 1)
        value = value.split("> ", 1)[1] if prefix else value
        expected.append(prefix.format(n=int(subtask) + 1) + f"{value}@{subtask}")
    assert lines == expected  # each line's prefix names the subtask that printed it
    assert sorted(line.rsplit("@", 1)[0].split("> ")[-1] for line in lines) == sorted(records)
    assert len({line.rsplit("@", 1)[1] for line in lines}) == parallelism


def test_print_does_not_change_collected_results(make_env, tmp_path):
    path = tmp_path / "stdout.txt"
    env = make_env(parallelism=2)
    stream = env.from_collection(list(range(20))).map(CaptureWorkerOutput(str(path)))
    doubled = stream.map(lambda v: v * 2)
    doubled.print("dbl")
    assert sorted(collect(doubled)) == [v * 2 for v in range(20)]
    values = sorted(int(line.split("> ", 1)[1]) for line in printed_lines(path))
    assert values == [v * 2 for v in range(20)]
    assert all(line.startswith(("dbl:1> ", "dbl:2> ")) for line in printed_lines(path))

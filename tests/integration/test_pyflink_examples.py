"""PyFlink's own DataStream examples (``pyflink/examples/datastream`` of apache-flink 2.3.0)
run unchanged on lockgate, but for ``pyflink`` -> ``lockgate`` in their imports, and print
the same records as on PyFlink; so does ``pyflink_types_job.py``, which checks what each
declared type makes of a value and how ``print()`` writes it.

Both run in one process each (``pyflink_examples_runner.py``). What PyFlink prints is
recorded (``pyflink_examples_support.py`` says how and why); `make integration-full` runs
PyFlink again.

What is compared: every line the examples print, as a multiset, without the ``N>`` prefix
(which subtask prints a record depends on how each system spreads keys). Lockgate's print
sinks write from Spark's Python workers, whose output Spark sends to the driver's stderr,
late and in no order with the runner's own lines; so lockgate's lines are its stdout and
stderr without Spark's and the JVM's own lines, and not attributed to an example.

Not run: the examples that need the Table API (``streaming_word_count``, ``asyncio/``:
PyFlink's ``pyflink.table`` is not lockgate's) or a broker or server (``connectors/``).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from pathlib import Path

from lockgate_it_support import FULL, spark_console_line
from pyflink_examples_support import (
    EXPECTED,
    lines,
    pyflink_python,
    recorded,
    run,
    run_on_pyflink,
    script_hashes,
    scripts,
)

_IMPORT = re.compile(r"^(\s*)(from|import) pyflink\b", re.MULTILINE)


def _lockgate_lines(stdout: str, stderr: str) -> Counter[str]:
    kept = [line for line in (stdout + stderr).splitlines() if not spark_console_line(line)]
    return lines("\n".join(kept))


def _recorded_for(paths: list[Path]) -> Counter[str]:
    hashes, printed = recorded()
    assert hashes == script_hashes(paths), (
        f"{EXPECTED.name} was recorded from other scripts: `make pyflink-examples-expected`"
    )
    assert sum(printed.values()) > 250  # every job printed its records (279)
    return printed


def _compare(expected: Counter[str], got: Counter[str], system: str) -> None:
    missing, extra = expected - got, got - expected
    assert not missing and not extra, (
        f"lines PyFlink printed and {system} did not: {sorted(missing.elements())[:20]}\n"
        f"lines {system} printed and PyFlink did not: {sorted(extra.elements())[:20]}"
    )


def test_every_datastream_example_prints_the_same_records_on_lockgate(tmp_path):
    originals = scripts(pyflink_python())
    expected = _recorded_for(originals)
    swapped = []
    for original in originals:
        target = tmp_path / "lockgate" / original.relative_to(original.parents[1])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_IMPORT.sub(r"\1\2 lockgate", original.read_text()))
        assert "from pyflink" not in target.read_text(), original  # every import swapped
        swapped.append(target)
    stdout, stderr = run(Path(sys.executable), swapped, dict(os.environ))
    _compare(expected, _lockgate_lines(stdout, stderr), "lockgate")


@FULL
def test_pyflink_prints_what_was_recorded():
    python = pyflink_python()
    paths = scripts(python)
    _compare(_recorded_for(paths), run_on_pyflink(python, paths), "this run of PyFlink")

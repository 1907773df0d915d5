"""PyFlink's own DataStream examples (``pyflink/examples/datastream`` of apache-flink 2.3.0)
run unchanged on lockgate, but for ``pyflink`` -> ``lockgate`` in their imports, and print
the same records as on PyFlink; so does ``pyflink_types_job.py``, which checks what each
declared type makes of a value and how ``print()`` writes it.

Both run in one process each (``pyflink_examples_runner.py``), at the same time. PyFlink
is the venv ``make test`` installs (``.venv/pyflink``), or ``$LOCKGATE_PYFLINK_PYTHON``.

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
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RUNNER = HERE / "pyflink_examples_runner.py"
PYFLINK_VERSION = "2.3.0"

EXAMPLES = [
    "word_count.py",
    "basic_operations.py",
    "state_access.py",
    "event_time_timer.py",
    "process_json_data.py",
    "windowing/tumbling_time_window.py",
    "windowing/sliding_time_window.py",
    "windowing/session_with_gap_window.py",
    "windowing/session_with_dynamic_gap_window.py",
    "windowing/tumbling_count_window.py",
]
# And one of ours, in PyFlink's terms: a value of each declared type across a shuffle.
TYPES_JOB = HERE / "pyflink_types_job.py"
NOT_RUN = {"streaming_word_count.py"}  # the Table API's datagen, unbounded
NOT_RUN_DIRS = {"connectors", "asyncio"}

# Spark's and the JVM's lines on lockgate's stderr (log4j's format, and what comes before
# the log level is set).
_LOG_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN|ERROR) ")
_STARTUP_LINES = (
    "WARNING: Using incubator modules:",
    "Using Spark's default log4j profile:",
    'Setting default log level to "WARN".',
    "To adjust logging level use sc.setLogLevel(newLevel).",
    'Setting Spark log level to "WARN".',  # on stdout, by Spark's JVM
)
_SUBTASK = re.compile(r"^\d+> ")
_IMPORT = re.compile(r"^(\s*)(from|import) pyflink\b", re.MULTILINE)


def _pyflink_python() -> Path:
    given = os.environ.get("LOCKGATE_PYFLINK_PYTHON")
    if given:
        return Path(given)
    venv = REPO / ".venv" / "pyflink"
    if not (venv / f".installed-{PYFLINK_VERSION}").exists():
        pytest.skip(
            f"PyFlink {PYFLINK_VERSION} is not installed: `make .venv/pyflink/.installed-"
            f"{PYFLINK_VERSION}` (part of `make test`) installs it, or set "
            "LOCKGATE_PYFLINK_PYTHON to a Python that has it"
        )
    return venv / "bin" / "python"


def _examples_dir(python: Path) -> Path:
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util as u; "
            "print(u.find_spec('pyflink').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(where.stdout.strip()) / "examples" / "datastream"


def _start(python: Path, scripts: list[Path], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(python), str(RUNNER), *map(str, scripts)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _lines(text: str) -> Counter[str]:
    return Counter(_SUBTASK.sub("", line) for line in text.splitlines() if line.strip())


def _lockgate_lines(stdout: str, stderr: str) -> Counter[str]:
    kept = [
        line
        for line in (stdout + stderr).splitlines()
        if not _LOG_LINE.match(line) and not line.startswith(_STARTUP_LINES)
    ]
    return _lines("\n".join(kept))


def test_every_datastream_example_prints_the_same_records_on_lockgate(tmp_path):
    pyflink = _pyflink_python()
    examples = _examples_dir(pyflink)
    present = {
        str(path.relative_to(examples))
        for path in examples.rglob("*.py")
        if path.parent.name not in NOT_RUN_DIRS and path.name != "__init__.py"
    }
    assert present - NOT_RUN == set(EXAMPLES), "an example is neither run nor said not to be"

    originals = [examples / name for name in EXAMPLES] + [TYPES_JOB]
    swapped = []
    for original in originals:
        target = tmp_path / "lockgate" / original.relative_to(original.parents[1])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_IMPORT.sub(r"\1\2 lockgate", original.read_text()))
        assert "from pyflink" not in target.read_text(), original  # every import swapped
        swapped.append(target)

    # PyFlink's Python workers start ``python``: the venv's, first on the PATH
    pyflink_env = {**os.environ, "PATH": f"{pyflink.parent}{os.pathsep}{os.environ['PATH']}"}
    on_pyflink = _start(pyflink, originals, pyflink_env)
    on_lockgate = _start(Path(sys.executable), swapped, dict(os.environ))
    pyflink_out, pyflink_err = on_pyflink.communicate(timeout=900)
    lockgate_out, lockgate_err = on_lockgate.communicate(timeout=900)

    assert "@@failed" not in pyflink_out, f"PyFlink itself failed:\n{pyflink_err[-3000:]}"
    assert on_pyflink.returncode == 0, pyflink_err[-3000:]
    assert "@@failed" not in lockgate_out, lockgate_err[-5000:]
    assert on_lockgate.returncode == 0, lockgate_err[-3000:]
    expected = _lines(pyflink_out)
    got = _lockgate_lines(lockgate_out, lockgate_err)
    assert sum(expected.values()) > 250  # every job printed its records (279)
    missing, extra = expected - got, got - expected
    assert not missing and not extra, (
        f"lines PyFlink printed and lockgate did not: {sorted(missing.elements())[:20]}\n"
        f"lines lockgate printed and PyFlink did not: {sorted(extra.elements())[:20]}"
    )

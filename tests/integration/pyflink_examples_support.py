"""What the PyFlink-examples test and its recorder share (not a test module).

PyFlink's DataStream examples (``pyflink/examples/datastream`` of apache-flink 2.3.0) and
``pyflink_types_job.py`` run in one process each (``pyflink_examples_runner.py``): on PyFlink
(the venv ``make test`` installs, ``.venv/pyflink``, or ``$LOCKGATE_PYFLINK_PYTHON``), or on
lockgate with ``pyflink`` swapped for ``lockgate`` in their imports. What PyFlink printed is
recorded in ``pyflink_examples_expected.json`` (``make pyflink-examples-expected``), with a
hash of each script it ran: PyFlink starts a JVM and a mini cluster per example, a minute
of CPU that `make test` spends only on lockgate's side; `make integration-full` runs PyFlink
again and compares it with the record.
"""

from __future__ import annotations

import hashlib
import json
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
EXPECTED = HERE / "pyflink_examples_expected.json"
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

_SUBTASK = re.compile(r"^\d+> ")
TIMEOUT_S = 900


def pyflink_python() -> Path:
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


def scripts(python: Path) -> list[Path]:
    """The scripts run: PyFlink's examples (checked to be all of those not said not to be
    run) and the types job."""
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
    examples = Path(where.stdout.strip()) / "examples" / "datastream"
    present = {
        str(path.relative_to(examples))
        for path in examples.rglob("*.py")
        if path.parent.name not in NOT_RUN_DIRS and path.name != "__init__.py"
    }
    assert present - NOT_RUN == set(EXAMPLES), "an example is neither run nor said not to be"
    return [examples / name for name in EXAMPLES] + [TYPES_JOB]


def script_hashes(paths: list[Path]) -> dict[str, str]:
    return {
        f"{path.parent.name}/{path.name}": hashlib.sha256(path.read_bytes()).hexdigest()
        for path in paths
    }


def run(python: Path, paths: list[Path], env: dict[str, str]) -> tuple[str, str]:
    """stdout and stderr of the runner on ``paths``; fails if an example failed."""
    done = subprocess.run(
        [str(python), str(RUNNER), *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT_S,
    )
    assert "@@failed" not in done.stdout, done.stderr[-5000:]
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def run_on_pyflink(python: Path, paths: list[Path]) -> Counter[str]:
    """The lines PyFlink prints running ``paths``."""
    # PyFlink's Python workers start ``python``: the venv's, first on the PATH
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ['PATH']}"}
    stdout, _ = run(python, paths, env)
    return lines(stdout)


def lines(text: str) -> Counter[str]:
    """The printed lines, without the ``N>`` prefix (which subtask prints a record depends
    on how each system spreads keys), as a multiset."""
    return Counter(_SUBTASK.sub("", line) for line in text.splitlines() if line.strip())


def recorded() -> tuple[dict[str, str], Counter[str]]:
    """The hashes of the scripts PyFlink ran, and the lines it printed."""
    record = json.loads(EXPECTED.read_text())
    assert record["pyflink"] == PYFLINK_VERSION, f"{EXPECTED.name} is of another PyFlink"
    return record["scripts"], Counter(record["lines"])


def record(python: Path) -> None:
    paths = scripts(python)
    printed = run_on_pyflink(python, paths)
    EXPECTED.write_text(
        json.dumps(
            {
                "pyflink": PYFLINK_VERSION,
                "scripts": script_hashes(paths),
                "lines": sorted(printed.elements()),
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":  # make pyflink-examples-expected
    record(Path(sys.argv[1]) if len(sys.argv) > 1 else pyflink_python())
    print(f"wrote {EXPECTED}")

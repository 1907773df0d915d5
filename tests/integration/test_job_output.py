"""A job run as a script prints its records and nothing else of lockgate's: no progress lines
(``lockgate.progress`` is off by default), no prints, and no log line at INFO or above for an
epoch, a checkpoint or a storage check, even with logging configured at INFO as PyFlink's
examples do (``plain_job.py``). That nothing reaches stderr while the application configures
no logging at all is ``tests/unit/test_logging.py``'s.

In local mode the print sink's records reach the driver's stderr, not its stdout: they are
written by Spark's Python workers, whose stdout PySpark's daemon points at its stderr, which
Spark's JVM copies to its own. Spark's and the JVM's own lines are left out.
"""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from lockgate_it_support import spark_console_line
from plain_job import RECORDS

JOB = Path(__file__).with_name("plain_job.py")
TIMEOUT_S = 600


def test_a_job_run_as_a_script_prints_its_records_and_no_line_of_lockgate(tmp_path):
    done = subprocess.run(
        [sys.executable, str(JOB), str(tmp_path / "work")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    output = [
        line
        for line in (done.stdout + done.stderr).splitlines()
        if line and not spark_console_line(line)
    ]
    logged = [line for line in output if line.startswith("@@log lockgate")]
    assert not logged, logged
    others = [line for line in output if not line.startswith("@@log ")]  # py4j's are not ours
    assert all(line.startswith(("plain:1> ", "plain:2> ")) for line in others), others
    printed = Counter(line.split("> ", 1)[1] for line in others)
    assert printed == Counter(str(v * 10) for v in range(RECORDS))

"""The soak test runs only when asked for: ``make soak`` (``pytest -m soak tests/soak``).

The test module is marked ``soak``; ``addopts`` in pyproject.toml deselects that marker
by default, so ``make test`` never starts it, and ``-m soak`` on the command line (the
last ``-m`` wins) selects it.
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession


@pytest.fixture(scope="session", autouse=True)
def stop_spark_at_the_end():
    """The first job starts the Spark session (from the job's ``spark.*`` settings); the
    tests of this directory share it, and it stops after the last one."""
    yield
    session = SparkSession.getActiveSession()
    if session is not None:
        session.stop()

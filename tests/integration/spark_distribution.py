"""A ``SPARK_HOME`` for tests that launch Spark's own scripts (not a test module).

The pip package of PySpark holds a Spark distribution's ``bin``, ``jars``, ``sbin`` and
``python``; scripts started from it write into it (executor work dirs, logs). A temporary
directory of symlinks to them keeps those writes out of the virtualenv.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyspark

PACKAGE = Path(pyspark.__file__).parent


def make_spark_home(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("bin", "jars", "sbin", "python"):
        link = directory / name
        if not link.exists():
            link.symlink_to(PACKAGE / name)
    (directory / "conf").mkdir(exist_ok=True)
    return directory


def clean_env(spark_home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without what would steer Spark's launch from outside
    the test (submit args, conf dir, master, bind address), with ``SPARK_HOME`` set."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key
        not in (
            "PYSPARK_SUBMIT_ARGS",
            "SPARK_CONF_DIR",
            "MASTER",
            "SPARK_LOCAL_IP",
            "PYSPARK_GATEWAY_PORT",
            "PYSPARK_PYTHON",
            "PYSPARK_DRIVER_PYTHON",
            "PYTHONPATH",
        )
    }
    env["SPARK_HOME"] = str(spark_home)
    env.update(extra)
    return env

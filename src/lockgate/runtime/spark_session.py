"""The Spark session lockgate runs on: an existing one, or an embedded local one."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from pyspark.sql import SparkSession

_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "lockgate",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
    "spark.speculation": "false",
}


def get_or_create_session(config: Mapping[str, str]) -> SparkSession:
    """Start (or join) the Spark session, passing ``spark.*`` keys through.

    Workers must run the driver's interpreter, or they miss lockgate and pyarrow; in local
    mode they also get the driver's ``sys.path`` so that functions defined in the user's
    modules can be unpickled there.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    settings = dict(_DEFAULTS)
    settings.update({k: v for k, v in config.items() if k.startswith("spark.")})
    if settings["spark.master"].startswith("local") and "PYTHONPATH" not in os.environ:
        paths = [p for p in sys.path if p and os.path.isdir(p)]
        settings.setdefault("spark.executorEnv.PYTHONPATH", os.pathsep.join(paths))
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session

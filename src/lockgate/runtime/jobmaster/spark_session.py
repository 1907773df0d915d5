"""The Spark session lockgate runs on: an existing one, or an embedded local one."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from lockgate.common.config_options import ConfigurationError

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


def check_session(conf: Any) -> None:
    """Refuse Spark settings lockgate cannot run under, before the job starts.

    ``conf`` is the session's ``SparkConf`` (anything with ``get(key, default)``).
    """
    if str(conf.get("spark.speculation", "false")).strip().lower() == "true":
        raise ConfigurationError(
            "Spark speculative execution (spark.speculation=true) is not supported yet: "
            "lockgate accepts the attempt of each subtask whose output an epoch used, but "
            "this has not been tested with speculative copies on a cluster; set "
            "spark.speculation=false for the session that runs lockgate jobs"
        )

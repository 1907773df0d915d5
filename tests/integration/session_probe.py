"""Starts lockgate's Spark session in a process of its own and prints what it got (not a
test; run by ``test_spark_session_precedence.py``).

    python session_probe.py LOCKGATE_SRC CONFIG_JSON

``LOCKGATE_SRC`` goes to the front of ``sys.path`` (not ``PYTHONPATH``, whose presence
would change lockgate's defaults); ``CONFIG_JSON`` holds the job configuration's keys.
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, sys.argv[1])

from lockgate.runtime.jobmaster.spark_session import get_or_create_session


def main() -> None:
    session = get_or_create_session(json.loads(sys.argv[2]))
    sc = session.sparkContext
    conf = sc.getConf()
    report = {
        "master": sc.master,
        "app": sc.appName,
        "progress": conf.get("spark.ui.showConsoleProgress"),
        "reuse": conf.get("spark.python.worker.reuse"),
        "log_level": conf.get("spark.log.level"),
        "executor_pythonpath": conf.get("spark.executorEnv.PYTHONPATH"),
        "jvm_local_ip": sc._jvm.java.lang.System.getenv("SPARK_LOCAL_IP"),
        "driver_host": conf.get("spark.driver.host"),
        "jvm_heap": [
            arg
            for arg in sc._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
            .getInputArguments()
            .toArray()
            if arg.startswith("-Xmx")
        ],
        "jvm_command": sc._jvm.java.lang.System.getProperty("sun.java.command"),
        "probe_secret": conf.get("spark.hadoop.lockgate.probe.secret"),
        "pyspark_python": os.environ.get("PYSPARK_PYTHON"),
        "python_ran": sc.parallelize([1, 2, 3], 1).map(lambda x: x * 2).collect(),
    }
    print("PROBE " + json.dumps(report), flush=True)
    session.stop()


if __name__ == "__main__":
    main()

"""A plain job, run as ``python plain_job.py WORK_DIR`` (not a test; run by
``test_job_output.py``). It configures logging at INFO on stdout, as PyFlink's own examples
do, checkpoints every epoch, and prints its records with the sink identifier ``plain``."""

from __future__ import annotations

import logging
import sys

from lockgate.common import Configuration
from lockgate.datastream import StreamExecutionEnvironment

RECORDS = 40
# How the test tells log lines from records
LOG_FORMAT = "@@log %(name)s %(levelname)s: %(message)s"

if __name__ == "__main__":
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format=LOG_FORMAT)
    config = Configuration()
    config.set_string("spark.ui.enabled", "false")
    config.set_string("lockgate.work-dir", sys.argv[1])
    config.set_string("lockgate.epoch.max-records-per-split", "10")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(2)
    env.enable_checkpointing(1)
    keyed = env.from_collection(list(range(RECORDS))).key_by(lambda v: v % 4)
    keyed.map(lambda v: v * 10).print("plain")
    env.execute("plain job")

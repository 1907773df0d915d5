"""A session lockgate starts forks its Python workers from lockgate's daemon
(``runtime/sparktask/python_daemon.py``): the worker's parent is that daemon, and Spark's
``pyspark.zip`` keeps its listing in the worker."""

from __future__ import annotations

import os
import sys
import zipimport
from pathlib import Path

from lockgate.runtime.sparktask import python_daemon


def _worker_facts(_):
    parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    kept = sorted(
        type(finder).__name__
        for finder in sys.path_importer_cache.values()
        if isinstance(finder, zipimport.zipimporter)
        and os.path.basename(finder.archive) == "pyspark.zip"
    )
    yield parent, kept


def test_workers_fork_from_lockgates_daemon(spark):
    parent, kept = spark.sparkContext.parallelize([0], 1).mapPartitions(_worker_facts).collect()[0]
    assert f"-m {python_daemon.__name__} " in parent
    assert kept and set(kept) == {"_SparkArchiveImporter"}, kept

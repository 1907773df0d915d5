"""The Python daemon of an executor that runs lockgate's tasks: PySpark's own
(``pyspark.daemon``), which forks a Python worker for Spark's tasks, with two changes made
before the first fork (``spark.python.daemon.module`` names this module; a session lockgate
starts sets it).

- What lockgate's Spark tasks run is imported once, here, instead of in every worker: a
  worker that ran a failed task exits, and its successor would otherwise import lockgate, its
  dependencies and half of PySpark again (from Spark's ``pyspark.zip``, which holds no
  compiled files), about a second of CPU each time.
- Spark's own zip archives (``pyspark.zip``, ``py4j-*.zip``) keep their directory listing.
  PySpark's worker calls ``importlib.invalidate_caches()`` before every task, and on Python
  3.11 a zip importer then reads its archive's directory again: for ``pyspark.zip``, thousands
  of entries, tens of milliseconds per task. These archives do not change while the executor
  lives; archives a job adds (``--py-files``) are invalidated as before.

If lockgate's dependencies are missing on this machine the imports are skipped: the task
then fails on the same import, where the storage check reports it.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
import zipimport


class _SparkArchiveImporter(zipimport.zipimporter):
    """A zip importer whose archive is Spark's and never changes under a running executor."""

    def invalidate_caches(self) -> None:
        pass


def _is_spark_archive(archive: str) -> bool:
    name = os.path.basename(archive)
    return name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith(".zip"))


def keep_spark_archive_listings() -> int:
    """Replace the import system's importers of Spark's archives; returns how many."""
    replaced = 0
    for path, finder in list(sys.path_importer_cache.items()):
        if type(finder) is zipimport.zipimporter and _is_spark_archive(finder.archive):
            sys.path_importer_cache[path] = _SparkArchiveImporter(path)
            replaced += 1
    return replaced


def preload() -> bool:
    """Import what lockgate's Spark tasks unpickle and run; False if something is missing."""
    try:
        import pyspark.worker  # noqa: F401  (what each forked worker runs)

        import lockgate.runtime.sparktask as sparktask
        import lockgate.state_processor.tasks as state_processor_tasks

        for package in (sparktask, state_processor_tasks):
            for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
                if module.name != __name__:
                    importlib.import_module(module.name)
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    preload()
    keep_spark_archive_listings()
    from pyspark import daemon

    daemon.manager()

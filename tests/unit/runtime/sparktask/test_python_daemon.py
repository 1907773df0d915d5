"""The executors' Python daemon: what it imports before it forks, and which zip importers keep
their listing (a worker runs in integration/test_python_daemon.py)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
import zipimport

from lockgate.runtime.sparktask import python_daemon


def test_only_sparks_own_archives_keep_their_listing(tmp_path, monkeypatch):
    archives = {}
    for name in ("pyspark.zip", "py4j-0.10.9.9-src.zip", "user-deps.zip"):
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("m.py", "x = 1\n")
        archives[name] = str(path)
    cache = {path: zipimport.zipimporter(path) for path in archives.values()}
    monkeypatch.setattr(sys, "path_importer_cache", {**sys.path_importer_cache, **cache})
    assert python_daemon.keep_spark_archive_listings() == 2
    kept = sys.path_importer_cache[archives["pyspark.zip"]]
    assert type(kept).__name__ == "_SparkArchiveImporter"
    assert type(sys.path_importer_cache[archives["user-deps.zip"]]) is zipimport.zipimporter
    # a kept importer still imports from its archive
    assert kept.find_spec("m") is not None


def test_preload_imports_every_task_module_in_a_fresh_interpreter():
    code = (
        "import sys\n"
        "from lockgate.runtime.sparktask import python_daemon\n"
        "assert python_daemon.preload()\n"
        "print(' '.join(m for m in sys.modules if m.startswith(('lockgate.', 'pyspark.'))))\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    for module in (
        "lockgate.runtime.sparktask.epoch_task",
        "lockgate.runtime.sparktask.routing",
        "lockgate.runtime.sparktask.storage_probe",
        "lockgate.runtime.sparktask.host_client",
        "lockgate.state_processor.tasks.state_files",
    ):
        assert module in loaded
    assert "pyspark.worker" in loaded  # what every forked worker runs
    assert not any(m.startswith("lockgate.runtime.jobmaster") for m in loaded), loaded

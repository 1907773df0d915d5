"""One Spark session for every integration test in the process (Spark is slow to start;
make test runs two such processes, pytest-xdist's workers).

``local[2,2]`` is two cores, like the ``local[2]`` of these machines, plus one retry per
task: local mode never retries a failed task otherwise, and some tests rely on retries.
Spark remembers every job of the session: ``SparkJobCounter`` reads the jobs a test started
by id, which Spark must not have forgotten meanwhile (all but the last 1000 by default).
"""

from __future__ import annotations

import pytest

from lockgate.common import Configuration
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.runtime.jobmaster.spark_session import get_or_create_session

SPARK_CONF = {
    "spark.master": "local[2,2]",
    "spark.ui.enabled": "false",
    "spark.driver.memory": "2g",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.retainedJobs": "1000000",
}


@pytest.fixture(scope="session")
def spark():
    session = get_or_create_session(SPARK_CONF)
    yield session
    session.stop()


@pytest.fixture
def backend():
    """The keyed state backend of ``make_env``'s jobs. Tests that must pass on every backend
    parametrize it: ``@BACKENDS`` (lockgate_it_support), which overrides this default.
    ``rocksdb-incremental`` is RocksDB with ``execution.checkpointing.incremental: true``."""
    return "hashmap"


@pytest.fixture
def make_env(spark, tmp_path, backend):
    """Build an environment on the shared session, with a per-test work dir."""

    def make(parallelism: int = 2, max_records_per_split: int = 1000, **settings: str):
        config = Configuration()
        config.set_string("lockgate.work-dir", str(tmp_path / "work"))
        backend_type, _, incremental = backend.partition("-")
        config.set_string("state.backend.type", backend_type)
        if incremental:
            config.set_string("execution.checkpointing.incremental", "true")
        config.set_integer("lockgate.epoch.max-records-per-split", max_records_per_split)
        for key, value in settings.items():
            config.set_string(key.replace("_", "."), str(value))
        env = StreamExecutionEnvironment.get_execution_environment(spark)
        env.configure(config)
        env.set_parallelism(parallelism)
        return env

    return make

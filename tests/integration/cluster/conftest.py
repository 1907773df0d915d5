"""A Spark standalone cluster for the tests of this directory: a master and two workers of one
core each, on Spark hosts 127.0.0.1 and 127.0.0.2, started once (about 10 s) and stopped
after the last test; a test that killed a worker gets it back before the next one. Jobs run
in driver processes of their own (one SparkContext per process): ``cluster_support.run_job``."""

from __future__ import annotations

import time

import pytest
from cluster_support import WORKERS
from standalone import StandaloneCluster


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"))
    started = time.monotonic()
    cluster.start(WORKERS)
    try:
        print(f"\nstandalone cluster up in {time.monotonic() - started:.1f} s: {cluster.url}")
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def cluster(standalone):
    standalone.ensure_workers(WORKERS)
    return standalone

"""Shared fixtures: one local Spark session per test process, started only when needed, and
the real servers the tests start themselves (a Kafka broker, PostgreSQL)."""

from __future__ import annotations

import os

import pytest

# The JVMs the tests start (Spark's, in this process and in the jobs and probes run as
# processes of their own) compile with C1 only: most live seconds, too short for C2's
# compilations (a core for the first minute) to pay back. Semantics do not change.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")


def pytest_collection_modifyitems(items):
    for item in items:
        if "/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kafka_broker():
    """One Kafka-protocol broker per test process (``kafka_broker.KafkaBroker``)."""
    from kafka_broker import KafkaBroker

    broker = KafkaBroker().start()
    yield broker
    broker.close()


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL server per test process (``postgres_server.PostgresServer``)."""
    from postgres_server import PostgresServer

    server = PostgresServer().start()
    yield server
    server.close()

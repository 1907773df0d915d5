"""What the exactly-once sink tests write and read back: ``split,i,count`` lines as rows of a
PostgreSQL table and as records of a Kafka topic (not a test module)."""

from __future__ import annotations

import uuid
from collections import Counter


def new_lines_table(server) -> str:
    """A table for lines, without a key: a row written twice stays twice."""
    table = f"lines_{uuid.uuid4().hex[:8]}"
    server.execute(f"CREATE TABLE {table} (split int, i int, n int)")
    return table


def table_lines(server, table: str) -> Counter:
    return Counter(f"{s},{i},{n}" for s, i, n in server.query(f"SELECT split, i, n FROM {table}"))


def topic_lines(broker, topic: str, partitions: int) -> Counter:
    """Every committed record of ``topic``, as a read_committed consumer reads them."""
    return Counter(value for _, value, _ in broker.read(topic, partitions, committed=True))

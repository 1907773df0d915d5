"""What the exactly-once sink tests write and read back: ``split,i,count`` lines as rows of a
PostgreSQL table, as records of a Kafka topic, as rows of Parquet files and of a Delta table
(not a test module)."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from lockgate.common import Row, Types

#: a line as a row
LINE_ROW = Types.ROW_NAMED(["split", "i", "n"], [Types.INT(), Types.LONG(), Types.LONG()])


def line_row(line: str) -> Row:
    """A ``split,i,count`` line as a row of ``LINE_ROW``."""
    return Row(*(int(x) for x in line.split(",")))


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


def parquet_lines(path: Path) -> Counter:
    """Every row of the committed Parquet files under ``path`` (pyarrow skips hidden ones)."""
    if not path.exists() or not any(path.iterdir()):
        return Counter()
    return Counter(f"{r['split']},{r['i']},{r['n']}" for r in pq.read_table(path).to_pylist())


def delta_lines(path: Path) -> Counter:
    """Every row of the Delta table at ``path``, as delta-rs reads its latest version."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(str(path)):
        return Counter()
    rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
    return Counter(f"{r['split']},{r['i']},{r['n']}" for r in rows)

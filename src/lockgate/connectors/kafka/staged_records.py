"""What the exactly-once Kafka sink stages: one file of records per subtask and epoch, and
its committable.

A writer cannot leave a Kafka transaction open for a later process to commit (Python's
clients cannot resume another producer's transaction), so it stages the epoch's encoded
records in a file under the job's storage (Arrow IPC: topic, key, value) and the commit
produces them in one transaction. The file is named in the attempt's staging record before
it exists, and deleted once its records are committed, or aborted.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from fsspec.core import url_to_fs

from lockgate.common.records import Record
from lockgate.connectors.kafka.sink import KafkaSinkError
from lockgate.core.two_phase_commit import commit_version, read_committable

_SCHEMA = pa.schema([("topic", pa.string()), ("key", pa.binary()), ("value", pa.binary())])
#: the directory of a sink's staged files under the job's sink-files directory
DIRECTORY = "kafka"
SUFFIX = ".records"


@dataclass(frozen=True)
class KafkaCommittable(Record):
    """The records one subtask staged in ``epoch``, to be produced in a transaction of
    ``transactional_id``; the commit that produces them records ``marker`` as the offset of
    ``marker_group`` in the same transaction, so a commit done before is never redone."""

    uid: str  # the sink's
    epoch: int
    generation: int  # the job's restores before the epoch ran (see ``marker``)
    file: str  # URL
    records: int
    transactional_id: str
    marker_group: str

    @property
    def marker(self) -> int:
        """The offset that marks this epoch committed. After a restore the job runs epoch
        numbers again (a restore that had to fall back to an older checkpoint even re-runs
        committed ones, with other input): the generation keeps them apart, newer."""
        return commit_version(self.generation, self.epoch)

    @classmethod
    def read(cls, raw: Any) -> KafkaCommittable:
        return read_committable(cls, raw, KafkaSinkError, "KafkaSink")


def write_records(url: str, topics: list[str], keys: list[Any], values: list[Any]) -> None:
    """Write the records to the new file ``url``. Straight under its name, not through a
    temporary one: the attempt's staging record names it, so whatever a killed attempt
    left there is deleted with the rest of what it staged."""
    fs, path = url_to_fs(url)
    fs.makedirs(posixpath.dirname(path), exist_ok=True)
    table = pa.table([topics, keys, values], schema=_SCHEMA)
    with fs.open(path, "wb") as out, pa.ipc.new_file(out, _SCHEMA) as writer:
        writer.write_table(table)


def read_records(url: str) -> pa.Table:
    fs, path = url_to_fs(url)
    try:
        with fs.open(path, "rb") as source:
            table = pa.ipc.open_file(source).read_all()
    except FileNotFoundError:  # the caller knows whether that is a loss
        raise
    except (OSError, pa.ArrowInvalid) as exc:
        raise KafkaSinkError(f"staged Kafka records {url} cannot be read: {exc}") from None
    if not table.schema.equals(_SCHEMA):
        raise KafkaSinkError(f"staged Kafka records {url} are not the sink's: {table.schema}")
    return table

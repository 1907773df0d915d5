"""How a job's keyed state is kept: the backend and its settings, the same in every task."""

from __future__ import annotations

import os
from dataclasses import dataclass

from lockgate.common.records import Record
from lockgate.state.rocksdb import RocksDBSettings


@dataclass(frozen=True)
class KeyedStateSettings(Record):
    backend: str  # manifests.HASHMAP or manifests.ROCKSDB
    job_id: str
    incremental: bool
    local_dirs: tuple[str, ...]  # empty: Spark's local directory of the application
    rocksdb: RocksDBSettings

    def job_local_dirs(self) -> list[str]:
        """This job's RocksDB directories on the local disk of the calling process."""
        roots = self.local_dirs
        if not roots:
            from pyspark import SparkFiles

            roots = (SparkFiles.getRootDirectory(),)
        return [f"{root}/{instances_directory()}/{self.job_id}" for root in roots]


def instances_directory() -> str:
    """The directory of this user's RocksDB instances in a local directory (private to the
    user: ``RocksDBRestoreOperation`` creates it 0700, or refuses another's)."""
    return f"lockgate-rocksdb-{os.getuid()}"

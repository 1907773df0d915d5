"""The Parquet files already under a sink's base path, checked against the schema the sink
writes, on the driver before the job starts: a directory whose files do not share a schema is
one no reader can read as a table (Spark takes one footer's schema, or fails merging them).
Only footers are read, of the newest ``CHECKED_FILES`` files (every start of a job would
otherwise read a footer per file the sink ever wrote); an older file of another schema goes
unnoticed.

The check is exact: each of the sink's columns must be in the file with the type the sink's
own files have. A column that would only widen (``int32`` where the sink writes ``int64``) is
refused: Spark without a declared schema fails on the directory
(``PARQUET_COLUMN_DATA_TYPE_MISMATCH``), and so does pyarrow's dataset. Extra columns of a
file are accepted: both readers read a file without a column of the schema they chose as
nulls, and drop a file's column that schema lacks."""

from __future__ import annotations

import datetime
import heapq
import io
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.core import url_to_fs


class ParquetOutputError(ValueError):
    """Files under a Parquet sink's base path that the sink cannot write next to."""


#: the footers read before a job: those of the newest files, since files of another schema
#: come from an earlier run with another row type or from another writer, and every run of
#: the sink writes newer files than those
CHECKED_FILES = 64
#: what file systems' listings call a file's modification time (local and HDFS: mtime; S3:
#: LastModified; Azure: last_modified; GCS: updated; in-memory: created)
_TIME_KEYS = ("mtime", "LastModified", "last_modified", "updated", "created")


def newest_visible_files(base_path: str, suffix: str, count: int) -> list[str]:
    """The ``count`` most recently modified visible files under ``base_path`` (no part of
    their path below it starts with '.' or '_') whose names end with ``suffix``, as paths of
    its file system, newest first."""
    fs, root = url_to_fs(base_path)
    root = root.rstrip("/")
    if not fs.isdir(root):
        return []
    found = []
    for path, info in fs.find(root, detail=True).items():
        relative = path[len(root) :].strip("/").split("/")
        if not any(part.startswith((".", "_")) for part in relative) and path.endswith(suffix):
            found.append((_modified(info), path))
    return [path for _, path in heapq.nlargest(count, found)]


def _modified(info: dict[str, Any]) -> float:
    """A listed file's modification time in seconds (0 when the listing has none)."""
    for key in _TIME_KEYS:
        value = info.get(key)
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value).timestamp()
            except ValueError:
                continue
    return 0.0


def check_existing_files(base_path: str, suffix: str, schema: pa.Schema) -> None:
    """Refuse a visible file under ``base_path`` named like the sink's parts (ending with
    ``suffix``), among the ``CHECKED_FILES`` newest, that is not Parquet, or that lacks a
    column of ``schema`` or has it with another type than the sink's files have."""
    fs, _ = url_to_fs(base_path)
    written = _as_written(schema)
    paths = newest_visible_files(base_path, suffix, CHECKED_FILES)
    with ThreadPoolExecutor(max_workers=8) as pool:  # footers of an object store: requests
        footers = list(pool.map(lambda path: _footer(fs, path), paths))
    for path, have in zip(paths, footers, strict=True):
        url = fs.unstrip_protocol(path) if "://" in base_path else path
        if isinstance(have, Exception):
            raise ParquetOutputError(
                f"the Parquet sink's base path {base_path} holds {url}, which is not a Parquet "
                f"file ({have}): readers of the directory would fail on it"
            )
        problem = _difference(have, written)
        if problem:
            raise ParquetOutputError(
                f"the Parquet sink's row type does not match a file already under its base "
                f"path: existing file {url} {problem}; readers of the directory would fail on "
                "the two kinds of files: write to another directory, or declare the files' "
                "schema"
            )


def _footer(fs: Any, path: str) -> pa.Schema | Exception:
    try:
        with fs.open(path, "rb") as handle:
            return pq.read_schema(handle)
    except (pa.ArrowInvalid, OSError) as exc:
        return exc


def _as_written(schema: pa.Schema) -> pa.Schema:
    """``schema`` as a Parquet file of it reads back (a list's element is named
    ``element`` in the file, for one), so that footers compare with what the sink writes."""
    buffer = io.BytesIO()
    pq.write_table(schema.empty_table(), buffer)
    return pq.read_schema(io.BytesIO(buffer.getvalue()))


def _difference(have: pa.Schema, want: pa.Schema) -> str:
    """How a file's schema ``have`` differs in ``want``'s columns ("" when it does not)."""
    for field in want:
        index = have.get_field_index(field.name)
        if index < 0:
            return f"has no column '{field.name}' (its columns: {', '.join(have.names)})"
        if have.field(index).type != field.type:
            return (
                f"has the column '{field.name}' as {have.field(index).type}; the sink writes "
                f"{field.type}"
            )
    return ""

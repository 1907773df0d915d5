"""The Parquet files already under a sink's base path, checked against the schema the sink
writes, on the driver before the job starts: a directory whose files do not share a schema is
one no reader can read as a table (Spark takes one footer's schema, or fails merging them).
Only footers are read."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.core import url_to_fs

from lockgate.common.arrow_rows import ArrowTypeError, check_columns


class ParquetOutputError(ValueError):
    """Files under a Parquet sink's base path that the sink cannot write next to."""


def visible_files(base_path: str, suffix: str) -> list[str]:
    """The visible files under ``base_path`` (no part of their path below it starts with '.'
    or '_') whose names end with ``suffix``, as paths of its file system."""
    fs, root = url_to_fs(base_path)
    root = root.rstrip("/")
    if not fs.isdir(root):
        return []
    found = []
    for path in sorted(fs.find(root)):
        relative = path[len(root) :].strip("/").split("/")
        if not any(part.startswith((".", "_")) for part in relative) and path.endswith(suffix):
            found.append(path)
    return found


def check_existing_files(base_path: str, suffix: str, schema: pa.Schema) -> None:
    """Refuse a visible file under ``base_path`` named like the sink's parts (ending with
    ``suffix``) that is not Parquet, or whose columns cannot be read as ``schema``'s."""
    fs, _ = url_to_fs(base_path)
    for path in visible_files(base_path, suffix):
        url = fs.unstrip_protocol(path) if "://" in base_path else path
        try:
            with fs.open(path, "rb") as handle:
                have = pq.read_schema(handle)
        except (pa.ArrowInvalid, OSError) as exc:
            raise ParquetOutputError(
                f"the Parquet sink's base path {base_path} holds {url}, which is not a Parquet "
                f"file ({exc}): readers of the directory would fail on it"
            ) from None
        try:
            check_columns(have, schema, f"existing file {url}")
        except ArrowTypeError as exc:
            raise ParquetOutputError(
                f"the Parquet sink's row type does not match a file already under its base "
                f"path: {exc}; write to another directory, or declare the files' schema"
            ) from None

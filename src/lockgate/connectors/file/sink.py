"""``FileSink`` as the job graph holds it: records written to part files under a base path,
per bucket, in a row format (an ``Encoder``) or a bulk format (a ``BulkWriterFactory``, such
as Parquet's): ``part_format.py``.

Records go to hidden in-progress files (``.part-...inprogress.<id>``) so readers of the
directory never see partial output. At the end of every epoch each in-progress file is
closed and becomes pending; it is renamed to its final name ``<prefix>-<writer>-<n><suffix>``
at once (at-least-once, or no checkpointing), or when the checkpoint covering the epoch
completes (exactly-once). ``<writer>`` is a random id of the writer instance (as in Flink's
FileSink): a run into the same directory again, a restart without state, or an epoch run a
second time writes new names, and a commit never replaces a file that exists.

Subtask hosts write the part files (``writer.py``); the driver commits them when a checkpoint
completes (``committer.py``); a part's committable and its commit (``committable.py``) serve
both, since without exactly-once the writer publishes its parts itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from fsspec.core import url_to_fs

from lockgate.connectors.file.part_format import PartFormat

_JAVA_PATTERN = (
    ("yyyy", "%Y"),
    ("MM", "%m"),
    ("dd", "%d"),
    ("HH", "%H"),
    ("mm", "%M"),
    ("ss", "%S"),
)


class SinkError(RuntimeError):
    """A sink cannot write where it was told to."""


@dataclass(frozen=True)
class BucketAssigner:
    """Which sub-directory of the base path a record goes to."""

    date_format: str | None = None  # None: the base path itself
    timezone_id: str | None = None

    def strftime_pattern(self) -> str:
        pattern = self.date_format or ""
        for java, python in _JAVA_PATTERN:
            pattern = pattern.replace(java, python)
        return pattern


@dataclass(frozen=True)
class FileSinkSettings:
    base_path: str
    part_format: PartFormat
    part_prefix: str = "part"
    part_suffix: str = ""
    part_size: int = 128 * 1024 * 1024
    bucket_assigner: BucketAssigner = BucketAssigner("yyyy-MM-dd--HH")

    def validate(self) -> None:
        """On the driver before the job: part names that are visible files of the bucket
        directory, a base path that is writable and holds nothing the format cannot write
        next to."""
        self._check_part_names()
        fs, root = url_to_fs(self.base_path)
        probe = f"{root.rstrip('/')}/.lockgate-probe-{uuid.uuid4().hex}"
        try:
            fs.makedirs(root, exist_ok=True)
            fs.pipe_file(probe, b"")
            fs.rm(probe)
        except OSError as exc:
            raise SinkError(
                f"FileSink base path is not writable: {self.base_path} ({exc})"
            ) from exc
        self.part_format.check_output(self.base_path, self.part_suffix)

    def _check_part_names(self) -> None:
        """Committed parts are named ``<prefix>-<writer>-<n><suffix>`` inside their bucket:
        a prefix starting with '.' or '_' would make them hidden files, which readers skip
        (and which the sink itself takes for its in-progress files), and a '/' would put
        them in a directory that does not exist."""
        prefix, suffix = self.part_prefix, self.part_suffix
        problem = ""
        if prefix.startswith((".", "_")):
            problem = f"part prefix {prefix!r} starts with {prefix[0]!r}: readers skip such files"
        for what, value in (("part prefix", prefix), ("part suffix", suffix)):
            if "/" in value or "\\" in value:
                problem = f"{what} {value!r} holds a path separator: a part is a file name"
        if problem:
            raise SinkError(f"FileSink's OutputFileConfig: the {problem}")

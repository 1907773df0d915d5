"""A FileSink part awaiting its commit, and the commit itself: a no-clobber rename that is
safe to repeat (after a crash between a checkpoint's completion and its commit, the restore
commits again).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fsspec.core import url_to_fs
from fsspec.implementations.local import LocalFileSystem

from lockgate.common.records import Record
from lockgate.connectors.file.sink import SinkError
from lockgate.core.two_phase_commit import read_committable


@dataclass(frozen=True)
class PartCommittable(Record):
    """A pending part file of one epoch and the name it gets when committed."""

    epoch: int
    pending: str  # URL of the hidden pending file
    final: str  # URL it is committed to
    size: int  # bytes: a final file of another size is not this part

    @classmethod
    def read(cls, raw: Any) -> PartCommittable:
        """The committable in ``raw``; a damaged one is a ``SinkError``."""
        return read_committable(cls, raw, SinkError, "FileSink")


def commit_part(part: PartCommittable) -> None:
    """Make one pending part file visible; safe to repeat (Flink's committers must be).

    Never replaces a file: if the final name exists, it must be this very part (committed
    before, its pending file not yet removed; or a copy of it cut short on a file system that
    copies to rename), otherwise the commit fails naming the file.
    """
    fs, pending = url_to_fs(part.pending)
    _, final = url_to_fs(part.final)
    if fs.exists(pending):
        if fs.exists(final):
            _settle_existing(fs, pending, final, part)
            return
        _publish(fs, pending, final, part)
    elif not fs.exists(final):
        raise SinkError(
            f"FileSink cannot commit {part.final}: its pending file {part.pending} is gone"
        )
    elif fs.size(final) != part.size:
        raise _clobber_error(part, fs.size(final))


def _publish(fs: Any, pending: str, final: str, part: PartCommittable) -> None:
    if isinstance(fs, LocalFileSystem):
        try:
            os.link(pending, final)  # fails if the name exists: never replaces a file
        except FileExistsError:
            _settle_existing(fs, pending, final, part)
            return
        os.unlink(pending)
    else:
        fs.mv(pending, final)


def _settle_existing(fs: Any, pending: str, final: str, part: PartCommittable) -> None:
    final_data, pending_data = fs.cat_file(final), fs.cat_file(pending)
    if final_data == pending_data:
        fs.rm(pending)  # committed before; only the pending file was left
    elif len(final_data) < len(pending_data) and pending_data.startswith(final_data):
        fs.rm(final)  # an interrupted copy of this part, never complete, never committed
        _publish(fs, pending, final, part)
    else:
        raise _clobber_error(part, len(final_data))


def _clobber_error(part: PartCommittable, size: int) -> SinkError:
    return SinkError(
        f"FileSink cannot commit {part.final}: a file of other content ({size} bytes, the "
        f"part has {part.size}) exists under that name, and committed files are never replaced"
    )

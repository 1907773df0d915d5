"""The job graph as it crosses from the driver to the subtask hosts.

The graph holds the user's functions, so it is cloudpickled; in front of the pickle goes a
JSON header line with the format, its version and the lockgate version that built it. A host
reads the header before it unpickles anything: a driver and executors with different lockgate
versions (a cluster whose executors kept an older install) fail on a message naming both,
not on an attribute missing somewhere inside the pickle.
"""

from __future__ import annotations

import json
from pickle import loads

from lockgate.common import version
from lockgate.graph.job_graph import JobGraph

FORMAT = "lockgate-job-graph"
VERSION = 1


class JobGraphVersionError(RuntimeError):
    """The graph was built by another lockgate version than the one reading it."""


def ship(pickled: bytes) -> bytes:
    """A cloudpickled ``JobGraph`` with its header, as the driver sends it."""
    header = {"format": FORMAT, "version": VERSION, "lockgate": version.__version__}
    return json.dumps(header, separators=(",", ":")).encode() + b"\n" + pickled


def read_shipped(data: bytes, where: str) -> JobGraph:
    """The graph ``ship`` wrote; ``where`` names the reader in errors."""
    line, _, pickled = data.partition(b"\n")
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise JobGraphVersionError(f"{where}: what the driver sent is not a lockgate job graph")
    built_by = header.get("lockgate")
    if built_by != version.__version__ or header.get("version") != VERSION:
        raise JobGraphVersionError(
            f"{where}: the job graph was built by lockgate {built_by} (graph format "
            f"{header.get('version')}) on the driver, but this executor runs lockgate "
            f"{version.__version__} (graph format {VERSION}): install the same lockgate "
            "on the driver and on every executor"
        )
    job = loads(pickled)  # cloudpickled by the driver; plain pickle reads it
    if not isinstance(job, JobGraph):
        raise JobGraphVersionError(f"{where}: the driver sent a {type(job).__name__}, not a graph")
    return job

"""The job graph a host reads: its header is checked before anything is unpickled."""

from __future__ import annotations

import json
import pickle

import pytest

from lockgate.common import version
from lockgate.graph.job_graph import JobGraph
from lockgate.graph.shipped_graph import JobGraphVersionError, read_shipped, ship

WHERE = "subtask 1 of task 2"


def test_a_shipped_graph_reads_back():
    graph = JobGraph([], [], batch=True, job_parameters={"a": "b"})
    read = read_shipped(ship(pickle.dumps(graph)), WHERE)
    assert read.batch and read.job_parameters == {"a": "b"}


def test_another_lockgate_version_fails_naming_both(monkeypatch):
    shipped = ship(pickle.dumps(JobGraph([], [])))
    built_by = version.__version__
    monkeypatch.setattr(version, "__version__", "9.9.9")
    with pytest.raises(JobGraphVersionError) as info:
        read_shipped(shipped, WHERE)
    message = str(info.value)
    assert message.startswith(WHERE)
    assert f"built by lockgate {built_by} " in message
    assert "runs lockgate 9.9.9" in message


def test_another_graph_format_fails_before_unpickling():
    header = {"format": "lockgate-job-graph", "version": 99, "lockgate": version.__version__}
    # the payload would fail to unpickle: the header check must come first
    data = json.dumps(header).encode() + b"\n" + b"not a pickle"
    with pytest.raises(JobGraphVersionError, match="graph format 99"):
        read_shipped(data, WHERE)


def test_a_bare_pickle_is_refused():
    with pytest.raises(JobGraphVersionError, match="not a lockgate job graph"):
        read_shipped(pickle.dumps(JobGraph([], [])), WHERE)

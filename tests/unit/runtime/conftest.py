"""``cluster``: a factory of in-process clusters (see epoch_harness), disposed after the test."""

from __future__ import annotations

import pytest
from epoch_harness import Cluster


@pytest.fixture
def cluster(tmp_path, monkeypatch):
    made: list[Cluster] = []

    def make(records, **kw) -> Cluster:
        made.append(Cluster(tmp_path / f"cluster{len(made)}", monkeypatch, records, **kw))
        return made[-1]

    yield make
    for c in made:
        c.close()

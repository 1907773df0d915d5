"""A subtask host keeps using its subtask only if it is the version the driver accepted.

Several versions of subtask n can end epoch n-1 on different workers: a retry, a speculative
copy, a run of the epoch that a checkpoint timeout cancelled. Only the one whose ack the
driver read is the state of epoch n-1; the others must be rebuilt from its manifest.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from epoch_harness import HASHMAP, ROCKSDB, Cluster

from lockgate.state.rocksdb import RocksDBKeyedStateBackend

ONE_KEY = [(0, n) for n in range(40)]
THREE_KEYS = [(n % 3, n) for n in range(40)]


@contextlib.contextmanager
def compacting_before_snapshots(monkeypatch):
    """RocksDB instances compact all their files just before snapshots taken in the block
    (as a background compaction that finished in time would): two attempts of an epoch then
    leave different file sets."""
    snapshot = RocksDBKeyedStateBackend.checkpoint_to

    def compact_then_snapshot(self, directory):
        self.write_back()
        self.db.flush()
        self.db.compact_range(None, None)
        return snapshot(self, directory)

    with monkeypatch.context() as patch:
        patch.setattr(RocksDBKeyedStateBackend, "checkpoint_to", compact_then_snapshot)
        yield


def test_the_accepted_version_stays_in_memory_for_the_next_epoch(cluster):
    c: Cluster = cluster(THREE_KEYS)
    assert c.epoch("w1").restored
    assert not c.epoch("w1").restored  # same worker, the version the driver accepted
    assert c.epoch("w2").restored
    assert c.accepted_counts() == {0: 10, 1: 10, 2: 10}


def test_a_losing_attempt_of_the_last_epoch_is_rebuilt_not_reused(cluster, monkeypatch):
    """Epoch 2 ends twice: on w2 (a speculative copy, whose ack is replaced) and on w1, whose
    instance compacted before its snapshot. The driver accepts w1's ack and deletes the epoch-1
    SST that only w2's instance still lists. Epoch 3 lands on w2: it must restore epoch 2's
    manifest, not snapshot its own instance (which references the deleted file)."""
    c: Cluster = cluster(THREE_KEYS)
    c.epoch("w1")
    epoch_1_ssts = {url for url, _ in c.manifest().handles() if url.endswith(".sst")}
    second = c.begin_epoch()
    second.run("w2", attempt_number=1)
    with compacting_before_snapshots(monkeypatch):
        second.run("w1", attempt_number=0)
    second.accept()
    assert epoch_1_ssts.isdisjoint(url for url, _ in c.manifest().handles())
    assert c.missing_files() == []

    ack = c.epoch("w2")

    assert c.missing_files() == []
    assert c.accepted_counts() == {0: 10, 1: 10, 2: 10}
    assert ack.restored


@pytest.mark.parametrize("backend", [ROCKSDB, HASHMAP])
def test_an_epoch_run_again_after_a_timeout_does_not_reuse_the_cancelled_run(cluster, backend):
    """The driver cancels epoch 2 (checkpoint timeout) after w1 finished it over 10 records,
    and runs it again over 5 records on w2. Epoch 3 lands on w1, which still holds the
    cancelled run's subtask at epoch 2: reusing it would count records 10-14 twice."""
    c: Cluster = cluster(ONE_KEY, backend=backend)
    c.epoch("w1", max_records=10)
    cancelled = c.begin_epoch(max_records=10)
    cancelled.run("w1")  # its ack is never read
    c.epoch("w2", max_records=5)

    ack = c.epoch("w1", max_records=5)

    assert c.accepted_counts() == {0: 20}
    assert ack.restored


def test_a_new_run_of_the_job_starts_after_the_previous_run_is_released(cluster):
    c: Cluster = cluster(THREE_KEYS)
    c.epoch("w1")
    [held] = c.live("w1").values()
    c.restart()

    c.epoch("w1")

    assert c.workers["w1"].runs() == ["job#1"]
    assert held.backend.db is None  # closed
    assert not Path(held.backend.path).exists()
    assert len(c.instance_dirs("a")) == 1  # the new run's


def test_releasing_a_run_keeps_the_subtasks_of_other_jobs(cluster):
    c: Cluster = cluster(THREE_KEYS, job_id="job")
    other: Cluster = cluster(THREE_KEYS, job_id="other", workers=c.workers)
    other.epoch("w1")
    [kept] = other.live("w1").values()
    c.epoch("w1")
    c.restart()

    c.epoch("w1")

    assert c.workers["w1"].runs() == ["job#1", "other#0"]
    assert kept.backend.db is not None
    assert not other.epoch("w1").restored

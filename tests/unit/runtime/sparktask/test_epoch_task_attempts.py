"""Each task attempt writes state files of its own, named by Spark's task attempt id.

A resubmitted stage counts attempt numbers from 0 again, so two attempts of one subtask in
one epoch can both be attempt 0. Had they written the same paths, the one finishing last
would replace the other's files in storage while the other's host keeps a local snapshot
that maps those URLs to its own, different files.
"""

from __future__ import annotations

from epoch_harness import Cluster

from lockgate.runtime.messages.acknowledgement import SubtaskAck

SEVEN_KEYS = [(n % 7, n) for n in range(60)]


def own_files(ack: SubtaskAck) -> set[str]:
    """URLs of the files an attempt wrote itself (SSTs of earlier epochs are shared)."""
    return {h.url for name, h in ack.state.changes.files.items() if not name.endswith(".sst")}


def test_attempts_numbered_alike_write_files_of_their_own(cluster):
    c: Cluster = cluster(SEVEN_KEYS)
    c.epoch("w0", host="c", max_records=20)
    second = c.begin_epoch(max_records=20)

    first_ack = second.run("w1", host="a", attempt_number=0)
    resubmitted_ack = second.run("w2", host="b", attempt_number=0)

    assert own_files(first_ack)
    assert own_files(first_ack).isdisjoint(own_files(resubmitted_ack))
    assert first_ack.state.changes.snapshot != resubmitted_ack.state.changes.snapshot


def test_a_fresh_worker_restores_on_the_host_of_the_attempt_that_lost(cluster):
    """Epoch 2 ends on host a (stage attempt 0) and on host b (the resubmitted stage, also
    attempt 0), whose ack is accepted. Epoch 3 runs on a new worker of host a: it builds the
    instance from host a's local snapshot where that holds the accepted files."""
    c: Cluster = cluster(SEVEN_KEYS)
    c.epoch("w0", host="c", max_records=20)
    second = c.begin_epoch(max_records=20)
    second.run("w1", host="a", attempt_number=0)
    second.run("w2", host="b", attempt_number=0)
    second.accept()

    ack = c.epoch("w3", host="a", max_records=20)

    assert ack.restored
    assert c.accepted_counts() == {key: 60 // 7 + (key < 60 % 7) for key in range(7)}

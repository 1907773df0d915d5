"""SubtaskPlacement: where the acks say each subtask lives, asked for only while the
subtasks are spread over several Spark hosts."""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.runtime.jobmaster.placement import SubtaskPlacement


@dataclass
class Ack:  # the fields of SubtaskAck that placement reads
    vertex: int
    subtask: int
    location: str


def test_one_spark_host_asks_for_nothing():
    placement = SubtaskPlacement()
    assert placement.locations(1, 2) is None  # nothing known yet
    placement.record([Ack(0, 0, "10.0.0.1"), Ack(1, 0, "10.0.0.1"), Ack(1, 1, "10.0.0.1")])
    assert placement.locations(1, 2) is None


def test_local_mode_acks_name_no_host():
    placement = SubtaskPlacement()
    placement.record([Ack(0, 0, ""), Ack(0, 1, "")])
    assert placement.hosts == {}


def test_spread_subtasks_ask_for_their_hosts_and_follow_moves():
    placement = SubtaskPlacement()
    placement.record([Ack(0, 0, "a"), Ack(0, 1, "b"), Ack(1, 0, "b")])
    assert placement.locations(0, 2) == ["a", "b"]
    assert placement.locations(1, 2) == ["b", None]  # subtask 1 of task 1 not seen yet
    placement.record([Ack(0, 0, "b"), Ack(1, 1, "a")])  # Spark ran subtask 0 elsewhere
    assert placement.locations(0, 2) == ["b", "b"]
    assert placement.locations(1, 2) == ["b", "a"]

"""SubtaskAck: one file per attempt, validated when the driver reads it."""

from __future__ import annotations

import json

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.core.fs.storage import Storage
from lockgate.core.source import SplitProgress
from lockgate.runtime.messages.acknowledgement import SubtaskAck, ack_name
from lockgate.runtime.messages.metric_value import (
    CounterValue,
    DistributionValue,
    GaugeValue,
    MeterValue,
)
from lockgate.state.manifests import FileHandle, KeyedStateSnapshot, RocksDBManifest


def an_ack(**changes) -> SubtaskAck:
    values = dict(
        vertex=1,
        subtask=2,
        epoch=5,
        run="job#0",
        attempt="e5-g0t5a17",
        records_in=40,
        source_progress={"0": SplitProgress(812, False), "1": SplitProgress(40, True)},
        state=KeyedStateSnapshot(
            RocksDBManifest({"count": "value"}, {"000009.sst": FileHandle("file:///s/9", 77)}, "t"),
            77,
            3,
        ),
        operators={"sink": {"next_part": 3}},
        watermarks={"sink": 1200, "source": 9000},
        next_timer_in_ms=1_500,
        restored=False,
        location="10.0.0.7",
        duration_ms=12.5,
        consumed={"0/0": "e5-g0t5a11"},
        metrics={
            "map": {
                "numRecordsIn": CounterValue(40),
                "orders.late": MeterValue(7, 0.25),
                "orders.size": DistributionValue(3, 12.0, 1.0, 8.0, 4.0),
                "queue": GaugeValue(2.5),
            },
            "sink": {"empty": DistributionValue(0, 0.0, None, None, None)},
        },
    )
    values.update(changes)
    return SubtaskAck(**values)


def test_an_ack_round_trips_through_json():
    ack = an_ack()
    assert SubtaskAck.from_json(json.loads(json.dumps(ack.to_json())), "ack") == ack


def test_a_missing_field_names_the_file_and_the_field():
    raw = an_ack().to_json()
    del raw["operators"]
    with pytest.raises(RecordFormatError, match=r"acks/1-2.json lacks the field 'operators'"):
        SubtaskAck.from_json(raw, "acks/1-2.json")


def test_damaged_source_progress_names_the_file_and_the_split():
    raw = json.loads(json.dumps(an_ack().to_json()))
    raw["source_progress"]["1"] = {"position": "40", "finished": True}
    with pytest.raises(
        RecordFormatError,
        match=r"acks/1-2.json, source_progress\['1'\]: field 'position' is str '40', not int",
    ):
        SubtaskAck.from_json(raw, "acks/1-2.json")


def test_an_ack_of_another_run_or_epoch_is_rejected():
    ack = an_ack()
    ack.check(1, 2, 5, "job#0", "ack.json")
    with pytest.raises(RecordFormatError, match="acknowledges vertex 1 subtask 2 epoch 5 of run"):
        ack.check(1, 2, 5, "job#1", "ack.json")
    with pytest.raises(RecordFormatError, match="not vertex 1 subtask 2 epoch 6"):
        ack.check(1, 2, 6, "job#0", "ack.json")


def test_acks_are_created_exclusively_one_per_attempt(tmp_path):
    storage = Storage(f"file://{tmp_path}")
    first = ack_name("epochs/5", 1, 2, "e5a17")
    storage.create(first, b"{}")
    with pytest.raises(FileExistsError):
        storage.create(first, b"{}")
    storage.create(ack_name("epochs/5", 1, 2, "e5a18"), b"{}")
    assert storage.list("epochs/5") == ["1-2-e5a17.json", "1-2-e5a18.json"]


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda s: s.pop("changes"), "lacks the field 'changes'"),
        (lambda s: s["changes"].update(backend="leveldb"), "unknown backend 'leveldb'"),
        (
            lambda s: s["changes"]["files"].update(x=["u"]),
            "files\\['x'\\] is list \\['u'\\], not \\[url, size, sha256\\]",
        ),
        (
            lambda s: s["changes"].update(kinds={"count": 3}),
            "field 'kinds'\\['count'\\] is int 3, not str",
        ),
        (lambda s: s.update(entries="3"), "field 'entries' is str"),
    ],
)
def test_a_damaged_keyed_state_report_names_the_ack(damage, message):
    raw = json.loads(json.dumps(an_ack().to_json()))
    damage(raw["state"])
    with pytest.raises(RecordFormatError, match=f"acks/1-2.json.*{message}"):
        SubtaskAck.from_json(raw, "acks/1-2.json")

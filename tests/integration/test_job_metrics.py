"""A job's metrics reach the driver: what functions register in their metric group (a counter,
gauges, a meter, a distribution) and each operator's numRecordsIn and numRecordsOut, per
subtask, cumulative over the epochs, as the job's result reports them (``JobSummary.metrics``)."""

from __future__ import annotations

from lockgate.datastream import MapFunction
from lockgate.datastream.connectors import DiscardingSink
from lockgate.runtime.messages.metric_value import (
    CounterValue,
    DistributionValue,
    GaugeValue,
    MeterValue,
)
from lockgate.state.key_groups import key_group_for_hash, operator_index_for_key_group
from lockgate.state.key_hash import stable_key_hash

VALUES = list(range(1, 41))
KEYS = 10
PARALLELISM = 2
MAX_PARALLELISM = 128  # the default for parallelism 2


def key(value: int) -> int:
    return value % KEYS


class Measure(MapFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group().add_group("measure")
        self.seen = group.counter("seen")
        self.tagged = group.add_group("region", "eu").counter("tagged")
        self.events = group.meter("events", time_span_in_seconds=10)
        self.sizes = group.distribution("sizes")
        group.gauge("constant", lambda: 7)
        group.gauge("last", lambda: self.last)
        group.gauge("broken", lambda: 1 / 0)  # left out, and the job goes on
        self.last = None

    def map(self, value):
        self.seen.inc()
        if value % 3 == 0:
            self.tagged.inc()
        self.events.mark_event()
        self.sizes.update(value)
        self.last = value
        return value


def subtask_of(value: int) -> int:
    key_group = key_group_for_hash(stable_key_hash(key(value)), MAX_PARALLELISM)
    return operator_index_for_key_group(MAX_PARALLELISM, PARALLELISM, key_group)


def test_registered_and_built_in_metrics_per_subtask(make_env):
    env = make_env(parallelism=PARALLELISM, max_records_per_split=5)
    env.enable_checkpointing(1)
    source = env.from_collection(VALUES).uid("numbers")
    measured = source.key_by(key).map(Measure()).uid("measure").name("Measure")
    evens = measured.filter(lambda v: v % 2 == 0).uid("evens")
    evens.sink_to(DiscardingSink()).uid("discard")
    result = env.execute("metrics")
    assert len(result.epochs) >= 3  # cumulative over several epochs
    assert result.operator_names["measure"] == "Measure"
    metrics = result.metrics
    assert {uid for uid, _ in metrics} == {"numbers", "measure", "evens", "discard"}
    sources = [values for (uid, _), values in metrics.items() if uid == "numbers"]
    assert sum(values["numRecordsIn"].count for values in sources) == len(VALUES)
    assert all(values["numRecordsOut"] == values["numRecordsIn"] for values in sources)
    for index in range(PARALLELISM):
        mine = [v for v in VALUES if subtask_of(v) == index]
        evens_of_mine = [v for v in mine if v % 2 == 0]
        assert mine, "a subtask without keys: the test's keys do not spread"
        values = metrics[("measure", index)]
        last = values.pop("measure.last")
        assert isinstance(last, GaugeValue) and last.value in mine
        events = values.pop("measure.events")
        assert isinstance(events, MeterValue) and events.count == len(mine) and events.rate > 0
        assert values == {
            "numRecordsIn": CounterValue(len(mine)),
            "numRecordsOut": CounterValue(len(mine)),
            "measure.seen": CounterValue(len(mine)),
            "measure.region.eu.tagged": CounterValue(sum(v % 3 == 0 for v in mine)),
            "measure.sizes": DistributionValue(
                len(mine), float(sum(mine)), min(mine), max(mine), sum(mine) / len(mine)
            ),
            "measure.constant": GaugeValue(7.0),
        }
        assert metrics[("evens", index)] == {
            "numRecordsIn": CounterValue(len(mine)),
            "numRecordsOut": CounterValue(len(evens_of_mine)),
        }
        assert metrics[("discard", index)] == {
            "numRecordsIn": CounterValue(len(evens_of_mine)),
            "numRecordsOut": CounterValue(0),
        }

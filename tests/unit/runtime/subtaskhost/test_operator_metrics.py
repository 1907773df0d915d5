"""PyFlink's metrics as a subtask's operators keep them: scoped names, counters, gauges,
meters (Flink's MeterView) and distributions, and the values they report."""

from __future__ import annotations

import logging
import math

import pytest

from lockgate.metrics import Counter, Distribution, Meter, MetricGroup
from lockgate.runtime.messages.metric_value import (
    CounterValue,
    DistributionValue,
    GaugeValue,
    MeterValue,
)
from lockgate.runtime.subtaskhost.metrics import MeterView, OperatorMetrics


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def operator_metrics(clock=None) -> OperatorMetrics:
    return OperatorMetrics("operator 'Map' (uid 'm', subtask 0)", clock or Clock())


def test_names_are_the_group_path_joined_by_dots():
    metrics = operator_metrics()
    root = metrics.group()
    assert isinstance(root, MetricGroup)
    root.counter("seen")
    root.add_group("orders").counter("late")
    root.add_group("region", "eu").add_group("shop").counter("sold")
    assert sorted(metrics.report()) == ["orders.late", "region.eu.shop.sold", "seen"]


def test_a_counter_counts_up_and_down():
    metrics = operator_metrics()
    counter = metrics.group().counter("c")
    assert isinstance(counter, Counter)
    counter.inc()
    counter.inc(5)
    counter.dec()
    counter.dec(2)
    assert counter.get_count() == 3
    assert metrics.report() == {"c": CounterValue(3)}


def test_a_name_registered_twice_keeps_the_first_metric(caplog):
    metrics = operator_metrics()
    group = metrics.group()
    first = group.counter("c")
    with caplog.at_level(logging.WARNING, logger="lockgate"):
        second = group.add_group("a").counter("b")
        group.counter("c").inc(7)  # a new counter, not reported
        group.distribution("a.b")  # the scoped name of the counter above
    first.inc()
    second.inc(2)
    assert metrics.report() == {"c": CounterValue(1), "a.b": CounterValue(2)}
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "operator 'Map' (uid 'm', subtask 0) registers a second metric named 'c'" in messages[0]


def test_names_must_be_non_empty_strings():
    group = operator_metrics().group()
    with pytest.raises(TypeError, match="the name of a metric must be a non-empty str, not ''"):
        group.counter("")
    with pytest.raises(TypeError, match="the name of a group must be a non-empty str, not 3"):
        group.add_group("k", 3)  # type: ignore[arg-type]


def test_a_gauge_reports_what_its_function_returns_when_it_reports():
    metrics = operator_metrics()
    level = [3]
    metrics.group().gauge("level", lambda: level[0])
    assert metrics.report() == {"level": GaugeValue(3.0)}
    level[0] = 4.5
    assert metrics.report() == {"level": GaugeValue(4.5)}
    with pytest.raises(TypeError, match="gauge 'g' needs a function returning a number"):
        metrics.group().gauge("g", 5)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("result", "logged"),
    [
        ("high", "returned 'high', not a finite number"),
        (None, "returned None, not a finite number"),
        (math.nan, "returned nan, not a finite number"),
        (ZeroDivisionError("division by zero"), "raised ZeroDivisionError: division by zero"),
    ],
)
def test_a_gauge_without_a_number_is_left_out_and_logged_once(caplog, result, logged):
    def read():
        if isinstance(result, Exception):
            raise result
        return result

    metrics = operator_metrics()
    metrics.group().add_group("queue").gauge("level", read)
    metrics.group().counter("c")
    with caplog.at_level(logging.WARNING, logger="lockgate"):
        assert metrics.report() == {"c": CounterValue(0)}
        assert metrics.report() == {"c": CounterValue(0)}
    assert [r.getMessage() for r in caplog.records] == [
        f"gauge 'queue.level' of operator 'Map' (uid 'm', subtask 0) {logged}: it is not reported"
    ]


@pytest.mark.parametrize(("given", "span"), [(60, 60), (62, 60), (7, 5), (3, 5), (1, 5)])
def test_a_meters_time_span_is_a_multiple_of_five_seconds(given, span):
    assert MeterView(given, 0.0).time_span_s == span


def test_a_meter_counts_events_and_rates_them_over_its_time_span():
    clock = Clock()
    metrics = operator_metrics(clock)
    meter = metrics.group().meter("events", time_span_in_seconds=10)
    assert isinstance(meter, Meter)
    meter.mark_event()
    meter.mark_event(29)
    clock.now += 4
    # younger than its time span: the events over the whole span, as Flink's until it filled
    assert metrics.report() == {"events": MeterValue(30, 3.0)}
    clock.now += 4
    meter.mark_event(10)
    assert metrics.report() == {"events": MeterValue(40, 4.0)}
    clock.now += 4  # 12 s old: the window starts at the report of 4 s, 8 s ago (30 events)
    meter.mark_event(50)
    assert metrics.report() == {"events": MeterValue(90, 60 / 8)}
    clock.now += 30  # nothing since: the window starts at the last report, 30 s ago
    assert metrics.report() == {"events": MeterValue(90, 0.0)}
    assert meter.get_count() == 90
    with pytest.raises(ValueError, match="time_span_in_seconds must be a positive int"):
        metrics.group().meter("m", 0)


def test_a_distribution_reports_count_sum_min_max_and_mean():
    metrics = operator_metrics()
    distribution = metrics.group().distribution("size")
    assert isinstance(distribution, Distribution)
    assert metrics.report() == {"size": DistributionValue(0, 0.0, None, None, None)}
    for value in (4, 1, 7, 2.5):
        distribution.update(value)
    assert metrics.report() == {"size": DistributionValue(4, 14.5, 1.0, 7.0, 3.625)}
    with pytest.raises(TypeError, match="a distribution takes numbers, not str"):
        distribution.update("9")

"""The metrics of a subtask's operators: PyFlink's metric group, counters, gauges, meters and
distributions (``RuntimeContext.get_metrics_group()``), and the values they report at the end
of every epoch (``metric_value``, in the subtask's acknowledgement).

Each operator of a subtask has its own metrics (``OperatorMetrics``), which live as long as the
subtask: a function registers them in ``open()``, and a subtask rebuilt after a failure starts
them again from zero, as a restarted Flink task does. Names are scoped as in Flink: the path of
groups and the metric's name joined by '.' (``add_group("k", "v").counter("c")`` is ``k.v.c``).
As in Flink, a name registered twice in one operator keeps the first metric: the second is not
reported, and a warning says so.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from numbers import Real
from typing import Protocol

from lockgate.metrics import Counter, Distribution, Meter, MetricGroup
from lockgate.runtime.messages.metric_value import (
    CounterValue,
    DistributionValue,
    GaugeValue,
    MeterValue,
    MetricValue,
)

log = logging.getLogger(__name__)

NUM_RECORDS_IN = "numRecordsIn"
NUM_RECORDS_OUT = "numRecordsOut"


class Reported(Protocol):
    def report(self, now: float) -> MetricValue | None:
        """Its value at monotonic time ``now`` (seconds); None: it has none to report."""


class SimpleCounter(Counter):
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def inc(self, n: int = 1) -> None:
        self.count += n

    def dec(self, n: int = 1) -> None:
        self.count -= n

    def get_count(self) -> int:
        return self.count

    def report(self, now: float) -> CounterValue:
        return CounterValue(self.count)


class MeterView(Meter):
    """Flink's ``MeterView``: the events marked, and their rate over the last time span (in
    seconds, rounded down to a multiple of Flink's update interval of 5 s, at least 5 s).

    The rate is taken when the meter reports, from the counts of its earlier reports: it is
    the events since the newest report at least a time span old, per second since then. A
    meter younger than its time span counts from zero over the whole span, as Flink's does
    until its window has filled."""

    UPDATE_INTERVAL_S = 5

    def __init__(self, time_span_in_seconds: int, now: float):
        span = int(time_span_in_seconds)
        self.time_span_s = max(span - span % self.UPDATE_INTERVAL_S, self.UPDATE_INTERVAL_S)
        self.count = 0
        self.samples: deque[tuple[float, int]] = deque([(now, 0)])  # (time, count) reported

    def mark_event(self, value: int = 1) -> None:
        self.count += value

    def get_count(self) -> int:
        return self.count

    def rate(self, now: float) -> float:
        start = now - self.time_span_s
        samples = self.samples
        while len(samples) > 1 and samples[1][0] <= start:
            samples.popleft()
        then, count_then = samples[0]
        if then > start:  # younger than its time span
            return self.count / self.time_span_s
        return (self.count - count_then) / (now - then)

    def report(self, now: float) -> MeterValue:
        value = MeterValue(self.count, self.rate(now))
        self.samples.append((now, self.count))
        return value


class SimpleDistribution(Distribution):
    __slots__ = ("count", "max", "min", "sum")

    def __init__(self) -> None:
        self.count = 0
        self.sum: float = 0
        self.min: float | None = None
        self.max: float | None = None

    def update(self, value: float) -> None:
        if not isinstance(value, Real):
            raise TypeError(f"a distribution takes numbers, not {type(value).__name__}")
        self.count += 1
        self.sum += value
        if self.min is None or value < self.min:
            self.min = value
        if self.max is None or value > self.max:
            self.max = value

    def report(self, now: float) -> DistributionValue:
        mean = self.sum / self.count if self.count else None
        low = None if self.min is None else float(self.min)
        high = None if self.max is None else float(self.max)
        return DistributionValue(self.count, float(self.sum), low, high, mean)


class FunctionGauge:
    """A gauge: the number its function returns when it reports. One that raises or returns
    something else (not a finite number) is not reported, and logged the first time."""

    def __init__(self, obj: Callable[[], float], name: str, where: str):
        self.obj = obj
        self.name = name
        self.where = where
        self.logged = False

    def report(self, now: float) -> GaugeValue | None:
        try:
            value = self.obj()
        except Exception as exc:
            self._absent(f"raised {type(exc).__name__}: {exc}")
            return None
        if not isinstance(value, Real) or not math.isfinite(value):
            self._absent(f"returned {value!r}, not a finite number")
            return None
        return GaugeValue(float(value))

    def _absent(self, why: str) -> None:
        if not self.logged:
            self.logged = True
            log.warning("gauge %r of %s %s: it is not reported", self.name, self.where, why)


class DerivedCount:
    """A count the subtask keeps elsewhere (``numRecordsIn``, ``numRecordsOut``)."""

    def __init__(self, count: Callable[[], int]):
        self.count = count

    def report(self, now: float) -> CounterValue:
        return CounterValue(self.count())


class OperatorMetrics:
    """The metrics of one operator of a subtask, by their scoped names. ``where`` names the
    operator and subtask in warnings; ``clock`` is the monotonic clock meters read."""

    def __init__(self, where: str, clock: Callable[[], float]):
        self.where = where
        self.clock = clock
        self.metrics: dict[str, Reported] = {}

    def group(self) -> OperatorMetricGroup:
        """The operator's root group (``RuntimeContext.get_metrics_group()``)."""
        return OperatorMetricGroup(self, ())

    def register(self, name: str, metric: Reported) -> None:
        if name in self.metrics:
            log.warning(
                "%s registers a second metric named %r: only the first is reported",
                self.where,
                name,
            )
            return
        self.metrics[name] = metric

    def report(self) -> dict[str, MetricValue]:
        """Every metric's current value, but for gauges that have none."""
        now = self.clock()
        values = {}
        for name, metric in self.metrics.items():
            value = metric.report(now)
            if value is not None:
                values[name] = value
        return values


class OperatorMetricGroup(MetricGroup):
    """A group of an operator's metrics: its path of group names under the operator."""

    def __init__(self, metrics: OperatorMetrics, path: tuple[str, ...]):
        self._metrics = metrics
        self._path = path

    def add_group(self, name: str, extra: str | None = None) -> OperatorMetricGroup:
        names = (name,) if extra is None else (name, extra)
        for part in names:
            _check_name(part, "a group")
        return OperatorMetricGroup(self._metrics, (*self._path, *names))

    def counter(self, name: str) -> SimpleCounter:
        counter = SimpleCounter()
        self._metrics.register(self._scoped(name), counter)
        return counter

    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        if not callable(obj):
            raise TypeError(f"gauge {name!r} needs a function returning a number, not {obj!r}")
        scoped = self._scoped(name)
        self._metrics.register(scoped, FunctionGauge(obj, scoped, self._metrics.where))

    def meter(self, name: str, time_span_in_seconds: int = 60) -> MeterView:
        if not isinstance(time_span_in_seconds, int) or time_span_in_seconds < 1:
            raise ValueError(
                f"meter {name!r}: time_span_in_seconds must be a positive int, not "
                f"{time_span_in_seconds!r}"
            )
        meter = MeterView(time_span_in_seconds, self._metrics.clock())
        self._metrics.register(self._scoped(name), meter)
        return meter

    def distribution(self, name: str) -> SimpleDistribution:
        distribution = SimpleDistribution()
        self._metrics.register(self._scoped(name), distribution)
        return distribution

    def _scoped(self, name: str) -> str:
        _check_name(name, "a metric")
        return ".".join((*self._path, name))


def _check_name(name: object, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"the name of {what} must be a non-empty str, not {name!r}")

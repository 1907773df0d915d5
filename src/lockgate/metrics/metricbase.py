"""The interfaces of PyFlink's metrics (``pyflink.metrics.metricbase``). A function gets its
operator's ``MetricGroup`` from ``RuntimeContext.get_metrics_group()``, usually in ``open()``,
and registers its metrics there; they live as long as the function instance."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable


class MetricGroup(ABC):
    """A named scope of metrics and of further groups. A metric's name is the path of its
    groups and its own name joined by '.': ``add_group("orders").counter("late")`` is
    ``orders.late``."""

    @abstractmethod
    def add_group(self, name: str, extra: str | None = None) -> MetricGroup:
        """The subgroup ``name``; with ``extra``, the group ``extra`` under the key group
        ``name`` (Flink's key-value group: ``name.extra``)."""

    @abstractmethod
    def counter(self, name: str) -> Counter:
        """Register a new ``Counter``."""

    @abstractmethod
    def gauge(self, name: str, obj: Callable[[], int]) -> None:
        """Register a gauge: ``obj()`` is read each time the metric is reported."""

    @abstractmethod
    def meter(self, name: str, time_span_in_seconds: int = 60) -> Meter:
        """Register a new ``Meter``, whose rate is taken over ``time_span_in_seconds``."""

    @abstractmethod
    def distribution(self, name: str) -> Distribution:
        """Register a new ``Distribution``."""


class Metric(ABC):  # PyFlink's marker base, without methods
    """Base of the metric interfaces."""


class Counter(Metric):
    """A count that goes up and down."""

    @abstractmethod
    def inc(self, n: int = 1) -> None:
        """Add ``n``."""

    @abstractmethod
    def dec(self, n: int = 1) -> None:
        """Subtract ``n``."""

    @abstractmethod
    def get_count(self) -> int:
        """The current count."""


class Meter(Metric):
    """Events and their rate (throughput)."""

    @abstractmethod
    def mark_event(self, value: int = 1) -> None:
        """``value`` more events happened."""

    @abstractmethod
    def get_count(self) -> int:
        """The events marked so far."""


class Distribution(Metric):
    """Statistics of the values it is given: their count, sum, minimum, maximum and mean."""

    @abstractmethod
    def update(self, value: int) -> None:
        """Add ``value`` to the statistics."""

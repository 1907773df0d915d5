"""The value of one metric as a subtask reports it in each epoch's acknowledgement
(``SubtaskAck.metrics``), and as the driver keeps it (``JobSummary.metrics``): a record per
kind of PyFlink's metrics, tagged by ``kind``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from lockgate.common.records import Record

COUNTER = "counter"
GAUGE = "gauge"
METER = "meter"
DISTRIBUTION = "distribution"


@dataclass(frozen=True)
class CounterValue(Record, tag="kind"):
    kind: ClassVar[str] = COUNTER
    count: int


@dataclass(frozen=True)
class GaugeValue(Record, tag="kind"):
    kind: ClassVar[str] = GAUGE
    value: float


@dataclass(frozen=True)
class MeterValue(Record, tag="kind"):
    kind: ClassVar[str] = METER
    count: int  # events marked since the meter was registered
    rate: float  # events per second over the meter's time span (Flink's MeterView)


@dataclass(frozen=True)
class DistributionValue(Record, tag="kind"):
    kind: ClassVar[str] = DISTRIBUTION
    count: int
    sum: float
    min: float | None  # None until the first value
    max: float | None
    mean: float | None


MetricValue = CounterValue | GaugeValue | MeterValue | DistributionValue

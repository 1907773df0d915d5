"""The Dispatcher's Prometheus endpoint (``GET /metrics``): every job's figures as its
driver last reported them, labelled by job id and name.

Collected when scraped, from the job store, so a scrape sees what the drivers wrote last
(every half second) and costs nothing between scrapes. Names follow Prometheus' rules
(``_total`` for counters, base units: seconds and bytes).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from lockgate.dispatcher.dispatcher import JobView
from lockgate.runtime.jobmaster.job_report import JobReport
from lockgate.runtime.messages.metric_value import (
    CounterValue,
    GaugeValue,
    MeterValue,
    MetricValue,
)
from lockgate.runtime.subtaskhost.metrics import NUM_RECORDS_IN, NUM_RECORDS_OUT

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_JOB = ["job_id", "job_name"]
_SUBTASK = [*_JOB, "operator_uid", "subtask"]
# Watermarks below this mean "none yet" (Flink starts event time at Long.MIN_VALUE)
_NO_WATERMARK = -(2**62)


class JobsCollector(Collector):
    def __init__(self, jobs: Callable[[], list[JobView]]):
        self.jobs = jobs

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("lockgate_job_running", "1 while the job runs", labels=_JOB)
        restarts = CounterMetricFamily(
            "lockgate_job_restarts", "Restarts of the job (its own and its driver's)", labels=_JOB
        )
        uptime = GaugeMetricFamily("lockgate_job_uptime_seconds", "Since submission", labels=_JOB)
        epoch = GaugeMetricFamily(
            "lockgate_epoch_duration_seconds", "The latest epoch's duration", labels=_JOB
        )
        epoch_records = GaugeMetricFamily(
            "lockgate_epoch_records", "Records the latest epoch's sources read", labels=_JOB
        )
        epoch_rate = GaugeMetricFamily(
            "lockgate_epoch_records_per_second", "The latest epoch's throughput", labels=_JOB
        )
        completed = CounterMetricFamily(
            "lockgate_checkpoints_completed", "Completed checkpoints", labels=_JOB
        )
        failed = CounterMetricFamily(
            "lockgate_checkpoints_failed", "Failed checkpoints", labels=_JOB
        )
        duration = GaugeMetricFamily(
            "lockgate_checkpoint_duration_seconds",
            "The latest completed checkpoint's duration",
            labels=_JOB,
        )
        size = GaugeMetricFamily(
            "lockgate_checkpoint_size_bytes",
            "State the latest completed checkpoint refers to",
            labels=_JOB,
        )
        incremental = GaugeMetricFamily(
            "lockgate_checkpoint_incremental_size_bytes",
            "State the latest completed checkpoint wrote",
            labels=_JOB,
        )
        age = GaugeMetricFamily(
            "lockgate_last_checkpoint_age_seconds",
            "Since the latest completed checkpoint was taken",
            labels=_JOB,
        )
        state = GaugeMetricFamily(
            "lockgate_operator_state_size_bytes",
            "An operator's state in the latest completed checkpoint",
            labels=[*_JOB, "operator_uid"],
        )
        lag = GaugeMetricFamily(
            "lockgate_operator_watermark_lag_seconds",
            "How far an operator's event time is behind the wall clock",
            labels=[*_JOB, "operator_uid"],
        )
        records_in = CounterMetricFamily(
            "lockgate_operator_records_in",
            "Records an operator's subtask took in (Flink's numRecordsIn)",
            labels=_SUBTASK,
        )
        records_out = CounterMetricFamily(
            "lockgate_operator_records_out",
            "Records an operator's subtask put out (Flink's numRecordsOut)",
            labels=_SUBTASK,
        )
        user = GaugeMetricFamily(
            "lockgate_user_metric",
            "A metric a function registered (get_metrics_group()): a counter's count, a "
            "gauge's value, a meter's count and rate, a distribution's statistics",
            labels=[*_SUBTASK, "metric", "statistic"],
        )
        now = time.time()
        for job in self.jobs():
            labels = [job.job_id, job.name]
            up.add_metric(labels, float(job.status not in ("FINISHED", "CANCELED", "FAILED")))
            uptime.add_metric(labels, ((job.end_ms or now * 1000) - job.start_ms) / 1000)
            report = job.report
            if report is None:
                continue
            restarts.add_metric(labels, report.restarts + max(job.attempts - 1, 0))
            _epochs(report, labels, epoch, epoch_records, epoch_rate)
            completed.add_metric(labels, report.checkpoint_counts.completed)
            failed.add_metric(labels, report.checkpoint_counts.failed)
            done = [c for c in report.checkpoints if c.status == "COMPLETED"]
            if done:
                last = done[-1]
                duration.add_metric(labels, last.duration_ms / 1000)
                size.add_metric(labels, last.size_bytes)
                incremental.add_metric(labels, last.written_bytes)
                age.add_metric(labels, now - (last.trigger_time_ms + last.duration_ms) / 1000)
                for uid, bytes_ in sorted(last.state_size_per_operator.items()):
                    state.add_metric([*labels, uid], bytes_)
            _operator_metrics(report, labels, records_in, records_out, user)
            for uid, watermark in sorted(report.watermarks.items()):
                if _NO_WATERMARK < watermark < 2**62:
                    lag.add_metric([*labels, uid], now - watermark / 1000)
        yield from (up, restarts, uptime, epoch, epoch_records, epoch_rate, completed, failed)
        yield from (duration, size, incremental, age, state, lag, records_in, records_out, user)


def _operator_metrics(
    report: JobReport,
    labels: list[str],
    records_in: CounterMetricFamily,
    records_out: CounterMetricFamily,
    user: GaugeMetricFamily,
) -> None:
    for subtask in report.metrics:
        where = [*labels, subtask.uid, str(subtask.subtask)]
        for name, value in sorted(subtask.values.items()):
            if name == NUM_RECORDS_IN and isinstance(value, CounterValue):
                records_in.add_metric(where, value.count)
            elif name == NUM_RECORDS_OUT and isinstance(value, CounterValue):
                records_out.add_metric(where, value.count)
            else:
                for statistic, number in _statistics(value):
                    user.add_metric([*where, name, statistic], number)


def _statistics(value: MetricValue) -> list[tuple[str, float]]:
    if isinstance(value, CounterValue):
        return [("count", value.count)]
    if isinstance(value, GaugeValue):
        return [("value", value.value)]
    if isinstance(value, MeterValue):
        return [("count", value.count), ("rate", value.rate)]
    found = [("count", float(value.count)), ("sum", value.sum)]
    for statistic, number in (("min", value.min), ("max", value.max), ("mean", value.mean)):
        if number is not None:
            found.append((statistic, number))
    return found


def _epochs(
    report: JobReport,
    labels: list[str],
    duration: GaugeMetricFamily,
    records: GaugeMetricFamily,
    rate: GaugeMetricFamily,
) -> None:
    if not report.epochs:
        return
    last = report.epochs[-1]
    duration.add_metric(labels, last.duration_ms / 1000)
    records.add_metric(labels, last.records)
    if last.duration_ms > 0:
        rate.add_metric(labels, last.records / (last.duration_ms / 1000))


def exposition(jobs: Callable[[], list[JobView]]) -> bytes:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(JobsCollector(jobs))
    return generate_latest(registry)

"""PyFlink's metric interfaces (``pyflink.metrics``): what ``RuntimeContext.get_metrics_group()``
returns and registers. See docs/operations/metrics.md."""

from lockgate.metrics.metricbase import Counter, Distribution, Meter, Metric, MetricGroup

__all__ = ["Counter", "Distribution", "Meter", "Metric", "MetricGroup"]

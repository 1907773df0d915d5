"""Connectors at PyFlink's paths (``pyflink.datastream.connectors``)."""

from lockgate.runtime.taskexecutor.operators import OperatorSpec


class DiscardingSink:
    """A sink that drops every record; useful to measure a job without output costs."""

    name = "Discarding Sink"

    def operator_spec(self) -> OperatorSpec:
        return OperatorSpec("discard")


__all__ = ["DiscardingSink"]

"""Connectors at PyFlink's paths (``pyflink.datastream.connectors``)."""

from enum import Enum

from lockgate.common.unsupported import unsupported
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec


class DiscardingSink:
    """A sink that drops every record; useful to measure a job without output costs."""

    name = "Discarding Sink"

    def operator_spec(self) -> OperatorSpec:
        return OperatorSpec(OperatorKind.DISCARD)


class DeliveryGuarantee(Enum):
    """The guarantee a sink gives, as PyFlink's; lockgate's FileSink is exactly-once."""

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2


Source = unsupported(
    "Source", "FileSource or env.from_collection (custom sources are not there yet)", __name__
)
Sink = unsupported("Sink", "FileSink or DiscardingSink (custom sinks are not there yet)", __name__)


__all__ = [
    "DeliveryGuarantee",
    "DiscardingSink",
    "Sink",
    "Source",
]

"""``NumberSequenceSource`` at PyFlink's path (``pyflink.datastream.connectors.number_seq``):
not there yet."""

from lockgate.common.unsupported import unsupported

NumberSequenceSource = unsupported(
    "NumberSequenceSource", "env.from_collection(range(start, end + 1))", __name__
)

__all__ = ["NumberSequenceSource"]

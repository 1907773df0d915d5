"""PyFlink's ``pyflink.datastream.output_tag``."""

from lockgate.common.output_tag import OutputTag

__all__ = ["OutputTag"]

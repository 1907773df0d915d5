"""``TypeSerializer`` at PyFlink's path (``pyflink.common.serializer``): not there yet.

lockgate pickles records and state values; declare their types with ``Types``.
"""

from lockgate.common.unsupported import unsupported

TypeSerializer = unsupported(
    "TypeSerializer", "Types (records and state values are pickled)", __name__
)

__all__ = ["TypeSerializer"]

"""``TypeInformation`` and ``Types`` at PyFlink's path (``pyflink.common.typeinfo``)."""

from lockgate.common.types import TypeInformation, Types

__all__ = ["TypeInformation", "Types"]

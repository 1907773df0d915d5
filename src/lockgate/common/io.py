"""``InputFormat`` at PyFlink's path (``pyflink.common.io``): not there yet."""

from lockgate.common.unsupported import unsupported

InputFormat = unsupported(
    "InputFormat", "FileSource with a StreamFormat, or env.from_collection", __name__
)

__all__ = ["InputFormat"]

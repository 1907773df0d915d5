"""``AsyncDataStream`` at PyFlink's path (``pyflink.datastream.async_data_stream``): not there
yet."""

from lockgate.common.unsupported import unsupported

AsyncDataStream = unsupported(
    "AsyncDataStream",
    "map or process with a function that makes the call synchronously",
    __name__,
)

__all__ = ["AsyncDataStream"]

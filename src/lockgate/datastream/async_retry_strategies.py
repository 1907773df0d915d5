"""Async retry strategies at PyFlink's path (``pyflink.datastream.async_retry_strategies``):
not there yet, as async I/O is not."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = (
    "a MapFunction or ProcessFunction that makes the call (and its retries) synchronously"
)
RetryPredicate = unsupported("RetryPredicate", _ALTERNATIVE, __name__)
NoRetryStrategy = unsupported("NoRetryStrategy", _ALTERNATIVE, __name__)
FixedDelayRetryStrategy = unsupported("FixedDelayRetryStrategy", _ALTERNATIVE, __name__)
ExponentialBackoffDelayRetryStrategy = unsupported(
    "ExponentialBackoffDelayRetryStrategy", _ALTERNATIVE, __name__
)

__all__ = [
    "ExponentialBackoffDelayRetryStrategy",
    "FixedDelayRetryStrategy",
    "NoRetryStrategy",
    "RetryPredicate",
]

"""``HybridSource`` at PyFlink's path (``pyflink.datastream.connectors.hybrid_source``): not
there yet."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "one FileSource over all the files, or union of sources"
HybridSource = unsupported("HybridSource", _ALTERNATIVE, __name__)
HybridSourceBuilder = unsupported("HybridSourceBuilder", _ALTERNATIVE, __name__)

__all__ = ["HybridSource", "HybridSourceBuilder"]

"""Slot sharing groups at PyFlink's path (``pyflink.datastream.slot_sharing_group``): not there
yet; Spark places lockgate's tasks."""

from lockgate.common.unsupported import unsupported

_ALTERNATIVE = "Spark's executor settings (spark.executor.cores, spark.executor.memory)"
SlotSharingGroup = unsupported("SlotSharingGroup", _ALTERNATIVE, __name__)
MemorySize = unsupported("MemorySize", _ALTERNATIVE, __name__)

__all__ = ["MemorySize", "SlotSharingGroup"]

"""``CheckpointingMode`` at PyFlink's path (``pyflink.datastream.checkpointing_mode``)."""

from lockgate.datastream.checkpoint_config import CheckpointingMode

__all__ = ["CheckpointingMode"]

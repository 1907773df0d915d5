"""``ExternalizedCheckpointRetention`` at PyFlink's path
(``pyflink.datastream.externalized_checkpoint_retention``)."""

from lockgate.datastream.checkpoint_config import ExternalizedCheckpointRetention

__all__ = ["ExternalizedCheckpointRetention"]

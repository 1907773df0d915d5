"""The State Processor API on Spark: read any savepoint or retained checkpoint as Spark
DataFrames (``SavepointReader``) and write new savepoints from DataFrames
(``SavepointWriter``), as Flink's ``org.apache.flink.state.api`` does with DataSets."""

from lockgate.state_processor.errors import StateProcessorError
from lockgate.state_processor.savepoint_reader import SavepointReader
from lockgate.state_processor.savepoint_writer import SavepointWriter

__all__ = ["SavepointReader", "SavepointWriter", "StateProcessorError"]

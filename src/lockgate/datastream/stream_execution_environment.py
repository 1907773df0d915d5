"""``StreamExecutionEnvironment``: where a job is declared, configured and executed."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import suppress
from enum import Enum
from typing import Any, cast

from pyspark.sql import SparkSession

from lockgate.common import config_options as options
from lockgate.common.configuration import Configuration
from lockgate.common.job_client import JobClient
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.restart_strategy import RestartStrategyConfiguration
from lockgate.common.type_conversion import declared_type
from lockgate.common.watermark_strategy import WatermarkStrategy, check_strategy
from lockgate.connectors.collection import CollectionSource
from lockgate.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode
from lockgate.datastream.data_stream import CloseableIterator, DataStream
from lockgate.datastream.state_backend import StateBackend
from lockgate.graph.job_graph import build_job_graph
from lockgate.graph.transformations import Transformation
from lockgate.runtime.jobmaster.job_master import JobMaster
from lockgate.runtime.jobmaster.job_runner import JobRunner
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.spark_session import get_or_create_session
from lockgate.runtime.source import Source


class RuntimeExecutionMode(Enum):
    STREAMING = "STREAMING"
    BATCH = "BATCH"
    AUTOMATIC = "AUTOMATIC"


class StreamExecutionEnvironment:
    """Declares a job and runs it on Spark, epoch by epoch."""

    def __init__(
        self, configuration: Configuration | None = None, spark: SparkSession | None = None
    ):
        self._config = (
            Configuration(configuration) if configuration is not None else Configuration()
        )
        options.validate(self._config.to_dict())
        self._spark = spark
        self._transformations: list[Transformation] = []

    @staticmethod
    def get_execution_environment(
        configuration: Configuration | SparkSession | None = None,
    ) -> StreamExecutionEnvironment:
        """A new environment; pass a ``Configuration`` or an existing ``SparkSession``."""
        if isinstance(configuration, SparkSession):
            return StreamExecutionEnvironment(spark=configuration)
        return StreamExecutionEnvironment(configuration)

    # Configuration ------------------------------------------------------------------------

    def configure(self, configuration: Configuration) -> None:
        options.validate(Configuration(self._config).add_all(configuration).to_dict())
        self._config.add_all(configuration)  # in place: CheckpointConfigs write to it too

    def get_configuration(self) -> Configuration:
        return Configuration(self._config)

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        if not isinstance(parallelism, int) or parallelism < 1:
            raise ValueError(f"parallelism must be a positive integer, got {parallelism!r}")
        self._config.set_integer(options.PARALLELISM.key, parallelism)
        return self

    def get_parallelism(self) -> int:
        configured = options.PARALLELISM.read(self._config.to_dict())
        return configured if configured > 0 else self._session().sparkContext.defaultParallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        if not isinstance(max_parallelism, int) or not 0 < max_parallelism <= 32768:
            raise ValueError(f"max parallelism must be in 1..32768, got {max_parallelism!r}")
        self._config.set_integer(options.MAX_PARALLELISM.key, max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return options.MAX_PARALLELISM.read(self._config.to_dict())

    def set_runtime_mode(self, execution_mode: RuntimeExecutionMode) -> StreamExecutionEnvironment:
        self._config.set_string(options.RUNTIME_MODE.key, execution_mode.value)
        return self

    def enable_checkpointing(
        self, interval: int, mode: CheckpointingMode | None = None
    ) -> StreamExecutionEnvironment:
        """Checkpoint at the end of the first epoch after every ``interval`` ms."""
        config = self.get_checkpoint_config()
        config.set_checkpoint_interval(interval)
        if mode is not None:
            config.set_checkpointing_mode(mode)
        return self

    def get_checkpoint_config(self) -> CheckpointConfig:
        return CheckpointConfig(self._config)

    def get_checkpoint_interval(self) -> int:
        return self.get_checkpoint_config().get_checkpoint_interval()

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return self.get_checkpoint_config().get_checkpointing_mode()

    def set_restart_strategy(
        self, restart_strategy_configuration: RestartStrategyConfiguration
    ) -> StreamExecutionEnvironment:
        settings = Configuration.from_dict(restart_strategy_configuration.settings)
        self.configure(settings)
        return self

    def set_default_savepoint_directory(self, directory: str) -> StreamExecutionEnvironment:
        """Where savepoints go when a ``JobClient`` asks for one without a directory (the
        setting ``execution.checkpointing.savepoint-dir``)."""
        self.configure(Configuration().set_string(options.SAVEPOINT_DIR.key, directory))
        return self

    def get_default_savepoint_directory(self) -> str | None:
        return options.SAVEPOINT_DIR.read(self._config.to_dict()) or None

    def set_state_backend(self, state_backend: StateBackend) -> StreamExecutionEnvironment:
        for key, value in state_backend.configuration().items():
            self._config.set_string(key, value)
        options.validate(self._config.to_dict())
        return self

    # Sources ------------------------------------------------------------------------------

    def _add(self, transformation: Transformation) -> Transformation:
        self._transformations.append(transformation)
        return transformation

    def _source(
        self,
        source: Source,
        name: str,
        type_info: Any,
        strategy: WatermarkStrategy | None = None,
    ) -> DataStream:
        t = Transformation(
            "source",
            name,
            operator=source,
            parallelism=source.default_parallelism,
            timestamps=strategy is not None and strategy.timestamp_assigner is not None,
            watermark_strategy=strategy,
            output_type=declared_type(type_info, "type_info"),
        )
        return DataStream(self, self._add(t))

    def from_collection(self, collection: list[Any], type_info: Any = None) -> DataStream:
        """A bounded stream of the collection's elements, read (by default) by one subtask;
        with ``type_info``, each element is converted to it as PyFlink does (tuples become
        ``Row`` for ``Types.ROW_NAMED``, ...)."""
        return self._source(CollectionSource(collection), "Collection Source", type_info)

    def from_source(
        self, source: Source, watermark_strategy: Any, source_name: str, type_info: Any = None
    ) -> DataStream:
        """A stream read from ``source``, with timestamps and watermarks per split by
        ``watermark_strategy`` (its timestamp assigner applies, as in Flink's Java API)."""
        if not isinstance(source, Source):
            raise TypeError(f"from_source needs a source such as FileSource, got {source!r}")
        check_strategy(watermark_strategy)
        return self._source(source, source_name, type_info, watermark_strategy)

    # Execution ----------------------------------------------------------------------------

    def _session(self) -> SparkSession:
        if self._spark is None:
            self._spark = get_or_create_session(self._config.to_dict())
        return self._spark

    def _job_master(self, job_name: str | None) -> JobMaster:
        """Validate everything that can be checked on the driver, then prepare the job."""
        config = self._config.to_dict()
        options.validate(config)
        transformations, self._transformations = self._transformations, []
        for t in transformations:
            if t.kind in ("source", "sink"):
                t.operator.validate()
        session = self._session()
        max_parallelism = options.MAX_PARALLELISM.read(config)
        job = build_job_graph(
            transformations,
            self.get_parallelism(),
            max_parallelism if max_parallelism > 0 else None,
            options.RUNTIME_MODE.read(config),
        )
        # a SparkContext does not start without spark.master, so its master is set
        master = cast(str, session.sparkContext.master)
        settings = JobSettings.resolve(config, job_name or "lockgate job", master)
        return JobMaster(session, job, settings)

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        """Run the job to its end in this thread."""
        master = self._job_master(job_name)
        for _ in master.run():
            pass
        return master.summary.execution_result()

    def execute_async(self, job_name: str = "lockgate job") -> JobClient:
        """Start the job on a thread of this process and return its handle at once; bad
        configuration fails here, before the job starts. A job still running when the
        interpreter exits is cancelled after its running epoch."""
        runner = JobRunner(self._job_master(job_name))
        runner.start()
        return JobClient(runner)

    def _execute_collect(self, job_name: str | None) -> CloseableIterator:
        master = self._job_master(job_name)
        epochs = master.run()

        def records() -> Iterator[Any]:
            for result in epochs:
                yield from result.collected

        def close() -> None:
            master.cancel()
            # ValueError: the loop is running in another thread; it stops after its epoch
            with suppress(ValueError):
                epochs.close()

        return CloseableIterator(records(), close)

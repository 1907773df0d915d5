"""``StreamExecutionEnvironment``: where a job is declared, configured and executed."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import suppress
from enum import Enum
from typing import Any, NoReturn, cast

from pyspark.sql import SparkSession

from lockgate.common import config_options as options
from lockgate.common.configuration import Configuration
from lockgate.common.execution_config import ExecutionConfig
from lockgate.common.job_client import JobClient
from lockgate.common.job_execution_result import JobExecutionResult
from lockgate.common.restart_strategy import RestartStrategyConfiguration
from lockgate.common.type_conversion import declared_type
from lockgate.common.unsupported import not_supported
from lockgate.common.watermark_strategy import WatermarkStrategy, check_strategy
from lockgate.connectors.collection import CollectionSource
from lockgate.connectors.dataframe.source import DataFrameSource
from lockgate.connectors.socket import SocketTextSource
from lockgate.core.source import Source
from lockgate.datastream.checkpoint_config import CheckpointConfig, CheckpointingMode
from lockgate.datastream.data_stream import (
    BUFFER_TIMEOUT_ALTERNATIVE,
    SLOTS_ALTERNATIVE,
    CloseableIterator,
    DataStream,
)
from lockgate.datastream.state_backend import StateBackend
from lockgate.graph.job_graph import JobGraph, build_job_graph, execution_plan
from lockgate.graph.transformations import Transformation, TransformationKind
from lockgate.runtime.jobmaster import program_context
from lockgate.runtime.jobmaster.job_master import JobMaster
from lockgate.runtime.jobmaster.job_runner import JobRunner
from lockgate.runtime.jobmaster.job_settings import JobSettings, check_exactly_once_sinks
from lockgate.runtime.jobmaster.spark_session import add_python_files, get_or_create_session

# The alternatives named by the methods lockgate does not support yet
_SOURCE_ALTERNATIVE = "from_source() with FileSource or NumberSequenceSource, or from_collection()"
_ARCHIVES = (
    "spark-submit --archives env.tar.gz#env with --conf spark.pyspark.python=./env/bin/python "
    "(a packed virtual environment); see docs/cluster.md"
)
_JAVA_ALTERNATIVE = (
    "lockgate's Python sources and sinks (FileSource, FileSink, ...): lockgate runs no "
    "Java code of its own; Spark's jars go with spark-submit --jars"
)


class RuntimeExecutionMode(Enum):
    STREAMING = "STREAMING"
    BATCH = "BATCH"
    AUTOMATIC = "AUTOMATIC"


class StreamExecutionEnvironment:
    """Declares a job and runs it on Spark, epoch by epoch."""

    def __init__(
        self, configuration: Configuration | None = None, spark: SparkSession | None = None
    ):
        context = program_context.current()
        self._config = Configuration.from_dict(dict(context.configuration) if context else {})
        if configuration is not None:
            self._config.add_all(configuration)
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

    def get_config(self) -> ExecutionConfig:
        """The job's ``ExecutionConfig``: a view of this environment's configuration."""
        return ExecutionConfig(self._config)

    def set_parallelism(self, parallelism: int) -> StreamExecutionEnvironment:
        self.get_config().set_parallelism(parallelism)
        return self

    def get_parallelism(self) -> int:
        configured = self.get_config().get_parallelism()
        return configured if configured > 0 else self._session().sparkContext.defaultParallelism

    def set_max_parallelism(self, max_parallelism: int) -> StreamExecutionEnvironment:
        self.get_config().set_max_parallelism(max_parallelism)
        return self

    def get_max_parallelism(self) -> int:
        return self.get_config().get_max_parallelism()

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

    def disable_operator_chaining(self) -> StreamExecutionEnvironment:
        """Run every operator in a task of its own (``pipeline.operator-chaining.enabled``
        false): records cross a Spark shuffle between any two operators."""
        self._config.set_boolean(options.OPERATOR_CHAINING.key, False)
        return self

    def is_chaining_enabled(self) -> bool:
        return options.OPERATOR_CHAINING.read(self._config.to_dict())

    def is_chaining_of_operators_with_different_max_parallelism_enabled(self) -> bool:
        """True: lockgate chains operators whatever their max parallelism (only a keyed
        operator has key groups, and it always heads its own task)."""
        return True

    def get_checkpointing_consistency_mode(self) -> CheckpointingMode:
        """PyFlink 2's name for ``get_checkpointing_mode``."""
        return self.get_checkpointing_mode()

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self.get_checkpoint_config().is_unaligned_checkpoints_enabled()

    def is_force_unaligned_checkpoints(self) -> bool:
        return self.get_checkpoint_config().is_force_unaligned_checkpoints()

    def enable_changelog_state_backend(self, enabled: bool) -> StreamExecutionEnvironment:
        """Only ``False`` (lockgate has no changelog state backend)."""
        if enabled:
            not_supported(
                "StreamExecutionEnvironment.enable_changelog_state_backend",
                "EmbeddedRocksDBStateBackend with execution.checkpointing.incremental: "
                "checkpoints upload only what changed",
            )
        return self

    def is_changelog_state_backend_enabled(self) -> bool:
        return False

    def get_default_local_parallelism(self) -> int:
        """The parallelism of a job on lockgate's default master ``local[*]`` when none is
        set: this machine's core count (Spark's default parallelism there, and Flink's
        default local parallelism)."""
        return os.cpu_count() or 1

    def set_default_local_parallelism(self, parallelism: int) -> None:
        not_supported(
            "StreamExecutionEnvironment.set_default_local_parallelism",
            "set_parallelism(), or the Spark master local[n]",
        )

    def set_buffer_timeout(self, timeout_millis: int) -> NoReturn:
        not_supported("StreamExecutionEnvironment.set_buffer_timeout", BUFFER_TIMEOUT_ALTERNATIVE)

    def get_buffer_timeout(self) -> NoReturn:
        not_supported("StreamExecutionEnvironment.get_buffer_timeout", BUFFER_TIMEOUT_ALTERNATIVE)

    def register_slot_sharing_group(self, slot_sharing_group: Any) -> NoReturn:
        not_supported("StreamExecutionEnvironment.register_slot_sharing_group", SLOTS_ALTERNATIVE)

    def add_python_file(self, file_path: str) -> StreamExecutionEnvironment:
        """Put a Python dependency (a .py, .zip or .egg file, or a directory whose contents
        become importable) on the path of the Python workers that run the job, as PyFlink
        does: the setting ``python.files``, shipped with Spark's ``addPyFile`` when the job
        starts."""
        files = options.PYTHON_FILES.read(self._config.to_dict())
        self._config.set_string(options.PYTHON_FILES.key, ",".join((file_path, *files)))
        return self

    def add_python_archive(self, archive_path: str, target_dir: str | None = None) -> NoReturn:
        not_supported("StreamExecutionEnvironment.add_python_archive", _ARCHIVES)

    def set_python_requirements(
        self, requirements_file_path: str, requirements_cache_dir: str | None = None
    ) -> NoReturn:
        not_supported("StreamExecutionEnvironment.set_python_requirements", _ARCHIVES)

    def set_python_executable(self, python_exec: str) -> NoReturn:
        not_supported("StreamExecutionEnvironment.set_python_executable", _ARCHIVES)

    def add_jars(self, *jars_path: str) -> NoReturn:
        not_supported("StreamExecutionEnvironment.add_jars", _JAVA_ALTERNATIVE)

    def add_classpaths(self, *classpaths: str) -> NoReturn:
        not_supported("StreamExecutionEnvironment.add_classpaths", _JAVA_ALTERNATIVE)

    def register_cached_file(self, file_path: str, name: str, executable: bool = False) -> NoReturn:
        not_supported(
            "StreamExecutionEnvironment.register_cached_file",
            "a path or fsspec URL every executor can reach, opened by the function itself",
        )

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
            TransformationKind.SOURCE,
            name,
            operator=source,
            parallelism=source.default_parallelism,
            timestamps=source.timestamped
            or (strategy is not None and strategy.timestamp_assigner is not None),
            watermark_strategy=strategy,
            output_type=declared_type(
                source.produced_type if type_info is None else type_info, "type_info"
            ),
        )
        return DataStream(self, self._add(t))

    def from_collection(self, collection: list[Any], type_info: Any = None) -> DataStream:
        """A bounded stream of the collection's elements, read (by default) by one subtask;
        with ``type_info``, each element is converted to it as PyFlink does (tuples become
        ``Row`` for ``Types.ROW_NAMED``, ...)."""
        return self._source(CollectionSource(collection), "Collection Source", type_info)

    def from_dataframe(self, df: Any, type_info: Any = None) -> DataStream:
        """A bounded stream of a Spark DataFrame's rows, as ``Row``s named by its columns
        (its schema mapped to ``Types``; ``type_info``, a ``Types.ROW_NAMED``, reads the
        columns of those names as those types instead). Beyond PyFlink, for Spark users.

        Each partition is a split, read inside Spark tasks (never collected here): when the
        job starts, a Spark job stages the partitions as Arrow files in the job's work
        directory, and every epoch reads its range of them. The DataFrame must compute the
        same rows every time (read from files or tables; not sampled or random), since a
        resume from a checkpoint stages it again: a plan that is not deterministic is
        refused, and a resume whose partitions differ from the checkpoint's fails."""
        return self._source(DataFrameSource(df, type_info), "DataFrame Source", None)

    def socket_text_stream(
        self, hostname: str, port: int, delimiter: str = "\n", max_retry: int = 0
    ) -> DataStream:
        """The lines a TCP server at ``hostname:port`` sends, cut at ``delimiter``, read by
        one subtask (Flink's ``socketTextStream``). At most once: a socket cannot be read
        again, so a failover loses what was in flight. When the server closes the
        connection, the source connects again up to ``max_retry`` times (-1: for ever),
        then the stream ends."""
        source = SocketTextSource(hostname, port, delimiter, max_retry)
        return self._source(source, "Socket Stream", None)

    def from_source(
        self, source: Source, watermark_strategy: Any, source_name: str, type_info: Any = None
    ) -> DataStream:
        """A stream read from ``source``, with timestamps and watermarks per split by
        ``watermark_strategy`` (its timestamp assigner applies, as in Flink's Java API)."""
        if not isinstance(source, Source):
            raise TypeError(f"from_source needs a source such as FileSource, got {source!r}")
        check_strategy(watermark_strategy)
        return self._source(source, source_name, type_info, watermark_strategy)

    def add_source(
        self, source_func: Any, source_name: str = "Custom Source", type_info: Any = None
    ) -> NoReturn:
        not_supported("StreamExecutionEnvironment.add_source", _SOURCE_ALTERNATIVE)

    def create_input(self, input_format: Any, type_info: Any = None) -> NoReturn:
        not_supported("StreamExecutionEnvironment.create_input", _SOURCE_ALTERNATIVE)

    # Execution ----------------------------------------------------------------------------

    def _session(self) -> SparkSession:
        if self._spark is None:
            self._spark = get_or_create_session(self._config.to_dict())
        return self._spark

    def _job_graph(self, transformations: list[Transformation]) -> JobGraph:
        config = self._config.to_dict()
        max_parallelism = options.MAX_PARALLELISM.read(config)
        return build_job_graph(
            transformations,
            self.get_parallelism(),
            max_parallelism if max_parallelism > 0 else None,
            options.RUNTIME_MODE.read(config),
            options.OPERATOR_CHAINING.read(config),
            options.JOB_PARAMETERS.read(config),
        )

    def get_execution_plan(self) -> str:
        """The job declared so far, as JSON in the shape of Flink's streaming plan: lockgate's
        graph of operators (with their uids and the tasks they are chained into; see
        ``lockgate.graph.job_graph.execution_plan``). The job stays declared: call it before
        ``execute``. Without a parallelism set, the plan's is Spark's default parallelism,
        which starts the Spark session."""
        return execution_plan(self._job_graph(self._transformations))

    def _job_master(self, job_name: str | None) -> JobMaster:
        """Validate everything that can be checked on the driver, then prepare the job."""
        config = self._config.to_dict()
        options.validate(config)
        transformations, self._transformations = self._transformations, []
        for t in transformations:
            if (
                t.kind in (TransformationKind.SOURCE, TransformationKind.SINK)
                and t.operator is not None
            ):
                t.operator.validate()
        session = self._session()
        job = self._job_graph(transformations)
        add_python_files(session, options.PYTHON_FILES.read(config))
        # a SparkContext does not start without spark.master, so its master is set
        master = cast(str, session.sparkContext.master)
        context = program_context.current()
        job_id, earlier = context.take_job_id() if context is not None else (None, ())
        settings = JobSettings.resolve(config, job_name or "lockgate job", master, job_id, earlier)
        check_exactly_once_sinks(job, settings)
        if context is not None and context.plan_only:
            raise program_context.ProgramPlan(job, settings.job_name)
        return JobMaster(session, job, settings)

    def execute(self, job_name: str | None = None) -> JobExecutionResult:
        """Run the job to its end; an interrupt (Ctrl-C) cancels it after its running
        epoch."""
        runner = self._start(job_name)
        try:
            return runner.result.result()
        except KeyboardInterrupt:
            runner.cancel()
            runner.wait()
            raise

    def execute_async(self, job_name: str = "lockgate job") -> JobClient:
        """Start the job on a thread of this process and return its handle at once; bad
        configuration fails here, before the job starts. A job still running when the
        interpreter exits is cancelled after its running epoch."""
        return JobClient(self._start(job_name))

    def _start(self, job_name: str | None) -> JobRunner:
        runner = self._runner(job_name)
        runner.start()
        return runner

    def _runner(self, job_name: str | None) -> JobRunner:
        runner = JobRunner(self._job_master(job_name))
        context = program_context.current()
        if context is not None and context.listener is not None:
            context.listener.job_started(runner)
        return runner

    def close(self) -> None:
        """Discard what was declared and not executed, and let go of the Spark session (it
        is not stopped: a Spark session is per process and may run other environments'
        jobs; ``SparkSession.stop()`` stops it). Closing twice is harmless."""
        self._transformations = []
        self._spark = None

    def _execute_collect(self, job_name: str | None) -> CloseableIterator:
        runner = self._runner(job_name)
        epochs = runner.epochs()

        def records() -> Iterator[Any]:
            for result in epochs:
                yield from result.collected

        def close() -> None:
            runner.cancel()
            # ValueError: the loop is running in another thread; it stops after its epoch
            with suppress(ValueError):
                epochs.close()
            runner.discard()

        return CloseableIterator(records(), close)

"""Driver-side pieces built from real job graphs and resolved settings (no Spark)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lockgate.common import Encoder, WatermarkStrategy
from lockgate.common.time import Duration
from lockgate.core.fs.storage import Storage
from lockgate.datastream import KeyedProcessFunction, StreamExecutionEnvironment
from lockgate.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from lockgate.graph.job_graph import build_job_graph
from lockgate.runtime.jobmaster.checkpoint_finalizer import CheckpointFinalizer
from lockgate.runtime.jobmaster.job_context import JobContext
from lockgate.runtime.jobmaster.job_settings import JobSettings


class Passthrough(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield value


def resolve(tmp_path: Path, **config: str) -> JobSettings:
    """Settings of a job on local Spark, its work directory under ``tmp_path``."""
    values = {"lockgate.work-dir": f"file://{tmp_path}/work", **config}
    return JobSettings.resolve(values, "unit", "local[2]")


def collection_job(data: list[int], parallelism: int = 2) -> Any:
    env = StreamExecutionEnvironment()
    env.from_collection(data).uid("numbers").key_by(lambda x: x % 3).process(Passthrough()).uid(
        "counter"
    ).print().uid("out")
    return build_job_graph(env._transformations, parallelism, 128)


def file_sink_job(directory: Path) -> Any:
    """A FileSink (uid "files") at parallelism 2 behind a collection source."""
    env = StreamExecutionEnvironment()
    sink = FileSink.for_row_format(str(directory), Encoder.simple_string_encoder()).build()
    env.from_collection([1, 2, 3]).uid("numbers").map(str).uid("text").set_parallelism(2).sink_to(
        sink
    ).uid("files")
    return build_job_graph(env._transformations, 2, 128)


def watching_job(directory: Path) -> Any:
    """A continuous file source: never finished, with input only when files appear."""
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(directory))
        .monitor_continuously(Duration.of_millis(1))
        .build()
    )
    env = StreamExecutionEnvironment()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "lines").uid("lines").print()
    return build_job_graph(env._transformations, 1, 128)


def commit_in_process(committer: Any, groups: list[list[Any]]) -> None:
    """What the job master's Spark tasks do with a task committer's groups, in this process."""
    for group in groups:
        committer.commit_group(group)


@dataclass
class Checkpointing:
    """The driver's checkpoint parts for a small collection job, under ``tmp_path``/chk."""

    ctx: JobContext
    job_root: Storage
    finalizer: CheckpointFinalizer

    @staticmethod
    def build(
        tmp_path: Path,
        injections: Iterable[tuple[str, int]] = (),
        job: Any = None,
        **config: str,
    ) -> Checkpointing:
        config.setdefault("execution.checkpointing.interval", "1 s")
        config["execution.checkpointing.dir"] = f"file://{tmp_path}/chk"
        settings = replace(resolve(tmp_path, **config), injections=frozenset(injections))
        ctx = JobContext.create(job or collection_job([1, 2, 3]), settings)
        assert ctx.job_root is not None
        return Checkpointing(ctx, ctx.job_root, CheckpointFinalizer(ctx, commit_in_process))

"""Every public method of PyFlink 2.3's classes exists on lockgate's class of the same name,
for the classes lockgate implements (not the placeholders of ``test_pyflink_names``): a
PyFlink job calling one gets the method, or a ``NotSupportedYetError`` naming what to use
instead, never an ``AttributeError``. Read from PyFlink's own package (``pyflink_wheel``).
"""

from __future__ import annotations

import ast
import importlib

import pytest
from pyflink_wheel import SOURCES, needs_pyflink
from test_pyflink_names import MODULES, lockgate_module

from lockgate.common.unsupported import NotSupportedYetError, _UnsupportedMeta

# PyFlink's bridge to its Java objects: no counterpart in a library without Java.
JAVA_BRIDGE = {"get_java_type_info", "get_java_output_tag", "to_j_row_kind"}

# Methods lockgate lacks still, by class. The test fails when one is added (remove it here)
# as well as when a method is missing that is not listed.
KNOWN_GAPS = {
    "lockgate.common.configuration.Configuration": {"parse_list_value"},
    # PyFlink's conversion between Python values and its Java serializers' internal ones
    **{
        f"lockgate.common.typeinfo.{name}": {
            "need_conversion",
            "to_internal_type",
            "from_internal_type",
        }
        for name in (
            "TypeInformation",
            "InstantTypeInfo",
            "RowTypeInfo",
            "TupleTypeInfo",
            "DateTypeInfo",
            "TimeTypeInfo",
            "TimestampTypeInfo",
        )
    },
    "lockgate.datastream.checkpoint_storage.JobManagerCheckpointStorage": {"get_max_state_size"},
    "lockgate.datastream.checkpoint_storage.FileSystemCheckpointStorage": {
        "get_min_file_size_threshold",
        "get_write_buffer_size",
    },
}


def pyflink_classes() -> list[tuple[str, type, list[str]]]:
    """(lockgate's name, lockgate's class, PyFlink's public method names) of every PyFlink
    class that lockgate implements rather than as a placeholder."""
    found = []
    for module in MODULES:
        path = module.replace(".", "/")
        source = SOURCES.get(path + ".py") or SOURCES.get(path + "/__init__.py")
        if source is None:
            continue
        counterpart = importlib.import_module(lockgate_module(module))
        for node in ast.parse(source).body:
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            cls = getattr(counterpart, node.name, None)
            if not isinstance(cls, type) or isinstance(cls, _UnsupportedMeta):
                continue
            methods = [
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                and not f.name.startswith("_")
                and f.name not in JAVA_BRIDGE
            ]
            found.append((f"{cls.__module__}.{cls.__qualname__}", cls, methods))
    return found


@needs_pyflink
def test_lockgate_classes_have_every_pyflink_method():
    classes = pyflink_classes()
    assert len(classes) >= 100  # the scan finds them (a broken scan would pass on none)
    names = {name for name, _, _ in classes}
    for required in (
        "lockgate.datastream.stream_execution_environment.StreamExecutionEnvironment",
        "lockgate.datastream.data_stream.DataStream",
        "lockgate.datastream.data_stream.KeyedStream",
        "lockgate.datastream.data_stream.DataStreamSink",
        "lockgate.datastream.checkpoint_config.CheckpointConfig",
    ):
        assert required in names
    missing: dict[str, set[str]] = {}
    for name, cls, methods in classes:
        absent = {m for m in methods if not hasattr(cls, m)}
        if absent:
            missing.setdefault(name, set()).update(absent)
    unexpected = {
        name: sorted(absent - KNOWN_GAPS.get(name, set()))
        for name, absent in missing.items()
        if absent - KNOWN_GAPS.get(name, set())
    }
    assert not unexpected, f"PyFlink methods lockgate lacks: {unexpected}"
    filled = {
        name: sorted(gaps - missing.get(name, set()))
        for name, gaps in KNOWN_GAPS.items()
        if gaps - missing.get(name, set())
    }
    assert not filled, f"no longer missing, remove them from KNOWN_GAPS: {filled}"


# The methods lockgate does not support yet: calling them raises, naming the alternative.
def _env():
    from lockgate.datastream import StreamExecutionEnvironment

    return StreamExecutionEnvironment().set_parallelism(1)


def _stream():
    return _env().from_collection([(1, "a")]).map(lambda r: r)


def _sink():
    return _stream().print()


def _checkpoint_config():
    return _env().get_checkpoint_config()


def _execution_config():
    return _env().get_config()


def _file_source_builder():
    from lockgate.datastream.connectors.file_system import FileSource, StreamFormat

    return FileSource.for_record_stream_format(StreamFormat.text_line_format(), "/data")


def _csv_schema_builder():
    from lockgate.datastream.formats.csv import CsvSchema

    return CsvSchema.builder()


def _rocksdb():
    from lockgate.datastream.state_backend import EmbeddedRocksDBStateBackend

    return EmbeddedRocksDBStateBackend()


NOT_SUPPORTED = [
    ("StreamExecutionEnvironment.register_slot_sharing_group", _env, (None,)),
    ("StreamExecutionEnvironment.set_buffer_timeout", _env, (100,)),
    ("StreamExecutionEnvironment.get_buffer_timeout", _env, ()),
    ("StreamExecutionEnvironment.enable_changelog_state_backend", _env, (True,)),
    ("StreamExecutionEnvironment.set_python_requirements", _env, ("requirements.txt",)),
    ("StreamExecutionEnvironment.add_python_archive", _env, ("venv.zip",)),
    ("StreamExecutionEnvironment.set_python_executable", _env, ("python3",)),
    ("StreamExecutionEnvironment.add_jars", _env, ("file:///a.jar",)),
    ("StreamExecutionEnvironment.add_classpaths", _env, ("file:///a",)),
    ("StreamExecutionEnvironment.set_default_local_parallelism", _env, (2,)),
    ("StreamExecutionEnvironment.register_cached_file", _env, ("/tmp/f", "f")),
    ("StreamExecutionEnvironment.create_input", _env, (None,)),
    ("StreamExecutionEnvironment.add_source", _env, (None,)),
    ("DataStream.set_uid_hash", _stream, ("abc",)),
    ("DataStream.set_buffer_timeout", _stream, (0,)),
    ("DataStream.slot_sharing_group", _stream, ("group",)),
    ("DataStream.add_sink", _stream, (None,)),
    ("DataStream.cache", _stream, ()),
    ("DataStreamSink.set_uid_hash", _sink, ("abc",)),
    ("DataStreamSink.slot_sharing_group", _sink, ("group",)),
    ("CheckpointConfig.set_force_unaligned_checkpoints", _checkpoint_config, (True,)),
    ("CheckpointConfig.set_aligned_checkpoint_timeout", _checkpoint_config, (None,)),
    ("CheckpointConfig.get_aligned_checkpoint_timeout", _checkpoint_config, ()),
    ("CheckpointConfig.set_alignment_timeout", _checkpoint_config, (None,)),
    ("CheckpointConfig.get_alignment_timeout", _checkpoint_config, ()),
    ("ExecutionConfig.set_auto_watermark_interval", _execution_config, (200,)),
    ("ExecutionConfig.get_auto_watermark_interval", _execution_config, ()),
    ("ExecutionConfig.set_latency_tracking_interval", _execution_config, (100,)),
    ("ExecutionConfig.get_task_cancellation_interval", _execution_config, ()),
    ("ExecutionConfig.set_task_cancellation_interval", _execution_config, (100,)),
    ("ExecutionConfig.get_task_cancellation_timeout", _execution_config, ()),
    ("ExecutionConfig.set_task_cancellation_timeout", _execution_config, (100,)),
    ("ExecutionConfig.enable_closure_cleaner", _execution_config, ()),
    ("ExecutionConfig.enable_force_kryo", _execution_config, ()),
    ("ExecutionConfig.enable_force_avro", _execution_config, ()),
    ("ExecutionConfig.disable_generic_types", _execution_config, ()),
    ("ExecutionConfig.disable_auto_generated_uids", _execution_config, ()),
    ("ExecutionConfig.disable_object_reuse", _execution_config, ()),
    ("ExecutionConfig.set_use_snapshot_compression", _execution_config, (True,)),
    ("FileSourceBuilder.set_file_enumerator", _file_source_builder, (None,)),
    ("FileSourceBuilder.set_split_assigner", _file_source_builder, (None,)),
    ("CsvSchemaBuilder.set_any_property_name", _csv_schema_builder, ("extra",)),
    ("EmbeddedRocksDBStateBackend.set_options", _rocksdb, ("org.example.Options",)),
]


@pytest.mark.parametrize(
    ("name", "make", "args"), NOT_SUPPORTED, ids=[n for n, _, _ in NOT_SUPPORTED]
)
def test_not_supported_methods_name_the_alternative(name, make, args):
    method = getattr(make(), name.split(".")[1])
    with pytest.raises(
        NotSupportedYetError, match=rf"^{name} is not supported yet by lockgate: use \S"
    ):
        method(*args)


def test_keyed_streams_refuse_what_pyflink_refuses_on_them():
    keyed = _stream().key_by(lambda r: r[0])
    for method in ("rescale", "shuffle", "forward"):
        with pytest.raises(ValueError, match="cannot override partitioning for KeyedStream"):
            getattr(keyed, method)()
    with pytest.raises(ValueError, match="cannot override partitioning for KeyedStream"):
        keyed.partition_custom(lambda key, n: 0, lambda r: r[0])
    for method in ("force_non_parallel", "start_new_chain", "disable_chaining"):
        with pytest.raises(ValueError, match="not supported on a KeyedStream"):
            getattr(keyed, method)()
    with pytest.raises(NotSupportedYetError, match=r"use uid\(\)"):
        keyed.set_uid_hash("abc")


def test_small_getters_say_what_lockgate_holds():
    from lockgate.common import RestartStrategies
    from lockgate.datastream.checkpoint_storage import (
        FileSystemCheckpointStorage,
        JobManagerCheckpointStorage,
    )
    from lockgate.datastream.connectors.file_system import FileSink
    from lockgate.datastream.functions import RuntimeContext

    assert (
        RestartStrategies.fixed_delay_restart(3, 1000).get_description()
        == "fixed-delay (attempts=3, delay=1000 ms)"
    )
    assert RestartStrategies.no_restart().get_description() == "none"
    assert (
        RestartStrategies.fall_back_restart().get_description() == "the configured restart strategy"
    )
    assert JobManagerCheckpointStorage().get_checkpoint_path() is None
    assert FileSystemCheckpointStorage("s3://b/chk").get_checkpoint_path() == "s3://b/chk"
    assert FileSystemCheckpointStorage("s3://b/chk").get_savepoint_path() is None
    assert _rocksdb().get_options() is None
    assert FileSink.for_row_format("/out", None).build().get_transformer() is None
    assert "get_task_name_with_subtasks" in RuntimeContext.__abstractmethods__

"""Every public name of PyFlink 2.3's ``pyflink.common``, ``pyflink.datastream`` and
``pyflink.metrics`` imports from the same ``lockgate.`` path (issue 13), read from PyFlink's own
package that the set-up downloads into ``.venv/pyflink-wheel/`` (``make``; no Flink jars). A
name lockgate cannot run yet is a placeholder that raises :class:`NotSupportedYetError` naming
the alternative when it is used.
"""

from __future__ import annotations

import importlib

import pytest
from pyflink_wheel import needs_pyflink, public_names

from lockgate.common.unsupported import NotSupportedYetError, _UnsupportedMeta

# The modules users import from: PyFlink's packages and their public submodules (not the
# internal ones: utils, constants, connectors.base).
MODULES = [
    "pyflink.common",
    "pyflink.common.completable_future",
    "pyflink.common.config_options",
    "pyflink.common.configuration",
    "pyflink.common.execution_config",
    "pyflink.common.input_dependency_constraint",
    "pyflink.common.io",
    "pyflink.common.job_client",
    "pyflink.common.job_execution_result",
    "pyflink.common.job_id",
    "pyflink.common.job_status",
    "pyflink.common.restart_strategy",
    "pyflink.common.serialization",
    "pyflink.common.serializer",
    "pyflink.common.time",
    "pyflink.common.typeinfo",
    "pyflink.common.types",
    "pyflink.common.watermark_strategy",
    "pyflink.datastream",
    "pyflink.datastream.async_data_stream",
    "pyflink.datastream.async_retry_strategies",
    "pyflink.datastream.checkpoint_config",
    "pyflink.datastream.checkpoint_storage",
    "pyflink.datastream.checkpointing_mode",
    "pyflink.datastream.connectors",
    "pyflink.datastream.connectors.cassandra",
    "pyflink.datastream.connectors.dynamic_kafka",
    "pyflink.datastream.connectors.elasticsearch",
    "pyflink.datastream.connectors.file_system",
    "pyflink.datastream.connectors.hybrid_source",
    "pyflink.datastream.connectors.jdbc",
    "pyflink.datastream.connectors.kafka",
    "pyflink.datastream.connectors.kinesis",
    "pyflink.datastream.connectors.number_seq",
    "pyflink.datastream.connectors.pulsar",
    "pyflink.datastream.connectors.rabbitmq",
    "pyflink.datastream.data_stream",
    "pyflink.datastream.execution_mode",
    "pyflink.datastream.externalized_checkpoint_retention",
    "pyflink.datastream.formats.avro",
    "pyflink.datastream.formats.csv",
    "pyflink.datastream.formats.json",
    "pyflink.datastream.formats.orc",
    "pyflink.datastream.formats.parquet",
    "pyflink.datastream.functions",
    "pyflink.datastream.output_tag",
    "pyflink.datastream.slot_sharing_group",
    "pyflink.datastream.state",
    "pyflink.datastream.state_backend",
    "pyflink.datastream.stream_execution_environment",
    "pyflink.datastream.time_domain",
    "pyflink.datastream.timerservice",
    "pyflink.datastream.window",
    "pyflink.metrics",
    "pyflink.metrics.metricbase",
]


def lockgate_module(module: str) -> str:
    return "lockgate" + module.removeprefix("pyflink")


@needs_pyflink
def test_every_pyflink_name_imports_from_lockgate():
    missing = []
    for module in MODULES:
        try:
            counterpart = importlib.import_module(lockgate_module(module))
        except ImportError:
            missing.extend(f"{module}.{name}" for name in public_names(module))
            continue
        missing.extend(
            f"{module}.{name}" for name in public_names(module) if not hasattr(counterpart, name)
        )
    assert not missing, f"{len(missing)} PyFlink names lockgate lacks:\n" + "\n".join(missing)


@needs_pyflink
@pytest.mark.parametrize("module", MODULES)
def test_lockgate_all_lists_pyflink_names(module):
    """``from lockgate.x import *`` gives what ``from pyflink.x import *`` gives."""
    counterpart = importlib.import_module(lockgate_module(module))
    exported = getattr(counterpart, "__all__", None)
    if exported is None:  # a star import takes every name without a leading underscore
        exported = [name for name in vars(counterpart) if not name.startswith("_")]
    assert set(public_names(module)) - set(exported) == set()


def placeholders() -> list[tuple[str, type]]:
    found = {}
    for module in MODULES:
        counterpart = importlib.import_module(lockgate_module(module))
        for name in dir(counterpart):
            value = getattr(counterpart, name)
            if isinstance(value, _UnsupportedMeta):
                found[value.__qualname__] = value
    return sorted(found.items())


@pytest.mark.parametrize(("name", "placeholder"), placeholders())
def test_placeholders_raise_naming_the_alternative(name, placeholder):
    expected = rf"^{name} is not supported yet by lockgate: use \S"
    with pytest.raises(NotSupportedYetError, match=expected):
        placeholder()
    with pytest.raises(NotSupportedYetError, match=expected):
        placeholder.builder()
    subclass = type("UserSubclass", (placeholder,), {})
    with pytest.raises(NotSupportedYetError, match=expected):
        subclass()
    assert not hasattr(placeholder, "builder")  # introspection sees no attributes


def test_the_placeholders_are_found():
    assert len(placeholders()) >= 80  # PyFlink 2.3's connectors and formats lockgate lacks


def test_placeholder_messages_name_the_alternatives():
    from lockgate.datastream.connectors.cassandra import CassandraSink
    from lockgate.datastream.connectors.kafka import FlinkKafkaConsumer, Semantic

    with pytest.raises(NotSupportedYetError, match=r"FlinkKafkaConsumer .* use KafkaSource"):
        FlinkKafkaConsumer(["t"], None, {})
    with pytest.raises(NotSupportedYetError, match=r"Semantic .* use KafkaSink"):
        Semantic.EXACTLY_ONCE  # noqa: B018
    with pytest.raises(NotSupportedYetError, match=r"CassandraSink .* use FileSink"):
        CassandraSink.add_sink(None)

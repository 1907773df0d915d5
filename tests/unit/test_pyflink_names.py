"""Every public name of PyFlink 2.3's ``pyflink.common`` and ``pyflink.datastream`` imports from
the same ``lockgate.`` path (issue 13), read from PyFlink's own package that the set-up downloads
into ``.venv/pyflink-wheel/`` (``make``; no Flink jars). A name lockgate cannot run yet is a
placeholder that raises :class:`NotSupportedYetError` naming the alternative when it is used.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from lockgate.common.unsupported import NotSupportedYetError, _UnsupportedMeta

PYFLINK_VERSION = "2.3.0"

# The modules users import from: PyFlink's packages and their public submodules (the connectors
# of lockgate's scope; the other connectors and pyflink.datastream.formats are not there yet).
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
    "pyflink.datastream.connectors.file_system",
    "pyflink.datastream.connectors.hybrid_source",
    "pyflink.datastream.connectors.jdbc",
    "pyflink.datastream.connectors.kafka",
    "pyflink.datastream.connectors.number_seq",
    "pyflink.datastream.data_stream",
    "pyflink.datastream.execution_mode",
    "pyflink.datastream.externalized_checkpoint_retention",
    "pyflink.datastream.functions",
    "pyflink.datastream.output_tag",
    "pyflink.datastream.slot_sharing_group",
    "pyflink.datastream.state",
    "pyflink.datastream.state_backend",
    "pyflink.datastream.stream_execution_environment",
    "pyflink.datastream.time_domain",
    "pyflink.datastream.timerservice",
    "pyflink.datastream.window",
]


def wheel_dir() -> Path:
    """Where the set-up puts PyFlink's package: ``pyflink-wheel/`` in the venv running the tests."""
    override = os.environ.get("LOCKGATE_PYFLINK_WHEEL_DIR")
    return Path(override) if override else Path(sys.prefix) / "pyflink-wheel"


def pyflink_sources() -> dict[str, bytes]:
    """``pyflink/...py`` path to source, from the downloaded wheel (or sdist); empty if absent."""
    directory = wheel_dir()
    wheels = sorted(directory.glob(f"apache_flink-{PYFLINK_VERSION}-*.whl"))
    if wheels:
        with zipfile.ZipFile(wheels[0]) as wheel:
            return {
                name: wheel.read(name)
                for name in wheel.namelist()
                if name.startswith("pyflink/") and name.endswith(".py")
            }
    sdists = sorted(directory.glob(f"apache[-_]flink-{PYFLINK_VERSION}.tar.gz"))
    if sdists:
        sources = {}
        with tarfile.open(sdists[0]) as sdist:
            for member in sdist.getmembers():
                path = member.name.split("/", 1)[-1]
                extracted = sdist.extractfile(member) if member.isfile() else None
                if extracted and path.startswith("pyflink/") and path.endswith(".py"):
                    sources[path] = extracted.read()
        return sources
    return {}


SOURCES = pyflink_sources()
needs_pyflink = pytest.mark.skipif(
    not SOURCES,
    reason=f"PyFlink {PYFLINK_VERSION}'s package is not in {wheel_dir()}: the set-up downloads it "
    f"(make unit), or run `pip download --no-deps -d {wheel_dir()} "
    f"apache-flink=={PYFLINK_VERSION}`",
)


def public_names(module: str) -> list[str]:
    """The module's ``__all__``, read statically; without one, its public classes and functions."""
    path = module.replace(".", "/")
    source = SOURCES.get(path + ".py") or SOURCES[path + "/__init__.py"]
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return list(dict.fromkeys(ast.literal_eval(node.value)))
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and not node.name.startswith("_")
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
    if exported is None:
        pytest.skip(f"{lockgate_module(module)} has no __all__")
    assert set(public_names(module)) <= set(exported)


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
    assert isinstance(NotSupportedYetError(""), NotImplementedError)


def test_placeholder_messages_name_the_alternatives():
    from lockgate.datastream.connectors.jdbc import JdbcSink
    from lockgate.datastream.connectors.kafka import KafkaSource, Semantic

    with pytest.raises(NotSupportedYetError, match=r"KafkaSource .* use FileSource"):
        KafkaSource.builder()
    with pytest.raises(NotSupportedYetError, match=r"Semantic .* use"):
        Semantic.EXACTLY_ONCE  # noqa: B018
    with pytest.raises(NotSupportedYetError, match=r"JdbcSink .* use FileSink"):
        JdbcSink.sink("insert into t values (?)")

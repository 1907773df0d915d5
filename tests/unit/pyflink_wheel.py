"""PyFlink's own package, which the set-up downloads into ``.venv/pyflink-wheel/`` (``make``;
PyFlink's Python code only, no Flink jars): its modules' sources and their public names."""

from __future__ import annotations

import ast
import os
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

PYFLINK_VERSION = "2.3.0"


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

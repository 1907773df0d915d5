"""lockgate writes diagnostics through ``logging`` only, to loggers named after its modules,
and nowhere unless the application configures logging; only the print sink writes records to
stdout or stderr, and the per-epoch progress lines (``lockgate.progress``) to stderr. The
``lockgate`` command (``lockgate.cli``) writes to the terminal: that is what it is for."""

from __future__ import annotations

import ast
import logging
import subprocess
import sys
from pathlib import Path

import lockgate

PACKAGE = Path(lockgate.__file__).parent
# module -> the one place in it allowed to name sys.stdout or sys.stderr
WRITES_RECORDS = {"runtime/subtaskhost/operators.py": "PrintSinkOperator"}
CONSOLE = {"runtime/jobmaster/progress.py"}  # rich's Console(stderr=True): lockgate.progress
# The lockgate command's output is the terminal's: its package is a tool, not the library
TOOLS = "cli/"


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(PACKAGE)), ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _enclosing_classes(tree: ast.Module) -> dict[ast.AST, str]:
    owner: dict[ast.AST, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for inner in ast.walk(node):
                owner[inner] = node.name
    return owner


def test_the_lockgate_logger_has_a_null_handler_and_nothing_else():
    handlers = logging.getLogger("lockgate").handlers
    assert [type(h) for h in handlers] == [logging.NullHandler]


def test_a_warning_reaches_no_stream_unless_the_application_configures_logging():
    script = (
        "import logging, lockgate.runtime.jobmaster.failover as m\n"
        "logging.getLogger(m.__name__).warning('a warning of lockgate')\n"
        "logging.basicConfig(format='%(name)s: %(message)s')\n"
        "logging.getLogger(m.__name__).warning('now configured')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout == ""
    assert done.stderr == "lockgate.runtime.jobmaster.failover: now configured\n"


def test_every_logger_is_named_after_its_module():
    wrong = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
                and not (
                    len(node.args) == 1
                    and isinstance(node.args[0], ast.Name)
                    and node.args[0].id == "__name__"
                )
            ):
                wrong.append(f"{name}:{node.lineno}")
    assert not wrong, f"loggers not named __name__: {wrong}"


def test_only_the_print_sink_and_the_progress_lines_write_to_stdout_or_stderr():
    found = []
    for name, tree in _modules():
        if name.startswith(TOOLS):
            continue
        owner = _enclosing_classes(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "print"
            ):
                found.append(f"{name}:{node.lineno}: print()")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__")
                and isinstance(node.value, ast.Name)
                and node.value.id == "sys"
                and owner.get(node) != WRITES_RECORDS.get(name)
            ):
                found.append(f"{name}:{node.lineno}: sys.{node.attr}")
            elif (
                isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("rich")
                and name not in CONSOLE
            ):
                found.append(f"{name}:{node.lineno}: rich")
    assert not found, f"writes to stdout or stderr outside the print sink: {found}"

"""Dependencies between lockgate's packages point down only (DESIGN §2).

Layers, lowest first; a module may import from its own layer and the ones below it. Checkpoint
storage (the fsspec layer) sits below the state backends, which write through it; the rest of
``checkpoint`` (metadata, coordinator, registries) sits above them, since it records their
manifests. The state processor reads and writes checkpoints and savepoints, and no job needs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lockgate

LAYERS = [
    ("lockgate.common",),
    ("lockgate.checkpoint.storage",),
    ("lockgate.state",),
    ("lockgate.checkpoint",),
    ("lockgate.state_processor",),
    ("lockgate.graph",),
    ("lockgate.runtime",),
    ("lockgate.connectors",),
    ("lockgate.datastream", "lockgate"),
]
PACKAGE = Path(lockgate.__file__).parent


def layer_of(module: str) -> int:
    """The layer of the longest prefix that names ``module``'s package."""
    best = (-1, -1)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                best = max(best, (len(prefix), index))
    assert best[1] >= 0, f"{module} is in no layer"
    return best[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def lockgate_imports(path: Path) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    return {name for name in imported if name == "lockgate" or name.startswith("lockgate.")}


def test_imports_point_down():
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        for imported in sorted(lockgate_imports(path)):
            if layer_of(imported) > layer_of(module):
                upward.append(f"{module} imports {imported}")
    assert not upward, "imports that point up a layer:\n" + "\n".join(upward)


def test_tasks_do_not_import_the_driver():
    """What runs in Spark tasks never loads the JobMaster's code (workers import it)."""
    task_side = [PACKAGE / "runtime" / "taskexecutor", PACKAGE / "connectors"]
    found = [
        f"{module_name(path)} imports {imported}"
        for directory in task_side
        for path in sorted(directory.rglob("*.py"))
        for imported in sorted(lockgate_imports(path))
        if imported.startswith("lockgate.runtime.jobmaster")
    ]
    assert not found, "\n".join(found)


def test_layer_of():
    assert layer_of("lockgate.checkpoint.storage") < layer_of("lockgate.state.manifests")
    assert layer_of("lockgate.state.manifests") < layer_of("lockgate.checkpoint.metadata")
    assert layer_of("lockgate.checkpoint.savepoint") < layer_of("lockgate.state_processor.errors")
    assert layer_of("lockgate.state_processor") < layer_of("lockgate.runtime")
    assert layer_of("lockgate.runtime.source") < layer_of("lockgate.connectors.file_sink")
    assert layer_of("lockgate") == layer_of("lockgate.datastream.functions")

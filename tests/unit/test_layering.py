"""Dependencies between lockgate's packages point down only (CONTRIBUTING.md, "Package layout").

Layers, lowest first; a module may import from its own layer and the ones below it. ``core``
(after flink-core) sits just above ``common``: its connector contracts, since the graph holds
sources and sinks, the runtime drives them and connectors implement them; its file systems
(``core.fs``: fsspec, atomic writes), since the state backends and ``checkpoint`` write through
them. ``checkpoint`` (metadata, coordinator, registries) sits above the state backends, since it
records their manifests. The state processor reads and writes checkpoints and savepoints, and no
job needs it. ``metrics`` (PyFlink's metric interfaces, which the subtask hosts implement) sits
with ``common``, at the bottom. The tools sit on top: the Dispatcher runs job files and serves
what their drivers report, and the ``lockgate`` command drives jobs, the Dispatcher and the
state processor.
"""

from __future__ import annotations

import ast
from pathlib import Path

import lockgate

LAYERS = [
    ("lockgate.common", "lockgate.metrics"),
    ("lockgate.core",),
    ("lockgate.state",),
    ("lockgate.checkpoint",),
    ("lockgate.state_processor",),
    ("lockgate.graph",),
    ("lockgate.runtime",),
    ("lockgate.connectors",),
    ("lockgate.datastream", "lockgate"),
    ("lockgate.dispatcher",),
    ("lockgate.cli",),
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


# Import circles left on purpose, by the edge that closes them, with the reason. PyFlink's API
# has DataStream and StreamExecutionEnvironment return each other (from_collection and
# get_execution_environment), each in its own module at PyFlink's paths: the environment
# builds streams, and the stream module names the environment's type for annotations only.
CIRCLES_ALLOWED = {
    ("lockgate.datastream.data_stream", "lockgate.datastream.stream_execution_environment"),
}


def package_imports(path: Path, modules: set[str]) -> set[str]:
    """The lockgate modules that ``path`` imports, wherever the import stands (module level,
    in a function, under ``if TYPE_CHECKING:``). ``from package import name`` imports the
    module ``package.name`` when there is one, else ``package`` (its ``__init__``)."""
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                imported.add(submodule if submodule in modules else node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    return imported & modules


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its modules in import order, the first again at the end)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return None
        path.append(module)
        for imported in sorted(graph[module]):
            circle = visit(imported)
            if circle is not None:
                return circle
        path.pop()
        done.add(module)
        return None

    for module in sorted(graph):
        circle = visit(module)
        if circle is not None:
            return circle
    return None


def test_no_import_circles_inside_a_package():
    """Within each package (a directory of src/lockgate, its ``__init__`` included), the
    modules' imports of one another form no circle, so each package reads bottom-up.

    Every import counts: at module level, inside functions (a lazy import hides a circle,
    it does not remove it) and under ``if TYPE_CHECKING:`` (the modules still depend on each
    other's definitions). Importing a submodule does not count as importing its package's
    ``__init__``, which Python runs first for any submodule: an ``__init__`` that re-exports
    its modules would otherwise be in a circle with every one of them. CIRCLES_ALLOWED lists
    the edges left on purpose."""
    paths = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    modules = set(paths)
    circles = []
    for directory in sorted({path.parent for path in paths.values()}):
        inside = {m for m, path in paths.items() if path.parent == directory}
        graph = {
            m: {
                imported
                for imported in package_imports(paths[m], modules) & inside
                if imported != m and (m, imported) not in CIRCLES_ALLOWED
            }
            for m in inside
        }
        circle = find_circle(graph)
        if circle is not None:
            circles.append(" -> ".join(circle))
    assert not circles, "import circles inside a package:\n" + "\n".join(circles)


def test_find_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": set(), "b": {"c"}, "c": {"b"}}) == ["b", "c", "b"]


# The processes of a running job, by the folder under lockgate/runtime that holds their code,
# and the folders each may import besides the shared ones (runtime/*.py, runtime/messages/).
# The driver imports the Spark task side because it hands Spark the functions that run there;
# the task manager imports the subtask host because it forks the hosts.
PROCESSES = {
    "jobmaster": {"sparktask"},
    "sparktask": set(),
    "taskmanager": {"subtaskhost"},
    "subtaskhost": set(),
    "messages": set(),
}
# Code that runs in a task manager or a subtask host never loads PySpark: they are processes of
# their own, which the executor's Python daemon does not give a SparkContext or a TaskContext.
WITHOUT_PYSPARK = ("taskmanager", "subtaskhost", "messages")


def process_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["lockgate", "runtime"] and len(parts) > 2 and parts[2] in PROCESSES:
        return parts[2]
    return None


def all_imports(path: Path) -> set[str]:
    imported = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    return imported


def test_a_folder_per_process():
    """A module imports only its own process's folder, the shared records and contracts, and
    the folders its process may load (PROCESSES)."""
    crossing = []
    for path in sorted((PACKAGE / "runtime").rglob("*.py")):
        module = module_name(path)
        own = process_of(module)
        for imported in sorted(all_imports(path)):
            other = process_of(imported)
            if other is None or other == own or other == "messages":
                continue
            if own is None or other not in PROCESSES[own]:
                crossing.append(f"{module} ({own or 'shared'}) imports {imported} ({other})")
    assert not crossing, "imports across processes:\n" + "\n".join(crossing)


def test_hosts_do_not_load_pyspark():
    found = [
        f"{module_name(path)} imports {imported}"
        for folder in WITHOUT_PYSPARK
        for path in sorted((PACKAGE / "runtime" / folder).rglob("*.py"))
        for imported in sorted(all_imports(path))
        if imported == "pyspark" or imported.startswith("pyspark.")
    ]
    assert not found, "\n".join(found)


def test_tasks_do_not_import_the_driver():
    """What runs in Spark tasks never loads the JobMaster's code (workers import it)."""
    task_side = [PACKAGE / "runtime" / folder for folder in PROCESSES if folder != "jobmaster"]
    task_side.append(PACKAGE / "connectors")
    found = [
        f"{module_name(path)} imports {imported}"
        for directory in task_side
        for path in sorted(directory.rglob("*.py"))
        for imported in sorted(lockgate_imports(path))
        if imported.startswith("lockgate.runtime.jobmaster")
    ]
    assert not found, "\n".join(found)


def test_state_processor_tasks_do_not_import_its_driver():
    """The state processor's task functions import only each other, its records and errors."""
    allowed = ("lockgate.state_processor.tasks", "lockgate.state_processor.task_records")
    allowed += ("lockgate.state_processor.errors",)
    found = [
        f"{module_name(path)} imports {imported}"
        for path in sorted((PACKAGE / "state_processor" / "tasks").rglob("*.py"))
        for imported in sorted(lockgate_imports(path))
        if imported.startswith("lockgate.state_processor")
        and not any(imported == a or imported.startswith(a + ".") for a in allowed)
    ]
    assert not found, "\n".join(found)


# A connector's modules by the process that runs them: its enumerator and committer run on the
# driver, its reader and writer in subtask hosts; neither side imports the other's.
CONNECTOR_SIDES = {
    "enumerator": "driver",
    "committer": "driver",
    "reader": "host",
    "writer": "host",
}


def test_connector_sides_stay_apart():
    found = []
    for path in sorted((PACKAGE / "connectors").rglob("*.py")):
        side = CONNECTOR_SIDES.get(path.stem)
        for imported in sorted(lockgate_imports(path)):
            other = CONNECTOR_SIDES.get(imported.rpartition(".")[2])
            if imported.startswith("lockgate.connectors.") and other and side and other != side:
                found.append(f"{module_name(path)} ({side}) imports {imported} ({other})")
    assert not found, "\n".join(found)


def test_layer_of():
    assert layer_of("lockgate.core.fs.storage") < layer_of("lockgate.state.manifests")
    assert layer_of("lockgate.core.fs.storage") < layer_of("lockgate.checkpoint.coordinator")
    assert layer_of("lockgate.state.manifests") < layer_of("lockgate.checkpoint.metadata")
    assert layer_of("lockgate.checkpoint.savepoint") < layer_of("lockgate.state_processor.errors")
    assert layer_of("lockgate.state_processor") < layer_of("lockgate.runtime")
    assert layer_of("lockgate.core.source") < layer_of("lockgate.connectors.file.writer")
    assert layer_of("lockgate") == layer_of("lockgate.datastream.functions")

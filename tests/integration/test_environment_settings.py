"""Environment settings that reach the job's tasks: ``add_python_file`` (a module that only
the added file or directory holds is importable in the functions of the job's tasks, Spark's
Python workers and lockgate's subtask hosts) and the global job parameters."""

from __future__ import annotations

import importlib
import sys
import uuid

from lockgate_it_support import collect

from lockgate.datastream import MapFunction


def test_added_python_files_and_directories_reach_the_tasks(make_env, tmp_path):
    file_module = f"lockgate_probe_file_{uuid.uuid4().hex[:8]}"
    dir_module = f"lockgate_probe_dir_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{file_module}.py").write_text("def tag(x):\n    return ('file', x)\n")
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / f"{dir_module}.py").write_text("def tag(x):\n    return ('dir', x)\n")
    env = make_env(parallelism=2)
    env.add_python_file(str(tmp_path / f"{file_module}.py")).add_python_file(str(deps))

    def tag_both(x):  # imports at run time: the driver never imported the modules
        first = importlib.import_module(file_module).tag(x)
        return importlib.import_module(dir_module).tag(first)

    try:
        actual = collect(env.from_collection([1, 2, 3]).rebalance().map(tag_both))
    finally:
        for name in (file_module, dir_module):
            sys.modules.pop(name, None)
    assert sorted(actual) == [("dir", ("file", n)) for n in (1, 2, 3)]


class Greeting(MapFunction):
    def open(self, runtime_context):
        self.greeting = runtime_context.get_job_parameter("greeting", "hello")
        self.missing = runtime_context.get_job_parameter("missing", "default")

    def map(self, value):
        return self.greeting, self.missing, value


def test_functions_read_the_global_job_parameters(make_env):
    env = make_env(parallelism=2)
    env.get_config().set_global_job_parameters({"greeting": "hi, there: 'you'"})
    actual = collect(env.from_collection([1, 2]).rebalance().map(Greeting()))
    assert sorted(actual) == [("hi, there: 'you'", "default", n) for n in (1, 2)]

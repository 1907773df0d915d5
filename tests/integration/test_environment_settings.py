"""Environment settings that reach the job's tasks, in one job: ``add_python_file`` (a module
that only the added file or directory holds is importable in the functions of the job's
tasks, Spark's Python workers and lockgate's subtask hosts) and the global job parameters."""

from __future__ import annotations

import importlib
import sys
import uuid

from lockgate_it_support import collect

from lockgate.datastream import MapFunction


class Tagged(MapFunction):
    """Imports the modules at run time (the driver never imports them) and reads a job
    parameter in open()."""

    def __init__(self, file_module: str, dir_module: str):
        self.file_module = file_module
        self.dir_module = dir_module

    def open(self, runtime_context):
        self.greeting = runtime_context.get_job_parameter("greeting", "hello")
        self.missing = runtime_context.get_job_parameter("missing", "default")

    def map(self, value):
        tagged = importlib.import_module(self.file_module).tag(value)
        return self.greeting, self.missing, importlib.import_module(self.dir_module).tag(tagged)


def test_python_files_and_job_parameters_reach_the_tasks(make_env, tmp_path):
    file_module = f"lockgate_probe_file_{uuid.uuid4().hex[:8]}"
    dir_module = f"lockgate_probe_dir_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{file_module}.py").write_text("def tag(x):\n    return ('file', x)\n")
    deps = tmp_path / "deps"
    deps.mkdir()
    (deps / f"{dir_module}.py").write_text("def tag(x):\n    return ('dir', x)\n")
    env = make_env(parallelism=2)
    env.add_python_file(str(tmp_path / f"{file_module}.py")).add_python_file(str(deps))
    env.get_config().set_global_job_parameters({"greeting": "hi, there: 'you'"})
    try:
        stream = env.from_collection([1, 2, 3]).rebalance().map(Tagged(file_module, dir_module))
        actual = collect(stream)
    finally:
        for name in (file_module, dir_module):
            sys.modules.pop(name, None)
    expected = [("hi, there: 'you'", "default", ("dir", ("file", n))) for n in (1, 2, 3)]
    assert sorted(actual) == expected

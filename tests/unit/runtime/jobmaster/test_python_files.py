"""``python.files`` (``env.add_python_file``): what reaches Spark's ``addPyFile``."""

from __future__ import annotations

import zipfile
from types import SimpleNamespace

import pytest

from lockgate.common import Configuration, ConfigurationError
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.runtime.jobmaster.spark_session import add_python_files


def fake_session():
    added: list[str] = []
    return SimpleNamespace(sparkContext=SimpleNamespace(addPyFile=added.append)), added


def test_add_python_file_is_the_python_files_setting():
    env = StreamExecutionEnvironment()
    env.add_python_file("/deps/a.py").add_python_file("hdfs://nn/b.zip")
    assert env.get_configuration().get_string("python.files", "") == "hdfs://nn/b.zip,/deps/a.py"


def test_files_go_as_they_are_and_directories_as_zips_of_their_contents(tmp_path):
    module = tmp_path / "one.py"
    module.write_text("X = 1\n")
    deps = tmp_path / "deps"
    (deps / "pkg").mkdir(parents=True)
    (deps / "two.py").write_text("Y = 2\n")
    (deps / "pkg" / "__init__.py").write_text("")
    session, added = fake_session()
    add_python_files(session, [str(module), str(deps), "s3://bucket/three.zip"])
    assert added[0] == str(module) and added[2] == "s3://bucket/three.zip"
    with zipfile.ZipFile(added[1]) as zipped:
        assert sorted(zipped.namelist()) == ["pkg/__init__.py", "two.py"]
    # the same contents give the same zip; other contents another name
    session, again = fake_session()
    add_python_files(session, [str(deps)])
    assert again == [added[1]]
    (deps / "two.py").write_text("Y = 3\n")
    add_python_files(session, [str(deps)])
    assert again[1] != added[1] and again[1].endswith(".zip")


def test_a_missing_local_path_fails_naming_it(tmp_path):
    session, added = fake_session()
    with pytest.raises(ConfigurationError, match=r"python\.files names .*nowhere\.py"):
        add_python_files(session, [str(tmp_path / "nowhere.py")])
    assert added == []


def test_the_setting_is_read_as_a_comma_separated_list():
    config = Configuration().set_string("python.files", " a.py, ,b.zip ")
    env = StreamExecutionEnvironment(config)
    env.add_python_file("c.py")
    assert env.get_configuration().get_string("python.files", "") == "c.py,a.py,b.zip"

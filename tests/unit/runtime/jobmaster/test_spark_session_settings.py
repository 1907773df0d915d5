"""Which Spark setting wins: the job's configuration, then Spark's launch, then lockgate.

``session_settings`` is what lockgate hands the session builder; whatever it leaves out
reaches the session from the launch (``SparkConf()`` once the JVM runs), so a default that
appears here while the launch has the key would replace the user's setting. The launch's
settings are the user's less what Spark's launcher filled in (``user_launch_settings``).
"""

from __future__ import annotations

import pytest

from lockgate.runtime.jobmaster.spark_session import (
    _DEFAULTS,
    is_local_master,
    launch_may_set,
    session_settings,
    user_launch_settings,
)

# What SparkConf() holds after a plain `python job.py` launch with nothing configured
SHELL_LAUNCH = {
    "spark.master": "local[*]",
    "spark.app.name": "pyspark-shell",
    "spark.ui.showConsoleProgress": "true",
    "spark.submit.deployMode": "client",
}
# ... of which the user gave this
PLAIN_LAUNCH = {"spark.submit.deployMode": "client"}
SYS_PATH = ["/nonexistent-entry", ""]


def settings(config=None, launched=None, pythonpath_in_env=False, sys_path=None):
    return session_settings(
        config or {}, launched or PLAIN_LAUNCH, pythonpath_in_env, sys_path or SYS_PATH
    )


def test_nothing_configured_gets_lockgates_defaults():
    got = settings()
    assert got == {**_DEFAULTS, "spark.executorEnv.PYTHONPATH": ""}


def test_configuration_keys_win_over_the_launch_and_the_defaults():
    launched = {**PLAIN_LAUNCH, "spark.master": "local[2]", "spark.app.name": "fromsubmit"}
    config = {
        "spark.master": "local[1]",
        "spark.app.name": "fromconfig",
        "spark.ui.showConsoleProgress": "true",
        "parallelism.default": "3",  # not a Spark key: never passed on
    }
    got = settings(config, launched)
    assert got["spark.master"] == "local[1]"
    assert got["spark.app.name"] == "fromconfig"
    assert got["spark.ui.showConsoleProgress"] == "true"
    assert "parallelism.default" not in got


@pytest.mark.parametrize(
    "key, value",
    [
        ("spark.master", "spark://10.0.0.1:7077"),
        ("spark.app.name", "fromsubmit"),
        ("spark.log.level", "INFO"),
        ("spark.ui.showConsoleProgress", "true"),
        ("spark.python.worker.reuse", "false"),
        ("spark.speculation", "true"),  # check_session refuses it later, naming it
    ],
)
def test_a_launch_setting_is_left_to_the_launch(key, value):
    """spark-submit flags, PYSPARK_SUBMIT_ARGS and spark-defaults.conf: lockgate's default
    for the key must not be in the builder options, or it would replace the user's value."""
    got = settings(launched={**PLAIN_LAUNCH, key: value})
    assert key not in got
    assert set(_DEFAULTS) - {key} <= set(got)


def test_local_masters_get_the_drivers_python_path_for_their_workers(tmp_path):
    got = settings(sys_path=[str(tmp_path), "/nonexistent-entry", ""])
    assert got["spark.executorEnv.PYTHONPATH"] == str(tmp_path)


@pytest.mark.parametrize(
    "config, launched",
    [
        ({"spark.master": "spark://10.0.0.1:7077"}, PLAIN_LAUNCH),
        ({}, {**PLAIN_LAUNCH, "spark.master": "yarn"}),
        ({}, {**PLAIN_LAUNCH, "spark.master": "k8s://https://10.0.0.1:6443"}),
    ],
)
def test_cluster_masters_get_no_single_machine_defaults(tmp_path, config, launched):
    got = settings(config, launched, sys_path=[str(tmp_path)])
    assert "spark.executorEnv.PYTHONPATH" not in got
    assert got["spark.app.name"] == "lockgate"  # the other defaults still fill gaps


def test_a_configured_local_master_beats_a_cluster_launch_for_the_local_defaults(tmp_path):
    launched = {**PLAIN_LAUNCH, "spark.master": "spark://10.0.0.1:7077"}
    got = settings({"spark.master": "local[2]"}, launched, sys_path=[str(tmp_path)])
    assert got["spark.executorEnv.PYTHONPATH"] == str(tmp_path)


def test_the_users_python_path_wins_over_the_drivers(tmp_path):
    assert "spark.executorEnv.PYTHONPATH" not in settings(
        pythonpath_in_env=True, sys_path=[str(tmp_path)]
    )
    launched = {**PLAIN_LAUNCH, "spark.executorEnv.PYTHONPATH": "/opt/jobs"}
    assert "spark.executorEnv.PYTHONPATH" not in settings(
        launched=launched, sys_path=[str(tmp_path)]
    )
    config = {"spark.executorEnv.PYTHONPATH": "/opt/mine"}
    got = settings(config, sys_path=[str(tmp_path)])
    assert got["spark.executorEnv.PYTHONPATH"] == "/opt/mine"


@pytest.mark.parametrize(
    "master, local",
    [
        ("local", True),
        ("local[4]", True),
        ("local[*]", True),
        ("local[2,3]", True),
        ("local-cluster[2,1,1024]", True),
        ("spark://127.0.0.1:7077", False),
        ("yarn", False),
        ("k8s://https://host:443", False),
    ],
)
def test_local_masters(master, local):
    assert is_local_master(master) is local


# What the launch's sources may set ---------------------------------------------------------


@pytest.fixture
def spark_home(tmp_path):
    (tmp_path / "conf").mkdir()
    return tmp_path


def test_a_launch_with_nothing_configured_sets_nothing(spark_home):
    home = str(spark_home)
    for key in ("spark.master", "spark.app.name", "spark.ui.showConsoleProgress"):
        assert not launch_may_set({}, home, key)
        args = {"PYSPARK_SUBMIT_ARGS": "--driver-memory 2g pyspark-shell"}
        assert not launch_may_set(args, home, key)


@pytest.mark.parametrize(
    "args, key",
    [
        ("--master local[2] pyspark-shell", "spark.master"),
        ("--conf spark.master=spark://h:7077 pyspark-shell", "spark.master"),
        ("--properties-file /etc/my.conf pyspark-shell", "spark.master"),
        ("--name mine pyspark-shell", "spark.app.name"),
        ("--conf spark.ui.showConsoleProgress=true pyspark-shell", "spark.ui.showConsoleProgress"),
    ],
)
def test_submit_args_may_set_a_key(spark_home, args, key):
    assert launch_may_set({"PYSPARK_SUBMIT_ARGS": args}, str(spark_home), key)
    others = {"spark.master", "spark.app.name", "spark.ui.showConsoleProgress"} - {key}
    if "--properties-file" not in args:
        assert not any(
            launch_may_set({"PYSPARK_SUBMIT_ARGS": args}, str(spark_home), k) for k in others
        )


def test_the_master_variable_sets_the_master(spark_home):
    assert launch_may_set({"MASTER": "spark://h:7077"}, str(spark_home), "spark.master")
    assert not launch_may_set({"MASTER": "spark://h:7077"}, str(spark_home), "spark.app.name")


@pytest.mark.parametrize(
    "line, brings",
    [
        ("spark.master spark://h:7077", True),
        ("spark.master=local[2]", True),
        ("  spark.master:yarn", True),
        ("# spark.master spark://h:7077", False),
        ("spark.master.rest.enabled true", False),
        ("spark.driver.memory 4g", False),
    ],
)
def test_spark_defaults_in_the_conf_dir(spark_home, tmp_path_factory, line, brings):
    (spark_home / "conf" / "spark-defaults.conf").write_text(f"{line}\n")
    assert launch_may_set({}, str(spark_home), "spark.master") is brings
    conf_dir = tmp_path_factory.mktemp("conf")
    (conf_dir / "spark-defaults.conf").write_text(f"{line}\n")
    assert (
        launch_may_set({"SPARK_CONF_DIR": str(conf_dir)}, "/nonexistent", "spark.master") is brings
    )


def test_a_spark_env_script_may_set_anything(spark_home):
    (spark_home / "conf" / "spark-env.sh").write_text("export MASTER=spark://h:7077\n")
    assert launch_may_set({}, str(spark_home), "spark.master")


# What Spark's launcher filled in ------------------------------------------------------------


def test_a_plain_python_launch_gives_no_user_settings(spark_home):
    assert user_launch_settings(SHELL_LAUNCH, {}, str(spark_home), by_pyspark=True) == PLAIN_LAUNCH


def test_launcher_values_the_user_gave_are_the_users(spark_home):
    env = {"PYSPARK_SUBMIT_ARGS": "--conf spark.ui.showConsoleProgress=true pyspark-shell"}
    got = user_launch_settings(SHELL_LAUNCH, env, str(spark_home), by_pyspark=True)
    assert got == {**PLAIN_LAUNCH, "spark.ui.showConsoleProgress": "true"}
    (spark_home / "conf" / "spark-defaults.conf").write_text("spark.master local[*]\n")
    got = user_launch_settings(SHELL_LAUNCH, {}, str(spark_home), by_pyspark=True)
    assert got == {**PLAIN_LAUNCH, "spark.master": "local[*]"}


def test_values_other_than_the_launchers_are_the_users(spark_home):
    launched = {**SHELL_LAUNCH, "spark.app.name": "mine", "spark.master": "local[2]"}
    got = user_launch_settings(launched, {}, str(spark_home), by_pyspark=True)
    assert got == {**PLAIN_LAUNCH, "spark.app.name": "mine", "spark.master": "local[2]"}


def test_under_spark_submit_every_launch_setting_stands(spark_home):
    """spark-submit started the JVM (and this driver): the script's name as the application
    name is Spark's choice for its user, and stays."""
    launched = {**PLAIN_LAUNCH, "spark.master": "local[*]", "spark.app.name": "job.py"}
    assert user_launch_settings(launched, {}, str(spark_home), by_pyspark=False) == launched
    assert "spark.app.name" not in settings(launched=launched)

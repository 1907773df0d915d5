"""Which executor and Spark host a process serves, read from its JVM's command line."""

import os
import subprocess
import sys
import time

from lockgate.runtime.sparktask.executor_identity import executor_id, spark_host


def test_executor_id_from_the_java_ancestors_command_line(tmp_path):
    """A fake executor JVM: a process named java whose command line holds --executor-id,
    with a child standing in for PySpark's daemon, whose child asks."""
    java = tmp_path / "java"
    java.symlink_to(sys.executable)
    child = (
        "import subprocess, sys; "
        "print(subprocess.run([sys.argv[1], '-c', "
        "'from lockgate.runtime.sparktask.executor_identity import executor_id, spark_host; "
        "print(executor_id(), repr(spark_host()))'], "
        "capture_output=True, text=True).stdout.strip())"
    )
    for args, expected in (
        (["--executor-id", "12", "--hostname", "10.0.0.7"], "12 '10.0.0.7'"),
        (["org.apache.spark.deploy.SparkSubmit", "pyspark-shell"], "driver ''"),
    ):
        done = subprocess.run(
            [str(java), "-c", child, sys.executable, *args],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert done.stdout.strip() == expected, done.stderr
    assert executor_id() is None  # pytest and its parents run no Java
    assert spark_host() == ""


def test_executor_id_of_a_process_that_left_the_daemons_tree(tmp_path):
    """A subtask host is re-parented away from PySpark's daemon but stays in its process
    group: the group's leader (the daemon) is a child of the executor's JVM."""
    java = tmp_path / "java"
    java.symlink_to(sys.executable)
    # "java" starts the daemon, a process group leader, which forks a child that forks the
    # orphan and exits; the orphan (re-parented, still in the daemon's group) asks
    daemon = (
        "import os, sys, time\n"
        "os.setpgid(0, 0)\n"
        "if os.fork() == 0:\n"
        "    if os.fork() == 0:\n"
        "        time.sleep(0.3)\n"
        "        from lockgate.runtime.sparktask.executor_identity import executor_id\n"
        "        open(sys.argv[1], 'w').write(str(executor_id()))\n"
        "    os._exit(0)\n"
        "time.sleep(2)\n"
    )
    starter = (
        "import subprocess, sys; subprocess.run([sys.argv[1], '-c', sys.argv[2], sys.argv[3]])"
    )
    answer = tmp_path / "answer"
    subprocess.run(
        [str(java), "-c", starter, sys.executable, daemon, str(answer), "--executor-id", "7"],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        check=True,
        timeout=30,
    )
    deadline = time.monotonic() + 10
    while not answer.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert answer.read_text() == "7"

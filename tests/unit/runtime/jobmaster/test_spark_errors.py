"""A failed epoch's error names lockgate's own error, found inside Spark's wrapped traceback
(which, since subtasks live in hosts, holds the host's traceback inside the task's)."""

from __future__ import annotations

import pytest

from lockgate.runtime.jobmaster.spark_errors import job_failure


def spark_text(error: str, message: str) -> str:
    return (
        "An error occurred while calling o123.collectAndServe.\n"
        "org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
        '  File "epoch_task.py", line 90, in __call__\n'
        "lockgate.runtime.sparktask.host_client.SubtaskHostError: subtask 0 of task 1 "
        "(run j#0) failed in its host:\n"
        "Traceback (most recent call last):\n"
        '  File "subtask_host.py", line 134, in batch\n'
        f"{error}: {message}\n"
        "\tat org.apache.spark.api.python.BasePythonRunner...\n"
    )


@pytest.mark.parametrize(
    "error",
    [
        "lockgate.runtime.errors.UserFunctionError",
        "lockgate.runtime.errors.InjectedFailure",
        "lockgate.core.source.SourceError",
        "lockgate.state.snapshot.SnapshotFormatError",
        "lockgate.graph.shipped_graph.JobGraphVersionError",
    ],
)
def test_lockgates_own_errors_are_lifted_out_whole(error):
    failure = job_failure(RuntimeError(spark_text(error, "what went wrong, and where")), 3)
    assert str(failure) == "what went wrong, and where"


def test_any_other_error_is_named_with_its_epoch():
    failure = job_failure(RuntimeError(spark_text("ZeroDivisionError", "division by zero")), 3)
    assert str(failure) == "epoch 3 failed in Spark: ZeroDivisionError: division by zero"

"""``lockgate run`` without a Dispatcher runs the job in process, with a line per epoch on
stderr (not a terminal here); ``lockgate info`` shows the plan without
running anything. Both on the tests' Spark session."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from lockgate.cli.main import cli

pytestmark = pytest.mark.integration

JOB = textwrap.dedent(
    """
    import sys
    from lockgate.common import Types
    from lockgate.datastream import StreamExecutionEnvironment

    env = StreamExecutionEnvironment.get_execution_environment()
    count = int(sys.argv[1])
    (
        env.from_collection(list(range(count)), type_info=Types.INT())
        .uid("numbers")
        .map(lambda x: x * 10, output_type=Types.INT())
        .uid("times-ten")
        .key_by(lambda x: x % 3)
        .reduce(lambda a, b: a + b)
        .uid("sum-per-key")
        .print()
    )
    env.execute("cli run test")
    """
)


@pytest.fixture
def job(tmp_path):
    path = tmp_path / "numbers_job.py"
    path.write_text(JOB)
    return path


def test_run_in_process_prints_records_and_a_line_per_epoch(spark, job, tmp_path, monkeypatch):
    monkeypatch.setenv("LOCKGATE_HOME", str(tmp_path / "home"))  # no Dispatcher runs there
    runner = CliRunner()
    done = runner.invoke(
        cli,
        ["run", "-p", "2", "-D", "lockgate.epoch.max-records-per-split=20", str(job), "60"],
        catch_exceptions=False,
    )
    assert done.exit_code == 0, done.output + done.stderr
    # the print sink writes in Spark's Python workers, whose stdout is not this process's;
    # lockgate itself writes nothing there
    assert done.stdout == ""
    epochs = [line for line in done.stderr.splitlines() if " epoch " in line]
    assert len(epochs) >= 3 and all(e.startswith("cli run test epoch ") for e in epochs), epochs
    assert sum(int(e.split("| ")[1].split()[0].replace(",", "")) for e in epochs) == 60, epochs


def test_info_shows_tasks_operators_and_uids_without_running(spark, job):
    runner = CliRunner()
    done = runner.invoke(cli, ["info", "-p", "2", str(job), "60"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    assert "Job 'cli run test':" in done.stdout
    for uid in ("numbers", "times-ten", "sum-per-key"):
        assert f"(uid {uid})" in done.stdout
    assert "parallelism 2" in done.stdout and "(key_group)" in done.stdout
    plan = runner.invoke(cli, ["info", "--json", "-p", "2", str(job), "60"])
    nodes = json.loads(plan.stdout)["nodes"]
    assert [n["uid"] for n in nodes][:3] == ["numbers", "times-ten", "sum-per-key"]
    assert "+I" not in done.stdout  # nothing ran: no records printed


def test_state_lists_a_savepoints_operators_and_shows_one_operators_keyed_state(make_env, tmp_path):
    from exactly_once_job import stop_with_savepoint_at_first_epoch

    from lockgate.common import Types
    from lockgate.datastream.functions import KeyedProcessFunction
    from lockgate.datastream.state import ValueStateDescriptor

    class Remember(KeyedProcessFunction):
        def open(self, runtime_context):
            self.last = runtime_context.get_state(ValueStateDescriptor("last", Types.INT()))

        def process_element(self, value, ctx):
            self.last.update(value)
            yield value

    env = make_env(parallelism=2)
    (
        env.from_collection([1, 2, 3, 4, 5, 6], type_info=Types.INT())
        .uid("numbers")
        .key_by(lambda x: x % 3, key_type=Types.INT())
        .process(Remember(), output_type=Types.INT())
        .uid("remember")
        .print()
    )
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "sp")
    runner = CliRunner()
    listed = runner.invoke(cli, ["state", savepoint], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    assert "remember" in listed.stdout and "numbers" in listed.stdout
    shown = runner.invoke(cli, ["state", savepoint, "--uid", "remember"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    assert "remember / last (value):" in shown.stdout
    rows = [
        line for line in shown.stdout.splitlines() if line.startswith("|") and "key" not in line
    ]
    assert sorted(tuple(int(c) for c in r.strip("|").split("|")) for r in rows) == [
        (0, 6),
        (1, 4),
        (2, 5),
    ]
    unknown = runner.invoke(cli, ["state", savepoint, "--uid", "nope"])
    assert unknown.exit_code == 1 and "nope" in unknown.output
    missing = runner.invoke(cli, ["state", str(tmp_path / "nothing")])
    assert missing.exit_code == 1 and "does not exist" in missing.output

"""``lockgate``: run jobs, and operate them on a Dispatcher, as Flink's ``flink`` command
does (``run``, ``list``, ``info``, ``savepoint``, ``stop``, ``cancel``), plus
``checkpoints``, ``state`` and ``dispatcher start|stop|status``.

``run`` submits the job to a Dispatcher when given one (``-m HOST:PORT``) or when one runs
for the home (``$LOCKGATE_HOME``, else ``~/.lockgate``); otherwise it runs the job in this
process with a live view of it on stderr. Exit codes: 0 done, 1 failed (the message says
why), 2 wrong usage.
"""

from __future__ import annotations

import datetime
import runpy
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from lockgate.cli.live_view import LiveView
from lockgate.cli.rest_client import ClientError, DispatcherClient
from lockgate.common import config_options as options
from lockgate.dispatcher.home import DispatcherHome, default_home
from lockgate.dispatcher.service import DEFAULT_PORT, ServiceError
from lockgate.runtime.jobmaster import program_context

TERMINAL = ("FINISHED", "CANCELED", "FAILED")


def fail(message: str) -> NoReturn:
    click.echo(f"lockgate: {message}", err=True)
    sys.exit(1)


def home_option(function: Any) -> Any:
    return click.option(
        "--home",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="The Dispatcher's home directory (default: $LOCKGATE_HOME, else ~/.lockgate).",
    )(function)


def address_option(function: Any) -> Any:
    return click.option(
        "-m",
        "--jobmanager",
        "address",
        metavar="HOST:PORT",
        help="The Dispatcher to talk to (default: the one running for the home).",
    )(function)


def _home(path: Path | None) -> DispatcherHome:
    return DispatcherHome(path or default_home())


def _client(address: str | None, home: Path | None = None) -> DispatcherClient:
    dispatcher_home = _home(home)
    if address is not None:
        return DispatcherClient.of_address(address, dispatcher_home)
    client = DispatcherClient.of_home(dispatcher_home)
    if client is None:
        fail(
            f"no Dispatcher runs for {dispatcher_home.path}: start one with "
            "'lockgate dispatcher start', or name one with -m HOST:PORT"
        )
    return client


@contextmanager
def _errors() -> Iterator[None]:
    try:
        yield
    except (ClientError, ServiceError, options.ConfigurationError, OSError) as exc:
        fail(str(exc))


def _configuration(
    dynamic: tuple[str, ...],
    parallelism: int | None,
    savepoint: str | None,
    allow_non_restored: bool,
) -> dict[str, str]:
    """What ``-D``, ``-p``, ``-s`` and ``-n`` say, as configuration keys (checked here, so
    bad configuration fails before the job starts)."""
    configuration: dict[str, str] = {}
    for item in dynamic:
        key, equals, value = item.partition("=")
        if not equals or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="'-D'")
        configuration[key.strip()] = value.strip()
    if parallelism is not None:
        configuration[options.PARALLELISM.key] = str(parallelism)
    if savepoint is not None:
        configuration[options.STATE_RECOVERY_PATH.key] = savepoint
    if allow_non_restored:
        configuration[options.IGNORE_UNCLAIMED_STATE.key] = "true"
    options.validate(configuration)
    return configuration


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="lockgate")
def cli() -> None:
    """Run lockgate jobs, and operate them on a Dispatcher."""


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@address_option
@click.option("-d", "--detached", is_flag=True, help="Return once the job is submitted.")
@click.option("-s", "--fromSavepoint", "savepoint", metavar="PATH", help="Resume from here.")
@click.option(
    "-n",
    "--allowNonRestoredState",
    "--allow-non-restored-state",
    "allow_non_restored",
    is_flag=True,
    help="Skip savepoint state that no operator of the job claims.",
)
@click.option("-p", "--parallelism", type=click.IntRange(min=1), help="Default parallelism.")
@click.option("-D", "dynamic", multiple=True, metavar="KEY=VALUE", help="A configuration key.")
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def run(
    address: str | None,
    detached: bool,
    savepoint: str | None,
    allow_non_restored: bool,
    parallelism: int | None,
    dynamic: tuple[str, ...],
    job: Path,
    arguments: tuple[str, ...],
) -> None:
    """Run JOB (a Python file) with ARGUMENTS: on a Dispatcher if one is given or running,
    else in this process."""
    with _errors():
        configuration = _configuration(dynamic, parallelism, savepoint, allow_non_restored)
        client = (
            DispatcherClient.of_address(address, _home(None))
            if address is not None
            else DispatcherClient.of_home(_home(None))
        )
    if client is None:
        if detached:
            fail("-d needs a Dispatcher: start one with 'lockgate dispatcher start'")
        _run_here(job, list(arguments), configuration)
        return
    with _errors():
        job_id = client.submit(job, list(arguments), configuration)
    click.echo(f"Job has been submitted with JobID {job_id}")
    if detached:
        return
    with _errors():
        status = _follow(client, job_id)
    click.echo(f"Job {job_id} is {status}.")
    if status != "FINISHED":
        sys.exit(1)


def _follow(client: DispatcherClient, job_id: str) -> str:
    while True:
        status = str(client.request("GET", f"/jobs/{job_id}/status")["status"])
        if status in TERMINAL:
            return status
        time.sleep(1.0)


def _run_here(job: Path, arguments: list[str], configuration: dict[str, str]) -> None:
    view = LiveView()
    program_context.install(program_context.ProgramContext(configuration, listener=view))
    sys.argv = [str(job), *arguments]
    sys.path.insert(0, str(job.parent.resolve()))
    try:
        runpy.run_path(str(job), run_name="__main__")
    finally:
        view.close()
        program_context.install(None)


@cli.command(name="list")
@address_option
@click.option("-a", "--all", "show_all", is_flag=True, help="Also the jobs that ended.")
@click.option("-r", "--running", is_flag=True, help="Only the running jobs (the default).")
def list_jobs(address: str | None, show_all: bool, running: bool) -> None:
    """List the Dispatcher's jobs."""
    with _errors():
        jobs = _client(address).request("GET", "/jobs/overview")["jobs"]
    jobs.sort(key=lambda j: j["start-time"])  # oldest first, as Flink's list
    live = [j for j in jobs if j["state"] not in TERMINAL]
    ended = [j for j in jobs if j["state"] in TERMINAL]

    def line(entry: dict[str, Any]) -> str:
        started = datetime.datetime.fromtimestamp(entry["start-time"] / 1000)
        return f"{started:%d.%m.%Y %H:%M:%S} : {entry['jid']} : {entry['name']} ({entry['state']})"

    rule = "-" * 62
    if live:
        click.echo("------------------ Running/Restarting Jobs -------------------")
        for entry in live:
            click.echo(line(entry))
        click.echo(rule)
    else:
        click.echo("No running jobs.")
    if show_all and not running:
        if ended:
            click.echo("---------------------- Terminated Jobs -----------------------")
            for entry in ended:
                click.echo(line(entry))
            click.echo(rule)
        else:
            click.echo("No terminated jobs.")


@cli.command()
@click.option("-p", "--parallelism", type=click.IntRange(min=1), help="Default parallelism.")
@click.option("-D", "dynamic", multiple=True, metavar="KEY=VALUE", help="A configuration key.")
@click.option("--json", "as_json", is_flag=True, help="Flink's JSON execution plan.")
@click.argument("job", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("arguments", nargs=-1, type=click.UNPROCESSED)
def info(
    parallelism: int | None,
    dynamic: tuple[str, ...],
    as_json: bool,
    job: Path,
    arguments: tuple[str, ...],
) -> None:
    """Show JOB's plan without running it: its tasks (chained operators), the stages the
    shuffles cut, parallelism and uids."""
    from lockgate.graph.job_graph import execution_plan

    with _errors():
        configuration = _configuration(dynamic, parallelism, None, False)
    program_context.install(program_context.ProgramContext(configuration, plan_only=True))
    sys.argv = [str(job), *arguments]
    sys.path.insert(0, str(job.parent.resolve()))
    try:
        runpy.run_path(str(job), run_name="__main__")
    except program_context.ProgramPlan as plan:
        if as_json:
            click.echo(execution_plan(plan.job))
            return
        click.echo(f"Job {plan.job_name!r}:")
        for vertex in plan.job.vertices:
            inputs = ", ".join(
                f"task {edge.source.id} ({edge.partitioning.kind.value})" for edge in vertex.inputs
            )
            click.echo(
                f"task {vertex.id}: {vertex.name} | parallelism {vertex.parallelism}, max "
                f"{vertex.max_parallelism}" + (f" | from {inputs}" if inputs else "")
            )
            for node in vertex.nodes:
                click.echo(f"    {node.name} (uid {node.uid})")
        return
    finally:
        program_context.install(None)
    fail(f"{job} did not execute a job (no env.execute())")


@cli.command()
@address_option
@click.argument("job_id")
@click.argument("directory", required=False)
def savepoint(address: str | None, job_id: str, directory: str | None) -> None:
    """Take a savepoint of JOB_ID (under DIRECTORY, else the job's savepoint directory)."""
    click.echo(f"Triggering savepoint for job {job_id}.")
    body = {"target-directory": directory, "cancel-job": False, "formatType": "CANONICAL"}
    _take_savepoint(address, job_id, "/savepoints", body, "savepoint")


@cli.command()
@address_option
@click.option("-p", "--savepointPath", "directory", metavar="DIR", help="Where the savepoint goes.")
@click.option("-d", "--drain", is_flag=True, help="First advance to the end of event time.")
@click.argument("job_id")
def stop(address: str | None, directory: str | None, drain: bool, job_id: str) -> None:
    """Stop JOB_ID with a savepoint."""
    click.echo(f"Stopping job {job_id} with a savepoint.")
    body = {"targetDirectory": directory, "drain": drain, "formatType": "CANONICAL"}
    _take_savepoint(address, job_id, "/stop", body, "stop")


def _take_savepoint(
    address: str | None, job_id: str, path: str, body: dict[str, Any], what: str
) -> None:
    with _errors():
        result = _client(address).savepoint(job_id, path, body)
    if result.location is None:
        fail(f"the {what} of job {job_id} failed: {result.failure}")
    click.echo(f"Savepoint completed. Path: {result.location}")


@cli.command()
@address_option
@click.argument("job_id")
def cancel(address: str | None, job_id: str) -> None:
    """Cancel JOB_ID (after its running epoch)."""
    with _errors():
        _client(address).request("PATCH", f"/jobs/{job_id}?mode=cancel")
    click.echo(f"Cancelled job {job_id}.")


@cli.command()
@address_option
@click.argument("job_id")
def checkpoints(address: str | None, job_id: str) -> None:
    """JOB_ID's checkpoints: counts, and the history with durations and sizes."""
    with _errors():
        stats = _client(address).request("GET", f"/jobs/{job_id}/checkpoints")
    counts = stats["counts"]
    click.echo(
        f"completed {counts['completed']}, failed {counts['failed']}, restored {counts['restored']}"
    )
    for entry in stats["history"]:
        click.echo(
            f"{entry['id']:>6} {entry['status']:<10} {entry['end_to_end_duration']:>8} ms "
            f"size {entry['state_size']:>12} incremental {entry['checkpointed_size']:>12} "
            f"{entry.get('external_path') or entry.get('failure_message') or ''}"
        )


@cli.command()
@click.argument("path")
@click.option("--uid", help="An operator's uid: show its state.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
def state(path: str, uid: str | None, limit: int) -> None:
    """The state in a savepoint or retained checkpoint (PATH), through the state processor."""
    from lockgate.runtime.jobmaster.spark_session import get_or_create_session
    from lockgate.state_processor import SavepointReader, StateProcessorError

    try:
        spark = get_or_create_session({})
        reader = SavepointReader.read(spark, path)
        if uid is None:
            reader.metadata().show(limit, truncate=False)
            return
        kinds = reader.state_kinds(uid)
        for name, kind in sorted(kinds.items()):
            click.echo(f"{uid} / {name} ({kind}):")
            if kind == "timers":
                reader.timers(uid).show(limit, truncate=False)
            else:
                reader.keyed_state(uid, name).show(limit, truncate=False)
        if not kinds:
            reader.metadata().where(f"uid = '{uid}'").show(limit, truncate=False)
    except (StateProcessorError, OSError, ValueError) as exc:
        fail(str(exc))


@cli.group()
def dispatcher() -> None:
    """Start, stop or look at the Dispatcher (the REST API and Web UI that jobs are
    submitted to)."""


@dispatcher.command(name="start")
@home_option
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), default=None)
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), default=None)
def dispatcher_start(
    home: Path | None, host: str, port: int, tls_cert: str | None, tls_key: str | None
) -> None:
    """Start the Dispatcher in the background; returns once it answers."""
    from lockgate.dispatcher import service

    with _errors():
        address = service.start(home or default_home(), host, port, tls_cert, tls_key)
    click.echo(f"Dispatcher started at {address.url} (pid {address.pid})")


@dispatcher.command(name="stop")
@home_option
def dispatcher_stop(home: Path | None) -> None:
    """Stop the Dispatcher; its running jobs resume from their latest checkpoints at its
    next start."""
    from lockgate.dispatcher import service

    with _errors():
        address = service.stop(home or default_home())
    click.echo(f"Dispatcher at {address.url} (pid {address.pid}) stopped")


@dispatcher.command(name="status")
@home_option
def dispatcher_status(home: Path | None) -> None:
    """Whether the Dispatcher runs, where, and its jobs."""
    dispatcher_home = _home(home)
    address = dispatcher_home.running()
    if address is None:
        click.echo(f"No Dispatcher runs for {dispatcher_home.path}")
        sys.exit(1)
    with _errors():
        overview = DispatcherClient(address.url, None).request("GET", "/overview")
    click.echo(
        f"Dispatcher at {address.url} (pid {address.pid}, home {dispatcher_home.path}): "
        f"{overview['jobs-running']} running, {overview['jobs-finished']} finished, "
        f"{overview['jobs-cancelled']} cancelled, {overview['jobs-failed']} failed"
    )


def main() -> None:
    cli(prog_name="lockgate")


if __name__ == "__main__":
    main()

"""Before a job's first epoch: can every executor reach the job's storage?

Every executor reads and writes the work directory and checkpoint storage, and reads the
checkpoint a job resumes from; a location only the driver sees (a local path on a
cluster, a disk mounted on one machine) would otherwise fail inside the first epoch, or
worse, later on the executor a subtask moves to. The check is one short Spark job with one
task per executor (placed there by a location preference): the driver writes a file under
each shared location, each task reads it, writes one of its own and reports; the driver
reads the tasks' files back. Anything that fails is a ``ConfigurationError`` naming the
configuration key, the URL and the executor, raised before any epoch runs.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from fsspec.core import split_protocol
from py4j.protocol import Py4JError
from pyspark import SparkContext
from pyspark.errors import PySparkException

from lockgate.common import config_options as options
from lockgate.common.config_options import ConfigurationError
from lockgate.common.version import __version__
from lockgate.core.fs.storage import Storage, read_url
from lockgate.runtime.jobmaster.executors import Executor, located_rdd, wait_for_executors
from lockgate.runtime.jobmaster.job_settings import JobSettings
from lockgate.runtime.jobmaster.spark_job_labels import job_tag, labelled
from lockgate.runtime.jobmaster.spark_session import session_conf
from lockgate.runtime.messages.storage_probe import (
    DRIVER_FILE,
    LOCAL,
    READ,
    SHARED,
    ProbeFailure,
    ProbeOrder,
    ProbeReport,
    ProbeTarget,
    reported_version,
)
from lockgate.runtime.sparktask.storage_probe import StorageProbe
from lockgate.state.manifests import ROCKSDB

log = logging.getLogger(__name__)

JOB_GROUP = "lockgate-storage-check"
# A new application's executors register one by one: the check waits until none has joined
# for this long (or spark.executor.instances have), at most Spark's own
# spark.scheduler.maxRegisteredResourcesWaitingTime (30 s).
EXECUTORS_SETTLE_S = 2.0

LOCAL_ONLY = (
    "{url} is on the local file system and Spark runs on a cluster (master {master}): each "
    "executor sees its own machine's disk at that path, not the driver's. Use a location "
    "that the driver and every executor share: a network file system mounted at the same "
    "path everywhere, or a distributed file system or object store (hdfs://, s3://, gs://, "
    "abfs://)"
)


@dataclass(frozen=True)
class StorageCheckResult:
    checked: tuple[str, ...]  # the executors that ran a probe
    unchecked: tuple[str, ...]  # executors known to the driver that ran none
    seconds: float


def probe_targets(
    settings: JobSettings, probe_dir: str, resumed_from: str | None
) -> list[ProbeTarget]:
    """What the check probes: ``probe_dir`` under the job's work and checkpoint
    directories, the ``_metadata`` of the checkpoint the job resumed from, and on a
    cluster the RocksDB directories each executor must be able to write."""
    targets = [ProbeTarget(options.WORK_DIR.key, f"{settings.work_dir}/{probe_dir}", SHARED)]
    if settings.checkpoint_dir is not None:
        url = f"{settings.checkpoint_dir}/{probe_dir}"
        targets.append(ProbeTarget(options.CHECKPOINT_DIR.key, url, SHARED))
    if resumed_from is not None:
        url = f"{resumed_from.rstrip('/')}/_metadata"
        targets.append(ProbeTarget(options.STATE_RECOVERY_PATH.key, url, READ))
    keyed = settings.keyed_state
    if keyed.backend == ROCKSDB and not settings.local_spark:
        # with local Spark JobSettings checked them already: the driver's disk is theirs
        for directory in keyed.local_dirs:
            targets.append(ProbeTarget(options.ROCKSDB_LOCAL_DIR.key, directory, LOCAL))
    return targets


def check_storage(
    sc: SparkContext, settings: JobSettings, master: str, resumed_from: str | None = None
) -> StorageCheckResult:
    """Fail with a ``ConfigurationError`` unless every executor reaches the job's storage."""
    started = time.perf_counter()
    token = uuid.uuid4().hex
    probe_dir = f"_storage-check-{token[:12]}"
    targets = probe_targets(settings, probe_dir, resumed_from)
    shared = [t for t in targets if t.mode == SHARED]
    try:
        for target in shared:
            _driver_writes(target, token)
        executors = wait_for_executors(sc, EXECUTORS_SETTLE_S, _registration_timeout(sc))
        order = ProbeOrder(token, tuple(targets), "")
        reports = _run_probes(sc, order, executors, master, job_tag(settings.job_id))
        failures = [(report, f) for report in reports for f in report.failures]
        failures += [(report, f) for report in reports for f in _driver_reads(report)]
    finally:
        for target in shared:
            _remove_quietly(target.url)
    known = {e.id: e for e in executors}
    if failures:
        configured = _configured(settings, resumed_from)
        message = _message(failures, known, master, configured, settings.local_spark)
        checked = ", ".join(_describe(r, known) for r in reports)
        raise ConfigurationError(f"{message}\n(checked: {checked})")
    ran = {r.executor or r.placed_on for r in reports}
    result = StorageCheckResult(
        tuple(_describe(r, known) for r in reports),
        tuple(e.describe() for e in executors if e.id not in ran),
        time.perf_counter() - started,
    )
    if result.unchecked:
        log.warning(
            "storage check: %s ran no probe (busy or lost while the check ran); its access "
            "to the job's storage is not checked",
            ", ".join(result.unchecked),
        )
    log.debug(
        "storage check passed in %.2f s: the job's storage is reached from %s",
        result.seconds,
        ", ".join(result.checked),
    )
    return result


def _configured(settings: JobSettings, resumed_from: str | None) -> dict[str, str]:
    """The locations as the user configured them (the job's directories lie under them)."""
    suffix = f"/{settings.job_id}"
    configured = {options.WORK_DIR.key: settings.work_dir.removesuffix(suffix)}
    if settings.checkpoint_dir is not None:
        configured[options.CHECKPOINT_DIR.key] = settings.checkpoint_dir.removesuffix(suffix)
    if resumed_from is not None:
        configured[options.STATE_RECOVERY_PATH.key] = resumed_from
    return configured


def _registration_timeout(sc: SparkContext) -> float:
    raw = session_conf(sc).get("spark.scheduler.maxRegisteredResourcesWaitingTime", "30s") or "30s"
    try:
        return options.parse_duration_ms(raw) / 1000
    except ValueError:
        return 30.0


def _driver_writes(target: ProbeTarget, token: str) -> None:
    storage = Storage(target.url)
    try:
        storage.write_bytes(DRIVER_FILE, token.encode())
    except Exception as exc:
        raise ConfigurationError(
            f"the driver cannot write {storage.url_of(DRIVER_FILE)} (configuration key "
            f"'{target.key}'): {type(exc).__name__}: {exc}"
        ) from exc


def _run_probes(
    sc: SparkContext, order: ProbeOrder, executors: list[Executor], master: str, tag: str
) -> list[ProbeReport]:
    """One probe task per executor; in local mode (no executors listed) or before any
    executor registered, one task wherever Spark runs it."""
    placed = [
        (ProbeOrder(order.token, order.targets, e.id).to_json(), e.location) for e in executors
    ] or [(order.to_json(), None)]
    description = "lockgate: can every executor reach the job's storage?"
    try:
        with labelled(sc, tag, JOB_GROUP, description):
            raw = located_rdd(sc, placed).mapPartitions(StorageProbe()).collect()
    except (Py4JError, PySparkException) as exc:
        raise ConfigurationError(
            f"the storage check could not run a Python task on the executors (master "
            f"{master}): {_cause(exc)}. Every executor needs a Python with lockgate and its "
            f"dependencies installed: see PYSPARK_PYTHON or spark.pyspark.python, and "
            f"spark.executorEnv.PYTHONPATH"
        ) from exc
    # one report per task, in the order of the tasks' placements
    _check_versions(
        raw, [f"the task placed on {e.describe()}" for e in executors] or ["the executor"]
    )
    return [ProbeReport.from_json(r, "a storage probe report") for r in raw]


def _check_versions(raw: list[object], executors: list[str]) -> None:
    """Fail unless every executor runs the driver's lockgate version: the job graph and the
    records the job's tasks exchange are only read by the version that wrote them."""
    others = [
        f"{where} runs lockgate {reported_version(report) or '(unknown: an older release)'}"
        for where, report in zip(executors, raw, strict=True)
        if reported_version(report) != __version__
    ]
    if others:
        raise ConfigurationError(
            f"the driver runs lockgate {__version__}, but {'; '.join(others)}: install the "
            "same lockgate on the driver and on every executor (see PYSPARK_PYTHON or "
            "spark.pyspark.python, and spark.executorEnv.PYTHONPATH)"
        )


def _cause(exc: BaseException) -> str:
    """The line of a failed Spark job's error that says what went wrong in the task."""
    text = str(exc)
    # An import that failed in a worker, or in the Python daemon that forks them (Spark
    # quotes its stderr: "python: Error while finding module specification for '...'
    # (ModuleNotFoundError: No module named 'lockgate')")
    imports = re.findall(r"(?:ModuleNotFoundError|ImportError): [^\n()]+", text)
    if imports:
        return str(imports[-1]).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith("java.io.IOException"):
            return line
    for line in lines:
        if "Exception:" in line or "Error:" in line:
            return line[:500]
    return lines[0][:500] if lines else type(exc).__name__


def _driver_reads(report: ProbeReport) -> Iterable[ProbeFailure]:
    """Failures of the driver to read back what the report's executor wrote."""
    for key, url in report.written:
        try:
            found = read_url(url)
        except Exception as exc:
            yield ProbeFailure(key, url, "driver-read", f"{type(exc).__name__}: {exc}")
            continue
        if found != url.encode():
            yield ProbeFailure(key, url, "driver-read", "it holds other content")


def _remove_quietly(url: str) -> None:
    try:
        Storage(url).remove("")
    except Exception as exc:  # the check's own leftovers: say so, never mask its result
        log.warning("storage check: could not remove %s: %s", url, exc)


def _is_local_path(url: str) -> bool:
    """A plain path or a file:// URL: this machine's file system, as every process sees
    its own machine's."""
    protocol, _ = split_protocol(url)
    return protocol in (None, "file", "local")


def _describe(report: ProbeReport, known: dict[str, Executor]) -> str:
    if report.executor is None:
        placed = known.get(report.placed_on)
        where = placed.describe() if placed else "an executor"
        return f"{where} (as placed; host name {report.hostname})"
    if report.executor == "driver":
        return f"the driver's executor (host {report.hostname}, local mode)"
    executor = known.get(report.executor)
    return executor.describe() if executor else f"executor {report.executor}"


_ACTIONS = {
    "read": "cannot read {url}, which the driver wrote",
    "write": "cannot write {url}",
    "remove": "cannot remove {url}, which it wrote",
    "driver-read": "wrote {url}, but the driver cannot read it back",
}


def _message(
    failures: list[tuple[ProbeReport, ProbeFailure]],
    known: dict[str, Executor],
    master: str,
    configured: dict[str, str],
    local_spark: bool,
) -> str:
    lines = ["the job's storage is not reachable from every executor:"]
    local_only: dict[str, str] = {}
    for report, failure in failures:
        what = _ACTIONS.get(failure.action, failure.action + " {url}").format(url=failure.url)
        if failure.action == "read" and failure.key == options.STATE_RECOVERY_PATH.key:
            what = f"cannot read {failure.url}"
        lines.append(
            f"  {_describe(report, known)} {what} (configuration key '{failure.key}'): "
            f"{failure.error}"
        )
        location = configured.get(failure.key)
        if not local_spark and location is not None and _is_local_path(location):
            local_only.setdefault(failure.key, location)
    for url in local_only.values():
        lines.append(LOCAL_ONLY.format(url=url, master=master))
    return "\n".join(lines)

"""The Spark session lockgate runs on: the one already running, or one it starts.

A session lockgate starts takes each Spark setting from the first of these that has it:

1. the ``spark.*`` keys of the job's ``Configuration`` (code, like ``SparkSession.builder``
   options, which win over ``spark-submit`` flags in PySpark too);
2. what Spark is launched with: ``spark-submit`` flags, ``PYSPARK_SUBMIT_ARGS``,
   ``spark-defaults.conf``, the ``MASTER`` variable;
3. lockgate's defaults (``_DEFAULTS``), and with a local master (``local[...]``,
   ``local-cluster[...]``: the executors share this machine) the driver's ``sys.path`` for
   the Python workers (``_local_defaults``), the driver's interpreter (``PYSPARK_PYTHON``)
   and the loopback address (``SPARK_LOCAL_IP``), each unless set.

A session that is already running is used as it is.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyspark
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from lockgate.common.config_options import ConfigurationError
from lockgate.core.fs.private_directory import private_directory, user_directory
from lockgate.runtime.sparktask import python_daemon

log = logging.getLogger(__name__)

_DEFAULTS = {
    "spark.master": "local[*]",
    "spark.app.name": "lockgate",
    "spark.log.level": "WARN",
    "spark.ui.showConsoleProgress": "false",
    "spark.python.worker.reuse": "true",
    "spark.speculation": "false",
    # PySpark's daemon with lockgate's task code imported before it forks workers (see the module)
    "spark.python.daemon.module": python_daemon.__name__,
}
# What Spark's launcher fills in, unasked, when PySpark starts the JVM from plain Python (as
# the shell resource "pyspark-shell"): these values are nobody's setting unless one of the
# launch's sources names the key. (spark-submit also falls back to the master local[*],
# lockgate's default too; under spark-submit itself the application is named after the
# script, Spark's own choice for its user, which lockgate keeps.)
_SHELL_FILL_INS = {
    "spark.master": "local[*]",
    "spark.app.name": "pyspark-shell",
    "spark.ui.showConsoleProgress": "true",
}
# The spark-submit flag and environment variable that set a key, besides --conf
_LAUNCH_ALIASES = {"spark.master": ("--master", "MASTER"), "spark.app.name": ("--name", "")}

# The address a local Spark binds to (set before lockgate launches Spark's JVM, which reads
# it from its environment): local Spark serves no other machine.
LOCAL_IP = "127.0.0.1"


def is_local_master(master: str) -> bool:
    """Whether the executors of ``master`` run on this machine (``local``, ``local[4]``,
    ``local[*]``, ``local[2,3]``, ``local-cluster[2,1,1024]``)."""
    return master.strip().startswith("local")


def _local_defaults(pythonpath_in_env: bool, sys_path: list[str]) -> dict[str, str]:
    """Defaults that hold only where the executors run on this machine: Python workers
    see the driver's ``sys.path``, so that functions from the user's modules unpickle
    there (an inherited ``PYTHONPATH`` already does that)."""
    if pythonpath_in_env:
        return {}
    paths = [p for p in sys_path if p and os.path.isdir(p)]
    return {"spark.executorEnv.PYTHONPATH": os.pathsep.join(paths)}


# Settings that take effect only when Spark's JVM is launched (its heap, class path and JVM
# options, the jars spark-submit fetches): the only keys lockgate puts on the launch's command
# line, which every local user can read (a configuration may hold secrets, such as storage keys).
_LAUNCH_KEYS = (
    "spark.driver.memory",
    "spark.driver.extraJavaOptions",
    "spark.driver.defaultJavaOptions",
    "spark.driver.extraClassPath",
    "spark.driver.extraLibraryPath",
    "spark.jars",
)


def _spark_keys(config: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(key, value) for key, value in config.items() if key.startswith("spark.")]


def _launch_keys(config: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(key, value) for key, value in _spark_keys(config) if key.startswith(_LAUNCH_KEYS)]


def session_settings(
    config: Mapping[str, str],
    launched: Mapping[str, str],
    pythonpath_in_env: bool = False,
    sys_path: list[str] | None = None,
) -> dict[str, str]:
    """The options lockgate gives the session builder.

    ``config`` is the job's configuration, ``launched`` the settings Spark was launched
    with (``user_launch_settings``). Those reach the session without being named here;
    lockgate's defaults fill only what neither gives.
    """
    settings = dict(_spark_keys(config))
    master = settings.get("spark.master") or launched.get("spark.master")
    defaults = dict(_DEFAULTS)
    if is_local_master(master or _DEFAULTS["spark.master"]):
        defaults.update(_local_defaults(pythonpath_in_env, sys_path or sys.path))
    for key, value in defaults.items():
        if key not in settings and key not in launched:
            settings[key] = value
    return settings


def launch_may_set(env: Mapping[str, str], spark_home: str, key: str) -> bool:
    """Whether one of the sources Spark's launch reads may set ``key``: conservative, a
    ``PYSPARK_SUBMIT_ARGS`` naming the key, its flag or a properties file, the key's
    environment variable, a ``spark-defaults.conf`` line for it, or a ``spark-env.sh``
    (a script: it may export anything) all count."""
    flag, variable = _LAUNCH_ALIASES.get(key, ("", ""))
    if variable and env.get(variable):
        return True
    submit_args = env.get("PYSPARK_SUBMIT_ARGS", "")
    named = [re.escape(key), r"--properties-file"] + ([re.escape(flag)] if flag else [])
    if re.search(r"(^|\s|=)(" + "|".join(named) + r")(\s|=|$)", submit_args):
        return True
    conf_dir = Path(env.get("SPARK_CONF_DIR") or Path(spark_home) / "conf")
    if (conf_dir / "spark-env.sh").exists():
        return True
    try:
        defaults = (conf_dir / "spark-defaults.conf").read_text(errors="replace")
    except OSError:
        return False
    return re.search(r"^\s*" + re.escape(key) + r"\s*[=:\s]", defaults, re.MULTILINE) is not None


def user_launch_settings(
    launched: Mapping[str, str], env: Mapping[str, str], spark_home: str, by_pyspark: bool
) -> dict[str, str]:
    """The launch's settings less what Spark's launcher filled in unasked (only known when
    PySpark launched the JVM from plain Python, ``by_pyspark``)."""
    settings = dict(launched)
    if by_pyspark:
        for key, value in _SHELL_FILL_INS.items():
            if settings.get(key) == value and not launch_may_set(env, spark_home, key):
                del settings[key]
    return settings


def _prepare_launch(config: Mapping[str, str], spark_home: str) -> None:
    """Environment for the JVM lockgate is about to launch: a local master binds to
    ``LOCAL_IP``. Only when the master is known to be local before the launch (the
    configuration names one, or nothing but lockgate's default can); a user's
    ``SPARK_LOCAL_IP`` wins. Spark started by spark-submit has its JVM already."""
    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    master = config.get("spark.master")
    if master is None:
        if launch_may_set(os.environ, spark_home, "spark.master"):
            return
        master = _DEFAULTS["spark.master"]
    if is_local_master(master):
        os.environ.setdefault("SPARK_LOCAL_IP", LOCAL_IP)


def _running_session() -> SparkSession | None:
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if SparkContext._active_spark_context is not None:
        # a context without a session (or one made in another thread): joined, no options
        return SparkSession.builder.getOrCreate()
    return None


def _warn_unapplied(session: SparkSession, config: Mapping[str, str]) -> None:
    conf = session.sparkContext.getConf()
    unapplied = sorted(
        key for key, value in config.items() if key.startswith("spark.") and conf.get(key) != value
    )
    if unapplied:
        log.warning(
            "a Spark session is running already and is used as it is: the configuration's "
            "%s not applied to it",
            ", ".join(f"{key}={config[key]!r}" for key in unapplied),
        )


def get_or_create_session(config: Mapping[str, str]) -> SparkSession:
    """The running Spark session, or a new one (see the module's docstring for which
    setting wins)."""
    running = _running_session()
    if running is not None:
        _warn_unapplied(running, config)
        return running
    spark_home = os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)
    by_pyspark = "PYSPARK_GATEWAY_PORT" not in os.environ  # not started by spark-submit
    _prepare_launch(config, spark_home)
    # The JVM, with the configuration's settings of the JVM itself (they apply only at its
    # launch; the others reach the session below). SparkConf() then sees the launch's settings.
    SparkContext._ensure_initialized(
        conf=SparkConf(loadDefaults=False).setAll(_launch_keys(config))
    )
    launched = user_launch_settings(dict(SparkConf().getAll()), os.environ, spark_home, by_pyspark)
    settings = session_settings(config, launched, "PYTHONPATH" in os.environ)
    master = settings.get("spark.master") or launched["spark.master"]
    if is_local_master(master):
        # workers must run the driver's interpreter, or they miss lockgate and pyarrow; on a
        # cluster Spark's own rules (PYSPARK_PYTHON, else python3) apply
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def session_conf(sc: SparkContext) -> SparkConf:
    """The running session's settings, read in place: ``sc.getConf()`` copies every setting
    over py4j (a few hundred calls, some 60 ms per job)."""
    conf: SparkConf = sc._conf
    return conf


def check_session(conf: Any) -> None:
    """Refuse Spark settings lockgate cannot run under, before the job starts.

    ``conf`` is the session's ``SparkConf`` (anything with ``get(key, default)``).
    """
    if str(conf.get("spark.speculation", "false")).strip().lower() == "true":
        raise ConfigurationError(
            "Spark speculative execution (spark.speculation=true) is not supported yet: "
            "lockgate accepts the attempt of each subtask whose output an epoch used, but "
            "this has not been tested with speculative copies on a cluster; set "
            "spark.speculation=false for the session that runs lockgate jobs"
        )


def add_python_files(session: SparkSession, paths: Sequence[str]) -> None:
    """Put ``paths`` (``python.files``) on the path of the session's Python workers, with
    ``SparkContext.addPyFile``: .py, .zip and .egg files as they are (local or URLs Spark
    reads), a local directory as a zip of its contents. Workers add them to ``sys.path``
    for every task, and subtask hosts take the task's ``sys.path``."""
    for path in paths:
        if "://" not in path:
            if os.path.isdir(path):
                path = _zipped_directory(path)
            elif not os.path.isfile(path):
                raise ConfigurationError(
                    f"python.files names {path!r}, which is neither a file nor a directory"
                )
        session.sparkContext.addPyFile(path)


def _zipped_directory(directory: str) -> str:
    """A zip of ``directory``'s contents, named after the directory and a hash of its
    contents (Spark refuses a second file of one name with other contents), in this user's
    private directory. An archive already there is reused only if what it holds hashes the
    same."""
    root = Path(directory).resolve()
    files = sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    digest = _contents_digest((str(f.relative_to(root)), f.read_bytes()) for f in files)
    target = private_directory(user_directory() / "python-files", None)
    archive = target / f"{root.name}-{digest[:16]}.zip"
    if _archive_digest(archive) == digest:
        return str(archive)
    descriptor, partial = tempfile.mkstemp(dir=target, suffix=".partial")  # exclusive, 0600
    try:
        with (
            os.fdopen(descriptor, "wb") as out,
            zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zipped,
        ):
            for file in files:
                zipped.write(file, str(file.relative_to(root)))
        os.replace(partial, archive)
    except BaseException:
        os.unlink(partial)
        raise
    return str(archive)


def _contents_digest(entries: Iterable[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for name, data in entries:
        digest.update(name.encode() + b"\0" + data)
    return digest.hexdigest()


def _archive_digest(archive: Path) -> str | None:
    """The digest of what ``archive`` holds (None if it is missing or no zip)."""
    try:
        with zipfile.ZipFile(archive) as zipped:
            names = sorted(info.filename for info in zipped.infolist() if not info.is_dir())
            return _contents_digest((name, zipped.read(name)) for name in names)
    except (OSError, zipfile.BadZipFile):
        return None

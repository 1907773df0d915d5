"""A Spark standalone cluster on this machine, started from PySpark's own distribution (not
a test module). The master listens on 127.0.0.1; a worker on any loopback address, which is
its Spark host: workers on 127.0.0.1 and 127.0.0.2 stand for two machines.

The pip package has no ``start-master.sh``; ``bin/spark-class`` runs the Master and Worker
classes directly. Every daemon runs in a process group of its own, so that a Worker dies
with the executors it launched (and their Python workers) when its group is killed, as when
its machine fails; ``stop`` kills every group. ``SPARK_HOME`` points at a directory of
symlinks (``spark_distribution``), so executor work dirs and logs stay out of the venv.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from spark_distribution import clean_env, make_spark_home

WORKER_MEMORY = "1g"
# Short enough that a killed worker leaves the master's books soon, long enough that live
# workers' heartbeats (every timeout/4) arrive on this busy 2-core machine
WORKER_TIMEOUT_S = 15
START_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    port: int
    log: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL the daemon's process group (a Worker's executors and Python workers too)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=30)


class StandaloneCluster:
    def __init__(self, base: Path):
        self.base = base
        self.spark_home = make_spark_home(base / "spark-home")
        self.master: Daemon | None = None
        self.webui_port = 0
        self.workers: dict[str, Daemon] = {}

    @property
    def url(self) -> str:
        assert self.master is not None
        return f"spark://127.0.0.1:{self.master.port}"

    def env(self, **extra: str) -> dict[str, str]:
        return clean_env(self.spark_home, **{"SPARK_LOCAL_IP": "127.0.0.1", **extra})

    def _spawn(
        self, name: str, args: list[str], port: int, wrap: list[str] | None, host: str
    ) -> Daemon:
        log = self.base / f"{name}.log"
        command = [*(wrap or []), str(self.spark_home / "bin" / "spark-class"), *args]
        with open(log, "ab") as out:
            process = subprocess.Popen(
                command,
                env=self.env(
                    # the master forgets a dead worker (default: after 60 s without heartbeat)
                    SPARK_MASTER_OPTS=f"-Dspark.worker.timeout={WORKER_TIMEOUT_S}",
                    SPARK_CONF_DIR=str(self.spark_home / "conf"),
                    SPARK_LOCAL_IP=host,  # and its executors' (they inherit the variable)
                ),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return Daemon(name, process, port, log)

    def start_master(self) -> None:
        port, self.webui_port = free_port(), free_port()
        args = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        args += ["--port", str(port), "--webui-port", str(self.webui_port)]
        self.master = self._spawn("master", args, port, None, "127.0.0.1")

    def start(self, workers: dict[str, str]) -> None:
        """The master and ``workers`` (name -> host), once every worker has registered;
        nothing left running if that fails."""
        try:
            self.start_master()
            for name, host in workers.items():
                self.start_worker(name, host)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise

    def start_worker(self, name: str, host: str, wrap: list[str] | None = None) -> Daemon:
        """A Worker with one core on Spark host ``host`` (a loopback address); ``wrap`` runs
        it inside another command (a namespace)."""
        port = free_port()
        work_dir = self.base / f"{name}-work"
        work_dir.mkdir(exist_ok=True)
        args = ["org.apache.spark.deploy.worker.Worker", self.url, "--host", host]
        args += ["--port", str(port), "--webui-port", str(free_port()), "--cores", "1"]
        args += ["--memory", WORKER_MEMORY, "--work-dir", str(work_dir)]
        worker = self.workers[name] = self._spawn(name, args, port, wrap, host)
        return worker

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as r:
            return json.loads(r.read())

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Until the master has every worker of ``workers`` alive and registered."""
        deadline = time.monotonic() + timeout_s
        wanted = {w.port for w in self.workers.values()}
        while True:
            dead = [d.name for d in [self.master, *self.workers.values()] if d and not d.alive()]
            if dead:
                raise RuntimeError(f"{dead} exited:\n{self.log_tail(dead[0])}")
            with contextlib.suppress(OSError, ValueError):
                alive = {w["port"] for w in self.state()["workers"] if w["state"] == "ALIVE"}
                if wanted <= alive:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers not registered in {timeout_s} s")
            time.sleep(0.2)

    def ensure_workers(self, workers: dict[str, str]) -> None:
        """Every worker of ``workers`` (name -> host) running (started again after a test
        killed it), no others, and
        the master's books showing exactly these: a killed worker's entry must have expired,
        or the next application may be given an executor on it."""
        gone = []
        for name in list(self.workers):
            if name not in workers or not self.workers[name].alive():
                worker = self.workers.pop(name)
                worker.kill()
                gone.append(worker.port)
        for name, host in workers.items():
            if name not in self.workers:
                self.start_worker(name, host)
        self.wait_ready()
        deadline = time.monotonic() + 3 * WORKER_TIMEOUT_S
        while any(w["port"] in gone and w["state"] == "ALIVE" for w in self.state()["workers"]):
            if time.monotonic() > deadline:
                raise RuntimeError(f"the master still lists killed workers on ports {gone}")
            time.sleep(0.5)

    def worker_of(self, pid: int) -> Daemon:
        """The Worker whose process group holds process ``pid`` (an executor JVM)."""
        group = os.getpgid(pid)
        for worker in self.workers.values():
            if worker.process.pid == group:
                return worker
        raise LookupError(f"process {pid} belongs to no worker of this cluster")

    def log_tail(self, name: str, lines: int = 30) -> str:
        text = (self.base / f"{name}.log").read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        for daemon in [*self.workers.values(), self.master]:
            if daemon is not None:
                daemon.kill()


def executor_pid(app_id: str, executor: str) -> int:
    """The JVM pid of an application's executor on this machine, as ``ps`` shows it:
    ``CoarseGrainedExecutorBackend ... --executor-id N ... --app-id APP``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args
            and b"--executor-id" in args[:-1]
            and args[args.index(b"--executor-id") + 1] == executor.encode()
            and app_id.encode() in args
        ):
            return int(proc.name)
    raise LookupError(f"no executor {executor} of {app_id} runs here")

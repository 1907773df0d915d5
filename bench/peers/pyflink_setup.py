"""What the PyFlink peers (bench/peers/pyflink_*.py) set up alike: the Python path of the
functions run inside the JVM, and the environment tuned as the benchmarks run PyFlink.

Imported by those scripts only (their directory is first on their ``sys.path``), in the
interpreter where ``apache-flink`` is installed; PyFlink is imported when a function is called.
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

BENCH_DIR = str(Path(__file__).resolve().parent.parent)
BUNDLE_SIZE = 10_000  # python.fn-execution.bundle.size


def set_pythonpath(mode: str, *paths: str) -> None:
    """Thread mode embeds CPython in the JVM: it finds pyflink only through PYTHONPATH, so in
    that mode this interpreter's site-packages go on it, then ``paths`` (modules the job's
    functions import, in either mode). Call it before the gateway (the JVM) starts: the JVM
    inherits this process's environment."""
    found = [p for p in site.getsitepackages() if os.path.isdir(p)] if mode == "thread" else []
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([*found, *paths, *([old] if old else [])])


def tuned_environment(
    mode: str, parallelism: int, state_cache_size: int, checkpoint_interval_ms: int
):
    """A StreamExecutionEnvironment (a local mini-cluster when executed) with the Python
    functions in ``mode`` (``thread``: embedded in the JVM; ``process``: Beam workers), the
    hashmap state backend, ``python.state.cache-size`` ``state_cache_size`` (keys cached on
    the Python side), bundles of ``BUNDLE_SIZE`` records, a checkpoint every
    ``checkpoint_interval_ms`` (0: none), ``parallelism``, and no restarts (a failed job
    fails its peer's figure rather than restart until the peer times out)."""
    from pyflink.common import Configuration
    from pyflink.datastream import StreamExecutionEnvironment

    config = Configuration()
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    config.set_string("python.execution-mode", mode)
    config.set_string("restart-strategy.type", "none")  # fail, not retry for the timeout
    config.set_string("state.backend.type", "hashmap")
    config.set_string("python.state.cache-size", str(state_cache_size))
    config.set_string("python.fn-execution.bundle.size", str(BUNDLE_SIZE))
    if checkpoint_interval_ms > 0:
        config.set_string("execution.checkpointing.interval", f"{checkpoint_interval_ms} ms")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(parallelism)
    env.set_python_executable(sys.executable)
    return env


def discarding_sink():
    """Flink's DiscardingSink (sink v2): PyFlink has no Python one; lockgate's benchmarks
    end their jobs in lockgate's."""
    from pyflink.datastream.connectors.base import Sink
    from pyflink.java_gateway import get_gateway

    sinks = get_gateway().jvm.org.apache.flink.streaming.api.functions.sink.v2
    return Sink(sinks.DiscardingSink())

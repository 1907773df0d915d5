"""The application's executors, and RDDs whose partitions ask to run on a chosen one.

PySpark has no API for either: both go through py4j to the SparkContext's JVM side. An
executor's id comes from the scheduler (``getExecutorIds``), its host from Spark's status
store. A location preference (``executor_<host>_<id>``) is soft: a task runs elsewhere when
its executor is busy for longer than ``spark.locality.wait``, or gone.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark import SparkContext
from pyspark.rdd import RDD
from pyspark.serializers import CPickleSerializer

from lockgate.runtime.jobmaster.spark_session import session_conf


@dataclass(frozen=True)
class Executor:
    id: str
    host: str  # as the executor registered it; "" when Spark's status store lacks it yet

    @property
    def location(self) -> str | None:
        """The preferred-location string that names this executor to the scheduler."""
        return f"executor_{self.host}_{self.id}" if self.host else None

    def describe(self) -> str:
        return f"executor {self.id} (host {self.host or 'unknown'})"


def _converters(sc: SparkContext) -> Any:
    jvm = sc._jvm
    assert jvm is not None  # a running SparkContext has its JVM
    return jvm.scala.jdk.javaapi.CollectionConverters


def list_executors(sc: SparkContext) -> list[Executor]:
    """The executors registered now, excluding the driver; [] in local mode, where the
    driver's JVM runs the tasks (executor ``driver``)."""
    master = str(sc.master)
    if master.startswith("local") and not master.startswith("local-cluster"):
        return []  # and Spark would log that its scheduler has no executors to list
    jsc = sc._jsc.sc()
    converters = _converters(sc)
    ids = [str(i) for i in converters.asJava(jsc.getExecutorIds())]
    hosts = {}
    for summary in converters.asJava(jsc.statusStore().executorList(True)):
        hosts[str(summary.id())] = str(summary.hostPort()).rsplit(":", 1)[0]
    return [Executor(i, hosts.get(i, "")) for i in sorted(ids, key=_numeric_first)]


def wait_for_executors(sc: SparkContext, settle_s: float, timeout_s: float) -> list[Executor]:
    """The executors once they have registered: a new application's executors register
    over the seconds after its SparkContext starts, so wait until as many as
    ``spark.executor.instances`` (when set) have, or none has joined for ``settle_s``
    (after the first); at most ``timeout_s``. Whatever registered by then (maybe none)."""
    master = str(sc.master)
    if master.startswith("local") and not master.startswith("local-cluster"):
        return []
    wanted = int(session_conf(sc).get("spark.executor.instances", "0") or 0)
    deadline = time.monotonic() + timeout_s
    found = list_executors(sc)
    changed = time.monotonic()
    while time.monotonic() < deadline:
        if found and (len(found) >= wanted > 0 or time.monotonic() - changed >= settle_s):
            break
        time.sleep(0.1)
        now = list_executors(sc)
        if {e.id for e in now} != {e.id for e in found}:
            found, changed = now, time.monotonic()
    return found


def _numeric_first(executor_id: str) -> tuple[int, int | str]:
    return (0, int(executor_id)) if executor_id.isdigit() else (1, executor_id)


def located_rdd(sc: SparkContext, partitions: Sequence[tuple[Any, str | None]]) -> RDD[Any]:
    """An RDD with one partition per ``(item, location)``: the partition holds the item (its
    one element) and prefers the location (``Executor.location``; None: anywhere)."""
    jvm = sc._jvm
    assert jvm is not None
    converters = _converters(sc)
    serializer = CPickleSerializer()
    pairs = jvm.java.util.ArrayList()
    for item, location in partitions:
        locations = jvm.java.util.ArrayList()
        if location is not None:
            locations.add(location)
        data = bytearray(serializer.dumps(item))  # type: ignore[no-untyped-call]
        pairs.add(jvm.scala.Tuple2(data, converters.asScala(locations).toSeq()))
    class_tag = getattr(getattr(jvm.scala.reflect, "ClassTag$"), "MODULE$").AnyRef()
    jrdd = sc._jsc.sc().makeRDD(converters.asScala(pairs).toSeq(), class_tag)
    return RDD(jrdd.toJavaRDD(), sc, serializer)


def preferred_locations(sc: SparkContext, rdd: RDD[Any], partition: int) -> list[str]:
    """What the scheduler sees as the partition's preferred locations (tests)."""
    jsc = sc._jsc.sc()
    found = jsc.getPreferredLocs(rdd._jrdd.rdd(), partition)
    return [str(loc) for loc in _converters(sc).asJava(found)]

"""Spark's UI and REST API show each epoch's Spark job as ``lockgate <job name> epoch n
(checkpoint k)`` (its source stages, when they run as jobs of their own, as ``... epoch n
sources``), and every Spark job of a lockgate job carries its tag; the thread that ran
the job gets its own job group, description and tags back (``spark_job_labels``).

Read from Spark's status store, which serves its REST API's ``/jobs`` (the UI is off in the
tests)."""

from __future__ import annotations

import time

from lockgate.runtime.jobmaster.spark_job_labels import job_tag
from lockgate.runtime.jobmaster.storage_check import JOB_GROUP as STORAGE_CHECK_GROUP

_SETTLE_S = 5.0  # for job events to reach the status store


def _jobs_since(spark, first: int) -> dict[int, tuple[str, str, set[str]]]:
    """Job id -> (group, description, tags) of the jobs Spark started from id ``first`` on."""
    sc = spark.sparkContext
    jsc = sc._jsc.sc()
    store = jsc.statusStore()
    converters = sc._jvm.scala.jdk.javaapi.CollectionConverters
    jobs = {}
    for job_id in range(first, int(jsc.dagScheduler().nextJobId())):
        if sc.statusTracker().getJobInfo(job_id) is None:
            continue
        data = store.job(job_id)
        group, description = data.jobGroup(), data.description()
        jobs[job_id] = (
            group.get() if group.isDefined() else "",
            description.get() if description.isDefined() else "",
            {str(tag) for tag in converters.asJava(data.jobTags())},
        )
    return jobs


def test_epochs_are_described_and_every_spark_job_is_tagged_with_its_job(make_env, spark):
    sc = spark.sparkContext
    first = int(sc._jsc.sc().dagScheduler().nextJobId())
    env = make_env(parallelism=2, max_records_per_split=5)
    env.enable_checkpointing(1)
    env.from_collection(list(range(40))).key_by(lambda v: v % 3).map(lambda v: v + 1).print()
    result = env.execute("labelled")
    epochs = [stats.epoch for stats in result.epochs]
    assert len(epochs) >= 4
    expected = [f"lockgate labelled epoch {n} (checkpoint {n})" for n in epochs]
    deadline = time.monotonic() + _SETTLE_S
    while True:
        jobs = _jobs_since(spark, first)
        descriptions = [d for _, d, _ in jobs.values() if d.startswith("lockgate labelled epoch")]
        described = [d for d in descriptions if not d.endswith(" sources")]
        if len(described) >= len(expected) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert described == expected, descriptions
    sources = [d for d in descriptions if d.endswith(" sources")]
    assert sources, "no source stages ran as jobs of their own: not a pipelined job"
    assert set(sources) <= {f"lockgate labelled epoch {n} sources" for n in epochs}, sources
    groups = {group for group, _, _ in jobs.values()}
    assert STORAGE_CHECK_GROUP in groups  # tagged too, below
    tag = job_tag(str(result.get_job_id()))
    untagged = {job_id: job for job_id, job in jobs.items() if tag not in job[2]}
    assert not untagged, f"Spark jobs without the tag {tag}: {untagged}"
    for key in ("spark.jobGroup.id", "spark.job.description", "spark.job.tags"):
        assert sc.getLocalProperty(key) is None, key  # this thread's, as before the job

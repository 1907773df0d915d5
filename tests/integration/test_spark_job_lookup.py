"""The driver finds an epoch's Spark job by id and job group (``first_job_in_group``), not
by listing a group's jobs, which makes Spark copy and sort every job it remembers."""

from __future__ import annotations

from lockgate.runtime.jobmaster.epoch_job import first_job_in_group


def _job_in(spark, group: str) -> int:
    sc = spark.sparkContext
    sc.setJobGroup(group, group)
    try:
        sc.parallelize([1], 1).count()
    finally:
        sc._jsc.clearJobGroup()
    (job_id,) = sc.statusTracker().getJobIdsForGroup(group)
    return job_id


def test_the_first_job_of_a_group_from_an_id_on(spark):
    sc = spark.sparkContext
    a = _job_in(spark, "lookup-a")
    b = _job_in(spark, "lookup-b")
    a2 = _job_in(spark, "lookup-a2")
    assert first_job_in_group(sc, "lookup-a", a) == a
    assert first_job_in_group(sc, "lookup-b", a) == b  # past a job of another group
    assert first_job_in_group(sc, "lookup-a2", a) == a2
    assert first_job_in_group(sc, "lookup-a", a + 1) is None  # none of the group from a + 1
    assert first_job_in_group(sc, "lookup-none", a) is None

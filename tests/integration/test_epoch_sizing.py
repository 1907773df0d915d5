"""Epochs sized by time: the first reads 100,000 records per split, fast full epochs grow
toward the target within the maximum; without a target each epoch reads the maximum."""

from __future__ import annotations

from lockgate.common import Configuration
from lockgate.datastream import StreamExecutionEnvironment

EVENTS = 350_000


def epoch_records(spark, tmp_path, **settings: str) -> list[int]:
    config = Configuration()
    config.set_string("lockgate.work-dir", str(tmp_path / "work"))
    for key, value in settings.items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(spark)
    env.configure(config)
    env.set_parallelism(1)
    env.from_collection(range(EVENTS)).filter(lambda x: x < 0).print()
    return [epoch.records for epoch in env.execute("sizing").epochs]


def test_fast_epochs_grow_from_the_first_share_toward_the_target(spark, tmp_path):
    # The first epoch starts the subtasks and says nothing of the rate: the second reads as
    # much. 100k records of a bare filter take well under the 30 s target: the third may
    # read 4x as many (the most one epoch may grow), and reads the rest.
    records = epoch_records(spark, tmp_path, **{"lockgate.epoch.target-duration": "30 s"})
    assert records == [100_000, 100_000, 150_000]


def test_the_maximum_bounds_growth(spark, tmp_path):
    settings = {
        "lockgate.epoch.target-duration": "30 s",
        "lockgate.epoch.max-records-per-split": "120000",
    }
    assert epoch_records(spark, tmp_path, **settings) == [100_000, 100_000, 120_000, 30_000]


def test_without_a_target_every_epoch_reads_the_maximum(spark, tmp_path):
    settings = {"lockgate.epoch.target-duration": "0"}
    assert epoch_records(spark, tmp_path, **settings) == [EVENTS]

"""``env.from_dataframe``: a DataFrame's rows read in Spark tasks, each exactly once across
failures and restores, with its schema as Types; DataFrames that cannot be read again the
same way are refused, and a resume that finds other partitions fails."""

from __future__ import annotations

import datetime
import decimal

import pytest
from exactly_once_job import (
    PER_SPLIT,
    Trap,
    assert_committed_output_exact,
    build_job,
    checkpointed_env,
    record_in_epoch,
    recovery_settings,
    stop_with_savepoint_at_first_epoch,
)
from lockgate_it_support import BACKENDS, collect, matrix

from lockgate.common import Row, Types
from lockgate.common.time import Instant
from lockgate.core.source import SourceError
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.errors import JobExecutionError


def numbers(spark, splits: int, per_split: int = PER_SPLIT):
    """Partition s holds the rows (split=s, i) for i < per_split: the records of
    ``exactly_once_job``, which a failure-free run counts to a known reference."""
    return spark.range(0, splits * per_split, numPartitions=splits).selectExpr(
        f"id div {per_split} as split", f"id % {per_split} as i"
    )


@BACKENDS
@matrix("parallelism", [3, 1])
def test_dataframe_rows_are_counted_once_across_failures(make_env, spark, tmp_path, parallelism):
    # Two raises exhaust Spark's one task retry: the job restores its latest checkpoint, and
    # a failure while restoring makes it restore again
    trap = Trap(record_in_epoch(4, split=parallelism - 1), tmp_path / "markers", times=2)
    env = checkpointed_env(
        make_env,
        tmp_path / "checkpoints",
        parallelism,
        settings={"lockgate.testing.inject-failure": "after-metadata-before-commit@2"},
    )
    stream = env.from_dataframe(numbers(spark, parallelism))
    build_job(env, tmp_path / "out", parallelism, trap, numbers=stream)
    result = env.execute("dataframe failures")
    assert trap.fired() == 2 and result.restarts == 2
    assert_committed_output_exact(tmp_path / "out", parallelism)


def test_spark_types_become_types_and_type_info_reads_columns_as_declared(make_env, spark):
    rows = [
        (
            1,
            "a",
            2.5,
            True,
            datetime.date(2024, 5, 1),
            datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC),
            decimal.Decimal("1.25"),
            ["x", "y"],
            {"k": 1},
            (7, "in"),
            b"\x01",
        ),
        (2, None, None, None, None, None, None, None, None, None, None),
    ]
    schema = (
        "id int, name string, score double, ok boolean, day date, at timestamp, "
        "price decimal(10,2), tags array<string>, counts map<string,int>, "
        "inner struct<n:int,s:string>, raw binary"
    )
    df = spark.createDataFrame(rows, schema).repartition(2, "id")
    env = make_env(parallelism=2)
    stream = env.from_dataframe(df)
    assert stream.get_type() == Types.ROW_NAMED(
        ["id", "name", "score", "ok", "day", "at", "price", "tags", "counts", "inner", "raw"],
        [
            Types.INT(),
            Types.STRING(),
            Types.DOUBLE(),
            Types.BOOLEAN(),
            Types.SQL_DATE(),
            Types.INSTANT(),
            Types.BIG_DEC(),
            Types.LIST(Types.STRING()),
            Types.MAP(Types.STRING(), Types.INT()),
            Types.ROW_NAMED(["n", "s"], [Types.INT(), Types.STRING()]),
            Types.PRIMITIVE_ARRAY(Types.BYTE()),
        ],
    )
    got = sorted(collect(stream), key=lambda row: row.id)
    first = got[0]
    assert first.name == "a" and first.score == 2.5 and first.ok is True
    assert first.day == datetime.date(2024, 5, 1)
    assert first.at == Instant.of_epoch_milli(1714564800000)
    assert first.price == decimal.Decimal("1.25") and first.tags == ["x", "y"]
    assert first.counts == {"k": 1} and first.inner == Row(n=7, s="in")
    assert first.raw == b"\x01"
    assert got[1].id == 2 and all(value is None for value in list(got[1])[1:])

    # type_info reads the named columns as declared, widening int to LONG
    declared = Types.ROW_NAMED(["name", "id"], [Types.STRING(), Types.LONG()])
    env = make_env(parallelism=1)
    assert sorted(collect(env.from_dataframe(df, declared)), key=lambda r: r.id) == [
        Row(name="a", id=1),
        Row(name=None, id=2),
    ]


def test_dataframes_that_cannot_be_read_again_alike_are_refused(make_env, spark):
    env = make_env(parallelism=1)
    with pytest.raises(SourceError, match=r"deterministic.*rand"):
        env.from_dataframe(spark.range(10).selectExpr("id", "rand() as r"))
    streaming = spark.readStream.format("rate").load()
    with pytest.raises(SourceError, match=r"bounded DataFrame, not a streaming one"):
        env.from_dataframe(streaming)
    with pytest.raises(SourceError, match=r"column 'name' holds string.*int64"):
        env.from_dataframe(
            spark.range(3).selectExpr("cast(id as string) as name"),
            Types.ROW_NAMED(["name"], [Types.LONG()]),
        )
    with pytest.raises(SourceError, match=r"no column 'missing'"):
        env.from_dataframe(spark.range(3), Types.ROW_NAMED(["missing"], [Types.LONG()]))
    with pytest.raises(SourceError, match=r"no columns"):
        env.from_dataframe(spark.range(3).select())
    with pytest.raises(TypeError, match=r"needs a pyspark.sql.DataFrame"):
        env.from_dataframe([1, 2, 3])


def test_resume_with_other_partitions_fails_naming_them(make_env, spark, tmp_path):
    savepoints = tmp_path / "savepoints"
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", 2, numbers=env.from_dataframe(numbers(spark, 2)))
    savepoint = stop_with_savepoint_at_first_epoch(env, savepoints)

    env = checkpointed_env(
        make_env, tmp_path / "checkpoints", 2, settings=recovery_settings(savepoint)
    )
    changed = env.from_dataframe(numbers(spark, 2, per_split=PER_SPLIT - 1))
    build_job(env, tmp_path / "out", 2, numbers=changed)
    with pytest.raises(JobExecutionError, match=r"other partitions than when it was checkpointed"):
        env.execute("resumed with other rows")


class CountPerUser(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield (value[0], count)


def test_state_bootstrapped_from_a_dataframe_goes_on_without_it(make_env, spark, tmp_path):
    """docs/connectors/dataframe.md: history read from a DataFrame, a savepoint, then the
    same keyed operator (by uid) on other input, the DataFrame source left behind."""
    history = spark.createDataFrame([(f"u{i % 3}", i) for i in range(30)], "user string, n int")
    env = make_env(parallelism=2, max_records_per_split=1000)
    env.from_dataframe(history).uid("history").key_by(lambda row: row.user).process(
        CountPerUser()
    ).uid("counts").print()
    savepoint = stop_with_savepoint_at_first_epoch(env, tmp_path / "savepoints")

    env = make_env(
        parallelism=2,
        **{
            "execution.state-recovery.path": savepoint,
            "execution.state-recovery.ignore-unclaimed-state": "true",
        },
    )
    live = env.from_collection([("u0",), ("u2",)]).uid("live")
    counted = live.key_by(lambda row: row[0]).process(CountPerUser()).uid("counts")
    assert sorted(collect(counted)) == [("u0", 11), ("u2", 11)]


def test_a_dataframe_that_fails_to_stage_leaves_no_files(make_env, spark, tmp_path):
    from pyspark.sql.functions import udf

    @udf("long")
    def explode_on_seven(value):
        if value == 7:
            raise ValueError("no sevens")
        return value

    env = make_env(parallelism=1)
    env.from_dataframe(spark.range(10, numPartitions=2).select(explode_on_seven("id"))).print()
    with pytest.raises(SourceError, match="could not stage the DataFrame's partitions"):
        env.execute("fails while staging")
    # the run's work directory (its staged partitions, its lease) went with its failure
    assert not [p for p in (tmp_path / "work").iterdir() if p.is_dir()]

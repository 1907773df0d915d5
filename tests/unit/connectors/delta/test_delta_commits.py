"""The Delta sink's table checks and commits, on delta-rs: a checkpoint's files in one commit
with the application transaction, a commit redone after a crash skipped, an abort that never
takes a committed file out of the table, and tables the sink cannot append to refused."""

from __future__ import annotations

import datetime
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable, write_deltalake

from lockgate.common import Types
from lockgate.connectors.delta.committable import DeltaCommittable, DeltaDataFile
from lockgate.connectors.delta.committer import DeltaCommitter
from lockgate.connectors.delta.table import DeltaTableError, DeltaTableSpec

ROW_TYPE = Types.ROW_NAMED(["id", "day"], [Types.LONG(), Types.STRING()])


def data_file(table: DeltaTableSpec, name: str, ids: list[int], day: str | None) -> DeltaDataFile:
    directory, values = table.partition_directory((day,) if table.partition_columns else ())
    relative = f"{directory}/part-{name}.snappy.parquet".lstrip("/")
    path = os.path.join(table.location, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    return DeltaDataFile(relative, os.path.getsize(path), values, len(ids), 1)


def committable(app: str, version: int, *files: DeltaDataFile) -> dict:
    return DeltaCommittable(version & 0xFFFFFFFF, app, version, tuple(files)).to_json()


def rows(location: str) -> list[tuple[int, str | None]]:
    table = DeltaTable(location).to_pyarrow_table()
    return sorted(zip(table["id"].to_pylist(), table["day"].to_pylist(), strict=True))


def test_a_checkpoint_commits_once_and_its_redo_adds_nothing(tmp_path) -> None:
    table = DeltaTableSpec.of(str(tmp_path / "t"), ROW_TYPE, ("day",))
    table.check()  # no table yet: the check creates it, empty
    assert DeltaTable(table.location).version() == 0
    committer = DeltaCommitter(table)
    first = [
        committable("app", 1, data_file(table, "a", [1, 2], "x")),
        committable("app", 1, data_file(table, "b", [3], "a/b=c")),  # escaped in the path
    ]
    (group,) = committer.groups(first)
    committer.commit_group(group)
    assert rows(table.location) == [(1, "x"), (2, "x"), (3, "a/b=c")]
    assert os.path.isdir(os.path.join(table.location, "day=a%2Fb%3Dc"))
    committer.commit_group(group)  # the restore's commit of the same checkpoint
    second = [committable("app", 2, data_file(table, "c", [4], None))]
    committer.commit_group(second)
    committer.commit_group(first)  # an older checkpoint's again: skipped as well
    dt = DeltaTable(table.location)
    assert dt.version() == 2 and dt.transaction_version("app") == 2
    assert rows(table.location) == [(1, "x"), (2, "x"), (3, "a/b=c"), (4, None)]
    table.check()  # the table it made has the row type's schema and partitions


@pytest.mark.parametrize("name", ["t", "my table é%#"])
def test_abort_keeps_committed_files_and_deletes_the_others(tmp_path, name) -> None:
    table = DeltaTableSpec.of(str(tmp_path / name), ROW_TYPE, ("day",))
    table.check()
    committer = DeltaCommitter(table)
    kept = data_file(table, "kept", [1], "x y/%")
    committer.commit_group([committable("app", 1, kept)])
    lost = data_file(table, "lost", [2], "x y/%")
    for f in (kept, lost):
        url = f"file://{table.location}/{f.path}"
        assert committer.may_stage(url)
        committer.abort(url)
    assert os.path.exists(os.path.join(table.location, kept.path))
    assert not os.path.exists(os.path.join(table.location, lost.path))
    assert rows(table.location) == [(1, "x y/%")]
    assert not committer.may_stage(f"file://{table.location}/_delta_log/00000.json")
    assert not committer.may_stage(f"file://{tmp_path}/elsewhere/part-1.parquet")


def test_a_committable_naming_a_file_outside_the_table_is_refused(tmp_path) -> None:
    table = DeltaTableSpec.of(str(tmp_path / "t"), ROW_TYPE, ())
    table.check()
    outside = DeltaDataFile("../other/part-1.parquet", 10, {}, 1, 1)
    with pytest.raises(DeltaTableError, match="not a data file of the table"):
        DeltaCommitter(table).commit_group([committable("app", 1, outside)])


def test_tables_the_sink_cannot_append_to_are_refused(tmp_path) -> None:
    other = tmp_path / "other"
    write_deltalake(str(other), pa.table({"id": pa.array([1], pa.int32()), "day": ["x"]}))
    with pytest.raises(DeltaTableError, match=r"column .id. is int32.*int64"):
        DeltaTableSpec.of(str(other), ROW_TYPE, ()).check()
    with pytest.raises(DeltaTableError, match=r"columns \['id', 'day'\].*\['day', 'id'\]"):
        DeltaTableSpec.of(
            str(other), Types.ROW_NAMED(["day", "id"], [Types.STRING(), Types.INT()]), ()
        ).check()
    same = Types.ROW_NAMED(["id", "day"], [Types.INT(), Types.STRING()])
    with pytest.raises(DeltaTableError, match=r"partitioned by \[\], the sink by \['day'\]"):
        DeltaTableSpec.of(str(other), same, ("day",)).check()
    DeltaTableSpec.of(str(other), same, ()).check()

    strict = tmp_path / "strict"
    DeltaTable.create(str(strict), pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    one = Types.ROW_NAMED(["id"], [Types.LONG()])
    with pytest.raises(DeltaTableError, match="column 'id' is NOT NULL int64"):
        DeltaTableSpec.of(str(strict), one, ()).check()
    checked = tmp_path / "checked"
    write_deltalake(str(checked), pa.table({"id": pa.array([1], pa.int64())}))
    DeltaTable(str(checked)).alter.add_constraint({"positive": "id > 0"})
    with pytest.raises(DeltaTableError, match=r"delta.constraints.positive.*plain rows only"):
        DeltaTableSpec.of(str(checked), one, ()).check()
    mapped = tmp_path / "mapped"
    DeltaTable.create(
        str(mapped),
        pa.schema([("id", pa.int64())]),
        configuration={"delta.columnMapping.mode": "name"},
    )
    with pytest.raises(DeltaTableError, match=r"delta.columnMapping.mode=name"):
        DeltaTableSpec.of(str(mapped), one, ()).check()

    leftover = tmp_path / "leftover"
    (leftover / "day=x").mkdir(parents=True)  # an aborted file's directory: still a new table
    DeltaTableSpec.of(str(leftover), ROW_TYPE, ("day",)).check()
    assert DeltaTable.is_deltatable(str(leftover))

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "data.csv").write_text("1\n")
    with pytest.raises(DeltaTableError, match="holds files and is not a Delta table"):
        DeltaTableSpec.of(str(plain), ROW_TYPE, ()).check()
    with pytest.raises(DeltaTableError, match="s3://, but the sink writes tables on file"):
        DeltaTableSpec.of("s3://bucket/t", ROW_TYPE, ())


def test_a_table_replaced_under_the_job_fails_its_commit(tmp_path) -> None:
    table = DeltaTableSpec.of(str(tmp_path / "t"), ROW_TYPE, ())
    table.check()
    staged = data_file(table, "a", [1], None)
    write_deltalake(  # another writer replaces the table's schema meanwhile
        table.location, pa.table({"other": ["x"]}), mode="overwrite", schema_mode="overwrite"
    )
    with pytest.raises(DeltaTableError, match="has the columns \\['other'\\]"):
        DeltaCommitter(table).commit_group([committable("app", 1, staged)])


def test_partition_columns_must_be_fields_of_simple_types() -> None:
    row_type = Types.ROW_NAMED(
        ["id", "day", "score"], [Types.LONG(), Types.SQL_DATE(), Types.DOUBLE()]
    )
    assert DeltaTableSpec.of("/t", row_type, ("day",)).partition_directory(
        (datetime.date(2024, 1, 2),)
    ) == ("day=2024-01-02", {"day": "2024-01-02"})
    with pytest.raises(DeltaTableError, match="'score' is Double"):
        DeltaTableSpec.of("/t", row_type, ("score",))
    with pytest.raises(DeltaTableError, match="'_day' starts with '_'"):
        DeltaTableSpec.of("/t", Types.ROW_NAMED(["_day"], [Types.STRING()]), ("_day",))
    with pytest.raises(DeltaTableError, match="'nope' is not a field"):
        DeltaTableSpec.of("/t", row_type, ("nope",))
    nested_time = Types.ROW_NAMED(["x"], [Types.LIST(Types.SQL_TIME())])
    with pytest.raises(DeltaTableError, match="field 'x': Delta tables have no time of day"):
        DeltaTableSpec.of("/t", nested_time, ())
    with pytest.raises(DeltaTableError, match=r"PICKLED|column type"):
        DeltaTableSpec.of("/t", Types.ROW_NAMED(["x"], [Types.PICKLED_BYTE_ARRAY()]), ())

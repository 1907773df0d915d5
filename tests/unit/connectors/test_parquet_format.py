"""ParquetColumnarRowInputFormat: row groups as splits read by row offset across epochs,
columns matched and widened to the row type, files that do not fit refused on the driver."""

from __future__ import annotations

import datetime
import pickle

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from file_source_epochs import flat, read_epochs, through_json

from lockgate.common import Configuration, Duration, Row, Types
from lockgate.common.records import RecordFormatError
from lockgate.connectors.file import parquet_format
from lockgate.connectors.file.enumerator import FileEnumeratorState, FileSplit
from lockgate.core.source import SourceError, SplitAssignment
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat
from lockgate.datastream.formats.parquet import ParquetColumnarRowInputFormat

ROW = Types.ROW_NAMED(["id", "name"], [Types.LONG(), Types.STRING()])


def parquet_source(*paths, row_type=ROW, monitor_ms: int | None = None, **options) -> FileSource:
    builder = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type, **options), *(str(p) for p in paths)
    )
    if monitor_ms is not None:
        builder = builder.monitor_continuously(Duration.of_millis(monitor_ms))
    return builder.build()


def write(path, ids: range, row_group_size: int = 4, **extra_columns) -> None:
    columns = {
        "id": pa.array(list(ids), pa.int32()),  # narrower than the row type's LONG
        "name": [f"n{i}" for i in ids],
        **extra_columns,
    }
    pq.write_table(pa.table(columns), path, row_group_size=row_group_size)


@pytest.mark.parametrize(("parallelism", "max_records"), [(1, 3), (2, 1), (3, 100)])
def test_row_groups_are_splits_read_once_and_in_order(tmp_path, parallelism, max_records):
    write(tmp_path / "a.parquet", range(10))  # row groups of 4, 4 and 2 rows
    write(tmp_path / "b.parquet", range(100, 105), row_group_size=5)
    source = parquet_source(tmp_path, batch_size=2)
    epochs = read_epochs(source, parallelism, max_records)
    ids = [row.id for row in flat(epochs)]
    assert sorted(ids) == [*range(10), *range(100, 105)]
    for group in ([0, 1, 2, 3], [4, 5, 6, 7], [8, 9], [100, 101, 102, 103, 104]):
        assert [i for i in ids if i in group] == group  # a row group is read in order
    assert flat(epochs)[0] == Row(id=ids[0], name=f"n{ids[0]}")
    # every epoch reads at most max_records of each row group
    assert all(len(epoch) <= max_records * 4 for epoch in epochs)


def test_splits_and_positions_in_the_checkpoint(tmp_path):
    path = tmp_path / "a.parquet"
    write(path, range(10))
    source = parquet_source(path)
    enumerator = source.create_enumerator(2)
    plan = enumerator.plan(3)
    assert {a.split: subtask for subtask, s in plan.items() for a in s} == {
        f"{path}#0": 0,
        f"{path}#1": 1,
        f"{path}#2": 0,
    }
    progress: dict = {}
    for assignments in plan.values():
        for assignment in assignments:
            list(source.read(assignment, None, progress))
    enumerator.acknowledge(progress)
    state = FileEnumeratorState.from_json(through_json(enumerator.snapshot()), "test")
    assert state == FileEnumeratorState(
        (FileSplit(str(path), 0, 3, 0), FileSplit(str(path), 1, 3, 1)), (), parallelism=2
    )
    assert state.to_json()["reading"][0] == {
        "path": str(path),
        "subtask": 0,
        "position": 3,
        "part": 0,
    }


def test_a_checkpoint_of_an_older_lockgate_is_read():
    """Version 1 of the state before parts: its splits are whole files."""
    old = {
        "format": "lockgate-file-source-splits",
        "version": 1,
        "reading": [{"path": "/in/a.txt", "subtask": 0, "position": 6}],
        "finished": [[0, "/in/b.txt"]],
    }
    state = FileEnumeratorState.from_json(old, "test")
    assert state.reading == (FileSplit("/in/a.txt", 0, 6),)
    assert state.reading[0].id == "/in/a.txt"


def test_columns_are_found_by_name_in_any_case_when_asked(tmp_path):
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"extra": [1.0], "NAME": ["x"], "Id": pa.array([7], pa.int16())}), path)
    with pytest.raises(SourceError, match=r"has no column 'id' \(its columns: extra, NAME, Id\)"):
        parquet_source(path).validate()
    rows = flat(read_epochs(parquet_source(path, is_case_sensitive=False), 1, 10))
    assert rows == [Row(id=7, name="x")]


def test_a_file_that_does_not_fit_the_row_type_is_refused_before_reading(tmp_path):
    write(tmp_path / "good.parquet", range(3))
    pq.write_table(pa.table({"id": ["text"], "name": ["x"]}), tmp_path / "bad.parquet")
    source = parquet_source(tmp_path)
    with pytest.raises(SourceError) as failure:
        source.validate()
    assert str(failure.value) == (
        f"ParquetColumnarRowInputFormat cannot read {tmp_path}/bad.parquet: column 'id' holds "
        "string, the row type declares int64"
    )
    (tmp_path / "not.parquet").write_text("hello")
    (tmp_path / "bad.parquet").unlink()
    with pytest.raises(SourceError, match=r"cannot read .*not\.parquet: "):
        source.validate()


def test_a_monitored_file_that_does_not_fit_fails_when_listed(tmp_path):
    write(tmp_path / "a.parquet", range(3))
    source = parquet_source(tmp_path, monitor_ms=0)
    enumerator = source.create_enumerator(1)
    enumerator.plan(10)
    pq.write_table(pa.table({"id": [1]}), tmp_path / "late.parquet")
    with pytest.raises(SourceError, match=r"late.parquet: the file has no column 'name'"):
        enumerator.plan(10)


def test_empty_files_hold_no_rows(tmp_path):
    write(tmp_path / "no-rows.parquet", range(0))  # one row group of no rows, null columns
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    pq.ParquetWriter(tmp_path / "no-row-groups.parquet", schema).close()
    source = parquet_source(tmp_path)
    assert flat(read_epochs(source, 1, 10)) == []
    enumerator = parquet_source(tmp_path / "no-row-groups.parquet").create_enumerator(1)
    assert enumerator.plan(10) == {}
    assert enumerator.is_finished()


def test_timestamps_with_a_zone_read_as_utc_or_local_wall_clock(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    import time

    time.tzset()
    try:
        instant = datetime.datetime(2024, 1, 1, 12, tzinfo=datetime.UTC)
        path = tmp_path / "ts.parquet"
        table = pa.table({"at": pa.array([instant, None], pa.timestamp("us", tz="UTC"))})
        pq.write_table(table, path)
        int96 = tmp_path / "int96.parquet"  # Spark's and Hive's timestamps: UTC instants
        pq.write_table(table, int96, use_deprecated_int96_timestamps=True)
        row_type = Types.ROW_NAMED(["at"], [Types.SQL_TIMESTAMP()])
        for file in (path, int96):
            utc = flat(
                read_epochs(parquet_source(file, row_type=row_type, is_utc_timestamp=True), 1, 5)
            )
            local = flat(read_epochs(parquet_source(file, row_type=row_type), 1, 5))
            assert [r.at for r in utc] == [datetime.datetime(2024, 1, 1, 12), None]
            assert [r.at for r in local] == [datetime.datetime(2024, 1, 1, 7), None], file
        instants = Types.ROW_NAMED(["at"], [Types.INSTANT()])
        [first, _] = flat(read_epochs(parquet_source(path, row_type=instants), 1, 5))
        assert first.at.to_epoch_milli() == int(instant.timestamp() * 1000)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_settings_that_cannot_take_effect_are_refused():
    with pytest.raises(ValueError, match=r"takes no Hadoop configuration; got fs\.defaultFS"):
        ParquetColumnarRowInputFormat(
            ROW, hadoop_config=Configuration().set_string("fs.defaultFS", "hdfs://nn")
        )
    ParquetColumnarRowInputFormat(ROW, hadoop_config=Configuration())  # empty: nothing to do
    with pytest.raises(ValueError, match="batch_size must be a positive int"):
        ParquetColumnarRowInputFormat(ROW, batch_size=0)
    with pytest.raises(TypeError, match="a row type is needed"):
        ParquetColumnarRowInputFormat(Types.LONG())
    with pytest.raises(TypeError, match="needs a BulkFormat"):
        FileSource.for_bulk_file_format(None, "/data")


def test_nested_columns_are_rows_lists_and_maps(tmp_path):
    path = tmp_path / "nested.parquet"
    point = pa.struct([("x", pa.int32()), ("y", pa.float32())])
    table = pa.table(
        {
            "p": pa.array([{"x": 1, "y": 0.5}, None], point),
            "tags": pa.array([["a", "b"], []], pa.list_(pa.string())),
            "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
        }
    )
    pq.write_table(table, path)
    row_type = Types.ROW_NAMED(
        ["p", "tags", "m"],
        [
            Types.ROW_NAMED(["x", "y"], [Types.LONG(), Types.DOUBLE()]),
            Types.LIST(Types.STRING()),
            Types.MAP(Types.STRING(), Types.LONG()),
        ],
    )
    rows = flat(read_epochs(parquet_source(path, row_type=row_type), 1, 1))
    assert rows == [
        Row(p=Row(x=1, y=0.5), tags=["a", "b"], m={"k": 1}),
        Row(p=None, tags=[], m=None),
    ]


def test_footers_are_read_once_by_validate_and_the_first_listing(tmp_path, monkeypatch):
    for name in ("a", "b"):
        write(tmp_path / f"{name}.parquet", range(3))
    opened: list[str] = []
    real_open = parquet_format._open

    def counting_open(path):
        opened.append(path)
        return real_open(path)

    monkeypatch.setattr(parquet_format, "_open", counting_open)
    source = parquet_source(tmp_path)
    source.validate()
    assert sorted(opened) == [f"{tmp_path}/a.parquet", f"{tmp_path}/b.parquet"]
    enumerator = source.create_enumerator(1)
    assert len(enumerator.plan(10)[0]) == 2 and len(opened) == 2
    assert pickle.loads(pickle.dumps(source)).file_format._row_groups == {}


def test_a_file_replaced_by_a_smaller_one_fails_naming_it(tmp_path):
    """Positions are row offsets in row groups listed earlier: a file rewritten since has
    fewer, and reading on would read other rows or fail obscurely."""
    path = tmp_path / "a.parquet"
    write(path, range(12))  # three row groups of four rows, listed
    source = parquet_source(path)
    write(path, range(3))  # rewritten: one row group of three rows
    for split, start, held in ((0, 4, "3 rows in row group 0"), (1, 0, "1 row groups")):
        assignment = SplitAssignment(f"{path}#{split}", start, 2, False)
        with pytest.raises(
            SourceError,
            match=f"a.parquet: the file changed since it was listed: it has {held}, but row "
            f"group {split} was read to row {start}",
        ):
            list(source.read(assignment, None, {}))


def test_a_checkpoint_of_another_format_is_refused_at_restore(tmp_path):
    """The same uid, once a text source (whole files), now a Parquet one (row groups)."""
    write(tmp_path / "a.parquet", range(3))
    text_state = FileEnumeratorState((FileSplit(f"{tmp_path}/a.parquet", 0, 12),), ())
    enumerator = parquet_source(tmp_path).create_enumerator(1)
    with pytest.raises(
        RecordFormatError,
        match=r"^chk-1: the split .*a\.parquet is a whole file, which "
        "ParquetColumnarRowInputFormat does not read: the source with this uid read another",
    ):
        enumerator.restore(text_state.to_json(), "chk-1")
    parquet_state = FileEnumeratorState((FileSplit(f"{tmp_path}/a.parquet", 0, 1, 0),), ())
    text = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(tmp_path)
    ).build()
    with pytest.raises(RecordFormatError, match=r"a\.parquet#0 is a part of a file, which"):
        text.create_enumerator(1).restore(parquet_state.to_json(), "chk-1")


def test_nested_row_fields_are_found_by_name(tmp_path):
    """As the columns of the row: a nested row's fields in another order, or with fields
    the row type does not name, are read; a missing one is refused before reading."""
    path = tmp_path / "nested.parquet"
    point = pa.struct([("z", pa.string()), ("y", pa.float32()), ("x", pa.int32())])
    pq.write_table(
        pa.table(
            {
                "p": pa.array([{"z": "q", "y": 0.5, "x": 1}], point),
                "ps": pa.array([[{"z": "r", "y": 1.5, "x": 2}]], pa.list_(point)),
            }
        ),
        path,
    )
    xy = Types.ROW_NAMED(["x", "y"], [Types.LONG(), Types.DOUBLE()])
    row_type = Types.ROW_NAMED(["p", "ps"], [xy, Types.LIST(xy)])
    rows = flat(read_epochs(parquet_source(path, row_type=row_type), 1, 1))
    assert rows == [Row(p=Row(x=1, y=0.5), ps=[Row(x=2, y=1.5)])]
    missing = Types.ROW_NAMED(["p"], [Types.ROW_NAMED(["x", "w"], [Types.LONG(), Types.LONG()])])
    with pytest.raises(SourceError, match="column 'p' holds struct"):
        parquet_source(path, row_type=missing).validate()

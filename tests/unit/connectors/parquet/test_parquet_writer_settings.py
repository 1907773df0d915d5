"""Parquet's Hadoop keys in ``ParquetBulkWriters.for_row_type``'s hadoop_config: each one
honoured changes the file written, and a key or value that cannot be honoured fails when the
factory is built (before the job), naming it."""

from __future__ import annotations

import io

import pyarrow.parquet as pq
import pytest

from lockgate.common import Configuration, Row, Types
from lockgate.connectors.parquet.settings import ParquetConfigError
from lockgate.datastream.formats.parquet import ParquetBulkWriters

ROW_TYPE = Types.ROW_NAMED(["id", "s"], [Types.LONG(), Types.STRING()])


def written(settings: dict[str, str], rows: int = 5000) -> bytes:
    factory = ParquetBulkWriters.for_row_type(ROW_TYPE, Configuration.from_dict(settings))
    stream = io.BytesIO()
    writer = factory.create(stream)
    for i in range(rows):
        writer.add_element(Row(id=i, s=f"value-{i % 3000:06d}" * 3))
    writer.finish()
    return stream.getvalue()


def write(settings: dict[str, str], rows: int = 5000) -> pq.ParquetFile:
    return pq.ParquetFile(io.BytesIO(written(settings, rows)))


def row_groups(file: pq.ParquetFile) -> list:
    return [file.metadata.row_group(i) for i in range(file.metadata.num_row_groups)]


def file_bytes(settings: dict[str, str]) -> int:
    return len(written(settings))


@pytest.mark.parametrize(
    "codec, written",
    [
        (None, "SNAPPY"),  # Flink's Parquet writer's default
        ("uncompressed", "UNCOMPRESSED"),
        ("SNAPPY", "SNAPPY"),
        ("gzip", "GZIP"),
        ("ZSTD", "ZSTD"),
        ("brotli", "BROTLI"),
        ("LZ4_RAW", "LZ4"),  # pyarrow's name of the LZ4_RAW codec
    ],
)
def test_compression_is_the_codec_of_every_column_chunk(codec, written):
    settings = {} if codec is None else {"parquet.compression": codec}
    file = write(settings, rows=10)
    chunks = [group.column(i) for group in row_groups(file) for i in range(group.num_columns)]
    assert {chunk.compression for chunk in chunks} == {written}


def test_block_size_is_the_row_group_size_in_bytes():
    assert write({}).metadata.num_row_groups == 1
    small = write({"parquet.block.size": "20000"})
    assert small.metadata.num_row_groups > 1
    assert sum(g.num_rows for g in row_groups(small)) == 5000
    assert small.read().column("id").to_pylist() == list(range(5000))


def test_dictionary_page_and_zstd_level_settings_change_the_file():
    with_dictionary = write({}).metadata.row_group(0).column(1)
    without = write({"parquet.enable.dictionary": "false"}).metadata.row_group(0).column(1)
    assert with_dictionary.has_dictionary_page and not without.has_dictionary_page
    # a small dictionary page limit falls back to plain pages: a larger file
    assert file_bytes({"parquet.dictionary.page.size": "1024"}) > file_bytes({})
    plain = {"parquet.enable.dictionary": "false", "parquet.compression": "UNCOMPRESSED"}
    assert file_bytes({**plain, "parquet.page.size": "256"}) > file_bytes(plain)  # page headers
    zstd = {"parquet.compression": "ZSTD"}
    fast = file_bytes({**zstd, "parquet.compression.codec.zstd.level": "1"})
    assert file_bytes({**zstd, "parquet.compression.codec.zstd.level": "19"}) != fast


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"fs.s3a.access.key": "x"}, "'fs.s3a.access.key' is not a Parquet writer setting"),
        ({"parquet.compression": "LZO"}, "LZO.*cannot be written.*LZ4_RAW"),
        ({"parquet.compression": "LZ4"}, "Hadoop's framing.*use LZ4_RAW"),
        ({"parquet.compression": "zip"}, "'zip' cannot be written \\(not a Parquet codec\\)"),
        ({"parquet.block.size": "128MB"}, "parquet.block.size='128MB' is not an integer"),
        ({"parquet.page.size": "0"}, "parquet.page.size='0' is not an integer from 1"),
        ({"parquet.enable.dictionary": "yes"}, "parquet.enable.dictionary='yes' is not true"),
        ({"parquet.compression.codec.zstd.level": "3"}, "zstd.level is set, but .* SNAPPY"),
        (
            {"parquet.compression": "zstd", "parquet.compression.codec.zstd.level": "23"},
            "zstd.level='23' is not an integer from 1 to 22",
        ),
    ],
)
def test_a_setting_that_cannot_be_honoured_fails_naming_it(settings, message):
    with pytest.raises(ParquetConfigError, match=message):
        ParquetBulkWriters.for_row_type(ROW_TYPE, Configuration.from_dict(settings))

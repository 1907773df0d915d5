"""How Parquet files are written, from the Hadoop configuration keys of Parquet's own writer
(``parquet.compression``, ``parquet.block.size``, ...), as Flink's Parquet writer reads them
from the ``hadoop_config`` of ``ParquetBulkWriters.for_row_type``.

A key is either honoured or refused when the writer factory is built (before the job): an
unknown key, a value of the wrong kind, or a codec the writer does not write fails naming the
key, the value and what is allowed. Defaults are those of Flink's Parquet writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: ``parquet.compression`` values and pyarrow's name of each codec. Parquet's codec names,
#: case-insensitive as in Parquet's ``CompressionCodecName``.
CODECS = {
    "UNCOMPRESSED": "none",
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "ZSTD": "zstd",
    "BROTLI": "brotli",
    "LZ4_RAW": "lz4",
}
#: codecs of Parquet's list that pyarrow does not write, and what to use instead
UNWRITTEN_CODECS = {
    "LZO": "no Python writer writes it",
    "LZ4": "Hadoop's framing of LZ4, deprecated by the Parquet format: use LZ4_RAW",
}

COMPRESSION = "parquet.compression"
BLOCK_SIZE = "parquet.block.size"
PAGE_SIZE = "parquet.page.size"
DICTIONARY_PAGE_SIZE = "parquet.dictionary.page.size"
ENABLE_DICTIONARY = "parquet.enable.dictionary"
ZSTD_LEVEL = "parquet.compression.codec.zstd.level"

#: every key honoured, with what it means (the error for an unknown key lists them)
KEYS = {
    COMPRESSION: "codec of the column chunks: " + ", ".join(CODECS),
    BLOCK_SIZE: "row-group size in bytes",
    PAGE_SIZE: "data page size in bytes",
    DICTIONARY_PAGE_SIZE: "dictionary page size limit in bytes",
    ENABLE_DICTIONARY: "dictionary encoding: true or false",
    ZSTD_LEVEL: "ZSTD compression level, 1 to 22",
}


class ParquetConfigError(ValueError):
    """A Parquet writer setting that cannot be honoured."""


@dataclass(frozen=True)
class ParquetWriterSettings:
    """The settings of one Parquet writer; the defaults are Flink's Parquet writer's."""

    compression: str = "SNAPPY"  # a key of CODECS
    block_size: int = 128 * 1024 * 1024
    page_size: int = 1024 * 1024
    dictionary_page_size: int = 1024 * 1024
    enable_dictionary: bool = True
    zstd_level: int | None = None
    #: SQL_TIMESTAMP values are UTC (True) or the writing process's local time (False)
    utc_timestamp: bool = False

    @staticmethod
    def from_hadoop_config(entries: dict[str, str], utc_timestamp: bool) -> ParquetWriterSettings:
        """The settings of Parquet's Hadoop ``entries``; a ``ParquetConfigError`` for a key or
        value that cannot be honoured."""
        unknown = sorted(set(entries) - set(KEYS))
        if unknown:
            known = "; ".join(f"{key} ({meaning})" for key, meaning in KEYS.items())
            raise ParquetConfigError(
                f"hadoop_config key {unknown[0]!r} is not a Parquet writer setting lockgate "
                f"honours; the keys are: {known}"
            )
        codec = entries.get(COMPRESSION, "SNAPPY").strip().upper()
        if codec not in CODECS:
            why = UNWRITTEN_CODECS.get(codec, "not a Parquet codec")
            raise ParquetConfigError(
                f"hadoop_config {COMPRESSION}={entries[COMPRESSION]!r} cannot be written ({why});"
                f" the codecs are {', '.join(CODECS)}"
            )
        level = _integer(entries, ZSTD_LEVEL, None, 1, 22)
        if level is not None and codec != "ZSTD":
            raise ParquetConfigError(
                f"hadoop_config {ZSTD_LEVEL} is set, but {COMPRESSION} is {codec}, not ZSTD"
            )
        defaults = ParquetWriterSettings()
        return ParquetWriterSettings(
            compression=codec,
            block_size=_integer(entries, BLOCK_SIZE, defaults.block_size, 1),
            page_size=_integer(entries, PAGE_SIZE, defaults.page_size, 1),
            dictionary_page_size=_integer(
                entries, DICTIONARY_PAGE_SIZE, defaults.dictionary_page_size, 1
            ),
            enable_dictionary=_boolean(entries, ENABLE_DICTIONARY, defaults.enable_dictionary),
            zstd_level=level,
            utc_timestamp=bool(utc_timestamp),
        )

    def writer_options(self) -> dict[str, Any]:
        """pyarrow's ``ParquetWriter`` options of these settings (the row-group size is
        the file writer's: pyarrow counts row groups in rows, Parquet's setting is bytes)."""
        return {
            "compression": CODECS[self.compression],
            "compression_level": self.zstd_level,
            "data_page_size": self.page_size,
            "dictionary_pagesize_limit": self.dictionary_page_size,
            "use_dictionary": self.enable_dictionary,
        }


def _integer(entries: dict[str, str], key: str, default: Any, low: int, high: int = 1 << 62) -> Any:
    if key not in entries:
        return default
    raw = entries[key]
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = low - 1
    if not low <= value <= high:
        raise ParquetConfigError(
            f"hadoop_config {key}={raw!r} is not an integer from {low} to {high} ({KEYS[key]})"
        )
    return value


def _boolean(entries: dict[str, str], key: str, default: bool) -> bool:
    if key not in entries:
        return default
    raw = str(entries[key]).strip().lower()
    if raw not in ("true", "false"):
        raise ParquetConfigError(f"hadoop_config {key}={entries[key]!r} is not true or false")
    return raw == "true"

"""File formats at PyFlink's path (``pyflink.datastream.formats``). ``FileSource`` reads
CSV (``csv.CsvReaderFormat`` with a ``CsvSchema``), JSON lines (``json.JsonLinesReaderFormat``,
lockgate's own: PyFlink reads no JSON files) and Parquet
(``parquet.ParquetColumnarRowInputFormat``) as ``Row``s, besides text lines
(``StreamFormat.text_line_format()``); column types are ``Types.*`` where PyFlink takes the
Table API's ``DataTypes``. Writing these formats, and Avro and ORC, are not there yet
(``FileSink`` writes lines with an ``Encoder``). See docs/connectors/file-formats.md."""

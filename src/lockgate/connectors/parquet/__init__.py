"""Parquet files written from rows of a declared row type: the writer settings (Parquet's
Hadoop keys), the writer of one file, and the ``BulkWriterFactory`` through which
``FileSink.for_bulk_format`` writes Parquet part files (public at
``lockgate.datastream.formats.parquet``).

``file_writer.py`` is the piece other table sinks build on: rows in, a closed Parquet file
out, written by tasks (never the driver).
"""

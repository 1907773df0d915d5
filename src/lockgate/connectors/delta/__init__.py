"""A Delta Lake table sink on delta-rs (``deltalake``), exactly once, with no JVM (public at
``lockgate.datastream.connectors.delta``).

By process: ``sink.py`` is what the job graph holds and checks the table before the job;
``writer.py`` writes Parquet data files in subtask hosts; ``committer.py`` commits a
checkpoint's files on the driver as one Delta commit; ``committable.py`` is the record between
them; ``table.py`` is what both sides know of the table (schema, partitions, paths).
"""

"""Files: a text-line source and an exactly-once sink of row or bulk formats (public at
``lockgate.datastream.connectors.file_system``).

By process: ``source.py`` and ``sink.py`` are what the job graph holds; ``enumerator.py`` and
``committer.py`` run on the driver; ``reader.py`` and ``writer.py`` in subtask hosts, the
writer writing each part file by its ``part_format.py``; ``committable.py`` is the record
between them.
"""

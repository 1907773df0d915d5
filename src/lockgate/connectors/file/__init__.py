"""Files: a text-line source and a row-format, exactly-once sink (public at
``lockgate.datastream.connectors.file_system``).

By process: ``source.py`` and ``sink.py`` are what the job graph holds; ``enumerator.py`` and
``committer.py`` run on the driver; ``reader.py`` and ``writer.py`` in subtask hosts;
``committable.py`` is the record between them.
"""

"""``env.from_dataframe``: a bounded Spark DataFrame read as a stream of ``Row``s.

By process: ``source.py`` is what the job graph holds; ``staging.py`` runs on the driver,
where a Spark job writes the DataFrame's partitions once as Arrow files (its tasks read
them, never the driver); ``enumerator.py`` plans on the driver; ``reader.py`` reads a
partition's range in a subtask host.
"""

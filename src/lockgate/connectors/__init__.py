"""Sources and sinks: split enumerators on the driver, readers and writers in tasks."""

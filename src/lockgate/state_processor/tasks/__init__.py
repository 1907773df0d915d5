"""What the state processor's Spark tasks run: reading state files into rows, and writing
canonical entries and operator-state elements into a new savepoint. The driver
(``savepoint_reader``, ``savepoint_writer``) plans them and ships these functions to Spark;
they exchange ``task_records`` with it.
"""

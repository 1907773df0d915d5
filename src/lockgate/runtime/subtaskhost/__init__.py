"""The task side of the runtime: what runs inside Spark tasks (subtasks, operators,
input channels). Nothing here runs on the driver."""

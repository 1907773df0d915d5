"""Execution: the job master's epoch loop on the driver, and subtasks inside Spark tasks."""

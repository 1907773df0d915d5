"""The driver side of the runtime: the JobMaster and what it uses to run, checkpoint and
recover a job. Nothing here runs in Spark tasks."""

"""The keys of a job's runs: what a task and a subtask host prove to each other
(``channel_auth``).

The driver makes one random secret per job execution and derives each run's key from it, so a
host of one run (or of an earlier execution) never answers the tasks of another. The secret
stays in the driver's memory; each run's key reaches the executors only inside Spark's tasks.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from lockgate.graph.job_graph import JobGraph
from lockgate.runtime.messages.host_protocol import RunAccess


class RunKeys:
    def __init__(self, job: JobGraph):
        self._secret = secrets.token_bytes(32)
        self._subtasks = sum(vertex.parallelism for vertex in job.vertices)

    def access(self, run: str) -> RunAccess:
        key = hmac.new(self._secret, run.encode(), hashlib.sha256).hexdigest()
        return RunAccess(run, self._subtasks, key)

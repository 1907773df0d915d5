"""How the driver's Spark jobs show in Spark's UI and REST API, and are cancelled.

Every Spark job lockgate submits has a job group (cancelling the group cancels its jobs: an
epoch has one of its own), a description that says what it does (``lockgate orders epoch 12
(checkpoint 12)``), and the tag of the lockgate job it belongs to (``job_tag``), which finds
all of them. Spark takes these from the submitting thread's local properties when a job is
submitted (PySpark pins a JVM thread to each Python thread); ``labelled`` sets them for the
submissions in its block and gives the thread back the properties it had, so that none
carries over to the Spark jobs the application itself runs on that thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark import SparkContext

# The local properties behind SparkContext.setJobGroup and addJobTag
_PROPERTIES = (
    "spark.jobGroup.id",
    "spark.job.description",
    "spark.job.interruptOnCancel",
    "spark.job.tags",
)


def job_tag(job_id: str) -> str:
    """The tag of every Spark job of lockgate job ``job_id``."""
    return f"lockgate-job-{job_id}"


@contextmanager
def labelled(
    sc: SparkContext, tag: str, group: str, description: str, interrupt_on_cancel: bool = False
) -> Iterator[None]:
    """The Spark jobs this thread submits in the block are in ``group``, described by
    ``description`` and tagged ``tag`` (``interrupt_on_cancel``: a cancelled task's thread
    is interrupted)."""
    saved = {key: sc.getLocalProperty(key) for key in _PROPERTIES}
    sc.setJobGroup(group, description, interrupt_on_cancel)
    sc.addJobTag(tag)
    try:
        yield
    finally:
        for key, value in saved.items():
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]  # None removes it

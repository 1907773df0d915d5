"""``InputDependencyConstraint`` as in PyFlink (``pyflink.common.input_dependency_constraint``).

lockgate schedules a whole epoch as one Spark job, so the constraint never changes a run.
"""

from enum import Enum


class InputDependencyConstraint(Enum):
    """When a task is scheduled: ``ANY`` input consumable, or ``ALL`` of them."""

    ANY = 0
    ALL = 1


__all__ = ["InputDependencyConstraint"]

"""What a Spark task hands Spark: the shuffled batches of the next stage's subtasks, and
tagged items for the driver.

A host's output is ``(target, edge, sequence, pickled batch)``; the task makes it
``(target subtask, (edge, sender, attempt, sequence, pickled batch))`` for the shuffle. A
negative target is a tag for the driver instead of a subtask.
"""

from __future__ import annotations

# One output item of a host: (target subtask or a negative tag for the driver, edge, sequence,
# pickled batch, or for the marker that ends an edge's epoch (sequence -1) its ChannelEnd)
Output = tuple[int, int, int, bytes]

COLLECT_TAG = -1  # (COLLECT_TAG, a pickled list of pickled records of collect sinks)
ATTEMPT_TAG = -2  # (ATTEMPT_TAG, (vertex, subtask, attempt)): the attempt that produced them

# A shuffle item that only asks Spark to run the receiving task where its subtask lives
# (see EpochJob._task_input); dropped on arrival
PLACEMENT_EDGE = -2
PLACEMENT_MARKER = (PLACEMENT_EDGE, -1, "", 0, None)

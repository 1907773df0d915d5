"""The input of a post-shuffle task: its restore first, then batches in channel order, the
placement markers dropped whatever order Spark's shuffle read delivers them in."""

from __future__ import annotations

import pytest

from lockgate.runtime.taskexecutor.epoch_task import PLACEMENT_MARKER, RESTORE_EDGE, _split_input


def test_markers_are_dropped_and_batches_ordered():
    restore = (RESTORE_EDGE, 3, "", 0, (b"restore", []))
    batches = [(1, 0, "a", 1, b"x"), (0, 1, "b", 0, b"y"), (0, 0, "c", 0, None)]
    items = [(2, PLACEMENT_MARKER), (2, batches[0]), (2, restore), (2, PLACEMENT_MARKER)]
    items += [(2, batches[1]), (2, batches[2])]
    bundle, inputs = _split_input(items, source=False)
    assert bundle == (b"restore", [])
    assert inputs == [batches[2], batches[1], batches[0]]


def test_an_input_of_markers_only_lacks_its_restore():
    with pytest.raises(RuntimeError, match="lacks its restore"):
        _split_input([(0, PLACEMENT_MARKER), (0, PLACEMENT_MARKER)], source=False)

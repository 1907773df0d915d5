"""CollectedResults: records go out only once released; a restore drops what is held."""

from __future__ import annotations

from lockgate.runtime.jobmaster.collected_results import CollectedResults


def test_held_records_go_out_when_released():
    results = CollectedResults()
    results.hold([1, 2])
    assert not results.has_released and results.take() == []
    results.hold([3])
    results.release()
    assert results.has_released
    assert results.take() == [1, 2, 3]
    assert results.take() == []


def test_a_restore_drops_held_records_but_not_released_ones():
    results = CollectedResults()
    results.hold([1])
    results.release()  # a checkpoint covered epoch 1
    results.hold([2])  # epoch 2 will run again after the restore
    results.drop_held()
    results.release()
    assert results.take() == [1]

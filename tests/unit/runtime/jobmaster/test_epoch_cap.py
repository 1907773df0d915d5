"""EpochCap: halved after a timeout, grows back when epochs are fast again."""

from __future__ import annotations

from lockgate.runtime.jobmaster.epoch_cap import EpochCap


def test_a_timeout_halves_the_cap_down_to_one():
    cap = EpochCap(10)
    assert [cap.shrink() for _ in range(5)] == [5, 2, 1, 1, 1]


def test_fast_epochs_double_it_back_to_the_configured_cap():
    cap = EpochCap(1000)
    for _ in range(4):
        cap.shrink()
    assert cap.value == 62
    seen = []
    for _ in range(6):
        cap.epoch_took(1.0, timeout_s=60)
        seen.append(cap.value)
    assert seen == [124, 248, 496, 992, 1000, 1000]


def test_slow_epochs_keep_the_smaller_cap():
    cap = EpochCap(1000)
    cap.shrink()
    cap.epoch_took(20.0, timeout_s=60)  # a third of the timeout: still too close
    assert cap.value == 500

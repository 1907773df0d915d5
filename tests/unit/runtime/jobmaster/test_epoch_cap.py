"""EpochCap: epochs sized to the target duration within the configured maximum; halved
after a timeout, growing back when epochs are fast again."""

from __future__ import annotations

from lockgate.runtime.jobmaster.epoch_cap import FIRST, FLOOR, EpochCap


def test_a_timeout_halves_the_cap_down_to_one():
    cap = EpochCap(10, None)
    assert [cap.shrink() for _ in range(5)] == [5, 2, 1, 1, 1]


def test_fast_epochs_double_it_back_to_the_configured_cap():
    cap = EpochCap(1000, None)
    for _ in range(4):
        cap.shrink()
    assert cap.value == 62
    seen = []
    for _ in range(6):
        cap.epoch_took(1.0, 60, cap.value, warm=True)
        seen.append(cap.value)
    assert seen == [124, 248, 496, 992, 1000, 1000]


def test_slow_epochs_keep_the_smaller_cap():
    cap = EpochCap(1000, None)
    cap.shrink()
    cap.epoch_took(20.0, 60, 500, warm=True)  # a third of the timeout: still too close
    assert cap.value == 500


def test_without_a_target_every_epoch_reads_the_configured_maximum():
    cap = EpochCap(1_000_000, None)
    cap.epoch_took(30.0, None, 1_000_000, warm=True)
    assert cap.value == 1_000_000


def test_full_epochs_grow_toward_the_target_by_at_most_a_step():
    cap = EpochCap(1_000_000, 1.0)
    assert cap.value == FIRST
    cap.epoch_took(0.1, None, FIRST, warm=True)  # 1M records/s: 10x wanted, 4x allowed
    assert cap.value == 4 * FIRST
    cap.epoch_took(0.5, None, 4 * FIRST, warm=True)  # 800k/s
    assert cap.value == 800_000
    cap.epoch_took(0.5, None, 800_000, warm=True)
    assert cap.value == 1_000_000  # the configured maximum bounds it


def test_an_epoch_that_ran_out_of_input_early_changes_nothing():
    cap = EpochCap(1_000_000, 1.0)
    cap.epoch_took(0.05, None, 2_000, warm=True)  # a trickle: fast, but not full
    assert cap.value == FIRST


def test_an_epoch_without_input_changes_nothing_however_long_it_took():
    cap = EpochCap(1_000_000, 1.0)
    before = cap.value
    cap.epoch_took(5.0, 60, 0, warm=True)  # an epoch run to fire timers
    assert cap.value == before


def test_slow_epochs_shrink_it_but_not_below_the_floor():
    cap = EpochCap(1_000_000, 1.0)
    cap.epoch_took(2.0, None, 20_000, warm=True)  # 10k records/s, input-bound or not
    assert cap.value == FIRST // 4
    for _ in range(3):
        cap.epoch_took(10.0, None, cap.value, warm=True)
    assert cap.value == FLOOR


def test_a_small_configured_maximum_is_every_epoch_s_size():
    """Below the floor, the configured maximum holds however epochs run."""
    cap = EpochCap(40, 1.0)
    for seconds in (5.0, 0.01, 3.0):
        cap.epoch_took(seconds, None, 40, warm=True)
        assert cap.value == 40


def test_epochs_that_rebuilt_subtasks_are_left_out():
    cap = EpochCap(1_000_000, 1.0)
    cap.epoch_took(4.0, None, FIRST, warm=False)  # a first epoch, starting every host
    assert cap.value == FIRST


def test_the_share_settles_once_it_changes_by_at_most_twice():
    cap = EpochCap(1_000_000, 1.0)
    assert not cap.settled  # nothing measured yet
    cap.epoch_took(0.25, None, FIRST, warm=True)  # 4x
    assert cap.value == 4 * FIRST and not cap.settled
    cap.epoch_took(0.8, None, 4 * FIRST, warm=True)  # 1.25x
    assert cap.value == 500_000 and cap.settled
    cap.epoch_took(2.0, None, 500_000, warm=True)  # halved: still settled
    assert cap.value == 250_000 and cap.settled
    cap.epoch_took(3.0, None, 250_000, warm=False)  # a restore says nothing
    assert cap.settled


def test_a_share_at_its_maximum_or_without_a_target_is_settled():
    assert EpochCap(40, 1.0).settled  # the first share is the maximum already
    assert EpochCap(1_000_000, None).settled

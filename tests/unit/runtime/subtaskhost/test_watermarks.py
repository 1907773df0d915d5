"""Combining input watermarks (Flink's valve), per-split watermarks, idleness, and the
end-of-epoch marker record."""

from __future__ import annotations

import pytest

from lockgate.common.records import RecordFormatError
from lockgate.common.watermark_strategy import LONG_MAX, LONG_MIN
from lockgate.runtime.subtaskhost.watermarks import (
    ChannelEnd,
    SplitWatermarks,
    bounded_watermark,
    combine,
)


def test_the_minimum_of_active_inputs_and_never_back():
    assert combine([(10, False), (7, False)], LONG_MIN) == (7, False)
    assert combine([(10, False), (7, False)], 9) == (10, False)  # 7 lags behind 9: ignored
    assert combine([(5, False), (3, False)], 9) == (9, False)  # all behind: stays
    assert combine([(10, False), (7, True)], LONG_MIN) == (10, False)  # idle left out


def test_all_idle_inputs_give_their_highest_watermark_and_idleness():
    assert combine([(10, True), (7, True)], 3) == (10, True)
    assert combine([(1, True)], 3) == (3, True)
    assert combine([], 3) == (3, True)


def test_bounded_out_of_orderness():
    assert bounded_watermark(LONG_MIN, 100) == LONG_MIN  # nothing seen yet
    assert bounded_watermark(1000, 100) == 899
    assert bounded_watermark(1000, 0) == 999  # monotonous
    assert bounded_watermark(1000, None) == LONG_MIN  # no watermarks
    assert bounded_watermark(LONG_MIN + 5, 100) == LONG_MIN


def test_split_watermarks_take_the_slowest_live_split():
    splits = SplitWatermarks(10, None)
    assert splits.current(0) == (LONG_MIN, True)  # no split yet: idle
    splits.read("a", 500, 3, 0)
    splits.read("b", 100, 3, 0)
    assert splits.current(0) == (89, False)
    splits.finished("b")  # counts once more (its last records), then holds nobody back
    assert splits.current(0) == (89, False)
    assert splits.current(0) == (489, False)
    splits.read("c", LONG_MIN, 0, 0)  # assigned, nothing read yet: holds at the start
    assert splits.current(0) == (LONG_MIN, False)


def test_a_split_read_whole_in_one_epoch_moves_the_watermark():
    splits = SplitWatermarks(10, None)
    splits.read("file-1", 999, 1000, 0)
    splits.finished("file-1")
    assert splits.current(0) == (988, False)
    assert splits.current(0) == (LONG_MIN, True)  # nothing to read: idle
    splits.read("file-2", LONG_MIN, 0, 0)
    splits.finished("file-2")  # empty: no timestamps, no say
    assert splits.current(0) == (LONG_MIN, True)


def test_a_split_without_records_for_the_idle_timeout_is_idle():
    splits = SplitWatermarks(0, 1000)
    splits.read("a", 500, 3, now_ms=0)
    splits.read("b", 100, 3, now_ms=0)
    splits.read("a", 900, 3, now_ms=1500)  # b has had nothing since 0
    assert splits.current(now_ms=1500) == (899, False)
    splits.read("b", 1200, 1, now_ms=1600)  # active again
    assert splits.current(now_ms=1600) == (899, False)
    assert splits.current(now_ms=5000) == (LONG_MIN, True)  # both idle now


def test_the_next_split_to_become_idle_says_when():
    splits = SplitWatermarks(0, 1000)
    assert splits.next_idle(0) is None  # no split
    splits.read("a", 500, 3, now_ms=0)
    splits.read("b", 100, 3, now_ms=400)
    assert splits.next_idle(500) == 1000
    assert splits.next_idle(1000) == 1400  # a is idle now
    assert splits.next_idle(1400) is None  # both are
    assert SplitWatermarks(0, None).next_idle(0) is None  # no idleness


def test_split_watermarks_snapshot_and_restore():
    splits = SplitWatermarks(10, None)
    splits.read("a", 500, 3, 0)
    again = SplitWatermarks(10, None)
    again.restore(splits.snapshot(), "test", now_ms=0)
    assert again.current(0) == (489, False)
    with pytest.raises(RecordFormatError, match="test"):
        again.restore({"format": "other", "version": 1}, "test", now_ms=0)


def test_channel_end_round_trips_and_a_damaged_one_names_where():
    end = ChannelEnd(LONG_MAX, False)
    assert ChannelEnd.decode(end.encode(), "marker") == end
    with pytest.raises(RecordFormatError, match="marker of edge 3"):
        ChannelEnd.decode(b"{", "marker of edge 3")

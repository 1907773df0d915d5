"""Flink's key-group formulas, checked against values computed by Flink itself."""

from __future__ import annotations

import copy
import itertools
import pickle

import pytest

from lockgate.state.key_groups import (
    LOWER_BOUND_MAX_PARALLELISM,
    UPPER_BOUND_MAX_PARALLELISM,
    KeyGroupRange,
    check_parallelism,
    default_max_parallelism,
    key_group_for_hash,
    key_group_range,
    murmur_hash,
    operator_index_for_key_group,
)

# (key hash, MathUtils.murmurHash(key hash), key group for max parallelism 128), from Flink.
FLINK_VALUES = [
    (0, 593689054, 94),
    (1, 68075478, 86),
    (2, 1085422463, 127),
    (42, 1134849565, 29),
    (-1, 1982413648, 80),
    (123456789, 1088346449, 81),
    (2147483647, 1653689534, 62),
    (-2147483648, 1718298732, 108),
]


@pytest.mark.parametrize(("key_hash", "expected", "_group"), FLINK_VALUES)
def test_murmur_hash_matches_flink(key_hash, expected, _group):
    assert murmur_hash(key_hash) == expected


@pytest.mark.parametrize(("key_hash", "_murmur", "expected"), FLINK_VALUES)
def test_key_group_matches_flink(key_hash, _murmur, expected):
    assert key_group_for_hash(key_hash, 128) == expected


def test_murmur_hash_is_a_non_negative_int32():
    for code in [*range(-2000, 2000), 2**31 - 1, -(2**31), 0x7FFF_FFFF, 0x1234_5678]:
        value = murmur_hash(code)
        assert 0 <= value <= 2**31 - 1


def test_murmur_hash_takes_the_low_32_bits_like_a_java_int():
    # A Java int is the low 32 bits: 2**32 + 1 is the int 1, 2**32 - 1 is the int -1.
    assert murmur_hash(2**32 + 1) == murmur_hash(1)
    assert murmur_hash(2**32 - 1) == murmur_hash(-1)


def test_key_group_is_within_max_parallelism():
    for max_p in (1, 2, 7, 128, 1000, 32768):
        for key_hash in range(-500, 500, 7):
            assert 0 <= key_group_for_hash(key_hash, max_p) < max_p


def test_key_group_ranges_for_three_subtasks_of_128():
    ranges = [key_group_range(128, 3, i) for i in range(3)]
    assert [(r.start, r.end) for r in ranges] == [(0, 42), (43, 85), (86, 127)]
    assert ranges == [KeyGroupRange(0, 42), KeyGroupRange(43, 85), KeyGroupRange(86, 127)]


def test_key_group_range_with_parallelism_equal_to_max_parallelism():
    ranges = [key_group_range(4, 4, i) for i in range(4)]
    assert [(r.start, r.end) for r in ranges] == [(i, i) for i in range(4)]


def test_key_group_range_helpers():
    r = KeyGroupRange(43, 85)
    assert len(r) == 43
    assert list(r) == list(range(43, 86))
    assert 43 in r and 85 in r
    assert 42 not in r and 86 not in r
    assert "50" not in r
    assert len(KeyGroupRange(5, 4)) == 0


@pytest.mark.parametrize(
    ("parallelism", "expected"),
    [(1, 128), (2, 128), (85, 128), (86, 256), (100, 256), (170, 256), (200, 512), (172, 512)],
)
def test_default_max_parallelism(parallelism, expected):
    assert default_max_parallelism(parallelism) == expected


def test_default_max_parallelism_is_capped_at_32768():
    assert UPPER_BOUND_MAX_PARALLELISM == 32768
    assert LOWER_BOUND_MAX_PARALLELISM == 128
    assert default_max_parallelism(20000) == 32768
    assert default_max_parallelism(32768) == 32768
    # round_up_to_power_of_two(p + p // 2) for p = 10000 is 16384, still below the cap.
    assert default_max_parallelism(10000) == 16384


@pytest.mark.parametrize("parallelism", [0, -1, 32769])
def test_default_max_parallelism_rejects_invalid_parallelism(parallelism):
    with pytest.raises(ValueError, match=str(parallelism)):
        default_max_parallelism(parallelism)


@pytest.mark.parametrize(
    ("max_p", "parallelism"),
    [(1, 1), (2, 1), (2, 2), (7, 3), (10, 7), (128, 1), (128, 3), (128, 5), (128, 127),
     (128, 128), (129, 4), (256, 100), (1000, 999), (32768, 3), (32768, 1000)],
)  # fmt: skip
def test_operator_index_agrees_with_key_group_ranges(max_p, parallelism):
    ranges = [key_group_range(max_p, parallelism, i) for i in range(parallelism)]
    # The ranges tile 0..max_p-1 without gaps or overlaps, in subtask order.
    assert ranges[0].start == 0
    assert ranges[-1].end == max_p - 1
    for before, after in itertools.pairwise(ranges):
        assert after.start == before.end + 1
    owners: list[list[int]] = [[] for _ in range(max_p)]
    for index, key_groups in enumerate(ranges):
        for key_group in key_groups:
            owners[key_group].append(index)
    for key_group in range(max_p):
        index = operator_index_for_key_group(max_p, parallelism, key_group)
        assert owners[key_group] == [index], (key_group, index, owners[key_group])
        assert key_group in ranges[index]


def test_every_subtask_gets_a_non_empty_range():
    for max_p in (128, 200, 4096):
        for parallelism in (1, 3, 64, 127, max_p):
            sizes = [len(key_group_range(max_p, parallelism, i)) for i in range(parallelism)]
            assert sum(sizes) == max_p
            assert min(sizes) >= 1
            assert max(sizes) - min(sizes) <= 1


@pytest.mark.parametrize(
    ("max_p", "parallelism", "match"),
    [
        (128, 0, "parallelism 0"),
        (128, -2, "parallelism -2"),
        (128, 129, "parallelism 129"),
        (0, 1, "max parallelism"),
        (32769, 1, "max parallelism"),
    ],
)
def test_invalid_parallelism_is_rejected(max_p, parallelism, match):
    with pytest.raises(ValueError, match=match):
        check_parallelism(parallelism, max_p)
    with pytest.raises(ValueError, match=match):
        key_group_range(max_p, parallelism, 0)


def test_valid_parallelism_passes():
    check_parallelism(1, 1)
    check_parallelism(128, 128)
    check_parallelism(1, 32768)


def test_key_group_range_survives_pickle_and_copy():
    r = KeyGroupRange(43, 85)
    assert pickle.loads(pickle.dumps(r)) == r
    assert copy.copy(r) == r

"""Flink's key-group formulas (KeyGroupRangeAssignment, MathUtils.murmurHash), exactly.

Keyed state is partitioned into ``max_parallelism`` key groups; a key group is the unit in
which state moves between subtasks, so these formulas must match Flink bit for bit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from lockgate.common.records import Record

LOWER_BOUND_MAX_PARALLELISM = 1 << 7
UPPER_BOUND_MAX_PARALLELISM = 1 << 15

_MASK32 = 0xFFFFFFFF


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def murmur_hash(code: int) -> int:
    """Flink's ``MathUtils.murmurHash(int)``: a non-negative 32-bit int."""
    c = (code & _MASK32) * 0xCC9E2D51 & _MASK32
    c = _rotl32(c, 15)
    c = c * 0x1B873593 & _MASK32
    c = _rotl32(c, 13)
    c = (c * 5 + 0xE6546B64) & _MASK32
    c ^= 4
    c ^= c >> 16
    c = c * 0x85EBCA6B & _MASK32
    c ^= c >> 13
    c = c * 0xC2B2AE35 & _MASK32
    c ^= c >> 16
    if c & 0x80000000:  # negative as a Java int
        signed = c - (1 << 32)
        return 0 if signed == -(1 << 31) else -signed
    return c


def key_group_for_hash(key_hash: int, max_parallelism: int) -> int:
    return murmur_hash(key_hash) % max_parallelism


def operator_index_for_key_group(max_parallelism: int, parallelism: int, key_group: int) -> int:
    return key_group * parallelism // max_parallelism


@dataclass(frozen=True, slots=True)
class KeyGroupRange(Record, array=True):
    """Inclusive range of key groups owned by one subtask (JSON: ``[start, end]``)."""

    start: int
    end: int

    def __len__(self) -> int:
        return max(0, self.end - self.start + 1)

    def __contains__(self, key_group: object) -> bool:
        return isinstance(key_group, int) and self.start <= key_group <= self.end

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start, self.end + 1))

    def intersection(self, other: KeyGroupRange) -> KeyGroupRange:
        """The key groups of both (empty, ``len`` 0, when they do not overlap)."""
        return KeyGroupRange(max(self.start, other.start), min(self.end, other.end))


NO_KEY_GROUP = -1  # a key context's group while no key is current


def foreign_key_group(key_group: int, key_groups: KeyGroupRange) -> Exception:
    """The error of keyed state accessed in ``key_group``, which the subtask does not own."""
    if key_group == NO_KEY_GROUP:
        return RuntimeError(
            "no key is current: keyed state is read and written only for a current key (in "
            "process_element and on_timer of a keyed function, or apply_to_keyed_state), "
            "not in process_broadcast_element"
        )
    return ValueError(
        f"key group {key_group} is outside this subtask's range {key_groups.start}-{key_groups.end}"
    )


def key_group_range(max_parallelism: int, parallelism: int, index: int) -> KeyGroupRange:
    check_parallelism(parallelism, max_parallelism)
    start = (index * max_parallelism + parallelism - 1) // parallelism
    end = ((index + 1) * max_parallelism - 1) // parallelism
    return KeyGroupRange(start, end)


def _round_up_to_power_of_two(x: int) -> int:
    return 1 if x <= 1 else 1 << (x - 1).bit_length()


def default_max_parallelism(parallelism: int) -> int:
    if not 0 < parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise ValueError(
            f"parallelism must be in 1..{UPPER_BOUND_MAX_PARALLELISM}, got {parallelism}"
        )
    return min(
        max(_round_up_to_power_of_two(parallelism + parallelism // 2), LOWER_BOUND_MAX_PARALLELISM),
        UPPER_BOUND_MAX_PARALLELISM,
    )


def check_parallelism(parallelism: int, max_parallelism: int) -> None:
    if not 0 < max_parallelism <= UPPER_BOUND_MAX_PARALLELISM:
        raise ValueError(
            f"max parallelism must be in 1..{UPPER_BOUND_MAX_PARALLELISM}, got {max_parallelism}"
        )
    if not 0 < parallelism <= max_parallelism:
        raise ValueError(
            f"parallelism {parallelism} must be in 1..max parallelism ({max_parallelism})"
        )

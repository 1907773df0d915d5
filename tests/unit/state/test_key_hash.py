"""stable_key_hash: equal keys hash equally, and the hash does not depend on the process."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from collections import namedtuple
from decimal import Decimal
from enum import Enum, Flag, IntEnum

import pytest

from lockgate.common import Row, RowKind
from lockgate.state.key_hash import stable_key_hash

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# Evaluated here and in fresh interpreters with different hash seeds.
KEYS_SOURCE = """[
    "", "a", "user-42", "ünïcödé ✓", "\\x00",
    b"", b"a", b"\\x00\\xff\\x10",
    0, 1, -1, 42, 2**31, -(2**31) - 1, 2**40 + 7, -(2**63), 2**63 - 1, 2**64, -(2**100) + 3,
    0.5, -2.25, 1e300, float("inf"), 3.0,
    True, False,
    (), ("a", 1), ("a", (b"b", 2.5)), (1, "x", b"y", 2**70),
    *__import__("uuid").SafeUUID, ("a", __import__("uuid").SafeUUID.safe),
    *__import__("enum").Enum("E", [("A", "a"), ("B", (1, 2.5))], module="m", qualname="Q.E"),
    __import__("lockgate.common").common.Row(name="ünï", n=2, b=b"x"),
    __import__("lockgate.common").common.Row("a", ("b", 2.5)),
]"""
KEYS = eval(KEYS_SOURCE)


def test_int_hash_is_javas_integer_hash_code_in_int_range():
    for value in (0, 1, -1, 42, INT32_MAX, INT32_MIN):
        assert stable_key_hash(value) == value


def test_int_hash_is_javas_long_hash_code_in_long_range():
    # Long.hashCode(v) = (int) (v ^ (v >>> 32))
    assert stable_key_hash(2**31) == INT32_MIN
    assert stable_key_hash(2**32) == 1
    assert stable_key_hash(2**32 + 5) == 4
    assert stable_key_hash(-(2**31) - 1) == INT32_MIN
    assert stable_key_hash(-(2**32)) == -1
    assert stable_key_hash(2**63 - 1) == INT32_MIN


def test_hash_is_a_signed_int32():
    for key in KEYS:
        value = stable_key_hash(key)
        assert type(value) is int
        assert INT32_MIN <= value <= INT32_MAX, key


@pytest.mark.parametrize(
    "equal_keys",
    [
        (1, 1.0, True),
        (0, 0.0, -0.0, False),
        (2**70, float(2**70)),
        (-7, -7.0),
        (("a", 1), ("a", 1.0), ("a", True)),
        (Row("a", 1), Row("a", 1.0), Row("a", True)),
        (Row(k="a", v=1), Row(k="a", v=1.0)),
        ((1, (2, "x")), (1.0, (2.0, "x"))),
        (Row(1, Row(2, "x")), Row(1.0, Row(2.0, "x"))),
    ],
)
def test_keys_equal_as_dict_keys_hash_equally(equal_keys):
    assert len({*equal_keys}) == 1  # Python treats them as one dict key
    assert len({stable_key_hash(k) for k in equal_keys}) == 1


def test_row_and_named_tuple_hash_like_tuples():
    point = namedtuple("Point", "x y")
    assert stable_key_hash(point(1, "a")) == stable_key_hash((1, "a"))
    assert stable_key_hash(Row(x=1, y="a")) == stable_key_hash((1, "a"))


def test_int_and_str_subclasses_hash_like_their_base():
    class Level(IntEnum):
        HIGH = 3

    class Name(str):
        pass

    assert stable_key_hash(Level.HIGH) == stable_key_hash(3)
    assert stable_key_hash(Name("bob")) == stable_key_hash("bob")


def test_str_and_bytes_of_the_same_content_differ():
    for text in ("", "a", "key-1", "x" * 100):
        assert stable_key_hash(text) != stable_key_hash(text.encode())


def test_bytearray_hashes_like_bytes():
    assert stable_key_hash(bytearray(b"abc")) == stable_key_hash(b"abc")


def test_different_keys_usually_hash_differently():
    keys = (
        [f"user-{i}" for i in range(2000)] + list(range(2000)) + [(i, str(i)) for i in range(500)]
    )
    hashes = {stable_key_hash(k) for k in keys}
    assert len(hashes) > 0.99 * len(keys)


def test_tuple_order_matters():
    assert stable_key_hash((1, 2)) != stable_key_hash((2, 1))
    assert stable_key_hash(("a", "b")) != stable_key_hash(("b", "a"))
    assert stable_key_hash((1,)) != stable_key_hash(1)


def test_non_integral_floats_are_stable_and_distinct():
    assert stable_key_hash(0.5) == stable_key_hash(0.5)
    assert stable_key_hash(0.5) != stable_key_hash(0.25)
    assert stable_key_hash(float("inf")) != stable_key_hash(float("-inf"))


def test_decimal_and_date_time_values_are_supported():
    for key in (
        Decimal("1.5"),
        dt.date(2024, 2, 29),
        dt.datetime(2024, 2, 29, 12, 30),
        dt.time(23, 59),
        dt.timedelta(seconds=90),
    ):
        assert stable_key_hash(key) == stable_key_hash(key)
        assert INT32_MIN <= stable_key_hash(key) <= INT32_MAX
    assert stable_key_hash(dt.date(2024, 1, 1)) != stable_key_hash(dt.date(2024, 1, 2))


def test_custom_key_hash_hook():
    class Custom:
        def __init__(self, value):
            self.value = value

        def __lockgate_key_hash__(self):
            return self.value * 2**32 + 7  # wider than 32 bits: must be folded

    assert stable_key_hash(Custom(3)) == 7
    assert stable_key_hash(Custom(-1)) == 7


def test_none_key_is_rejected_clearly():
    with pytest.raises(ValueError, match="None") as info:
        stable_key_hash(None)
    assert "null" in str(info.value)


def test_none_inside_a_tuple_is_rejected():
    with pytest.raises(ValueError, match="None"):
        stable_key_hash(("a", None))


@pytest.mark.parametrize(
    ("key", "type_name"),
    [([1, 2], "list"), ({"a": 1}, "dict"), ({1, 2}, "set"), (frozenset({1}), "frozenset"),
     (object(), "object"), (("ok", [1]), "list")],
)  # fmt: skip
def test_unsupported_types_raise_type_error_naming_the_type(key, type_name):
    with pytest.raises(TypeError, match=rf"key of type {type_name}\b"):
        stable_key_hash(key)


@pytest.mark.parametrize(
    ("key", "expected"),
    [("a", -2068763651), ("user-42", 545656718), (b"a", -100640943), (0.5, 1669771086),
     (("a", 1), 292837221), (2**64, -386174943), ((), 1), (True, 1), (-1.0, -1),
     # Rows as when Row was a tuple: the hash of their values, whatever their names and kind
     (Row(user="user-1", n=7), 986482586), (Row("user-1", Row(2, "x")), 463933135),
     (Row.of_kind(RowKind.DELETE, "a", 1), 292837221)],
)  # fmt: skip
def test_hash_values_are_pinned(key, expected):
    # A change here moves keys to other key groups, so existing checkpoints no longer restore.
    assert stable_key_hash(key) == expected


# Made with an explicit module and qualname: the pinned hashes must not depend on how pytest
# names this module.
Pinned = Enum(
    "Pinned",
    [("A", 1), ("B", "b"), ("C", (1, "x")), ("D", None), ("ALIAS", 1)],
    module="lockgate_pinned",
    qualname="Pinned",
)


@pytest.mark.parametrize(
    ("key", "expected"),
    [(Pinned.A, -1290771862), (Pinned.B, -792142672), (Pinned.C, -1813321338),
     (Pinned.D, -1290751816), (Pinned.ALIAS, -1290771862), ((Pinned.B, 1), 1213381906),
     (uuid.SafeUUID.safe, -1896506321), (uuid.SafeUUID.unsafe, -1896506322),
     (uuid.SafeUUID.unknown, -1896486274)],
    ids=repr,
)  # fmt: skip
def test_plain_enum_hash_values_are_pinned(key, expected):
    # crc32("module:qualname", seed 0x454E) * 31 + the value's hash (a fixed 0x4E4F for None)
    assert stable_key_hash(key) == expected


def test_plain_enum_members_hash_by_class_and_value():
    """A member equals only itself: its class's name and its value tell it apart, not its
    name's salted hash()."""
    other = Enum("Pinned", [("A", 1)], module="lockgate_other", qualname="Pinned")
    renamed = Enum("Pinned", [("RENAMED", 1)], module="lockgate_pinned", qualname="Pinned")
    hashes = {stable_key_hash(key) for key in (*Pinned, other.A, 1, (1,), "lockgate_pinned")}
    assert len(hashes) == len(Pinned) + 4  # Pinned's aliases are not in len(Pinned)
    assert stable_key_hash(renamed.RENAMED) == stable_key_hash(Pinned.A)


def test_plain_flag_members_hash_by_value():
    class Perm(Flag):
        R = 1
        W = 2

    assert stable_key_hash(Perm.R | Perm.W) == stable_key_hash(Perm(3))
    assert len({stable_key_hash(Perm(v)) for v in range(4)}) == 4


def test_an_enum_with_its_own_key_hash_keeps_it():
    class Hooked(Enum):
        A = 1

        def __lockgate_key_hash__(self):
            return 99

    assert stable_key_hash(Hooked.A) == 99


def test_an_enum_comparing_by_value_is_not_hashed_as_a_plain_enum():
    class Loose(Enum):
        A = "a"

        def __eq__(self, other):
            return self.value == getattr(other, "value", other)

        __hash__ = Enum.__hash__

    assert Loose.A == "a"  # the hash could not follow this equality
    with pytest.raises(TypeError, match=r"key of type \S*Loose: use int"):
        stable_key_hash(Loose.A)


def test_an_enum_valued_with_an_unhashable_type_names_the_enum():
    class Listed(Enum):
        A = [1, 2]

    with pytest.raises(TypeError, match=r"key of type \S*Listed: its value \[1, 2\]") as info:
        stable_key_hash(Listed.A)
    assert "key of type list" in str(info.value)


def _hashes_in_fresh_process(seed: str) -> list[int]:
    code = (
        "import json\n"
        "from lockgate.state.key_hash import stable_key_hash\n"
        f"keys = {KEYS_SOURCE}\n"
        "print(json.dumps([stable_key_hash(k) for k in keys]))\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(out.stdout)


def test_hash_is_stable_across_processes_with_different_hash_seeds():
    expected = [stable_key_hash(k) for k in KEYS]
    first = _hashes_in_fresh_process("1")
    second = _hashes_in_fresh_process("4242")
    assert first == expected
    assert second == expected


# Keys that Python treats as one dict key but stable_key_hash does not: two records with
# such keys can be routed to different key groups (and subtasks), splitting one key's state.
class Color(str, Enum):  # noqa: UP042 (a StrEnum's str() is its value: no bug)
    RED = "red"


_UTC = dt.UTC
_PLUS_ONE = dt.timezone(dt.timedelta(hours=1))


@pytest.mark.parametrize(
    "equal_keys",
    [
        (Decimal("1.0"), Decimal("1.00")),
        (Decimal(1), 1),
        (Decimal("1.5"), 1.5),
        (dt.datetime(2024, 1, 1, 12, tzinfo=_UTC), dt.datetime(2024, 1, 1, 13, tzinfo=_PLUS_ONE)),
        (Color.RED, "red"),
    ],
    ids=["decimal-exponent", "decimal-int", "decimal-float", "aware-datetime", "str-enum"],
)
def test_equal_keys_of_other_types_hash_equally(equal_keys):
    assert len({*equal_keys}) == 1
    assert len({stable_key_hash(k) for k in equal_keys}) == 1

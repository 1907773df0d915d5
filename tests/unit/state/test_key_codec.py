"""The RocksDB backend's key codec: keys as bytes that decode back, equal keys as equal bytes,
and no encoding a prefix of another (a key's map entries are exactly its prefix range)."""

from __future__ import annotations

import itertools
import pickle
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal
from enum import Enum, Flag, IntEnum, auto

import pytest

from lockgate.common import Row, RowKind
from lockgate.state.key_codec import (
    NonPortableKeyError,
    decode_key,
    encode_key,
    encode_portable_key,
)


class Suit(Enum):
    """Members decode by this class's module and qualname: it must stay at module level."""

    HEARTS = 1
    SPADES = "s"
    PAIR = (1, "x")
    NOTHING = None
    DAY = date(2024, 2, 29)
    ALIAS = 1  # the same member as HEARTS


class Perm(Flag):
    R = auto()
    W = auto()


class Deck:
    class Face(Enum):  # a qualname with a dot
        KING = 13


class Level(IntEnum):
    HIGH = 3


class Same(Enum):  # another class with one of Suit's values
    ONE = 1


@dataclass(frozen=True)
class Point:  # pickled, so not portable
    x: int
    y: int


class Shape(Enum):
    ORIGIN = Point(0, 0)


class Holiday(date, Enum):  # equal to its date: not a plain Enum, so pickled
    NEW_YEAR = (2020, 1, 1)


class _NoOffset(tzinfo):
    """A tzinfo with no offset: its datetimes and times are naive, equal to those without."""

    def utcoffset(self, dt):
        return None

    def __repr__(self):
        return "_NoOffset()"


ROUND_TRIPS = [
    None,
    0,
    1,
    -1,
    2**31,
    -(2**31) - 1,
    2**63 - 1,  # the largest 64-bit int
    -(2**63),  # the smallest
    2**63,  # one past: a big int
    -(2**63) - 1,
    2**200,
    -(2**200),
    0.5,
    -2.25,
    1.5e-300,
    float("inf"),
    float("-inf"),
    "",
    "a",
    "ß∂ƒ😀",
    "\ud800",  # a lone surrogate (surrogatepass)
    "a" * 10_000,
    b"",
    b"\x00",
    b"\xff" * 3,
    (),
    (1,),
    ("a", 1, b"b", None, 2.5),
    ((1, (2, (3, ("deep",)))), ()),
    frozenset({1, 2, 3}),  # pickled
    date(2026, 11, 22),
    date.min,
    date.max,
    datetime(2026, 11, 22),
    datetime(2026, 11, 22, 23, 59, 59, 999_999),
    datetime.min,
    datetime.max,
    time(),
    time(12, 30, 15, 5),
    time.max,
    timedelta(),
    timedelta(days=-1),
    timedelta(microseconds=-1),
    timedelta(days=3, seconds=7, microseconds=11),
    timedelta.min,
    timedelta.max,
    *Suit,
    Perm.R,
    Perm.R | Perm.W,  # a composite Flag value
    Perm(0),
    Deck.Face.KING,
    uuid.SafeUUID.unknown,  # a standard library Enum, valued None
    (Suit.PAIR, date(2020, 1, 1), (datetime(2020, 1, 1), time(1), timedelta(1))),
]


@pytest.mark.parametrize("key", ROUND_TRIPS, ids=repr)
def test_round_trip(key):
    data = encode_key(key)
    assert isinstance(data, bytes)
    decoded = decode_key(data)
    assert decoded == key
    assert type(decoded) is type(key)
    assert encode_key(decoded) == data  # stable


@pytest.mark.parametrize(
    "equal",
    [
        (1, 1.0, True),
        (0, 0.0, -0.0, False),
        (-5, -5.0),
        (2**70, 2.0**70),
        (2**63, float(2**63)),  # integral float beyond 64 bits
        ((1, "a"), (1.0, "a"), (True, "a")),
        ((0, (1,)), (False, (1.0,))),
        (datetime(2020, 10, 25, 2, 30), datetime(2020, 10, 25, 2, 30, fold=1)),
        (datetime(2020, 1, 1), datetime(2020, 1, 1, tzinfo=_NoOffset())),
        (time(1, 30), time(1, 30, fold=1), time(1, 30, tzinfo=_NoOffset())),
        (timedelta(days=1), timedelta(hours=24), timedelta(seconds=86_400)),
        (timedelta(microseconds=-1), timedelta(days=-1, seconds=86_399, microseconds=999_999)),
        (Suit.HEARTS, Suit.ALIAS, Suit(1)),
        (Perm.R | Perm.W, Perm(3)),
        (Row(1, "a"), Row(1.0, "a"), Row(True, "a")),
        (Row(k=1, v=(2, "x")), Row(k=1.0, v=(2.0, "x"))),
    ],
    ids=repr,
)
def test_values_that_are_one_dict_key_encode_equally(equal):
    assert len({encode_key(key) for key in equal}) == 1
    assert len(set(equal)) == 1  # as Python's dicts see them


def test_datetimes_are_not_their_dates():
    """datetime subclasses date, but a date is never equal to a datetime."""
    assert date(2020, 1, 1) != datetime(2020, 1, 1)
    assert encode_key(date(2020, 1, 1)) != encode_key(datetime(2020, 1, 1))
    assert type(decode_key(encode_key(date(2020, 1, 1)))) is date


def test_a_tzinfo_without_an_offset_decodes_naive():
    decoded = decode_key(encode_key(datetime(2020, 1, 1, 5, tzinfo=_NoOffset())))
    assert decoded == datetime(2020, 1, 1, 5)
    assert decoded.tzinfo is None


def test_aware_datetimes_stay_instants():
    """The instant encoding predates the naive one: an aware datetime keeps it."""
    data = encode_key(datetime(2020, 1, 1, 12, tzinfo=timezone(timedelta(hours=1))))
    assert data == b"\x09\x00\x00\x00\x132020-01-01T11:00:00"
    assert decode_key(data) == datetime(2020, 1, 1, 11, tzinfo=UTC)


def test_int_and_str_enums_stay_their_values():
    """An IntEnum or a str Enum is one dict key with its value: it encodes as that value."""
    assert encode_key(Level.HIGH) == encode_key(3)
    assert type(decode_key(encode_key(Level.HIGH))) is int


@pytest.mark.parametrize(
    "row",
    [
        Row(date(2020, 1, 1), Suit.PAIR),
        Row(k=timedelta(3), v=(time(4), Perm.W)),
        Row(),
        Row(a=1, nested=Row(b="x")),
        Row.of_kind(RowKind.UPDATE_BEFORE, 1, "a"),
    ],
    ids=repr,
)
def test_rows_decode_as_the_rows_they_were(row):
    """A Row key comes back a Row, with its names and kind (a restored heap backend finds its
    state by it: a Row is not equal to its tuple)."""
    decoded = decode_key(encode_key(row))
    assert type(decoded) is Row
    assert decoded == row
    assert repr(decoded) == repr(row)
    assert decoded.get_row_kind() is row.get_row_kind()


def test_a_row_its_tuple_and_rows_of_other_names_or_kinds_are_distinct_keys():
    keys = [
        Row(1, "a"),
        (1, "a"),
        Row(k=1, v="a"),
        Row(v=1, k="a"),
        Row.of_kind(RowKind.DELETE, 1, "a"),
    ]
    assert len({encode_key(key) for key in keys}) == len(keys)
    assert len(set(keys)) == len(keys)  # as Python's dicts see them


def test_integral_floats_and_bools_decode_as_ints():
    assert type(decode_key(encode_key(3.0))) is int
    assert type(decode_key(encode_key(True))) is int


DISTINCT = [
    None,
    0,
    1,
    -1,
    256,
    2**63,
    -(2**63) - 1,
    0.5,
    -0.5,
    "",
    "0",
    "1",
    "a",
    "ab",
    "a\x00",
    "b",
    b"",
    b"1",
    b"a",
    b"ab",
    b"\xff",
    b"\xff\xff",
    (),
    ((),),
    (None,),
    (0,),
    (1,),
    ("a",),
    ("a", "b"),
    ("ab",),
    (("a",), "b"),
    ("a", ("b",)),
    (1, 2),
    (1, (2,)),
    frozenset({1}),
    frozenset({1, 2}),
    date(1, 1, 1),
    date(2020, 1, 1),
    date(2020, 1, 2),
    datetime(1, 1, 1),
    datetime(2020, 1, 1),
    datetime(2020, 1, 1, microsecond=1),
    datetime(2020, 1, 1, tzinfo=UTC),
    time(),
    time(0, 0, 0, 1),
    time(1),
    timedelta(),
    timedelta(microseconds=1),
    timedelta(days=1),
    timedelta(days=-1),
    Suit.HEARTS,
    Suit.SPADES,
    Suit.PAIR,
    Suit.NOTHING,
    Suit.DAY,
    Same.ONE,  # Suit.HEARTS's value in another class
    Perm(0),
    Perm.R,
    Perm.W,
    Deck.Face.KING,
    uuid.SafeUUID.safe,  # valued 0
    uuid.SafeUUID.unknown,  # valued None
    (Suit.HEARTS,),
    (Suit.HEARTS, 1),
    (date(2020, 1, 1), time(1)),
]


def test_distinct_keys_encode_distinctly():
    assert len({encode_key(key) for key in DISTINCT}) == len(DISTINCT)


def test_no_encoding_is_a_prefix_of_another():
    """Prefix-free: the range of keys starting with a key's bytes holds only that key (and
    what is appended to it, like map keys)."""
    encoded = [(key, encode_key(key)) for key in DISTINCT]
    for (a, data_a), (b, data_b) in itertools.permutations(encoded, 2):
        assert not data_b.startswith(data_a), (a, b)


def test_a_key_followed_by_a_map_key_splits_back():
    """The RocksDB backend appends a map key's bytes to its key's: both decode alone."""
    for key, map_key in itertools.product(DISTINCT[:20], DISTINCT[20:]):
        data = encode_key(key) + encode_key(map_key)
        key_bytes = encode_key(key)
        assert data[: len(key_bytes)] == key_bytes
        assert decode_key(data[len(key_bytes) :]) == map_key


@pytest.mark.parametrize("key", ["a", "ß", "", 0, 7, -(2**63), 2**63 - 1], ids=repr)
def test_fast_path_matches_the_encoding_inside_a_tuple(key):
    """str and 64-bit ints skip the buffer at the top level; nested, they take the general
    path: both must give the same bytes (a tuple's items are concatenated encodings)."""
    inside = encode_key((key,))
    assert inside[5:] == encode_key(key)  # tag and 4-byte count first


def test_encoding_does_not_depend_on_the_process():
    """The bytes are a pure function of the value: a fixed sample, byte for byte."""
    assert encode_key("a") == b"\x04\x00\x00\x00\x01a"
    assert encode_key(1) == b"\x01" + (1).to_bytes(8, "big")
    assert encode_key(-1) == b"\x01" + b"\xff" * 8
    assert encode_key(None) == b"\x00"
    assert encode_key(b"z") == b"\x05\x00\x00\x00\x01z"
    assert encode_key((1, "a")) == b"\x06\x00\x00\x00\x02" + encode_key(1) + encode_key("a")


def test_date_time_and_enum_encodings_are_pinned():
    """Stored in RocksDB instances and their savepoints: these bytes must never change."""
    assert encode_key(date(2020, 1, 1)) == b"\x0a\x00\x0b\x40\x91"  # the ordinal, 737425
    assert encode_key(date.min) == b"\x0a\x00\x00\x00\x01"
    # microseconds since 0001-01-01T00:00, then since midnight
    assert encode_key(datetime(1, 1, 1, 0, 0, 1)) == b"\x0b" + (10**6).to_bytes(8, "big")
    assert encode_key(datetime(2020, 1, 1)) == b"\x0b" + (737424 * 86_400 * 10**6).to_bytes(
        8, "big"
    )
    assert encode_key(time(0, 1, 0, 5)) == b"\x0c" + (60_000_005).to_bytes(8, "big")
    # days (signed), seconds, microseconds
    assert encode_key(timedelta(days=2, seconds=3, microseconds=4)) == (
        b"\x0d\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04"
    )
    assert encode_key(timedelta(microseconds=-1)) == (
        b"\x0d\xff\xff\xff\xff\x00\x01\x51\x7f\x00\x0f\x42\x3f"
    )
    # "module:qualname", then the value's encoding
    assert encode_key(uuid.SafeUUID.safe) == b"\x0e\x00\x00\x00\x0duuid:SafeUUID" + encode_key(0)
    assert encode_key(uuid.SafeUUID.unknown) == b"\x0e\x00\x00\x00\x0duuid:SafeUUID\x00"
    name = f"{__name__}:Deck.Face".encode()
    assert encode_key(Deck.Face.KING) == (
        b"\x0e" + len(name).to_bytes(4, "big") + name + encode_key(13)
    )


def test_trailing_bytes_are_an_error():
    with pytest.raises(ValueError, match="trailing"):
        decode_key(encode_key("a") + b"x")


def test_unknown_tag_is_an_error():
    with pytest.raises(ValueError, match="unknown key tag"):
        decode_key(b"\x42\x00\x00\x00\x00")


def test_pickled_keys_use_the_highest_protocol_and_stay_readable():
    data = encode_key(frozenset({"x"}))
    assert data[0] == 7  # the pickle tag
    assert pickle.loads(data[5:]) == frozenset({"x"})


_HERE = re.escape(__name__)  # this module's name, as pytest imported it

PORTABLE = [key for key in ROUND_TRIPS if not isinstance(key, frozenset)] + [
    True,
    Decimal("1.25"),
    Decimal(7),
    Level.HIGH,
    datetime(2020, 1, 1, tzinfo=UTC),
    Row(a=1, b=(date(2020, 1, 1), Suit.SPADES)),
    (Suit.PAIR, (Perm.R, (timedelta(-3),))),
]


@pytest.mark.parametrize("key", PORTABLE, ids=repr)
def test_portable_keys_encode_as_encode_key_does(key):
    assert encode_portable_key(key) == encode_key(key)


@pytest.mark.parametrize("key", ["", "a", "ß", 0, -(2**63), 2**63 - 1, 2**63], ids=repr)
def test_portable_fast_path_matches_encode_key(key):
    assert encode_portable_key(key) == encode_key(key)


def test_pickled_keys_are_not_portable():
    assert encode_key(Point(1, 2))[0] == 7  # pickled
    with pytest.raises(NonPortableKeyError, match=rf"^a key of type {_HERE}\.Point has no "):
        encode_portable_key(Point(1, 2))


@pytest.mark.parametrize(
    ("key", "where"),
    [
        (("a", Point(1, 2)), "tuple"),
        ((1, (2, (Point(1, 2),))), "tuple"),
        (Row(a=1, p=Point(1, 2)), "lockgate.common.types.Row"),
        (Shape.ORIGIN, f"{__name__}.Shape"),  # a portable Enum class, a pickled value
    ],
    ids=repr,
)
def test_a_pickled_part_makes_the_key_not_portable(key, where):
    with pytest.raises(NonPortableKeyError) as info:
        encode_portable_key(key)
    message = str(info.value)
    assert f"a key of type {__name__}.Point (inside a {where} key)" in message
    assert "timedelta" in message  # the hint lists what is portable


@pytest.mark.parametrize(
    ("key", "type_name"),
    [
        (frozenset({1}), "frozenset"),
        (time(1, tzinfo=UTC), r"datetime\.time"),  # aware times compare across zones
        (Holiday.NEW_YEAR, rf"{_HERE}\.Holiday"),  # equal to a date
    ],
    ids=repr,
)
def test_other_non_portable_keys_name_their_type(key, type_name):
    with pytest.raises(NonPortableKeyError, match=rf"^a key of type {type_name} has no portable"):
        encode_portable_key(key)


def test_non_portable_key_error_is_a_type_error():
    with pytest.raises(TypeError):
        encode_portable_key(frozenset())


def test_an_enum_made_in_a_function_is_not_portable():
    """Its qualname finds nothing on import, so it is pickled (which fails) as before."""

    class Local(Enum):
        A = 1

    with pytest.raises(NonPortableKeyError, match=r"Local has no portable encoding"):
        encode_portable_key(Local.A)
    with pytest.raises(NonPortableKeyError, match=rf"type {_HERE}\..*Local \(inside a tuple"):
        encode_portable_key((1, Local.A))


def _enum_bytes(name: str, value: object) -> bytes:
    data = name.encode()
    return b"\x0e" + len(data).to_bytes(4, "big") + data + encode_key(value)


@pytest.mark.parametrize(
    "name",
    [
        "lockgate_no_such_module:Color",
        f"{__name__}:NoSuchEnum",
        f"{__name__}:Deck.NoSuchEnum",
        f"{__name__}:Point",  # not an Enum
        "builtins:int",
    ],
)
def test_an_enum_class_that_cannot_be_found_fails_clearly(name):
    with pytest.raises(ValueError, match=rf"enum class {re.escape(name)}\b"):
        decode_key(_enum_bytes(name, 1))


def test_an_enum_value_that_is_no_member_fails_clearly():
    with pytest.raises(ValueError, match=rf"enum class {_HERE}:Suit: 99 is not a valid"):
        decode_key(_enum_bytes(f"{__name__}:Suit", 99))

"""The RocksDB backend's key codec: keys as bytes that decode back, equal keys as equal bytes,
and no encoding a prefix of another (a key's map entries are exactly its prefix range)."""

from __future__ import annotations

import itertools
import pickle
from datetime import date

import pytest

from lockgate.state.key_codec import decode_key, encode_key

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
    date(2026, 11, 22),  # pickled
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
    ],
    ids=repr,
)
def test_values_that_are_one_dict_key_encode_equally(equal):
    assert len({encode_key(key) for key in equal}) == 1
    assert len(set(equal)) == 1  # as Python's dicts see them


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

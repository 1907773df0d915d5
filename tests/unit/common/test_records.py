"""The record codec: each field named once (its annotation), format and version checked,
every field's type checked, a damaged record named by where, path and field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum, IntEnum
from typing import Annotated, Any, ClassVar, Literal

import pytest

from lockgate.common.records import (
    ADDED,
    MAP_KEY,
    Custom,
    Minimum,
    Record,
    RecordFormatError,
    value_from_json,
    value_to_json,
)


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True)
class Point(Record, array=True):
    x: int
    y: int


@dataclass(frozen=True)
class Leaf(Record):
    name: str
    size: Annotated[int, Minimum(0, "a size")]


@dataclass(frozen=True)
class Circle(Record, tag="shape"):
    shape: ClassVar[str] = "circle"
    radius: float


@dataclass(frozen=True)
class Square(Record, tag="shape"):
    shape: ClassVar[str] = "square"
    side: int


def _upper(value: str) -> str:
    return value.upper()


def _lower(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw.isupper():
        raise RecordFormatError(f"{where} is not upper case")
    return raw.lower()


@dataclass(frozen=True)
class Keyed(Record):
    uid: Annotated[str, MAP_KEY]
    weight: int


@dataclass(frozen=True)
class Everything(Record, format="lockgate-test", version=3):
    count: int
    ratio: float
    name: str
    flag: bool
    anything: Any
    maybe: str | None
    leaf: Leaf
    leaves: tuple[Leaf, ...]
    names: list[str]
    pair: tuple[int, str]
    by_name: dict[str, Leaf]
    by_number: dict[int, Point]
    labels: Mapping[str, str]
    color: Color
    level: Level
    mode: Literal["fast", "slow"]
    shape: Circle | Square | None
    loud: Annotated[str, Custom(_upper, _lower)]
    keyed: dict[str, Keyed]


EVERYTHING = Everything(
    count=3,
    ratio=0.5,
    name="n",
    flag=True,
    anything={"free": [1, "form"]},
    maybe=None,
    leaf=Leaf("a", 1),
    leaves=(Leaf("b", 2), Leaf("c", 0)),
    names=["x", "y"],
    pair=(7, "seven"),
    by_name={"d": Leaf("d", 4)},
    by_number={12: Point(1, 2)},
    labels={"k": "v"},
    color=Color.BLUE,
    level=Level.HIGH,
    mode="slow",
    shape=Square(3),
    loud="quiet",
    keyed={"u1": Keyed("u1", 5)},
)


def through_json(raw: Any) -> Any:
    return json.loads(json.dumps(raw))


def test_every_field_kind_round_trips_through_json():
    raw = through_json(EVERYTHING.to_json())
    assert Everything.from_json(raw, "test.json") == EVERYTHING
    assert Everything.decode(EVERYTHING.encode(), "test.json") == EVERYTHING


def test_the_json_names_each_field_once_in_declaration_order():
    raw = EVERYTHING.to_json()
    assert list(raw)[:4] == ["format", "version", "count", "ratio"]
    assert raw["format"] == "lockgate-test" and raw["version"] == 3
    assert raw["leaf"] == {"name": "a", "size": 1}
    assert raw["pair"] == [7, "seven"]
    assert raw["by_number"] == {"12": [1, 2]}  # an array record, under a decimal key
    assert raw["color"] == "blue" and raw["level"] == 2
    assert raw["shape"] == {"shape": "square", "side": 3}  # the tag first
    assert raw["loud"] == "QUIET"
    assert raw["keyed"] == {"u1": {"weight": 5}}  # the key is not repeated


def test_an_int_is_read_as_a_float_but_a_bool_is_no_int():
    raw = {**EVERYTHING.to_json(), "ratio": 2}
    assert Everything.from_json(raw, "t").ratio == 2.0
    with pytest.raises(RecordFormatError, match=r"^t: field 'count' is True, not int$"):
        Everything.from_json({**raw, "count": True}, "t")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"count": "3"}, r"^t: field 'count' is str '3', not int$"),
        ({"name": None}, r"^t: field 'name' is NoneType None, not str$"),
        ({"flag": 1}, r"^t: field 'flag' is int 1, not bool$"),
        ({"maybe": 4}, r"^t: field 'maybe' is int 4, not str or null$"),
        ({"names": ["x", 2]}, r"^t: field 'names'\[1\] is int 2, not str$"),
        ({"names": "x"}, r"^t: field 'names' is str 'x', not a list$"),
        ({"pair": [7]}, r"^t: field 'pair' is list \[7\], not \[int, str\]$"),
        ({"labels": {"k": 1}}, r"^t: field 'labels'\['k'\] is int 1, not str$"),
        ({"by_number": {"x": [1, 2]}}, r"^t: field 'by_number' has the key 'x', not a number$"),
        ({"color": "green"}, r"^t: field 'color' is 'green', not a Color \('red', 'blue'\)$"),
        ({"level": True}, r"^t: field 'level' is True, not a Level"),
        ({"mode": "medium"}, r"^t: field 'mode' is 'medium', not one of 'fast', 'slow'$"),
    ],
)
def test_a_wrong_type_names_the_field_and_where_in_it(change, message):
    raw = {**through_json(EVERYTHING.to_json()), **change}
    with pytest.raises(RecordFormatError, match=message):
        Everything.from_json(raw, "t")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"leaf": {"name": "a"}}, r"^t, leaf lacks the field 'size'$"),
        ({"leaf": [1]}, r"^t, leaf is not an object$"),
        (
            {"leaf": {"name": "a", "size": -1}},
            r"^t, leaf: field 'size' is -1, not a size \(>= 0\)$",
        ),
        (
            {"leaves": [{"name": "b", "size": 2}, {"name": 3, "size": 0}]},
            r"^t, leaves\[1\]: field 'name' is int 3, not str$",
        ),
        ({"by_name": {"d": {"name": "d"}}}, r"^t, by_name\['d'\] lacks the field 'size'$"),
        ({"by_number": {"12": [1]}}, r"^t, by_number\['12'\] is list \[1\], not \[x, y\]$"),
        ({"by_number": {"12": [1, "2"]}}, r"^t, by_number\['12'\]: field 'y' is str '2'"),
        ({"shape": {"shape": "cube"}}, r"^t, shape: unknown shape 'cube' \(expected one of"),
        ({"shape": {"side": 1}}, r"^t, shape lacks the field 'shape'$"),
        ({"shape": {"shape": "circle", "radius": "1"}}, r"^t, shape: field 'radius' is str"),
        ({"loud": "quiet"}, r"^t, loud is not upper case$"),
        ({"keyed": {"u1": {}}}, r"^t, keyed\['u1'\] lacks the field 'weight'$"),
    ],
)
def test_nested_records_report_their_path(change, message):
    raw = {**through_json(EVERYTHING.to_json()), **change}
    with pytest.raises(RecordFormatError, match=message):
        Everything.from_json(raw, "t")


def test_a_missing_field_is_named():
    raw = EVERYTHING.to_json()
    del raw["labels"]
    with pytest.raises(RecordFormatError, match=r"^test.json lacks the field 'labels'$"):
        Everything.from_json(raw, "test.json")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([], r"^test.json is not a lockgate-test record$"),
        ({"format": "other", "version": 3}, r"^test.json is not a lockgate-test record$"),
        (
            {"format": "lockgate-test", "version": 4},
            r"^test.json is a lockgate-test record of version 4; this lockgate reads version 3$",
        ),
        ({"format": "lockgate-test", "version": True}, r"of version True; this lockgate reads"),
        ({"format": "lockgate-test"}, r"of version None; this lockgate reads version 3"),
    ],
)
def test_foreign_records_and_unknown_versions_are_refused_naming_both(raw, message):
    with pytest.raises(RecordFormatError, match=message):
        Everything.from_json(raw, "test.json")


def test_text_that_is_not_json_is_refused_naming_where():
    with pytest.raises(RecordFormatError, match=r"^frame is not JSON \(3 bytes\)$"):
        Everything.decode(b"{no", "frame")
    with pytest.raises(RecordFormatError, match=r"^frame is not JSON \(2 bytes\)$"):
        Everything.decode(b"\xff\xfe", "frame")


@dataclass(frozen=True)
class Renamed(Record, format="lockgate-renamed", version=2, reads=(1,)):
    """Version 1 called ``total`` ``sum``."""

    total: int

    @classmethod
    def upgrade(cls, raw: dict[str, Any], version: int, where: str) -> dict[str, Any]:
        return {"total": raw["sum"]}


def test_an_older_version_listed_in_reads_is_upgraded():
    assert Renamed.from_json({"format": "lockgate-renamed", "version": 1, "sum": 4}, "r") == (
        Renamed(4)
    )
    assert Renamed(4).to_json() == {"format": "lockgate-renamed", "version": 2, "total": 4}
    with pytest.raises(RecordFormatError, match="of version 0; this lockgate reads version 2"):
        Renamed.from_json({"format": "lockgate-renamed", "version": 0, "sum": 4}, "r")


@dataclass(frozen=True)
class Span(Record):
    start: int
    end: int

    def validate(self, where: str) -> None:
        if self.start > self.end:
            raise RecordFormatError(f"{where}: it ends before it starts")


def test_validate_checks_rules_across_fields_with_the_path():
    assert Span.from_json({"start": 1, "end": 2}, "s") == Span(1, 2)
    with pytest.raises(RecordFormatError, match=r"^s: it ends before it starts$"):
        Span.from_json({"start": 3, "end": 2}, "s")
    with pytest.raises(RecordFormatError, match=r"^w\['spans'\]\[0\]: it ends before it starts$"):
        value_from_json(dict[str, list[Span]], {"spans": [{"start": 3, "end": 2}]}, "w")


def test_a_tag_is_checked_when_its_record_is_read_on_its_own():
    assert Circle.from_json({"shape": "circle", "radius": 1}, "c") == Circle(1.0)
    with pytest.raises(RecordFormatError, match=r"^c: it is a 'square' shape, not 'circle'$"):
        Circle.from_json({"shape": "square", "radius": 1}, "c")


def test_values_of_any_field_type_convert_on_their_own():
    shapes = {"a": Circle(2.0), "b": None}
    kind = dict[str, Circle | Square | None]
    raw = value_to_json(kind, shapes)
    assert raw == {"a": {"shape": "circle", "radius": 2.0}, "b": None}
    assert value_from_json(kind, raw, "shapes") == shapes
    with pytest.raises(RecordFormatError, match=r"^shapes\['a'\] is int 1, not str$"):
        value_from_json(dict[str, str], {"a": 1}, "shapes")


def test_an_unsupported_field_type_fails_when_the_record_is_first_used():
    @dataclass(frozen=True)
    class Odd(Record):
        blob: bytes

    with pytest.raises(TypeError, match="field 'blob' of Odd"):
        Odd(b"x").to_json()


def test_a_format_needs_a_version():
    with pytest.raises(TypeError, match="both a format and a version"):

        class Half(Record, format="lockgate-half"):
            pass


@dataclass(frozen=True)
class Handle(Record, array=True):
    file: str
    length: int
    digest: Annotated[str | None, ADDED] = None


@dataclass(frozen=True)
class Grown(Record):
    name: str
    added: Annotated[tuple[str, ...], ADDED] = ()
    defaulted: int = 0  # a default, but not ADDED: must be there


def test_an_array_record_leaves_out_trailing_fields_that_hold_their_default():
    assert Handle("f", 3).to_json() == ["f", 3]
    assert Handle("f", 3, "ab").to_json() == ["f", 3, "ab"]
    assert Handle.from_json(["f", 3], "handles") == Handle("f", 3)
    assert Handle.from_json(["f", 3, "ab"], "handles") == Handle("f", 3, "ab")
    for short_or_long in (["f"], ["f", 3, "ab", "extra"]):
        with pytest.raises(
            RecordFormatError, match=r"handles is list .*not \[file, length, digest\]"
        ):
            Handle.from_json(short_or_long, "handles")


def test_an_added_field_may_be_absent_any_other_may_not():
    """A record written before a field was ADDED reads with the field's default."""
    assert Grown.from_json({"name": "a", "defaulted": 0}, "old") == Grown("a")
    assert Grown("a").to_json() == {"name": "a", "added": [], "defaulted": 0}  # in full
    for missing in ("name", "defaulted"):
        raw = {"name": "a", "added": [], "defaulted": 0}
        del raw[missing]
        with pytest.raises(RecordFormatError, match=rf"old lacks the field '{missing}'"):
            Grown.from_json(raw, "old")

"""``Row`` behaves as PyFlink 2.3's ``pyflink.common.Row``: each operation below runs on both
classes (PyFlink's from its own package, which the set-up downloads) with the same result or
the same exception; then what only lockgate's Row is asked for (pickling, deliberate
differences)."""

from __future__ import annotations

import ast
import copy
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from pyflink_wheel import SOURCES, needs_pyflink

import lockgate.common
from lockgate.common.types import Row, RowKind


def load_pyflink_types() -> dict[str, Any]:
    """PyFlink's ``pyflink/common/types.py``, run without its Java gateway import (used only
    by ``RowKind.to_j_row_kind``): its ``Row`` and ``RowKind``."""
    source = SOURCES.get("pyflink/common/types.py")
    if source is None:
        return {}
    tree = ast.parse(source)
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ImportFrom) and node.module == "pyflink.java_gateway")
    ]
    namespace: dict[str, Any] = {"__name__": "pyflink_common_types"}
    exec(compile(tree, "pyflink/common/types.py", "exec"), namespace)
    return namespace


PYFLINK = load_pyflink_types()


def outcome(operation: Callable[[Any, Any], Any], row_class: Any, kind_class: Any) -> Any:
    """What ``operation`` gives, comparable across the two Row classes: a Row as its repr and
    kind, a RowKind by name, or the type of the exception it raised."""
    try:
        result = operation(row_class, kind_class)
    except Exception as exc:
        return ("raises", type(exc))
    return ("gives", plain(result, row_class, kind_class))


def plain(value: Any, row_class: Any, kind_class: Any) -> Any:
    if isinstance(value, row_class):
        return ("Row", repr(value), value.get_row_kind().name)
    if isinstance(value, kind_class):
        return ("RowKind", value.name, str(value))
    if isinstance(value, list | tuple):
        return type(value), [plain(item, row_class, kind_class) for item in value]
    if isinstance(value, dict):
        return {key: plain(item, row_class, kind_class) for key, item in value.items()}
    return value


def changed(row: Any, change: Callable[[Any], Any]) -> Any:
    """``row`` after ``change`` (which returns nothing)."""
    change(row)
    return row


def setitem(key: Any, value: Any) -> Callable[[Any], None]:
    def change(row: Any) -> None:
        row[key] = value

    return change


def setattribute(name: str, value: Any) -> Callable[[Any], None]:
    def change(row: Any) -> None:
        setattr(row, name, value)

    return change


def named(r: Any) -> Any:
    return r(id=1, name="a", count=3)


def person(r: Any) -> Any:
    return r("name", "age")


# name -> operation(Row, RowKind); each runs on lockgate's and on PyFlink's classes.
SAME_AS_PYFLINK: dict[str, Callable[[Any, Any], Any]] = {
    # making rows
    "positional": lambda r, k: r(1, "a"),
    "named keeps the order given": lambda r, k: r(name="a", id=1),
    "empty": lambda r, k: r(),
    "positional and named at once": lambda r, k: r(1, name="a"),
    "default kind": lambda r, k: r(1).get_row_kind(),
    "of_kind": lambda r, k: r.of_kind(k.UPDATE_BEFORE, 1, "a"),
    "of_kind named": lambda r, k: r.of_kind(k.DELETE, id=1),
    "set_row_kind": lambda r, k: changed(r(1), lambda row: row.set_row_kind(k.UPDATE_AFTER)),
    "short kinds": lambda r, k: [str(kind) for kind in k],
    # reading fields
    "index": lambda r, k: named(r)[1],
    "negative index": lambda r, k: named(r)[-1],
    "slice": lambda r, k: named(r)[0:2],
    "index out of range": lambda r, k: named(r)[3],
    "by name": lambda r, k: named(r)["name"],
    "unknown name": lambda r, k: named(r)["nope"],
    "attribute": lambda r, k: named(r).name,
    "attribute count (a tuple method's name)": lambda r, k: named(r).count,
    "attribute index (a tuple method's name)": lambda r, k: r(index=4).index,
    "unknown attribute": lambda r, k: named(r).nope,
    "private attribute": lambda r, k: named(r)._nope,
    "attribute of a positional row": lambda r, k: r(1).name,
    "len": lambda r, k: len(named(r)),
    "iter": lambda r, k: list(named(r)),
    "name in a named row": lambda r, k: ["id" in named(r), 1 in named(r)],
    "value in a positional row": lambda r, k: [1 in r(1, "a"), "x" in r(1, "a")],
    # writing fields
    "set by index": lambda r, k: changed(named(r), setitem(0, 9)),
    "set by negative index": lambda r, k: changed(named(r), setitem(-1, 9)),
    "set by slice": lambda r, k: changed(r(1, 2, 3), setitem(slice(0, 2), ["x", "y"])),
    "set by name": lambda r, k: changed(named(r), setitem("count", 4)),
    "set an unknown name": lambda r, k: changed(named(r), setitem("nope", 4)),
    "set a name of a positional row": lambda r, k: changed(r(1), setitem("a", 4)),
    "set out of range": lambda r, k: changed(r(1), setitem(1, 4)),
    "set a field as an attribute": lambda r, k: changed(named(r), setattribute("name", "b")),
    "set a new attribute": lambda r, k: changed(named(r), setattribute("other", 1)),
    "set the values (an internal)": lambda r, k: changed(r(1), setattribute("_values", [2])),
    # names
    "set_field_names": lambda r, k: changed(r(1, 2), lambda row: row.set_field_names(["a", "b"])),
    "get_fields_by_names": lambda r, k: named(r).get_fields_by_names(["count", "id"]),
    "get_fields_by_names of a positional row": lambda r, k: r(1, 2).get_fields_by_names(["x"]),
    # as_dict
    "as_dict": lambda r, k: named(r).as_dict(),
    "as_dict keeps inner rows": lambda r, k: r(a=r(b=1)).as_dict(),
    "as_dict recursive": lambda r, k: r(
        a=r(b=1), items=[r(c=2), [r(d=3)]], by={"x": r(e=4)}, t=(1,)
    ).as_dict(True),
    "as_dict of a positional row": lambda r, k: r(1).as_dict(),
    "as_dict recursive over a positional row": lambda r, k: r(a=r(1)).as_dict(True),
    # a Row of names as a class
    "row class": lambda r, k: person(r),
    "name in a row class": lambda r, k: ["name" in person(r), "nope" in person(r)],
    "row class call": lambda r, k: person(r)("Alice", 11),
    "row class call reads by name": lambda r, k: person(r)("Alice", 11).age,
    "row class call with fewer values": lambda r, k: person(r)("Alice"),
    "row class call with fewer values, missing name": lambda r, k: person(r)("Alice")["age"],
    "row class call with fewer values, as_dict": lambda r, k: person(r)("Alice").as_dict(),
    "row class call with more values": lambda r, k: person(r)("Alice", 11, 12),
    "row class keeps its kind": lambda r, k: r.of_kind(k.DELETE, "a")(1),
    # equality and hashing
    "equal positional": lambda r, k: r(1, "a") == r(1, "a"),
    "unequal positional": lambda r, k: [r(1, "a") == r(1, "b"), r(1) != r(2)],
    "not equal to its tuple": lambda r, k: [r(1, "a") == (1, "a"), (1, "a") == r(1, "a")],  # noqa: SIM300 (both sides)
    "not equal to its list": lambda r, k: r(1, "a") == [1, "a"],
    "named equal in another order": lambda r, k: r(a=1, b=2) == r(b=2, a=1),
    "named with other names": lambda r, k: r(a=1) == r(b=1),
    "named and positional": lambda r, k: [r(a=1) == r(1), r(1) == r(a=1)],
    "kinds differ": lambda r, k: r(1) == r.of_kind(k.DELETE, 1),
    "kinds differ, !=": lambda r, k: r(1) != r.of_kind(k.DELETE, 1),
    "hash is the values' tuple's": lambda r, k: hash(r(1, "a")) == hash((1, "a")),
    "hash of a named row": lambda r, k: hash(r(x=1, y="a")) == hash((1, "a")),
    "a set of rows": lambda r, k: len({r(1, "a"), r(1, "a"), r(1, "b")}),
    "unhashable field": lambda r, k: hash(r([1])),
    # printing
    "repr named": lambda r, k: repr(r(a=1, b="x")),
    "repr positional": lambda r, k: repr(r(1, "x")),
    "repr nested": lambda r, k: repr(r(a=r(1), b=[r(c=None)])),
    "str": lambda r, k: str(r(a=1)),
}


@needs_pyflink
@pytest.mark.parametrize("operation", SAME_AS_PYFLINK.values(), ids=SAME_AS_PYFLINK.keys())
def test_same_as_pyflink(operation):
    ours = outcome(operation, Row, RowKind)
    theirs = outcome(operation, PYFLINK["Row"], PYFLINK["RowKind"])
    assert ours == theirs


def test_the_table_runs_on_rows():
    """Every operation gives or raises something on lockgate's Row (a typo in the table
    would make both sides fail alike)."""
    for name, operation in SAME_AS_PYFLINK.items():
        result = outcome(operation, Row, RowKind)
        assert result[0] == "gives" or result[1] is not NameError, name


def test_fields_read_and_written():
    row = Row(word="a", count=1)
    row["count"] += 1
    row[0] = "b"
    assert (row.word, row.count, row["count"], row[1]) == ("b", 2, 2, 2)
    assert repr(row) == "Row(word='b', count=2)"


# Differences from PyFlink, on purpose ---------------------------------------------------------


def test_a_name_on_a_positional_row_is_a_key_error():
    """PyFlink raises AttributeError('_fields') here, from looking up its missing names; a
    KeyError says what is wrong, as PyFlink's ``row["a"] = ...`` does."""
    with pytest.raises(KeyError):
        Row(1)["a"]


def test_unknown_names_to_get_fields_by_names_are_a_value_error():
    """PyFlink raises a bare ``Exception``; a ValueError is one, and says which."""
    with pytest.raises(ValueError, match=r"\['nope'\]"):
        Row(a=1).get_fields_by_names(["a", "nope"])


def test_rows_with_fewer_values_than_names_compare():
    """PyFlink's comparison raises IndexError for these (from the row class call)."""
    person = Row("name", "age")
    assert person("Alice") == person("Alice")
    assert person("Alice") != person("Bob")


def test_get_fields_by_names_gives_a_copy():
    row = Row(1, 2)
    row.get_fields_by_names([]).append(3)
    assert len(row) == 2


# Pickling: records and state values are pickled per record -----------------------------------

PICKLED = [
    Row(1, "a"),
    Row(),
    Row(id=1, name="a", score=2.5),
    Row.of_kind(RowKind.UPDATE_BEFORE, 1, "a"),
    Row.of_kind(RowKind.DELETE, id=1, inner=Row(x=[Row(2)])),
    Row("name", "age")("Alice"),
]


@pytest.mark.parametrize("row", PICKLED, ids=repr)
def test_pickle_keeps_values_names_and_kind(row):
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(row, protocol))
        assert type(back) is Row
        assert back == row and repr(back) == repr(row)
        assert back.get_row_kind() is row.get_row_kind()


def test_pickle_is_a_call_of_a_module_level_function_leaving_out_the_default_kind():
    data = pickle.dumps(Row(id=1, name="a", score=2.5), pickle.HIGHEST_PROTOCOL)
    assert b"lockgate.common.types" in data and b"_row" in data
    assert b"RowKind" not in data
    assert b"RowKind" in pickle.dumps(Row.of_kind(RowKind.DELETE, 1))


def test_a_pickled_or_copied_row_is_another_row():
    row = Row(a=[1])
    for other in (pickle.loads(pickle.dumps(row)), copy.copy(row), copy.deepcopy(row)):
        other["a"] = 2
        assert row.a == [1]
    deep = copy.deepcopy(row)
    deep.a.append(2)
    assert row.a == [1]


def test_row_and_row_kind_are_exported_where_pyflink_has_them():
    assert lockgate.common.Row is Row
    assert lockgate.common.RowKind is RowKind

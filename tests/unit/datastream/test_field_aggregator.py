"""FieldAggregator: the reduce behind KeyedStream.sum/min/max/min_by/max_by, PyFlink's rules."""

from __future__ import annotations

from collections import namedtuple
from functools import reduce

import pytest

from lockgate.common import Row, RowKind
from lockgate.datastream.data_stream import FieldAggregator
from lockgate.graph.operator_spec import OperatorKind, OperatorSpec
from lockgate.runtime.subtaskhost.context import RecordTimestamp
from lockgate.runtime.subtaskhost.operators import OperatorContext, create_operator
from lockgate.state.heap import HeapKeyedStateBackend
from lockgate.state.key_groups import KeyGroupRange


def rolling(kind, position, records):
    """Every intermediate result, as a streaming keyed aggregation emits them."""
    agg = FieldAggregator(kind, position)
    out = [records[0]]
    for record in records[1:]:
        out.append(agg.reduce(out[-1], record))
    return out


def final(kind, position, records):
    return reduce(FieldAggregator(kind, position).reduce, records)


# Tuples --------------------------------------------------------------------------------------

TUPLES = [("a", 3, "x"), ("a", 1, "y"), ("a", 5, "z")]


def test_sum_on_tuples_keeps_the_first_record_and_adds_the_field():
    assert rolling("sum", 1, TUPLES) == [("a", 3, "x"), ("a", 4, "x"), ("a", 9, "x")]


def test_min_and_max_on_tuples_replace_only_the_field():
    assert final("min", 1, TUPLES) == ("a", 1, "x")
    assert final("max", 1, TUPLES) == ("a", 5, "x")


def test_min_by_and_max_by_on_tuples_return_whole_records():
    assert final("min_by", 1, TUPLES) == ("a", 1, "y")
    assert final("max_by", 1, TUPLES) == ("a", 5, "z")


def test_by_aggregations_keep_the_first_record_on_ties():
    ties = [("a", 1, "first"), ("a", 1, "second")]
    assert final("min_by", 1, ties) == ("a", 1, "first")
    assert final("max_by", 1, ties) == ("a", 1, "first")


def test_tuples_are_not_mutated():
    first = ("a", 1)
    result = FieldAggregator("sum", 1).reduce(first, ("a", 2))
    assert result == ("a", 3)
    assert type(result) is tuple
    assert first == ("a", 1)


def test_named_tuples_keep_their_type():
    point = namedtuple("Point", "name value")
    result = FieldAggregator("sum", 1).reduce(point("p", 1), point("p", 2))
    assert result == point("p", 3)
    assert type(result) is point


def test_field_name_on_a_tuple_is_a_type_error():
    with pytest.raises(TypeError, match="'value'"):
        FieldAggregator("sum", "value").reduce(("a", 1), ("a", 2))


def test_negative_position_counts_from_the_end():
    assert FieldAggregator("sum", -1).reduce(("a", 1), ("a", 2)) == ("a", 3)


# Lists ---------------------------------------------------------------------------------------


def test_sum_min_max_on_lists():
    assert final("sum", 1, [["a", 1], ["a", 2], ["a", 3]]) == ["a", 6]
    assert final("min", 1, [["a", 4], ["b", 2], ["c", 3]]) == ["a", 2]
    assert final("max", 0, [[1, "x"], [7, "y"], [3, "z"]]) == [7, "x"]


def test_lists_get_a_new_list_so_earlier_outputs_keep_their_values():
    first = ["a", 1]
    result = FieldAggregator("sum", 1).reduce(first, ["a", 2])
    assert result == ["a", 3]
    assert first == ["a", 1]


def test_min_by_max_by_on_lists():
    records = [["a", 2], ["b", 1], ["c", 3]]
    assert final("min_by", 1, records) == ["b", 1]
    assert final("max_by", 1, records) == ["c", 3]


# Rows ----------------------------------------------------------------------------------------


def test_sum_on_positional_rows():
    result = final("sum", 1, [Row("a", 1), Row("a", 2), Row("a", 4)])
    assert result == Row("a", 7)
    assert isinstance(result, Row)


def test_sum_on_named_rows_by_index_and_by_name():
    rows = [Row(k="a", v=1), Row(k="a", v=2)]
    for position in (1, "v"):
        result = final("sum", position, rows)
        assert isinstance(result, Row)
        assert result.as_dict() == {"k": "a", "v": 3}
        assert result["v"] == 3 and result.v == 3


def test_min_max_on_named_rows_by_name():
    rows = [Row(k="a", v=5, t="first"), Row(k="a", v=2, t="second"), Row(k="a", v=9, t="third")]
    assert final("min", "v", rows).as_dict() == {"k": "a", "v": 2, "t": "first"}
    assert final("max", "v", rows).as_dict() == {"k": "a", "v": 9, "t": "first"}


def test_min_by_max_by_on_named_rows_by_name():
    rows = [Row(k="a", v=5, t="first"), Row(k="a", v=2, t="second"), Row(k="a", v=9, t="third")]
    assert final("min_by", "v", rows) is rows[1]
    assert final("max_by", "v", rows) is rows[2]


def test_a_field_named_like_a_tuple_method_and_the_first_rows_kind():
    """``count`` and ``index`` are fields of a Row, not methods; the result keeps the kind
    of the accumulated row, as PyFlink's in-place update does."""
    first = Row.of_kind(RowKind.UPDATE_AFTER, word="a", count=1, index=0)
    rows = [first, Row(word="a", count=2, index=7)]
    by_count = final("sum", "count", rows)
    assert (by_count.count, by_count.index) == (3, 0)
    by_index = final("sum", "index", rows)
    assert (by_index.count, by_index.index) == (1, 7)
    assert by_count.get_row_kind() is by_index.get_row_kind() is RowKind.UPDATE_AFTER
    assert repr(by_count) == "Row(word='a', count=3, index=0)"


def test_unknown_field_name_on_a_row_fails():
    with pytest.raises(ValueError, match="nope"):  # as PyFlink's Row["nope"]
        FieldAggregator("sum", "nope").reduce(Row(k="a", v=1), Row(k="a", v=2))


def test_field_name_on_a_positional_row_fails():
    with pytest.raises(KeyError):
        FieldAggregator("sum", "v").reduce(Row("a", 1), Row("a", 2))


def test_rows_are_not_mutated():
    first = Row(k="a", v=1)
    FieldAggregator("sum", "v").reduce(first, Row(k="a", v=2))
    assert first.v == 1


# Plain values --------------------------------------------------------------------------------


def test_plain_numbers_at_position_zero():
    assert rolling("sum", 0, [1, 2, 3, 1]) == [1, 3, 6, 7]
    assert final("min", 0, [4, 2, 8]) == 2
    assert final("max", 0, [4, 2, 8]) == 8
    assert final("min_by", 0, [4, 2, 8]) == 2
    assert final("max_by", 0, [4, 2, 8]) == 8
    assert final("sum", 0, [0.5, 0.25]) == 0.75


def test_plain_strings_compare_as_values():
    assert final("min", 0, ["pear", "apple", "zoo"]) == "apple"
    assert final("max_by", 0, ["pear", "apple", "zoo"]) == "zoo"


@pytest.mark.parametrize("position", [1, -1, "v"])
def test_plain_values_need_position_zero(position):
    with pytest.raises(TypeError, match="basic type int"):
        FieldAggregator("sum", position).reduce(1, 2)


@pytest.mark.parametrize("position", [1.0, None, (0,), b"v"])
def test_position_must_be_an_int_or_a_name(position):
    with pytest.raises(TypeError, match="field position"):
        FieldAggregator("sum", position)


# Through the keyed reduce operator (no Spark): the rolling outputs a job emits. ---------------


def run_keyed_aggregation(kind, position, records):
    backend = HeapKeyedStateBackend(KeyGroupRange(0, 127), 128)
    ctx = OperatorContext("Agg", "agg-uid", 0, 1, None, backend, [], RecordTimestamp())
    spec = OperatorSpec(OperatorKind.REDUCE, FieldAggregator(kind, position))
    operator = create_operator(spec, ctx, keyed=True)
    emitted = []
    operator.emit = emitted.append
    for record in records:
        operator.process_keyed(7, record[0], record)
    return emitted


def test_keyed_sum_on_tuples_emits_rolling_values():
    records = [("a", 1), ("a", 2), ("a", 3)]
    assert run_keyed_aggregation("sum", 1, records) == [("a", 1), ("a", 3), ("a", 6)]


def test_keyed_sum_on_rows_emits_rolling_values():
    records = [Row(k="a", v=1), Row(k="a", v=2), Row(k="a", v=3)]
    emitted = run_keyed_aggregation("sum", "v", records)
    assert [row.v for row in emitted] == [1, 3, 6]


def test_keyed_sum_on_lists_emits_distinct_rolling_values():
    records = [["a", 1], ["a", 2], ["a", 3]]
    assert run_keyed_aggregation("sum", 1, records) == [["a", 1], ["a", 3], ["a", 6]]

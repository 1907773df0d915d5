"""An operator's declared output type converts what it emits; print() formats by the
declared type of the stream it prints."""

from __future__ import annotations

import io

import pytest

from lockgate.common.type_conversion import record_converter
from lockgate.common.typeinfo import Types
from lockgate.common.types import Row
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.graph.job_graph import build_job_graph
from lockgate.graph.transformations import stream_type
from lockgate.runtime.errors import UserFunctionError
from lockgate.runtime.taskexecutor.context import RecordTimestamp, SubtaskRuntimeContext
from lockgate.runtime.taskexecutor.operators import (
    MapOperator,
    OperatorContext,
    PrintSinkOperator,
)
from lockgate.runtime.taskexecutor.subtask import _emitter

PAIR = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])


def context(input_type=None) -> OperatorContext:
    runtime = SubtaskRuntimeContext("Map", 0, 1, 128, 0, {}, None)
    return OperatorContext(
        "Map", "map-uid", 0, 1, runtime, None, [], RecordTimestamp(), input_type=input_type
    )


class Collect:
    def __init__(self):
        self.values = []

    def process(self, value):
        self.values.append(value)


def map_operator(function, output_type):
    operator = MapOperator(context(), function)
    target = Collect()
    operator.emit = _emitter(operator, {None: [target]}, record_converter(output_type))
    return operator, target


def test_the_next_operator_gets_records_of_the_declared_type():
    operator, target = map_operator(lambda word: Row(word, len(word)), PAIR)
    operator.process("and")
    assert [(row.word, row.n) for row in target.values] == [("and", 3)]


def test_without_a_declared_type_records_pass_as_returned():
    record = ["and", 3]
    operator, target = map_operator(lambda _: record, None)
    assert operator.emit == target.process  # nothing in between
    operator.process("x")
    assert target.values[0] is record


def test_a_record_not_of_the_declared_type_fails_naming_the_operator():
    operator, _ = map_operator(lambda word: (word, "3"), PAIR)
    with pytest.raises(UserFunctionError) as failure:
        operator.process("and")
    assert str(failure.value) == (
        "operator 'Map' (uid 'map-uid', subtask 0/1, epoch 0) failed in its output_type on "
        "record ('and', '3'): RecordTypeError: tuple value ('and', '3') does not match type "
        "RowTypeInfo(word: String, n: Integer) (a Row is needed: return Row(...))"
    )


@pytest.mark.parametrize(
    ("input_type", "value", "line"),
    [
        (None, ("a", 1), "('a', 1)"),
        (Types.PICKLED_BYTE_ARRAY(), ("a", 1), "('a', 1)"),
        (Types.TUPLE([Types.STRING(), Types.INT()]), ("a", 1), "(a,1)"),
        (PAIR, Row("a", 1), "+I[a, 1]"),
        (Types.BOOLEAN(), True, "true"),
    ],
)
def test_print_writes_flinks_format_for_a_declared_type(input_type, value, line):
    sink = PrintSinkOperator(context(input_type), None, False)
    sink.stream = io.StringIO()
    sink.process(value)
    sink.end_epoch()
    assert sink.stream.getvalue() == line + "\n"


def test_streams_keep_their_type_through_filter_keying_and_reduce():
    env = StreamExecutionEnvironment.get_execution_environment()
    pairs = env.from_collection(["a"]).map(lambda w: Row(w, 1), output_type=PAIR)
    kept = pairs.filter(lambda _: True).key_by(lambda r: r[0]).reduce(lambda a, b: a)
    assert stream_type(kept._transformation) == PAIR
    # the reduced records are converted to it, so what print() formats by is what it gets
    assert kept._transformation.output_type == PAIR
    assert pairs.filter(lambda _: True)._transformation.output_type is None  # passes them on
    same = env.from_collection(["b"]).map(lambda w: Row(w, 2), output_type=PAIR)
    assert stream_type(pairs.union(same)._transformation) == PAIR
    plain = kept.map(lambda r: r)
    assert stream_type(plain._transformation) is None
    assert stream_type(pairs.union(plain)._transformation) is None
    with pytest.raises(TypeError, match="output_type must be a TypeInformation"):
        pairs.map(lambda r: r, output_type=int)


def test_the_print_sink_node_knows_the_type_of_its_input():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(["a"]).map(lambda w: Row(w, 1), output_type=PAIR).rebalance().print()
    graph = build_job_graph(env._transformations, 2, None)
    sink = graph.vertices[-1].nodes[-1]
    assert sink.name == "Print to Std. Out"
    assert sink.input_type == PAIR

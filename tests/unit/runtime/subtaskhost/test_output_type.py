"""An operator's declared output type converts what it emits; print() formats by the
declared type of the stream it prints."""

from __future__ import annotations

import io

import pytest

from lockgate.common.output_tag import OutputTag
from lockgate.common.type_conversion import record_converter
from lockgate.common.typeinfo import Types
from lockgate.common.types import Row, RowKind
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.graph.job_graph import StreamEdge, build_job_graph
from lockgate.graph.transformations import FORWARD, stream_type
from lockgate.runtime.errors import UserFunctionError
from lockgate.runtime.subtaskhost.context import RecordTimestamp, SubtaskRuntimeContext
from lockgate.runtime.subtaskhost.operators import (
    MapOperator,
    OperatorContext,
    PrintSinkOperator,
)
from lockgate.runtime.subtaskhost.subtask import Route, _emitter

PAIR = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
MAIN = StreamEdge(None, None, FORWARD)  # type: ignore[arg-type]


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


def map_operator(function, output_type, crosses=True):
    operator = MapOperator(context(), function)
    target = Collect()
    routes = [Route(MAIN, target, crosses)]
    operator.emit = _emitter(operator, routes, record_converter(output_type))
    return operator, target


def test_records_leaving_the_chain_are_of_the_declared_type():
    operator, target = map_operator(lambda word: Row(word, len(word)), PAIR)
    operator.process("and")
    assert [(row.word, row.n) for row in target.values] == [("and", 3)]


def test_a_chained_operator_gets_records_as_returned_as_in_pyflink():
    # PyFlink's chained Python operators hand records on without its coders
    operator, target = map_operator(lambda word: (word, 0.1), PAIR, crosses=False)
    operator.process("and")
    assert target.values == [("and", 0.1)]


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
        (PAIR, Row("a", 1), "+I[a,1]"),
        (Types.ROW([Types.DOUBLE(), Types.BOOLEAN()]), Row(1e7, None), "+I[10000000.0,None]"),
        (Types.TUPLE([PAIR, Types.DOUBLE()]), (Row("a", 1), 1e7), "(+I[a, 1],1.0E7)"),
        # a row prints its own kind, at the top (PyFlink) as inside (Java's Row.toString)
        (PAIR, Row.of_kind(RowKind.UPDATE_BEFORE, "a", 1), "-U[a,1]"),
        (Types.TUPLE([PAIR]), (Row.of_kind(RowKind.DELETE, "a", 1),), "(-D[a, 1])"),
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


def test_side_outputs_are_converted_to_their_tags_type_and_main_to_its_own():
    typed = OutputTag("typed", Types.TUPLE([Types.STRING(), Types.FLOAT()]))
    plain = OutputTag("plain")
    operator = MapOperator(context(), lambda value: value)
    main, to_typed, to_plain = Collect(), Collect(), Collect()
    routes = [
        Route(MAIN, main, True),
        Route(StreamEdge(None, None, FORWARD, "typed", typed.type_info), to_typed, False),  # type: ignore[arg-type]
        Route(StreamEdge(None, None, FORWARD, "plain", None), to_plain, False),  # type: ignore[arg-type]
    ]
    operator.emit = _emitter(operator, routes, record_converter(PAIR))
    for value in [(typed, ("x", 0.1)), (plain, ["y", 3]), Row("m", 1)]:
        operator.process(value)
    assert to_typed.values == [("x", 0.10000000149011612)]  # FLOAT: single precision
    assert to_plain.values == [["y", 3]]  # no type: as yielded
    assert main.values == [Row(word="m", n=1)]  # converted to PAIR: named
    with pytest.raises(UserFunctionError, match="failed in the type_info of OutputTag 'typed'"):
        operator.process((typed, ("x", "not a float")))


def test_an_output_tag_refuses_what_is_not_a_type_information():
    with pytest.raises(TypeError, match="the type_info of OutputTag 'late' must be a Type"):
        OutputTag("late", str)


def test_sources_and_side_outputs_declare_the_type_of_their_stream():
    env = StreamExecutionEnvironment.get_execution_environment()
    rows = env.from_collection([(1, "a")], type_info=PAIR)
    assert stream_type(rows._transformation) == PAIR
    tag = OutputTag("late", Types.STRING())
    side = rows.map(lambda r: r).get_side_output(tag)
    assert stream_type(side._transformation) == Types.STRING()
    side.print()
    sink = build_job_graph(env._transformations, 1, None).vertices[-1].nodes[-1]
    assert sink.input_type == Types.STRING()
    with pytest.raises(TypeError, match="type_info must be a TypeInformation"):
        env.from_collection([1], type_info=int)
    with pytest.raises(TypeError, match="key_type must be a TypeInformation"):
        rows.key_by(lambda r: r[0], key_type="INT")

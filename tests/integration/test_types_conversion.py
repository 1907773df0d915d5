"""Declared types change records as in PyFlink: a ``Types.ROW_NAMED`` output reaches the
function across a shuffle as a ``Row`` with those field names, and ``print()`` writes
PyFlink's format: ``+I[And,1]`` for a row type, ``(And,2)`` for a tuple type.

Print output is read from a file as in test_print_sink_output (``CaptureWorkerOutput``,
chained right before the sink, with the stream's type declared as PyFlink's would be).
"""

from __future__ import annotations

import pytest
from lockgate_it_support import CaptureWorkerOutput

from lockgate.common import Row, Types
from lockgate.datastream import KeyedProcessFunction, OutputTag
from lockgate.runtime.errors import JobExecutionError

LINES = ["And so", "And"]
WORD = Types.ROW_NAMED(["word", "n"], [Types.STRING(), Types.INT()])
PAIR = Types.TUPLE([Types.STRING(), Types.INT()])


def split(line):
    return [Row(word, 1) for word in line.split()]


def test_row_named_output_and_flinks_print_formats(make_env, tmp_path):
    rows_out, tuples_out = tmp_path / "rows.txt", tmp_path / "tuples.txt"
    env = make_env(parallelism=1)
    words = env.from_collection(LINES).flat_map(split, output_type=WORD)
    words.map(CaptureWorkerOutput(str(rows_out)), output_type=WORD).print()
    (
        words.rebalance()
        .map(lambda row: (row.word, row.n), output_type=PAIR)  # fields by name
        .key_by(lambda pair: pair[0])
        .sum(1)
        .map(CaptureWorkerOutput(str(tuples_out)), output_type=PAIR)
        .print()
    )
    env.execute()
    assert rows_out.read_text().splitlines() == ["+I[And,1]", "+I[so,1]", "+I[And,1]"]
    assert sorted(tuples_out.read_text().splitlines()) == ["(And,1)", "(And,2)", "(so,1)"]


class KeyAndRecord(KeyedProcessFunction):
    def process_element(self, value, ctx):
        key = ctx.get_current_key()
        yield f"{type(key).__name__} {key.word} {value.word}"
        yield LATE, (value.word, 0.1)


LATE = OutputTag("late", Types.TUPLE([Types.STRING(), Types.FLOAT()]))


def test_source_key_and_side_output_types(make_env, tmp_path):
    """``from_collection(type_info=...)`` makes Rows of tuples, ``key_by(key_type=...)``
    converts the key functions see, and a side output takes its OutputTag's type: it is
    converted (FLOAT is single precision) and printed in Flink's format."""
    out = tmp_path / "out.txt"
    env = make_env(parallelism=1)
    rows = env.from_collection([("And", 1), ("so", 2)], type_info=WORD)
    keyed = rows.key_by(
        lambda row: Row(row.word), key_type=Types.ROW_NAMED(["word"], [Types.STRING()])
    ).process(KeyAndRecord())
    # both prints run in one Python worker: one capture serves them
    keyed.map(CaptureWorkerOutput(str(out))).print()
    keyed.get_side_output(LATE).print()
    env.execute()
    assert sorted(out.read_text().splitlines()) == [
        "(And,0.1)",
        "(so,0.1)",
        "Row And And",
        "Row so so",
    ]


def test_a_key_not_of_the_key_type_fails_naming_the_operator(make_env):
    env = make_env(parallelism=1)
    env.from_collection(["And"]).key_by(lambda w: w, key_type=Types.INT()).map(lambda w: w).print()
    with pytest.raises(JobExecutionError, match=r"key selector of 'Map'.*RecordTypeError.*'And'"):
        env.execute()

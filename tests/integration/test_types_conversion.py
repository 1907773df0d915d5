"""Declared types change records as in PyFlink: a ``Types.ROW_NAMED`` output reaches the
next function as a ``Row`` with those field names (across a shuffle too), and ``print()``
writes Flink's Java format: ``+I[And, 1]`` for a row type, ``(And,2)`` for a tuple type.

Print output is read from a file as in test_print_sink_output (``CaptureWorkerOutput``,
chained right before the sink, with the stream's type declared as PyFlink's would be).
"""

from __future__ import annotations

from lockgate_it_support import CaptureWorkerOutput

from lockgate.common import Row, Types

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
    assert rows_out.read_text().splitlines() == ["+I[And, 1]", "+I[so, 1]", "+I[And, 1]"]
    assert sorted(tuples_out.read_text().splitlines()) == ["(And,1)", "(And,2)", "(so,1)"]

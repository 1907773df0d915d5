"""PyFlink's own windowing examples (``pyflink/examples/datastream/windowing/*.py`` of
apache-flink 2.3.0), written again for lockgate with the examples' data, pipelines and
PyFlink-style code (generic function types, ``Types``, ``key_type``), at the examples'
parallelism 1 and with small epochs.

``PYFLINK_OUTPUT`` is what those examples printed when run on PyFlink 2.3.0 (thread and
process mode alike; Java prints a Tuple4 as ``(hi,0,5,4)``): the results must be the same.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from lockgate.common import Time, Types, WatermarkStrategy
from lockgate.common.watermark_strategy import TimestampAssigner
from lockgate.datastream import ProcessWindowFunction, WindowFunction
from lockgate.datastream.window import (
    CountWindow,
    EventTimeSessionWindows,
    SessionWindowTimeGapExtractor,
    SlidingEventTimeWindows,
    TimeWindow,
    TumblingEventTimeWindows,
)

PYFLINK_OUTPUT = {
    "tumbling_time_window": [("hi", 0, 5, 4), ("hi", 5, 10, 3), ("hi", 15, 20, 1)],
    "sliding_time_window": [
        ("hi", -2, 3, 2),
        ("hi", 0, 5, 4),
        ("hi", 2, 7, 4),
        ("hi", 4, 9, 3),
        ("hi", 6, 11, 2),
        ("hi", 8, 13, 2),
        ("hi", 12, 17, 1),
        ("hi", 14, 19, 1),
    ],
    "session_with_gap_window": [("hi", 1, 14, 6), ("hi", 15, 20, 1)],
    "session_with_dynamic_gap_window": [("hi", 1, 30, 7)],
    "tumbling_count_window": [("hi", 4), ("hello", 6), ("hello", 12)],
}


class MyTimestampAssigner(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp) -> int:
        return int(value[1])


class MySessionWindowTimeGapExtractor(SessionWindowTimeGapExtractor):
    def extract(self, element: tuple) -> int:
        return element[1]


class CountWindowProcessFunction(ProcessWindowFunction[tuple, tuple, str, TimeWindow]):
    def process(
        self,
        key: str,
        context: ProcessWindowFunction.Context[TimeWindow],
        elements: Iterable[tuple],
    ) -> Iterable[tuple]:
        return [(key, context.window().start, context.window().end, len(list(elements)))]


class SumWindowFunction(WindowFunction[tuple, tuple, str, CountWindow]):
    def apply(self, key: str, window: CountWindow, inputs: Iterable[tuple]):
        return [(key, sum(i[0] for i in inputs))]


TIMED = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 5), ("hi", 8), ("hi", 9), ("hi", 15)]
SESSIONS = [("hi", 1), ("hi", 2), ("hi", 3), ("hi", 4), ("hi", 8), ("hi", 9), ("hi", 15)]
ASSIGNERS = {
    "tumbling_time_window": (TIMED, lambda: TumblingEventTimeWindows.of(Time.milliseconds(5))),
    "sliding_time_window": (
        TIMED,
        lambda: SlidingEventTimeWindows.of(Time.milliseconds(5), Time.milliseconds(2)),
    ),
    "session_with_gap_window": (
        SESSIONS,
        lambda: EventTimeSessionWindows.with_gap(Time.milliseconds(5)),
    ),
    "session_with_dynamic_gap_window": (
        SESSIONS,
        lambda: EventTimeSessionWindows.with_dynamic_gap(MySessionWindowTimeGapExtractor()),
    ),
}


@pytest.mark.parametrize("max_records", [1000, 2])
@pytest.mark.parametrize("example", sorted(ASSIGNERS))
def test_time_window_examples_give_pyflinks_results(make_env, example, max_records):
    data, assigner = ASSIGNERS[example]
    env = make_env(parallelism=1, max_records_per_split=max_records)
    data_stream = env.from_collection(data, type_info=Types.TUPLE([Types.STRING(), Types.INT()]))
    watermark_strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(
        MyTimestampAssigner()
    )
    ds = (
        data_stream.assign_timestamps_and_watermarks(watermark_strategy)
        .key_by(lambda x: x[0], key_type=Types.STRING())
        .window(assigner())
        .process(
            CountWindowProcessFunction(),
            Types.TUPLE([Types.STRING(), Types.INT(), Types.INT(), Types.INT()]),
        )
    )
    assert list(ds.execute_and_collect()) == PYFLINK_OUTPUT[example]


@pytest.mark.parametrize("max_records", [1000, 2])
def test_the_count_window_example_gives_pyflinks_results(make_env, max_records):
    env = make_env(parallelism=1, max_records_per_split=max_records)
    data_stream = env.from_collection(
        [(1, "hi"), (2, "hello"), (3, "hi"), (4, "hello"), (5, "hi"), (6, "hello"), (6, "hello")],
        type_info=Types.TUPLE([Types.INT(), Types.STRING()]),
    )
    ds = (
        data_stream.key_by(lambda x: x[1], key_type=Types.STRING())
        .count_window(2)
        .apply(SumWindowFunction(), Types.TUPLE([Types.STRING(), Types.INT()]))
    )
    assert list(ds.execute_and_collect()) == PYFLINK_OUTPUT["tumbling_count_window"]

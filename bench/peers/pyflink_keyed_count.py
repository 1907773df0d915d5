"""Peer of bench/keyed_count.py on PyFlink (``apache-flink``): the same keyed (count, sum) job.

``from_collection(events) -> key_by -> KeyedProcessFunction(ValueState) -> DiscardingSink``,
parallelism 2, checkpoint each second (hashmap state backend), the same events as
keyed_count.py (``make_events`` from bench/keyed_events.py). Run it with the interpreter of the
venv where apache-flink is installed; the last line is

    keyed_count system=pyflink events_per_s=<float>

Timed like keyed_count.py, over ``keyed_events``' record window: from the first record the
key function (``TimedKey``, a Python key selector as in lockgate's job) saw to the last record
the KeyedProcessFunction saw, so the JVM's and the mini-cluster's start, the job's
submission and its end are left out; the same per-record instrumentation as lockgate's
``TimedCountAndSum``. The wall time of ``execute()`` is printed too.

``--mode thread`` (default) runs the Python functions embedded in the JVM
(``python.execution-mode: thread``, with PYTHONPATH set to this interpreter's site-packages);
``--mode process`` runs them in Beam workers with ``python.state.cache-size`` above the keys
per subtask and ``python.fn-execution.bundle.size`` 10000.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from keyed_events import TimedKey, make_events, read_window, write_mark
from pyflink_setup import BENCH_DIR, discarding_sink, set_pythonpath, tuned_environment


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--mode", choices=("thread", "process"), default="thread")
    parser.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    set_pythonpath(args.mode, BENCH_DIR)  # keyed_events: the key function

    from pyflink.common import Types
    from pyflink.datastream import KeyedProcessFunction
    from pyflink.datastream.state import ValueStateDescriptor

    class CountAndSum(KeyedProcessFunction):
        """keyed_count's TimedCountAndSum: (count, sum) per key, every update emitted, the
        first and last record's time and the records counted, written when it closes."""

        def __init__(self, marks_dir: str):
            self.marks_dir = marks_dir
            self.first = 0.0
            self.last = 0.0
            self.count = 0

        def open(self, runtime_context):
            self.state = runtime_context.get_state(
                ValueStateDescriptor("count_sum", Types.TUPLE([Types.LONG(), Types.LONG()]))
            )

        def process_element(self, value, ctx):
            self.last = now = time.time()
            if not self.count:
                self.first = now
            self.count += 1
            current = self.state.value()
            count, total = current if current is not None else (0, 0)
            count, total = count + 1, total + value[1]
            self.state.update((count, total))
            yield value[0], count, total

        def close(self):
            if self.count:
                write_mark(self.marks_dir, self.first, self.last, self.count)

    keys_per_subtask = -(-args.keys // args.parallelism)
    env = tuned_environment(
        args.mode, args.parallelism, 2 * keys_per_subtask, args.checkpoint_interval_ms
    )

    events = make_events(args.events, args.keys)
    event_type = Types.TUPLE([Types.LONG(), Types.LONG()])
    out_type = Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG()])
    with tempfile.TemporaryDirectory(prefix="pyflink-marks-") as marks_dir:
        stream = (
            env.from_collection(events, type_info=event_type)
            .key_by(TimedKey(marks_dir), key_type=Types.LONG())
            .process(CountAndSum(marks_dir), output_type=out_type)
        )
        stream.sink_to(discarding_sink())
        started = time.perf_counter()
        env.execute("keyed_count_pyflink")
        seconds = time.perf_counter() - started
        window = read_window(marks_dir)
    if window.count != args.events:
        raise SystemExit(
            f"the KeyedProcessFunction instances counted {window.count} records, not "
            f"{args.events} (did they close?)"
        )
    print(
        f"pyflink mode={args.mode} events={args.events} keys={args.keys} "
        f"parallelism={args.parallelism} wall_s={seconds:.2f} window_s={window.seconds:.2f}"
    )
    print(f"keyed_count system=pyflink events_per_s={args.events / window.seconds:.2f}")


if __name__ == "__main__":
    main()

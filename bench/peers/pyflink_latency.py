"""Peer of bench/latency.py on PyFlink (``apache-flink``): the same fixed-rate keyed count.

``FileSource`` (text lines, ``monitor_continuously(--discovery-ms)``) over the directory the
feeder fills -> ``map`` parsing ``<key>,<arrival ms>`` -> ``key_by`` -> a KeyedProcessFunction
with a ValueState count per key that emits ``<key>,<count>,<arrival ms>`` for every event
-> ``FileSink`` (row format, ``OnCheckpointRollingPolicy``), parallelism 2, a checkpoint every
``--checkpoint-interval-ms`` in ``--checkpointing-mode``; Python functions in thread mode
(``python.execution-mode: thread``, PYTHONPATH set to this interpreter's site-packages), or
process mode with ``--mode process``.

Flink's FileSink makes part files visible only when a checkpoint completes, in either
checkpointing mode. Its default rolling policy would keep a part file open for up to 60 s (or
128 MB) before it is even eligible, so the bench uses ``OnCheckpointRollingPolicy``: a part
file per subtask and checkpoint, as lockgate rolls one per epoch.

Run with the interpreter of the venv where apache-flink is installed (bench/latency.py
--peers does). The job is submitted with ``execute_async``; once it is RUNNING the script
prints ``pyflink_latency running job=<id>`` and then waits until its stdin is closed, cancels
the job and exits.
"""

from __future__ import annotations

import argparse
import sys
import time

from pyflink_setup import set_pythonpath


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--mode", choices=("thread", "process"), default="thread")
    parser.add_argument(
        "--checkpointing-mode", choices=("EXACTLY_ONCE", "AT_LEAST_ONCE"), default="EXACTLY_ONCE"
    )
    parser.add_argument("--checkpoint-interval-ms", type=int, default=1000)
    parser.add_argument("--discovery-ms", type=int, default=100)
    return parser.parse_args(argv)


def parse(line):
    key, arrival = line.split(",")
    return int(key), int(arrival)


def event_key(event):
    return event[0]


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    set_pythonpath(args.mode)

    from pyflink.common import Configuration, Duration, Encoder, Types, WatermarkStrategy
    from pyflink.datastream import KeyedProcessFunction, StreamExecutionEnvironment
    from pyflink.datastream.connectors.file_system import (
        FileSink,
        FileSource,
        RollingPolicy,
        StreamFormat,
    )
    from pyflink.datastream.state import ValueStateDescriptor

    class CountArrivals(KeyedProcessFunction):
        """Counts the events of each key; emits ``key,count,arrival`` for every event."""

        def open(self, runtime_context):
            self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

        def process_element(self, value, ctx):
            count = (self.count.value() or 0) + 1
            self.count.update(count)
            yield f"{value[0]},{count},{value[1]}"

    config = Configuration()
    config.set_string("python.executable", sys.executable)
    config.set_string("python.client.executable", sys.executable)
    config.set_string("python.execution-mode", args.mode)
    config.set_string("state.backend.type", "hashmap")
    config.set_string("execution.checkpointing.interval", f"{args.checkpoint_interval_ms} ms")
    config.set_string("execution.checkpointing.mode", args.checkpointing_mode)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(args.parallelism)
    env.set_python_executable(sys.executable)

    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.input)
        .monitor_continuously(Duration.of_millis(args.discovery_ms))
        .build()
    )
    sink = (
        FileSink.for_row_format(args.output, Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "arrivals")
        .map(parse, output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
        .key_by(event_key, key_type=Types.LONG())
        .process(CountArrivals(), output_type=Types.STRING())
        .sink_to(sink)
    )
    client = env.execute_async("latency_pyflink")
    while client.get_job_status().result().name != "RUNNING":
        time.sleep(0.1)
    print(f"pyflink_latency running job={client.get_job_id()}", flush=True)
    sys.stdin.read()  # until the bench closes our stdin
    client.cancel().result()


if __name__ == "__main__":
    main()

"""A job for the Dispatcher's tests: reads the lines of the files in a directory (watching
it for more), counts each key, and writes every line with its key's count, exactly once,
to a FileSink. It runs until it is stopped or cancelled.

Arguments: INPUT_DIR OUTPUT_DIR CHECKPOINT_DIR
"""

from __future__ import annotations

import sys

from lockgate.common import Duration, Encoder, Types, WatermarkStrategy
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from lockgate.datastream.functions import KeyedProcessFunction, RuntimeContext
from lockgate.datastream.state import ValueStateDescriptor


class CountPerKey(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield f"{value} {count}"


def main(input_dir: str, output_dir: str, checkpoint_dir: str) -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(500)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{checkpoint_dir}")
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), input_dir)
        .monitor_continuously(Duration.of_millis(300))
        .build()
    )
    (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "lines")
        .uid("lines")
        .key_by(lambda line: line.split(" ")[0], key_type=Types.STRING())
        .process(CountPerKey(), output_type=Types.STRING())
        .uid("count-per-key")
        .sink_to(FileSink.for_row_format(output_dir, Encoder.simple_string_encoder()).build())
        .uid("out")
    )
    env.execute("dispatcher test job")


if __name__ == "__main__":
    main(*sys.argv[1:4])

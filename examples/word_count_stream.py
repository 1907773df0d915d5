"""Streaming word count over a directory that is still being written to.

A background thread drops a new text file into an input directory every 0.3 s for a few
seconds, each one written under a hidden name and then renamed, so that the job never sees
half a file (``FileSource`` skips names starting with '.' or '_', as Flink does). The job
watches the directory with ``FileSource ... .monitor_continuously(...)``, splits lines into
words, keys by word and keeps a running count with ``sum``. ``execute_and_collect()``
hands back every count update as soon as its epoch completes; the program closes the
iterator, which stops the job, once every word the writer wrote has been counted, then
prints the top 10 words and checks the totals against what the writer wrote.

Run: ``python examples/word_count_stream.py [--out DIR] [--files N] [--master URL]``
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import threading
import time
from collections import Counter
from pathlib import Path

from lockgate.common import Configuration, Duration, Types, WatermarkStrategy
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.datastream.connectors.file_system import FileSource, StreamFormat

TEXT = (
    "the state of a stream lives in key groups and moves with them when the job is "
    "rescaled while each barrier marks a consistent cut of every input channel so that "
    "a checkpoint can restore the job exactly as it was"
)
VOCABULARY = list(dict.fromkeys(TEXT.split()))  # distinct words, in order of appearance
WRITE_INTERVAL_S = 0.3
LINES_PER_FILE = 40
WORDS_PER_LINE = 10


class DirectoryWriter(threading.Thread):
    """Writes ``files`` text files into ``directory``, one every ``interval`` seconds."""

    def __init__(self, directory: Path, files: int, interval: float, seed: int = 11):
        super().__init__(name="directory-writer", daemon=True)
        self.directory = directory
        self.interval = interval
        rng = random.Random(seed)
        # Zipf-like: a few words are frequent, most are rare.
        weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
        self.contents = [
            [
                " ".join(rng.choices(VOCABULARY, weights, k=WORDS_PER_LINE))
                for _ in range(LINES_PER_FILE)
            ]
            for _ in range(files)
        ]
        self.written = Counter()  # words in the files written so far
        self.files_written = 0

    def planned_counts(self) -> Counter:
        """Every word the writer will have written when it is done."""
        return Counter(word for lines in self.contents for line in lines for word in line.split())

    def write_file(self, number: int) -> None:
        lines = self.contents[number]
        final = self.directory / f"words-{number:03d}.txt"
        hidden = self.directory / f".{final.name}.tmp"
        hidden.write_text("".join(line + "\n" for line in lines))
        os.rename(hidden, final)  # atomic: the file appears complete
        self.written.update(word for line in lines for word in line.split())
        self.files_written += 1

    def run(self) -> None:
        """Write the files not written yet, one every ``interval`` seconds."""
        for number in range(self.files_written, len(self.contents)):
            time.sleep(self.interval)
            self.write_file(number)


def split_words(line: str) -> list[tuple[str, int]]:
    return [(word.lower(), 1) for word in line.split()]


def build_environment(master: str) -> StreamExecutionEnvironment:
    config = Configuration()
    config.set_string("spark.master", master)
    config.set_string("spark.ui.enabled", "false")
    config.set_boolean("lockgate.progress", True)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(2)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="out/word_count_stream", help="working directory")
    parser.add_argument("--files", type=int, default=15, help="how many files to write")
    parser.add_argument("--master", default="local[2]", help="Spark master URL")
    args = parser.parse_args()

    input_dir = Path(args.out).resolve() / "input"
    shutil.rmtree(input_dir, ignore_errors=True)
    input_dir.mkdir(parents=True)
    writer = DirectoryWriter(input_dir, args.files, WRITE_INTERVAL_S)
    expected = writer.planned_counts()

    env = build_environment(args.master)
    source = (
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), str(input_dir))
        .monitor_continuously(Duration.of_millis(200))
        .build()
    )
    counts = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "text files")
        .flat_map(split_words, output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0], key_type=Types.STRING())
        .sum(1)
    )

    writer.write_file(0)  # the first file is there when the job starts
    results = counts.execute_and_collect("word_count_stream")  # starts Spark and the job
    print(f"Job running; watching {input_dir}/", flush=True)
    started = last_result = time.perf_counter()

    latest: dict[str, int] = {}
    updates = 0
    with results:  # closing the iterator stops the job
        for word, count in results:
            now = time.perf_counter()
            if updates == 0:
                # Write the rest while the job runs; its first epoch also started Spark's
                # Python workers, which is slow.
                writer.start()
            elif now - last_result > 0.1:  # the first result of a new epoch
                print(
                    f"  {now - started:4.1f} s: {sum(latest.values()):>5,} words counted so far, "
                    f"{writer.files_written}/{args.files} files written",
                    flush=True,
                )
            last_result = now
            latest[word] = max(count, latest.get(word, 0))
            updates += 1
            if latest == expected:  # every word the writer will write has been counted
                break
    writer.join()
    elapsed = time.perf_counter() - started

    print(
        f"\nCounted {sum(latest.values()):,} words ({len(latest)} distinct) from "
        f"{writer.files_written} files in {elapsed:.1f} s ({updates:,} count updates)"
    )
    print("Top 10 words:")
    for word, count in sorted(latest.items(), key=lambda item: (-item[1], item[0]))[:10]:
        print(f"  {word:<12} {count:>5,}")
    if latest != dict(writer.written):
        raise SystemExit("MISMATCH: the counts differ from what the writer wrote")
    print(f"OK: the totals equal the {sum(writer.written.values()):,} words the writer wrote")


if __name__ == "__main__":
    main()

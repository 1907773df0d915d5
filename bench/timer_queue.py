"""What a RocksDB subtask's processing-time timers cost an epoch when none is due.

At the end of every epoch a keyed subtask polls its timer queues for due timers and asks
each for its earliest timer (for the driver's planning). A RocksDB queue keeps its timers
per key group, so without more a poll and an earliest() each seek every key group of the
subtask: 128 at the default max parallelism, up to 32768. The queue keeps a floor (no timer
is earlier), and knows when it is exact, so that an epoch with nothing due seeks nothing.

For max parallelism 128 and 32768, one RocksDB instance owning every key group holds
``--timers`` processing-time timers, far in the future, spread over the key groups; each of
``--epochs`` epochs runs ``poll_due(now)`` and ``earliest()``. Printed per max parallelism:

    timer_queue max_parallelism=<p> timers=<n> median_epoch_ms=<f> first_epoch_ms=<f>

``first_epoch_ms``: the first epoch, which finds the floor by seeking every key group once
(as after every restore); ``median_epoch_ms``: the epochs after it. There is no peer: in
Flink a timer service keeps its timers in one priority queue per key-group range.

Run: ``python bench/timer_queue.py [--timers N] [--epochs E]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.rocksdb import RocksDBKeyedStateBackend, RocksDBSettings

FAR = 10**12  # milliseconds: decades from the epochs' clock


def measure(max_parallelism: int, timers: int, epochs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="lockgate-timers-") as directory:
        backend = RocksDBKeyedStateBackend(
            KeyGroupRange(0, max_parallelism - 1), max_parallelism, directory, RocksDBSettings()
        )
        try:
            queue = backend.timer_queue("processing")
            for i in range(timers):
                queue.add(i % max_parallelism, f"key-{i}", None, FAR + i)
            took = []
            for epoch in range(epochs):
                started = time.perf_counter()
                due = list(queue.poll_due(1_000 + epoch))
                queue.earliest()
                took.append((time.perf_counter() - started) * 1000)
                assert not due, due
        finally:
            backend.dispose()
    print(
        f"timer_queue max_parallelism={max_parallelism} timers={timers} "
        f"median_epoch_ms={statistics.median(took[1:]):.3f} first_epoch_ms={took[0]:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timers", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    for max_parallelism in (128, 32768):
        measure(max_parallelism, args.timers, args.epochs)


if __name__ == "__main__":
    main()

"""A subtask that runs twice for one epoch starts both times from the previous epoch's state."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from lockgate_it_support import BACKENDS

from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ValueStateDescriptor


class CountFailingOnce(KeyedProcessFunction):
    """Counts per key; the first attempt of epoch 3's subtasks dies halfway through."""

    def __init__(self, marker_dir: str):
        self.marker_dir = marker_dir

    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))
        self.seen_this_attempt = 0
        self.attempt = runtime_context.get_attempt_number()

    def process_element(self, value, ctx):
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        self.seen_this_attempt += 1
        if self.attempt == 0 and value[1] == 2 and count == 60:
            marker = Path(self.marker_dir) / f"failed-{ctx.get_current_key()}-{count}"
            marker.write_text(str(self.seen_this_attempt))
            raise RuntimeError("injected failure on the first attempt")
        yield value[0], count


@BACKENDS
def test_retried_subtask_restarts_from_previous_epoch_state(make_env, tmp_path):
    # RocksDB: a write-back cache of 2 keys puts the failing attempt's updates into the
    # instance before it fails; the retry must not see them
    env = make_env(
        parallelism=2, max_records_per_split=500, **{"lockgate.state.rocksdb.cache-entries": 2}
    )
    keys = [f"k{i}" for i in range(20)]
    # (key, epoch tag): records of the third epoch (1000..1499) trigger the failure
    records = [(keys[i % 20], i // 500) for i in range(2000)]
    out = (
        env.from_collection(records)
        .key_by(lambda r: r[0])
        .process(CountFailingOnce(str(tmp_path)))
        .execute_and_collect(limit=None)
    )
    results = list(out)
    expected_counts = Counter(key for key, _ in records)
    failures = list(tmp_path.glob("failed-*"))
    assert failures, "the injected failure never fired, so nothing was retried"
    # The failed attempt had already updated state for records of this epoch.
    assert all(int(f.read_text()) > 1 for f in failures)
    assert len(results) == len(records)
    # Every key's counts are exactly 1..n: no update lost or applied twice by the retry.
    per_key: dict[str, list[int]] = {}
    for key, count in results:
        per_key.setdefault(key, []).append(count)
    for key, counts in per_key.items():
        assert sorted(counts) == list(range(1, expected_counts[key] + 1)), key

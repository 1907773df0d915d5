"""Records of hundreds of KB cross a key_by in shuffle batches bounded in bytes."""

from __future__ import annotations

import random
import zlib

from lockgate_it_support import collect

from lockgate.common import Configuration
from lockgate.datastream import KeyedProcessFunction
from lockgate.datastream.state import ValueStateDescriptor
from lockgate.runtime.jobmaster.epoch_job import EpochJob
from lockgate.runtime.messages.task_deployment import BatchBounds, TaskDeploymentDescriptor


class Digest(KeyedProcessFunction):
    """Per key: records seen, payload bytes, and the sum of the payloads' CRCs."""

    def open(self, runtime_context):
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element(self, value, ctx):
        count, size, crcs = self.seen.value() or (0, 0, 0)
        seen = (count + 1, size + len(value[1]), crcs + zlib.crc32(value[1]))
        self.seen.update(seen)
        yield (ctx.get_current_key(), *seen)


def test_big_records_through_a_key_by_with_a_small_byte_bound(make_env, monkeypatch):
    rng = random.Random(17)
    sizes = [rng.randint(100_000, 400_000) for _ in range(59)] + [700_000]  # one over the bound
    rng.shuffle(sizes)
    records = [(f"k{n % 5}", rng.randbytes(size)) for n, size in enumerate(sizes)]
    tasks = []
    start = EpochJob.start

    def recording_start(self, plan, *args, **kwargs):
        tasks.extend(plan.tasks.values())
        return start(self, plan, *args, **kwargs)

    monkeypatch.setattr(EpochJob, "start", recording_start)
    env = make_env(parallelism=2, max_records_per_split=15)
    env.configure(Configuration().set_string("lockgate.shuffle.batch.max-size", "512kb"))

    results = collect(env.from_collection(records).key_by(lambda r: r[0]).process(Digest()))

    expected: dict[str, tuple[int, int, int]] = {}
    for key, payload in records:
        count, size, crcs = expected.get(key, (0, 0, 0))
        expected[key] = (count + 1, size + len(payload), crcs + zlib.crc32(payload))
    finals = {}
    for key, count, size, crcs in results:
        if count > finals.get(key, (0,))[0]:
            finals[key] = (count, size, crcs)
    assert finals == expected
    assert sorted((key, count) for key, count, _, _ in results) == sorted(
        (key, n) for key, (total, _, _) in expected.items() for n in range(1, total + 1)
    )
    assert tasks and {
        TaskDeploymentDescriptor.decode(task.descriptor).batch_bounds for task in tasks
    } == {BatchBounds(8192, 512 << 10, 256 << 20)}

"""The events of the keyed-count benchmark, with no dependency on lockgate or Spark, so that
the peer scripts (bench/peers/) can generate the same events in another interpreter."""

from __future__ import annotations

import random


def make_events(events: int, keys: int, seed: int = 42) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    return [(rng.randrange(keys), rng.randrange(1000)) for _ in range(events)]

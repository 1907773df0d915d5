"""How many records each source split may contribute to the next epoch.

Two limits, the smaller of which holds:

- **By time** (``lockgate.epoch.target-duration``): each epoch costs Spark a fixed
  scheduling round, so epochs should be long enough to amortize it, and short enough that
  results and checkpoints follow soon. The first epoch reads at most ``FIRST`` records per
  split; after an epoch that read a full share on some split, or that ran past the target,
  the share is scaled by target / duration, by at most ``STEP`` either way (one odd epoch
  must not swing it far), and never below ``FLOOR``. An epoch that rebuilt subtasks (a
  job's first, a restore) says nothing of the steady rate and is left out. Without a
  target every epoch reads up to the configured maximum.
- **By checkpoint timeouts**: an epoch that ran past the checkpoint timeout halves the
  limit, so that the epoch run again is smaller. It grows back, doubling, once epochs take
  less than a quarter of the timeout again; otherwise one slow moment would shrink every
  later epoch of a job that runs for a month.

Both stay within ``lockgate.epoch.max-records-per-split``, which bounds an epoch's memory.

Pipelined epochs are planned before the epoch before them has taken its measure, so they
wait until the limit has ``settled``: while it still grows or shrinks fast, epochs run one
after another and each is sized on the one just before it.
"""

from __future__ import annotations

FIRST = 100_000
FLOOR = 10_000
STEP = 4.0
SETTLED_STEP = 2.0  # the last change of the share by time was at most this factor


class EpochCap:
    def __init__(self, configured: int, target_s: float | None):
        self.configured = configured
        self.target_s = target_s
        self.by_time = min(configured, FIRST) if target_s else configured
        self.by_timeout = configured
        self.last_step = float("inf")  # factor of the last change by time (none yet)

    @property
    def value(self) -> int:
        return min(self.by_time, self.by_timeout)

    @property
    def settled(self) -> bool:
        """Whether the next epochs read about as much as the last ones."""
        return (
            self.target_s is None
            or self.by_time >= self.configured
            or self.last_step <= SETTLED_STEP
        )

    def shrink(self) -> int:
        self.by_timeout = max(1, self.value // 2)
        return self.value

    def epoch_took(
        self, seconds: float, timeout_s: float | None, records_per_split: int, warm: bool
    ) -> None:
        """After an epoch that took ``seconds`` and whose busiest split read
        ``records_per_split`` records; ``warm``: it rebuilt no subtask."""
        if self.by_timeout < self.configured and (timeout_s is None or seconds < timeout_s / 4):
            self.by_timeout = min(self.configured, self.by_timeout * 2)
        if self.target_s is None or not warm or seconds <= 0:
            return
        if records_per_split == 0 or (records_per_split < self.value and seconds <= self.target_s):
            # The input ran out before the share (or there was none: an epoch run for a due
            # timer, however long its firing took): no news on how much input fits.
            return
        wanted = records_per_split * self.target_s / seconds
        wanted = min(max(wanted, self.by_time / STEP), self.by_time * STEP)
        before = self.by_time
        self.by_time = max(min(self.configured, FLOOR), min(self.configured, int(wanted)))
        self.last_step = max(before, self.by_time) / min(before, self.by_time)

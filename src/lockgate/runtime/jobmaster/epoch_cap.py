"""How many records each source split may contribute to the next epoch.

The configured cap (``lockgate.epoch.max-records-per-split``) holds unless an epoch ran past
the checkpoint timeout: the cap is then halved, so that the epoch run again is smaller. It
grows back, doubling, once epochs take less than a quarter of the timeout again; otherwise
one slow moment would shrink every later epoch of a job that runs for a month.
"""

from __future__ import annotations


class EpochCap:
    def __init__(self, configured: int):
        self.configured = configured
        self.value = configured

    def shrink(self) -> int:
        self.value = max(1, self.value // 2)
        return self.value

    def epoch_took(self, seconds: float, timeout_s: float | None) -> None:
        if self.value < self.configured and (timeout_s is None or seconds < timeout_s / 4):
            self.value = min(self.configured, self.value * 2)

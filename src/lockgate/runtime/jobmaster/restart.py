"""Restart strategies: after a failed epoch, whether to restart and after how long.

Flink 2.x semantics and defaults: none without checkpointing, exponential-delay with it.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from lockgate.common import config_options as options


class RestartStrategy:
    name = "none"

    def next_delay_ms(self, now_ms: float) -> float | None:
        """Record a failure; the delay before restarting, or None to fail the job."""
        return None


@dataclass
class FixedDelay(RestartStrategy):
    attempts: int
    delay_ms: int
    used: int = 0
    name = "fixed-delay"

    def next_delay_ms(self, now_ms: float) -> float | None:
        if self.used >= self.attempts:
            return None
        self.used += 1
        return self.delay_ms


@dataclass
class FailureRate(RestartStrategy):
    max_failures: int
    interval_ms: int
    delay_ms: int
    failures: deque[float] = field(default_factory=deque)
    name = "failure-rate"

    def next_delay_ms(self, now_ms: float) -> float | None:
        self.failures.append(now_ms)
        while self.failures and self.failures[0] <= now_ms - self.interval_ms:
            self.failures.popleft()
        return self.delay_ms if len(self.failures) <= self.max_failures else None


@dataclass
class ExponentialDelay(RestartStrategy):
    initial_ms: int
    max_ms: int
    multiplier: float
    reset_threshold_ms: int
    jitter: float
    attempts_before_reset: int
    backoff_ms: float = 0.0
    attempts: int = 0
    last_failure_ms: float | None = None
    name = "exponential-delay"

    def next_delay_ms(self, now_ms: float) -> float | None:
        quiet = self.last_failure_ms is None or now_ms - self.last_failure_ms >= (
            self.backoff_ms + self.reset_threshold_ms
        )
        if quiet:
            self.backoff_ms, self.attempts = float(self.initial_ms), 0
        else:
            self.backoff_ms = min(self.backoff_ms * self.multiplier, float(self.max_ms))
        self.attempts += 1
        self.last_failure_ms = now_ms
        if self.attempts > self.attempts_before_reset:
            return None
        spread = self.backoff_ms * self.jitter
        return max(0.0, self.backoff_ms + random.uniform(-spread, spread))


def restart_strategy(config: Mapping[str, str], checkpointing: bool) -> RestartStrategy:
    kind = options.RESTART_TYPE.read(config) or ("exponential-delay" if checkpointing else "none")
    if kind == "fixed-delay":
        return FixedDelay(
            options.FIXED_DELAY_ATTEMPTS.read(config), options.FIXED_DELAY_DELAY.read(config)
        )
    if kind == "failure-rate":
        return FailureRate(
            options.FAILURE_RATE_MAX.read(config),
            options.FAILURE_RATE_INTERVAL.read(config),
            options.FAILURE_RATE_DELAY.read(config),
        )
    if kind == "exponential-delay":
        return ExponentialDelay(
            options.EXP_INITIAL.read(config),
            options.EXP_MAX.read(config),
            options.EXP_MULTIPLIER.read(config),
            options.EXP_RESET.read(config),
            options.EXP_JITTER.read(config),
            options.EXP_ATTEMPTS.read(config),
        )
    return RestartStrategy()


def now_ms() -> float:
    return time.monotonic() * 1000

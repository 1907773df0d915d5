"""``RestartStrategies``: what the job master does when an epoch fails.

Each factory returns the ``restart-strategy.*`` keys it stands for, so that the API and a
``Configuration`` configure the same thing.
"""

from __future__ import annotations

from datetime import timedelta


def _ms(value: int | timedelta) -> str:
    millis = int(value.total_seconds() * 1000) if isinstance(value, timedelta) else int(value)
    return f"{millis} ms"


class RestartStrategyConfiguration:
    def __init__(self, settings: dict[str, str]):
        self.settings = settings

    def get_description(self) -> str:
        """The strategy and its settings, e.g. "fixed-delay (attempts=3, delay=1000 ms)";
        "the configured restart strategy" for ``fall_back_restart``."""
        kind = self.settings.get("restart-strategy.type")
        if kind is None:
            return "the configured restart strategy"
        prefix = f"restart-strategy.{kind}."
        details = ", ".join(
            f"{key.removeprefix(prefix)}={value}"
            for key, value in self.settings.items()
            if key.startswith(prefix)
        )
        return f"{kind} ({details})" if details else kind

    def __repr__(self) -> str:
        return f"RestartStrategyConfiguration({self.settings})"


class RestartStrategies:
    @staticmethod
    def no_restart() -> RestartStrategyConfiguration:
        return RestartStrategyConfiguration({"restart-strategy.type": "none"})

    @staticmethod
    def fall_back_restart() -> RestartStrategyConfiguration:
        """Use the configured strategy (or the default)."""
        return RestartStrategyConfiguration({})

    @staticmethod
    def fixed_delay_restart(
        restart_attempts: int, delay_between_attempts: int | timedelta
    ) -> RestartStrategyConfiguration:
        return RestartStrategyConfiguration(
            {
                "restart-strategy.type": "fixed-delay",
                "restart-strategy.fixed-delay.attempts": str(restart_attempts),
                "restart-strategy.fixed-delay.delay": _ms(delay_between_attempts),
            }
        )

    @staticmethod
    def failure_rate_restart(
        failure_rate: int, failure_interval: int | timedelta, delay_interval: int | timedelta
    ) -> RestartStrategyConfiguration:
        return RestartStrategyConfiguration(
            {
                "restart-strategy.type": "failure-rate",
                "restart-strategy.failure-rate.max-failures-per-interval": str(failure_rate),
                "restart-strategy.failure-rate.failure-rate-interval": _ms(failure_interval),
                "restart-strategy.failure-rate.delay": _ms(delay_interval),
            }
        )

    @staticmethod
    def exponential_delay_restart(
        initial_backoff: int | timedelta,
        max_backoff: int | timedelta,
        backoff_multiplier: float,
        reset_backoff_threshold: int | timedelta,
        jitter_factor: float,
    ) -> RestartStrategyConfiguration:
        prefix = "restart-strategy.exponential-delay."
        return RestartStrategyConfiguration(
            {
                "restart-strategy.type": "exponential-delay",
                prefix + "initial-backoff": _ms(initial_backoff),
                prefix + "max-backoff": _ms(max_backoff),
                prefix + "backoff-multiplier": str(backoff_multiplier),
                prefix + "reset-backoff-threshold": _ms(reset_backoff_threshold),
                prefix + "jitter-factor": str(jitter_factor),
            }
        )

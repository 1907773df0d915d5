"""Restart strategies: Flink 2.x defaults, the policies, and RestartStrategies -> keys."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from lockgate.common import Configuration, ConfigurationError, RestartStrategies
from lockgate.common import config_options as options
from lockgate.datastream import StreamExecutionEnvironment
from lockgate.runtime.jobmaster import restart
from lockgate.runtime.jobmaster.restart import (
    ExponentialDelay,
    FailureRate,
    FixedDelay,
    RestartStrategy,
    restart_strategy,
)

EXP = "restart-strategy.exponential-delay."


def no_jitter(**overrides) -> dict[str, str]:
    return {"restart-strategy.type": "exponential-delay", EXP + "jitter-factor": "0", **overrides}


# Choosing a strategy ------------------------------------------------------------------------------


def test_default_without_checkpointing_is_no_restart():
    strategy = restart_strategy({}, checkpointing=False)
    assert type(strategy) is RestartStrategy
    assert strategy.name == "none"
    assert strategy.next_delay_ms(0) is None


def test_default_with_checkpointing_is_exponential_delay_with_flink_defaults():
    strategy = restart_strategy({}, checkpointing=True)
    assert isinstance(strategy, ExponentialDelay)
    assert strategy.name == "exponential-delay"
    assert strategy.initial_ms == 1000
    assert strategy.max_ms == 60_000
    assert strategy.multiplier == 1.5
    assert strategy.reset_threshold_ms == 3_600_000
    assert strategy.jitter == 0.1
    assert strategy.attempts_before_reset == 2**31 - 1


def test_fixed_delay_defaults_are_one_attempt_after_one_second():
    strategy = restart_strategy({"restart-strategy.type": "fixed-delay"}, checkpointing=True)
    assert isinstance(strategy, FixedDelay)
    assert (strategy.attempts, strategy.delay_ms) == (1, 1000)
    assert strategy.next_delay_ms(0) == 1000
    assert strategy.next_delay_ms(5000) is None


def test_failure_rate_defaults():
    strategy = restart_strategy({"restart-strategy.type": "failure-rate"}, checkpointing=False)
    assert isinstance(strategy, FailureRate)
    assert (strategy.max_failures, strategy.interval_ms, strategy.delay_ms) == (1, 60_000, 1000)


@pytest.mark.parametrize(
    ("value", "cls"),
    [
        ("none", RestartStrategy),
        ("off", RestartStrategy),
        ("disable", RestartStrategy),
        ("NONE", RestartStrategy),
        ("fixed-delay", FixedDelay),
        ("fixeddelay", FixedDelay),
        (" Fixed-Delay ", FixedDelay),
        ("failure-rate", FailureRate),
        ("failurerate", FailureRate),
        ("exponential-delay", ExponentialDelay),
        ("exponentialdelay", ExponentialDelay),
    ],
)
def test_restart_strategy_type_names_and_aliases(value, cls):
    strategy = restart_strategy({"restart-strategy.type": value}, checkpointing=True)
    assert type(strategy) is cls


def test_configured_none_wins_over_the_checkpointing_default():
    strategy = restart_strategy({"restart-strategy.type": "none"}, checkpointing=True)
    assert strategy.next_delay_ms(0) is None


def test_sub_keys_are_read_with_durations():
    config = {
        "restart-strategy.type": "failure-rate",
        "restart-strategy.failure-rate.max-failures-per-interval": "3",
        "restart-strategy.failure-rate.failure-rate-interval": "5 min",
        "restart-strategy.failure-rate.delay": "250ms",
    }
    strategy = restart_strategy(config, checkpointing=False)
    assert (strategy.max_failures, strategy.interval_ms, strategy.delay_ms) == (3, 300_000, 250)


def test_an_invalid_sub_key_names_the_key():
    config = {"restart-strategy.type": "fixed-delay", "restart-strategy.fixed-delay.delay": "soon"}
    with pytest.raises(ConfigurationError, match=r"'restart-strategy\.fixed-delay\.delay'"):
        restart_strategy(config, checkpointing=False)


def test_an_unknown_strategy_type_names_the_key_and_the_allowed_values():
    with pytest.raises(ConfigurationError) as info:
        restart_strategy({"restart-strategy.type": "fixed"}, checkpointing=True)
    message = str(info.value)
    assert "'restart-strategy.type'" in message
    assert "fixed-delay" in message and "exponential-delay" in message


# Fixed delay --------------------------------------------------------------------------------------


def test_fixed_delay_restarts_attempts_times_with_the_same_delay():
    strategy = FixedDelay(attempts=3, delay_ms=200)
    assert [strategy.next_delay_ms(t) for t in (0, 10, 10_000_000)] == [200, 200, 200]
    assert strategy.next_delay_ms(20_000_000) is None
    assert strategy.next_delay_ms(30_000_000) is None


def test_fixed_delay_with_zero_attempts_never_restarts():
    assert FixedDelay(attempts=0, delay_ms=0).next_delay_ms(0) is None


# Failure rate -------------------------------------------------------------------------------------


def test_failure_rate_allows_max_failures_within_the_interval():
    strategy = FailureRate(max_failures=3, interval_ms=10_000, delay_ms=50)
    assert [strategy.next_delay_ms(t) for t in (0, 1000, 2000)] == [50, 50, 50]
    assert strategy.next_delay_ms(3000) is None


def test_failure_rate_forgets_failures_older_than_the_interval():
    strategy = FailureRate(max_failures=2, interval_ms=1000, delay_ms=7)
    assert strategy.next_delay_ms(0) == 7
    assert strategy.next_delay_ms(900) == 7
    assert strategy.next_delay_ms(1500) == 7  # the one at 0 is outside the interval
    assert strategy.next_delay_ms(1800) is None  # 900, 1500 and 1800 within one second
    assert strategy.next_delay_ms(3000) == 7  # everything before 2000 has expired


def test_failure_rate_of_one_restarts_once_per_interval():
    strategy = FailureRate(max_failures=1, interval_ms=60_000, delay_ms=1000)
    assert strategy.next_delay_ms(0) == 1000
    assert strategy.next_delay_ms(30_000) is None
    fresh = FailureRate(max_failures=1, interval_ms=60_000, delay_ms=1000)
    assert fresh.next_delay_ms(0) == 1000
    assert fresh.next_delay_ms(61_000) == 1000


# Exponential delay --------------------------------------------------------------------------------


def exponential(**overrides) -> ExponentialDelay:
    values = {
        "initial_ms": 100,
        "max_ms": 1000,
        "multiplier": 2.0,
        "reset_threshold_ms": 10_000,
        "jitter": 0.0,
        "attempts_before_reset": 1000,
    }
    values.update(overrides)
    return ExponentialDelay(**values)


def failures_in_a_row(strategy: ExponentialDelay, count: int, gap_ms: float = 1) -> list:
    """Failures each ``gap_ms`` after the previous restart would have happened."""
    delays, now = [], 0.0
    for _ in range(count):
        delay = strategy.next_delay_ms(now)
        delays.append(delay)
        now += (delay or 0) + gap_ms
    return delays


def test_exponential_backoff_grows_by_the_multiplier_up_to_the_max():
    assert failures_in_a_row(exponential(), 7) == [100, 200, 400, 800, 1000, 1000, 1000]


def test_exponential_backoff_with_a_fractional_multiplier():
    strategy = exponential(initial_ms=1000, max_ms=60_000, multiplier=1.5)
    assert failures_in_a_row(strategy, 4) == [1000, 1500, 2250, 3375]


def test_exponential_backoff_resets_after_a_quiet_threshold():
    strategy = exponential(reset_threshold_ms=5000)
    assert failures_in_a_row(strategy, 3) == [100, 200, 400]
    last = strategy.last_failure_ms
    # the threshold counts from when the restart happened (last failure + backoff)
    assert strategy.next_delay_ms(last + 400 + 4999) == 800
    last = strategy.last_failure_ms
    assert strategy.next_delay_ms(last + 800 + 5000) == 100
    assert strategy.attempts == 1


def test_exponential_attempts_cap_fails_the_job_until_a_reset():
    strategy = exponential(attempts_before_reset=3, reset_threshold_ms=5000)
    assert failures_in_a_row(strategy, 4) == [100, 200, 400, None]
    last = strategy.last_failure_ms
    assert strategy.next_delay_ms(last + 100_000) == 100  # quiet long enough: a fresh start


def test_exponential_attempts_cap_of_one():
    strategy = exponential(attempts_before_reset=1)
    assert failures_in_a_row(strategy, 2) == [100, None]


def test_exponential_jitter_bounds(monkeypatch):
    monkeypatch.setattr(restart.random, "uniform", lambda low, high: high)
    assert exponential(initial_ms=1000, jitter=0.1).next_delay_ms(0) == pytest.approx(1100)
    monkeypatch.setattr(restart.random, "uniform", lambda low, high: low)
    assert exponential(initial_ms=1000, jitter=0.1).next_delay_ms(0) == pytest.approx(900)
    monkeypatch.setattr(restart.random, "uniform", lambda low, high: low)
    assert exponential(initial_ms=1000, jitter=1.0).next_delay_ms(0) == 0


def test_exponential_jitter_spreads_delays_within_the_bounds():
    random.seed(1234)
    delays = [exponential(initial_ms=1000, jitter=0.2).next_delay_ms(0) for _ in range(200)]
    assert all(800 <= d <= 1200 for d in delays)
    assert max(delays) - min(delays) > 200  # actually spread, not constant
    random.seed()


def test_exponential_jitter_applies_to_the_current_backoff_not_the_initial_one(monkeypatch):
    monkeypatch.setattr(restart.random, "uniform", lambda low, high: high)
    strategy = exponential(initial_ms=100, multiplier=2.0, jitter=0.5, max_ms=10_000)
    assert strategy.next_delay_ms(0) == pytest.approx(150)
    assert strategy.next_delay_ms(200) == pytest.approx(300)  # backoff 200, +50%


def test_configured_exponential_delay_reads_every_sub_key():
    config = no_jitter(
        **{
            EXP + "initial-backoff": "2 s",
            EXP + "max-backoff": "10 s",
            EXP + "backoff-multiplier": "3",
            EXP + "reset-backoff-threshold": "1 min",
            EXP + "attempts-before-reset-backoff": "3",
        }
    )
    strategy = restart_strategy(config, checkpointing=False)
    assert (strategy.initial_ms, strategy.max_ms, strategy.multiplier) == (2000, 10_000, 3.0)
    assert (strategy.reset_threshold_ms, strategy.jitter) == (60_000, 0.0)
    assert failures_in_a_row(strategy, 4) == [2000, 6000, 10_000, None]


def test_now_ms_is_monotonic_milliseconds():
    first = restart.now_ms()
    assert restart.now_ms() >= first > 0


# RestartStrategies -> keys ------------------------------------------------------------------------


def test_no_restart_and_fall_back():
    assert RestartStrategies.no_restart().settings == {"restart-strategy.type": "none"}
    assert RestartStrategies.fall_back_restart().settings == {}


@pytest.mark.parametrize("delay", [1500, timedelta(seconds=1, milliseconds=500)])
def test_fixed_delay_restart_keys(delay):
    settings = RestartStrategies.fixed_delay_restart(4, delay).settings
    assert settings == {
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "4",
        "restart-strategy.fixed-delay.delay": "1500 ms",
    }
    strategy = restart_strategy(settings, checkpointing=False)
    assert (strategy.attempts, strategy.delay_ms) == (4, 1500)


def test_failure_rate_restart_keys():
    settings = RestartStrategies.failure_rate_restart(
        3, timedelta(minutes=5), timedelta(seconds=10)
    ).settings
    assert settings == {
        "restart-strategy.type": "failure-rate",
        "restart-strategy.failure-rate.max-failures-per-interval": "3",
        "restart-strategy.failure-rate.failure-rate-interval": "300000 ms",
        "restart-strategy.failure-rate.delay": "10000 ms",
    }
    strategy = restart_strategy(settings, checkpointing=False)
    assert (strategy.max_failures, strategy.interval_ms, strategy.delay_ms) == (3, 300_000, 10_000)


def test_exponential_delay_restart_keys():
    settings = RestartStrategies.exponential_delay_restart(
        timedelta(milliseconds=10), timedelta(seconds=2), 2.5, 60_000, 0.25
    ).settings
    assert settings == {
        "restart-strategy.type": "exponential-delay",
        EXP + "initial-backoff": "10 ms",
        EXP + "max-backoff": "2000 ms",
        EXP + "backoff-multiplier": "2.5",
        EXP + "reset-backoff-threshold": "60000 ms",
        EXP + "jitter-factor": "0.25",
    }
    strategy = restart_strategy(settings, checkpointing=False)
    assert (strategy.initial_ms, strategy.max_ms, strategy.multiplier) == (10, 2000, 2.5)
    assert (strategy.reset_threshold_ms, strategy.jitter) == (60_000, 0.25)


def test_repr_shows_the_settings():
    assert "fixed-delay" in repr(RestartStrategies.fixed_delay_restart(1, 1))


def test_environment_set_restart_strategy_writes_the_keys():
    env = StreamExecutionEnvironment()
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 300))
    config = env.get_configuration().to_dict()
    assert config["restart-strategy.type"] == "fixed-delay"
    strategy = restart_strategy(config, checkpointing=True)
    assert (type(strategy), strategy.attempts, strategy.delay_ms) == (FixedDelay, 2, 300)
    env.set_restart_strategy(RestartStrategies.no_restart())
    assert type(restart_strategy(env.get_configuration().to_dict(), True)) is RestartStrategy


def test_environment_rejects_an_invalid_restart_strategy_and_keeps_the_old_one():
    env = StreamExecutionEnvironment()
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(2, 300))
    with pytest.raises(ConfigurationError, match=r"'restart-strategy\.fixed-delay\.attempts'"):
        env.set_restart_strategy(RestartStrategies.fixed_delay_restart(-1, 300))
    assert env.get_configuration().get_string("restart-strategy.fixed-delay.attempts", "") == "2"


def test_configuration_and_api_configure_the_same_strategy():
    api = StreamExecutionEnvironment()
    api.set_restart_strategy(RestartStrategies.failure_rate_restart(2, 1000, 10))
    keys = StreamExecutionEnvironment(
        Configuration.from_dict(
            {
                options.RESTART_TYPE.key: "failure-rate",
                options.FAILURE_RATE_MAX.key: "2",
                options.FAILURE_RATE_INTERVAL.key: "1 s",
                options.FAILURE_RATE_DELAY.key: "10",
            }
        )
    )
    first = restart_strategy(api.get_configuration().to_dict(), False)
    second = restart_strategy(keys.get_configuration().to_dict(), False)
    assert first == second

"""Checkpointing, restart-strategy and state-recovery keys: Flink 2.x names, syntax, defaults."""

from __future__ import annotations

import pytest

from lockgate.common import Configuration, ConfigurationError
from lockgate.common import config_options as options
from lockgate.common.config_options import parse_duration_ms, validate
from lockgate.datastream import StreamExecutionEnvironment

# Durations ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "millis"),
    [
        ("0", 0),
        ("500", 500),
        ("500 ms", 500),
        ("500ms", 500),
        ("  500  ms  ", 500),
        ("500 milli", 500),
        ("500 millis", 500),
        ("500 millisecond", 500),
        ("500 milliseconds", 500),
        ("10s", 10_000),
        ("10 s", 10_000),
        ("10 sec", 10_000),
        ("10 secs", 10_000),
        ("10 second", 10_000),
        ("10 seconds", 10_000),
        ("1 min", 60_000),
        ("1m", 60_000),
        ("3 mins", 180_000),
        ("1 minute", 60_000),
        ("2 minutes", 120_000),
        ("2h", 7_200_000),
        ("2 hour", 7_200_000),
        ("2 hours", 7_200_000),
        ("1d", 86_400_000),
        ("1 day", 86_400_000),
        ("7 days", 604_800_000),
        ("2000 us", 2),
        ("2000 µs", 2),
        ("2000 micros", 2),
        ("2000 microseconds", 2),
        ("3000000 ns", 3),
        ("3000000 nanos", 3),
        ("3000000 nanoseconds", 3),
        ("10 S", 10_000),
        ("1 MIN", 60_000),
        ("10 Seconds", 10_000),
    ],
)
def test_flink_duration_syntax(text, millis):
    assert parse_duration_ms(text) == millis


def test_sub_millisecond_durations_round_down():
    assert parse_duration_ms("999 us") == 0
    assert parse_duration_ms("1999999 ns") == 1


@pytest.mark.parametrize(
    "text",
    ["", "   ", "ms", "-1", "-5 s", "1.5 s", "0.5", "10 fortnights", "10 ss", "10s5", "s10",
     "1 min 30 s", "1e3", "+5", "ten seconds", "10 m s"],
)  # fmt: skip
def test_invalid_durations_are_value_errors(text):
    with pytest.raises(ValueError):
        parse_duration_ms(text)


# Defaults -----------------------------------------------------------------------------------------


def test_checkpointing_defaults():
    assert options.CHECKPOINT_INTERVAL.read({}) is None  # unset: checkpointing is off
    assert options.CHECKPOINTING_MODE.read({}) == "EXACTLY_ONCE"
    assert options.CHECKPOINT_TIMEOUT.read({}) == 10 * 60 * 1000
    assert options.MIN_PAUSE.read({}) == 0
    assert options.MAX_CONCURRENT.read({}) == 1
    assert options.TOLERABLE_FAILURES.read({}) == 0
    assert options.NUM_RETAINED.read({}) == 1
    assert options.EXTERNALIZED_RETENTION.read({}) == "NO_EXTERNALIZED_CHECKPOINTS"
    assert options.UNALIGNED.read({}) is False
    assert options.INCREMENTAL.read({}) is False
    assert options.CHECKPOINT_STORAGE.read({}) == ""
    assert options.CHECKPOINT_DIR.read({}) == ""
    assert options.SAVEPOINT_DIR.read({}) == ""
    assert options.STATE_RECOVERY_PATH.read({}) == ""
    assert options.IGNORE_UNCLAIMED_STATE.read({}) is False
    assert options.STATE_BACKEND.read({}) == "HASHMAP"


def test_restart_strategy_defaults():
    assert options.RESTART_TYPE.read({}) == ""  # chosen by whether checkpointing is on
    assert options.FIXED_DELAY_ATTEMPTS.read({}) == 1
    assert options.FIXED_DELAY_DELAY.read({}) == 1000
    assert options.FAILURE_RATE_MAX.read({}) == 1
    assert options.FAILURE_RATE_INTERVAL.read({}) == 60_000
    assert options.FAILURE_RATE_DELAY.read({}) == 1000
    assert options.EXP_INITIAL.read({}) == 1000
    assert options.EXP_MAX.read({}) == 60_000
    assert options.EXP_MULTIPLIER.read({}) == 1.5
    assert options.EXP_RESET.read({}) == 3_600_000
    assert options.EXP_JITTER.read({}) == 0.1
    assert options.EXP_ATTEMPTS.read({}) == 2**31 - 1


def test_the_flink_2_key_names():
    assert [
        options.CHECKPOINT_INTERVAL.key,
        options.CHECKPOINTING_MODE.key,
        options.CHECKPOINT_TIMEOUT.key,
        options.MIN_PAUSE.key,
        options.MAX_CONCURRENT.key,
        options.TOLERABLE_FAILURES.key,
        options.NUM_RETAINED.key,
        options.EXTERNALIZED_RETENTION.key,
        options.UNALIGNED.key,
        options.INCREMENTAL.key,
        options.CHECKPOINT_STORAGE.key,
        options.CHECKPOINT_DIR.key,
        options.SAVEPOINT_DIR.key,
        options.STATE_RECOVERY_PATH.key,
        options.IGNORE_UNCLAIMED_STATE.key,
        options.RESTART_TYPE.key,
    ] == [
        "execution.checkpointing.interval",
        "execution.checkpointing.mode",
        "execution.checkpointing.timeout",
        "execution.checkpointing.min-pause",
        "execution.checkpointing.max-concurrent-checkpoints",
        "execution.checkpointing.tolerable-failed-checkpoints",
        "execution.checkpointing.num-retained",
        "execution.checkpointing.externalized-checkpoint-retention",
        "execution.checkpointing.unaligned.enabled",
        "execution.checkpointing.incremental",
        "execution.checkpointing.storage",
        "execution.checkpointing.dir",
        "execution.checkpointing.savepoint-dir",
        "execution.state-recovery.path",
        "execution.state-recovery.ignore-unclaimed-state",
        "restart-strategy.type",
    ]


def test_every_checkpoint_and_restart_key_is_validated():
    keys = set(options.VALIDATED_OPTIONS)
    for prefix in ("execution.checkpointing.", "execution.state-recovery.", "restart-strategy."):
        declared = {
            option.key
            for option in vars(options).values()
            if isinstance(option, options.ConfigOption) and option.key.startswith(prefix)
        }
        assert declared
        assert declared <= keys


def test_the_failure_injection_key_is_a_lockgate_key():
    assert options.INJECT_FAILURE.key in options.LOCKGATE_OPTIONS


# Valid values -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "parsed"),
    [
        ("execution.checkpointing.interval", "10 s", 10_000),
        ("execution.checkpointing.interval", "1", 1),
        ("execution.checkpointing.mode", "at_least_once", "AT_LEAST_ONCE"),
        ("execution.checkpointing.mode", " EXACTLY_ONCE ", "EXACTLY_ONCE"),
        ("execution.checkpointing.timeout", "1 min", 60_000),
        ("execution.checkpointing.min-pause", "0", 0),
        ("execution.checkpointing.min-pause", "500 ms", 500),
        ("execution.checkpointing.max-concurrent-checkpoints", "3", 3),
        ("execution.checkpointing.tolerable-failed-checkpoints", "0", 0),
        ("execution.checkpointing.num-retained", "5", 5),
        (
            "execution.checkpointing.externalized-checkpoint-retention",
            "retain_on_cancellation",
            "RETAIN_ON_CANCELLATION",
        ),
        ("execution.checkpointing.unaligned.enabled", "TRUE", True),
        ("execution.checkpointing.incremental", "true", True),
        ("execution.checkpointing.storage", "jobmanager", "JOBMANAGER"),
        ("execution.checkpointing.storage", "FileSystem", "FILESYSTEM"),
        ("execution.checkpointing.dir", " s3://bucket/ckpt ", "s3://bucket/ckpt"),
        ("execution.state-recovery.path", "/ckpt/job/chk-3", "/ckpt/job/chk-3"),
        ("execution.state-recovery.ignore-unclaimed-state", "true", True),
        ("state.backend.type", "hashmap", "HASHMAP"),
        ("restart-strategy.type", "fixed-delay", "fixed-delay"),
        ("restart-strategy.type", "OFF", "none"),
        ("restart-strategy.fixed-delay.attempts", "0", 0),
        ("restart-strategy.fixed-delay.delay", "0", 0),
        ("restart-strategy.failure-rate.failure-rate-interval", "1 h", 3_600_000),
        ("restart-strategy.exponential-delay.backoff-multiplier", "2", 2.0),
        ("restart-strategy.exponential-delay.jitter-factor", "0", 0.0),
        ("restart-strategy.exponential-delay.jitter-factor", "1", 1.0),
        ("restart-strategy.exponential-delay.attempts-before-reset-backoff", "1", 1),
    ],
)
def test_valid_values_parse(key, value, parsed):
    validate({key: value})
    assert options.VALIDATED_OPTIONS[key].read({key: value}) == parsed


# Invalid values -----------------------------------------------------------------------------------

DURATION = "a duration such as '500 ms'"


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("execution.checkpointing.interval", "0", DURATION),
        ("execution.checkpointing.interval", "-1", DURATION),
        ("execution.checkpointing.interval", "often", DURATION),
        ("execution.checkpointing.interval", "1.5 s", DURATION),
        ("execution.checkpointing.mode", "EXACTLY-ONCE", "EXACTLY_ONCE or AT_LEAST_ONCE"),
        ("execution.checkpointing.mode", "", "EXACTLY_ONCE or AT_LEAST_ONCE"),
        ("execution.checkpointing.timeout", "0 ms", DURATION),
        ("execution.checkpointing.timeout", "10 lightyears", DURATION),
        ("execution.checkpointing.min-pause", "-5 ms", DURATION),
        ("execution.checkpointing.max-concurrent-checkpoints", "0", "a positive integer"),
        ("execution.checkpointing.tolerable-failed-checkpoints", "-1", "a non-negative integer"),
        ("execution.checkpointing.tolerable-failed-checkpoints", "x", "a non-negative integer"),
        ("execution.checkpointing.num-retained", "0", "a positive integer"),
        ("execution.checkpointing.num-retained", "1.0", "a positive integer"),
        (
            "execution.checkpointing.externalized-checkpoint-retention",
            "RETAIN",
            "NO_EXTERNALIZED_CHECKPOINTS, RETAIN_ON_CANCELLATION or DELETE_ON_CANCELLATION",
        ),
        ("execution.checkpointing.unaligned.enabled", "yes", "true or false"),
        ("execution.checkpointing.incremental", "1", "true or false"),
        ("execution.checkpointing.storage", "rocksdb", "jobmanager or filesystem"),
        ("execution.checkpointing.dir", " ", "an fsspec URL or path"),
        ("execution.checkpointing.dir", "memory://chk", "not a process-local memory://"),
        ("lockgate.work-dir", "MEMORY://work", "not a process-local memory://"),
        ("execution.checkpointing.savepoint-dir", "", "an fsspec URL or path"),
        (
            "execution.state-recovery.path",
            "",
            "a savepoint or chk-<n> directory, or its _metadata file",
        ),
        ("execution.state-recovery.ignore-unclaimed-state", "maybe", "true or false"),
        ("state.backend.type", "forst", "hashmap or rocksdb"),
        ("state.backend.rocksdb.writebuffer.size", "lots", "a memory size such as 64mb"),
        ("lockgate.state.rocksdb.cache-entries", "0", "a positive integer"),
        ("restart-strategy.fixed-delay.attempts", "-1", "a non-negative integer"),
        ("restart-strategy.fixed-delay.delay", "forever", DURATION),
        ("restart-strategy.failure-rate.max-failures-per-interval", "0", "a positive integer"),
        ("restart-strategy.failure-rate.failure-rate-interval", "0", DURATION),
        ("restart-strategy.failure-rate.delay", "-1 s", DURATION),
        ("restart-strategy.exponential-delay.initial-backoff", "1 fortnight", DURATION),
        ("restart-strategy.exponential-delay.max-backoff", "-3", DURATION),
        ("restart-strategy.exponential-delay.backoff-multiplier", "0", "a number greater than 0"),
        ("restart-strategy.exponential-delay.backoff-multiplier", "-2", "a number greater than 0"),
        ("restart-strategy.exponential-delay.backoff-multiplier", "x", "a number greater than 0"),
        ("restart-strategy.exponential-delay.reset-backoff-threshold", "0 s", DURATION),
        ("restart-strategy.exponential-delay.jitter-factor", "1.5", "a number in 0..1"),
        ("restart-strategy.exponential-delay.jitter-factor", "-0.1", "a number in 0..1"),
        (
            "restart-strategy.exponential-delay.attempts-before-reset-backoff",
            "0",
            "a positive integer",
        ),
        ("lockgate.testing.inject-failure", "", "after-snapshot-before-ack@<epoch>"),
    ],
)
def test_invalid_values_name_the_key_and_the_allowed_values(key, value, allowed):
    with pytest.raises(ConfigurationError) as info:
        validate({key: value})
    message = str(info.value)
    assert f"'{key}'" in message
    assert repr(value) in message
    assert allowed in message


def test_an_unknown_restart_strategy_type_names_the_key_and_the_allowed_values():
    with pytest.raises(ConfigurationError) as info:
        validate({"restart-strategy.type": "fixed_delay"})
    message = str(info.value)
    assert "'restart-strategy.type'" in message
    assert "'fixed_delay'" in message
    assert options.RESTART_TYPE.allowed in message


# Through the environment --------------------------------------------------------------------------


def test_the_environment_rejects_a_bad_checkpoint_key_up_front():
    config = Configuration().set_string("execution.checkpointing.num-retained", "0")
    with pytest.raises(ConfigurationError, match=r"'execution\.checkpointing\.num-retained'"):
        StreamExecutionEnvironment.get_execution_environment(config)


def test_the_environment_reads_checkpointing_from_configuration():
    config = Configuration.from_dict(
        {
            "execution.checkpointing.interval": "2 s",
            "execution.checkpointing.mode": "AT_LEAST_ONCE",
        }
    )
    env = StreamExecutionEnvironment.get_execution_environment(config)
    assert env.get_checkpoint_interval() == 2000
    assert env.get_checkpointing_mode().value == "AT_LEAST_ONCE"
    assert env.get_checkpoint_config().is_checkpointing_enabled()


def test_configure_rejects_a_bad_checkpoint_value_and_keeps_the_old_one():
    env = StreamExecutionEnvironment()
    env.configure(Configuration().set_string("execution.checkpointing.timeout", "1 min"))
    with pytest.raises(ConfigurationError, match=r"execution\.checkpointing\.timeout"):
        env.configure(Configuration().set_string("execution.checkpointing.timeout", "0"))
    assert env.get_checkpoint_config().get_checkpoint_timeout() == 60_000

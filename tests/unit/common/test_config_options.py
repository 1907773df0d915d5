"""config_options.validate: bad configuration fails early, naming the key and what it allows."""

from __future__ import annotations

import pytest

from lockgate.common import Configuration, ConfigurationError
from lockgate.common import config_options as options
from lockgate.common.config_options import LOCKGATE_OPTIONS, validate
from lockgate.datastream import StreamExecutionEnvironment


def test_empty_configuration_is_valid():
    validate({})


def test_known_keys_with_valid_values_pass():
    validate(
        {
            "lockgate.epoch.max-records-per-split": "500",
            "lockgate.work-dir": "/tmp/somewhere",
            "lockgate.progress": "true",
            "lockgate.source.idle-poll-ms": "50",
            "lockgate.shuffle.batch.max-records": "100",
            "lockgate.shuffle.batch.max-size": "256kb",
            "parallelism.default": "4",
            "pipeline.max-parallelism": "256",
            "execution.runtime-mode": "BATCH",
        }
    )


def test_unknown_lockgate_key_fails_naming_it_and_listing_known_keys():
    with pytest.raises(ConfigurationError) as info:
        validate({"lockgate.epoch.max-record-per-split": "10"})
    message = str(info.value)
    assert "'lockgate.epoch.max-record-per-split'" in message
    for key in LOCKGATE_OPTIONS:
        assert key in message
    assert "lockgate.epoch.max-records-per-split" in message


def test_configuration_error_is_a_value_error():
    assert issubclass(ConfigurationError, ValueError)


@pytest.mark.parametrize(
    "key",
    ["spark.master", "spark.sql.shuffle.partitions", "my.own.key", "pipeline.name",
     "lockgate"],
)  # fmt: skip
def test_non_lockgate_unknown_keys_are_accepted(key):
    validate({key: "anything"})


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("lockgate.epoch.max-records-per-split", "0", "a positive integer"),
        ("lockgate.epoch.max-records-per-split", "-5", "a positive integer"),
        ("lockgate.epoch.max-records-per-split", "ten", "a positive integer"),
        ("lockgate.epoch.max-records-per-split", "1.5", "a positive integer"),
        ("lockgate.epoch.max-records-per-split", "", "a positive integer"),
        ("lockgate.epoch.target-duration", "-1 s", "a duration"),
        ("lockgate.epoch.target-duration", "soon", "a duration"),
        ("parallelism.default", "-2", "a positive integer (or -1"),
        ("parallelism.default", "two", "a positive integer (or -1"),
        ("pipeline.max-parallelism", "0", "1..32768"),
        ("pipeline.max-parallelism", "32769", "1..32768"),
        ("pipeline.max-parallelism", "-2", "1..32768"),
        ("pipeline.max-parallelism", "lots", "1..32768"),
        ("execution.runtime-mode", "STREAM", "STREAMING, BATCH or AUTOMATIC"),
        ("execution.runtime-mode", "", "STREAMING, BATCH or AUTOMATIC"),
        ("lockgate.progress", "yes", "true or false"),
        ("lockgate.source.idle-poll-ms", "0", "a positive integer"),
        ("lockgate.shuffle.batch.max-records", "0", "a positive integer"),
        ("lockgate.shuffle.batch.max-size", "0", "a memory size"),
        ("lockgate.shuffle.batch.max-size", "1.5mb", "a memory size"),
        ("lockgate.shuffle.batch.max-size", "lots", "a memory size"),
        ("lockgate.work-dir", "  ", "fsspec URL"),
    ],
)
def test_invalid_values_name_the_key_and_the_allowed_values(key, value, allowed):
    with pytest.raises(ConfigurationError) as info:
        validate({key: value})
    message = str(info.value)
    assert f"'{key}'" in message
    assert repr(value) in message
    assert allowed in message


@pytest.mark.parametrize(
    ("key", "value", "parsed"),
    [
        ("parallelism.default", "-1", -1),
        ("parallelism.default", "8", 8),
        ("pipeline.max-parallelism", "-1", -1),
        ("pipeline.max-parallelism", "1", 1),
        ("pipeline.max-parallelism", "32768", 32768),
        ("execution.runtime-mode", "batch", "BATCH"),
        ("execution.runtime-mode", " Automatic ", "AUTOMATIC"),
        ("lockgate.progress", "FALSE", False),
        ("lockgate.epoch.max-records-per-split", " 7 ", 7),
    ],
)
def test_valid_values_parse(key, value, parsed):
    validate({key: value})
    assert options.VALIDATED_OPTIONS[key].read({key: value}) == parsed


def test_defaults_when_unset():
    assert options.PARALLELISM.read({}) == -1
    assert options.MAX_PARALLELISM.read({}) == -1
    assert options.RUNTIME_MODE.read({}) == "STREAMING"
    assert options.EPOCH_MAX_RECORDS_PER_SPLIT.read({}) == 1_000_000
    assert options.EPOCH_TARGET_DURATION.read({}) == 1000
    assert options.PROGRESS.read({}) is False


@pytest.mark.parametrize(
    ("option", "old_key"),
    [
        (options.STATE_RECOVERY_PATH, "execution.savepoint.path"),
        (options.IGNORE_UNCLAIMED_STATE, "execution.savepoint.ignore-unclaimed-state"),
        (options.SAVEPOINT_DIR, "state.savepoints.dir"),
        (options.CHECKPOINT_DIR, "state.checkpoints.dir"),
    ],
)
def test_flink_s_older_key_is_read_when_the_key_is_not_set(option, old_key):
    value = "true" if option is options.IGNORE_UNCLAIMED_STATE else "/data/x"
    assert option.read({old_key: value}) == option.parse(value)
    assert option.read({old_key: value, option.key: "false"}) == option.parse("false")
    with pytest.raises(
        ConfigurationError, match=f"invalid value '' for configuration key '{old_key}'"
    ):
        option.read({old_key: ""})


def test_parallelism_zero_is_rejected():
    with pytest.raises(ConfigurationError, match=r"parallelism\.default"):
        validate({"parallelism.default": "0"})


# The environment validates its configuration up front (without starting Spark). -------------


def test_get_execution_environment_rejects_a_bad_lockgate_key_immediately():
    config = Configuration().set_string("lockgate.no-such-option", "1")
    with pytest.raises(ConfigurationError, match=r"'lockgate\.no-such-option'"):
        StreamExecutionEnvironment.get_execution_environment(config)


def test_get_execution_environment_rejects_a_bad_value_immediately():
    config = Configuration().set_string("pipeline.max-parallelism", "40000")
    with pytest.raises(ConfigurationError, match=r"'pipeline\.max-parallelism'.*1\.\.32768"):
        StreamExecutionEnvironment.get_execution_environment(config)


def test_get_execution_environment_accepts_a_good_configuration_without_spark():
    config = Configuration().set_integer("parallelism.default", 3)
    config.set_string("spark.master", "local[1]")
    env = StreamExecutionEnvironment.get_execution_environment(config)
    assert env.get_parallelism() == 3  # read from the configuration: no Spark session needed
    assert env._spark is None


def test_configure_rejects_bad_keys_and_keeps_the_old_configuration():
    env = StreamExecutionEnvironment.get_execution_environment(
        Configuration().set_integer("lockgate.epoch.max-records-per-split", 10)
    )
    bad = Configuration().set_string("lockgate.epoch.max-records-per-split", "none")
    with pytest.raises(ConfigurationError, match="max-records-per-split"):
        env.configure(bad)
    assert env.get_configuration().get_integer("lockgate.epoch.max-records-per-split", 0) == 10


def test_environment_setters_validate_their_arguments():
    env = StreamExecutionEnvironment()
    with pytest.raises(ValueError, match="parallelism"):
        env.set_parallelism(0)
    with pytest.raises(ValueError, match="32768"):
        env.set_max_parallelism(32769)
    env.set_max_parallelism(64)
    assert env.get_max_parallelism() == 64

"""CheckpointConfig: every setter is a Flink 2.x key, validated as a Configuration would be."""

from __future__ import annotations

import pytest

from lockgate.common import Configuration, ConfigurationError, RestartStrategies
from lockgate.common import config_options as options
from lockgate.common.unsupported import NotSupportedYetError
from lockgate.datastream import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
    StreamExecutionEnvironment,
)
from lockgate.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)


@pytest.fixture
def config() -> Configuration:
    return Configuration()


def test_defaults(config):
    cc = CheckpointConfig(config)
    assert not cc.is_checkpointing_enabled()
    assert cc.get_checkpoint_interval() == -1
    assert cc.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE
    assert cc.get_checkpoint_timeout() == 600_000
    assert cc.get_min_pause_between_checkpoints() == 0
    assert cc.get_max_concurrent_checkpoints() == 1
    assert cc.get_tolerable_checkpoint_failure_number() == 0
    retention = cc.get_externalized_checkpoint_retention()
    assert retention is ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    assert not cc.is_externalized_checkpoints_enabled()
    assert cc.is_unaligned_checkpoints_enabled() is False
    assert isinstance(cc.get_checkpoint_storage(), JobManagerCheckpointStorage)
    assert config.to_dict() == {}  # reading writes nothing


def test_enum_values_are_the_configuration_values():
    assert [m.value for m in CheckpointingMode] == ["EXACTLY_ONCE", "AT_LEAST_ONCE"]
    assert {r.value for r in ExternalizedCheckpointRetention} == {
        "DELETE_ON_CANCELLATION",
        "RETAIN_ON_CANCELLATION",
        "NO_EXTERNALIZED_CHECKPOINTS",
    }


@pytest.mark.parametrize(
    ("setter", "argument", "key", "stored", "getter", "read_back"),
    [
        (
            "set_checkpoint_interval",
            5000,
            "execution.checkpointing.interval",
            "5000 ms",
            "get_checkpoint_interval",
            5000,
        ),
        (
            "set_checkpointing_mode",
            CheckpointingMode.AT_LEAST_ONCE,
            "execution.checkpointing.mode",
            "AT_LEAST_ONCE",
            "get_checkpointing_mode",
            CheckpointingMode.AT_LEAST_ONCE,
        ),
        (
            "set_checkpoint_timeout",
            30_000,
            "execution.checkpointing.timeout",
            "30000 ms",
            "get_checkpoint_timeout",
            30_000,
        ),
        (
            "set_min_pause_between_checkpoints",
            250,
            "execution.checkpointing.min-pause",
            "250 ms",
            "get_min_pause_between_checkpoints",
            250,
        ),
        (
            "set_max_concurrent_checkpoints",
            2,
            "execution.checkpointing.max-concurrent-checkpoints",
            "2",
            "get_max_concurrent_checkpoints",
            2,
        ),
        (
            "set_tolerable_checkpoint_failure_number",
            3,
            "execution.checkpointing.tolerable-failed-checkpoints",
            "3",
            "get_tolerable_checkpoint_failure_number",
            3,
        ),
        (
            "set_externalized_checkpoint_retention",
            ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
            "execution.checkpointing.externalized-checkpoint-retention",
            "RETAIN_ON_CANCELLATION",
            "get_externalized_checkpoint_retention",
            ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION,
        ),
        (
            "enable_externalized_checkpoints",
            ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION,
            "execution.checkpointing.externalized-checkpoint-retention",
            "DELETE_ON_CANCELLATION",
            "get_externalized_checkpoint_retention",
            ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION,
        ),
        (
            "enable_unaligned_checkpoints",
            True,
            "execution.checkpointing.unaligned.enabled",
            "true",
            "is_unaligned_checkpoints_enabled",
            True,
        ),
        (
            "enable_unaligned_checkpoints",
            False,
            "execution.checkpointing.unaligned.enabled",
            "false",
            "is_unaligned_checkpoints_enabled",
            False,
        ),
    ],
)
def test_setters_write_the_key_a_configuration_would(
    config, setter, argument, key, stored, getter, read_back
):
    cc = CheckpointConfig(config)
    assert getattr(cc, setter)(argument) is cc  # chainable
    assert config.to_dict() == {key: stored}
    assert getattr(cc, getter)() == read_back
    # the same key set on a Configuration reads back the same way
    assert getattr(CheckpointConfig(Configuration().set_string(key, stored)), getter)() == (
        read_back
    )
    option = options.VALIDATED_OPTIONS[key]
    assert option.read(config.to_dict()) == option.read({key: stored})


def test_enable_unaligned_checkpoints_defaults_to_true(config):
    CheckpointConfig(config).enable_unaligned_checkpoints()
    assert config.to_dict() == {"execution.checkpointing.unaligned.enabled": "true"}


def test_set_num_retained_checkpoints(config):
    CheckpointConfig(config).set_num_retained_checkpoints(4)
    assert config.to_dict() == {"execution.checkpointing.num-retained": "4"}
    assert options.NUM_RETAINED.read(config.to_dict()) == 4


def test_setting_an_interval_enables_checkpointing(config):
    cc = CheckpointConfig(config).set_checkpoint_interval(1)
    assert cc.is_checkpointing_enabled()
    assert cc.get_checkpoint_interval() == 1


def test_externalized_checkpoints_enabled_unless_no_externalized(config):
    cc = CheckpointConfig(config)
    cc.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION)
    assert cc.is_externalized_checkpoints_enabled()
    cc.set_externalized_checkpoint_retention(
        ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS
    )
    assert not cc.is_externalized_checkpoints_enabled()


def test_reading_durations_written_in_flink_syntax(config):
    config.set_string("execution.checkpointing.interval", "1 min")
    config.set_string("execution.checkpointing.timeout", "2h")
    cc = CheckpointConfig(config)
    assert cc.get_checkpoint_interval() == 60_000
    assert cc.get_checkpoint_timeout() == 7_200_000


# Rejected values ----------------------------------------------------------------------------------


@pytest.mark.parametrize("interval", [0, -1, -1000])
def test_an_interval_below_one_ms_is_rejected(config, interval):
    with pytest.raises(ValueError, match=f"at least 1 ms, got {interval}"):
        CheckpointConfig(config).set_checkpoint_interval(interval)
    assert config.to_dict() == {}


@pytest.mark.parametrize(
    ("setter", "value", "key"),
    [
        ("set_checkpoint_timeout", 0, "execution.checkpointing.timeout"),
        ("set_checkpoint_timeout", -5, "execution.checkpointing.timeout"),
        ("set_min_pause_between_checkpoints", -1, "execution.checkpointing.min-pause"),
        ("set_max_concurrent_checkpoints", 0, "execution.checkpointing.max-concurrent-checkpoints"),
        (
            "set_tolerable_checkpoint_failure_number",
            -1,
            "execution.checkpointing.tolerable-failed-checkpoints",
        ),
        ("set_num_retained_checkpoints", 0, "execution.checkpointing.num-retained"),
    ],
)
def test_bad_values_are_rejected_naming_the_key(config, setter, value, key):
    with pytest.raises(ConfigurationError) as info:
        getattr(CheckpointConfig(config), setter)(value)
    assert f"'{key}'" in str(info.value)
    assert "allowed values are" in str(info.value)


def test_a_rejected_value_leaves_the_previous_value_in_place(config):
    cc = CheckpointConfig(config)
    cc.set_checkpoint_timeout(5000)
    with pytest.raises(ConfigurationError):
        cc.set_checkpoint_timeout(0)
    assert cc.get_checkpoint_timeout() == 5000
    assert config.to_dict() == {"execution.checkpointing.timeout": "5000 ms"}


# Checkpoint storage -------------------------------------------------------------------------------


def test_filesystem_storage_writes_storage_and_dir(config):
    cc = CheckpointConfig(config)
    cc.set_checkpoint_storage(FileSystemCheckpointStorage("s3://bucket/ckpts"))
    assert config.to_dict() == {
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": "s3://bucket/ckpts",
    }
    storage = cc.get_checkpoint_storage()
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.get_checkpoint_path() == "s3://bucket/ckpts"


def test_set_checkpoint_storage_dir_is_filesystem_storage(config, tmp_path):
    assert CheckpointConfig(config).set_checkpoint_storage_dir(str(tmp_path)) is not None
    assert config.to_dict() == {
        "execution.checkpointing.storage": "filesystem",
        "execution.checkpointing.dir": str(tmp_path),
    }


def test_jobmanager_storage(config):
    cc = CheckpointConfig(config)
    cc.set_checkpoint_storage(JobManagerCheckpointStorage())
    assert config.to_dict() == {"execution.checkpointing.storage": "jobmanager"}
    assert isinstance(cc.get_checkpoint_storage(), JobManagerCheckpointStorage)


def test_jobmanager_storage_wins_over_a_directory(config):
    cc = CheckpointConfig(config)
    cc.set_checkpoint_storage_dir("/ckpts")
    cc.set_checkpoint_storage(JobManagerCheckpointStorage())
    storage = cc.get_checkpoint_storage()
    assert isinstance(storage, JobManagerCheckpointStorage)
    assert storage.checkpoint_path == "/ckpts"


def test_a_directory_key_alone_means_filesystem_storage():
    cc = CheckpointConfig(Configuration().set_string("execution.checkpointing.dir", "/x"))
    storage = cc.get_checkpoint_storage()
    assert isinstance(storage, FileSystemCheckpointStorage)
    assert storage.checkpoint_path == "/x"


def test_storage_classes():
    assert issubclass(FileSystemCheckpointStorage, CheckpointStorage)
    assert issubclass(JobManagerCheckpointStorage, CheckpointStorage)
    with pytest.raises(ValueError, match="checkpoint path"):
        FileSystemCheckpointStorage("")
    assert JobManagerCheckpointStorage("/p").checkpoint_path == "/p"
    # sizes lockgate would not act on are refused, not kept and ignored
    with pytest.raises(NotSupportedYetError, match="max_state_size"):
        JobManagerCheckpointStorage("/p", max_state_size=10)
    with pytest.raises(NotSupportedYetError, match="file_state_size_threshold"):
        FileSystemCheckpointStorage("/p", file_state_size_threshold=1024)


# Through the environment --------------------------------------------------------------------------


def test_enable_checkpointing_writes_interval_and_mode():
    env = StreamExecutionEnvironment()
    assert env.enable_checkpointing(2000, CheckpointingMode.AT_LEAST_ONCE) is env
    config = env.get_configuration().to_dict()
    assert config["execution.checkpointing.interval"] == "2000 ms"
    assert config["execution.checkpointing.mode"] == "AT_LEAST_ONCE"
    assert env.get_checkpoint_interval() == 2000
    assert env.get_checkpointing_mode() is CheckpointingMode.AT_LEAST_ONCE


def test_enable_checkpointing_without_a_mode_keeps_exactly_once():
    env = StreamExecutionEnvironment()
    env.enable_checkpointing(100)
    assert "execution.checkpointing.mode" not in env.get_configuration().to_dict()
    assert env.get_checkpointing_mode() is CheckpointingMode.EXACTLY_ONCE


def test_environment_checkpoint_config_writes_through():
    env = StreamExecutionEnvironment()
    env.get_checkpoint_config().set_tolerable_checkpoint_failure_number(2)
    env.get_checkpoint_config().set_checkpoint_storage_dir("s3://bucket/ckpts")
    config = env.get_configuration().to_dict()
    assert config["execution.checkpointing.tolerable-failed-checkpoints"] == "2"
    assert config["execution.checkpointing.dir"] == "s3://bucket/ckpts"


def test_api_and_configuration_give_the_same_settings():
    api = StreamExecutionEnvironment()
    api.enable_checkpointing(1000, CheckpointingMode.EXACTLY_ONCE)
    cc = api.get_checkpoint_config()
    cc.set_checkpoint_timeout(20_000)
    cc.set_min_pause_between_checkpoints(300)
    cc.set_tolerable_checkpoint_failure_number(1)
    cc.set_num_retained_checkpoints(3)
    cc.set_externalized_checkpoint_retention(ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION)
    keys = StreamExecutionEnvironment(
        Configuration.from_dict(
            {
                "execution.checkpointing.interval": "1 s",
                "execution.checkpointing.mode": "EXACTLY_ONCE",
                "execution.checkpointing.timeout": "20 s",
                "execution.checkpointing.min-pause": "300",
                "execution.checkpointing.tolerable-failed-checkpoints": "1",
                "execution.checkpointing.num-retained": "3",
                "execution.checkpointing.externalized-checkpoint-retention": (
                    "RETAIN_ON_CANCELLATION"
                ),
            }
        )
    )
    first, second = api.get_configuration().to_dict(), keys.get_configuration().to_dict()
    assert first.keys() == second.keys()
    for key in first:
        option = options.VALIDATED_OPTIONS[key]
        assert option.read(first) == option.read(second), key


def _set_restart_strategy(env: StreamExecutionEnvironment) -> None:
    env.set_restart_strategy(RestartStrategies.fixed_delay_restart(3, 100))


def _configure(env: StreamExecutionEnvironment) -> None:
    env.configure(Configuration().set_string("pipeline.name", "job"))


@pytest.mark.parametrize("change", [_set_restart_strategy, _configure])
def test_a_checkpoint_config_obtained_earlier_still_configures_the_job(change):
    env = StreamExecutionEnvironment()
    cc = env.get_checkpoint_config()
    change(env)
    cc.set_checkpoint_interval(1000)
    assert env.get_checkpoint_interval() == 1000
    assert env.get_configuration().get_string("execution.checkpointing.interval", "") == "1000 ms"


def test_fail_on_checkpointing_errors_is_the_tolerable_failure_number():
    config = CheckpointConfig(Configuration())
    assert config.is_fail_on_checkpointing_errors()
    config.set_fail_on_checkpointing_errors(False)
    assert config.get_tolerable_checkpoint_failure_number() == 2147483647
    assert not config.is_fail_on_checkpointing_errors()
    config.set_fail_on_checkpointing_errors(True)
    assert config.get_tolerable_checkpoint_failure_number() == 0


def test_unaligned_checkpoints_are_never_forced():
    config = CheckpointConfig(Configuration())
    config.enable_unaligned_checkpoints()
    config.disable_unaligned_checkpoints()
    assert not config.is_unaligned_checkpoints_enabled()
    assert config.set_force_unaligned_checkpoints(False) is config
    assert not config.is_force_unaligned_checkpoints()

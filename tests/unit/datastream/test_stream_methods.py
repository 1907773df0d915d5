"""PyFlink's DataStream and environment methods that lockgate honors: get_type, project,
set_description, the environment's getters, close."""

from __future__ import annotations

import os

import pytest

from lockgate.common import Configuration, ConfigurationError, Types
from lockgate.common.typeinfo import PickledBytesTypeInfo
from lockgate.datastream import CheckpointingMode, StreamExecutionEnvironment
from lockgate.datastream.data_stream import Projection


def env_of() -> StreamExecutionEnvironment:
    return StreamExecutionEnvironment().set_parallelism(1)


def test_get_type_is_the_declared_type_or_pickled_bytes():
    env = env_of()
    untyped = env.from_collection([1, 2])
    assert isinstance(untyped.get_type(), PickledBytesTypeInfo)
    typed = env.from_collection([(1, "a")], type_info=Types.TUPLE([Types.INT(), Types.STRING()]))
    assert typed.get_type() == Types.TUPLE([Types.INT(), Types.STRING()])
    # through filters, partitionings and keying: the same records
    assert typed.filter(bool).rebalance().key_by(lambda r: r[0]).get_type() == typed.get_type()
    assert typed.map(str, output_type=Types.STRING()).get_type() == Types.STRING()


def test_project_keeps_the_tuple_fields_in_the_order_given():
    env = env_of()
    typed = env.from_collection(
        [(1, "a", 2.5)], type_info=Types.TUPLE([Types.INT(), Types.STRING(), Types.DOUBLE()])
    )
    projected = typed.project(2, 0)
    assert projected.get_type() == Types.TUPLE([Types.DOUBLE(), Types.INT()])
    assert projected.get_name() == "Projection"
    assert Projection((2, 0)).map((1, "a", 2.5)) == (2.5, 1)
    # a keyed stream projects its records too, as PyFlink's does
    assert typed.key_by(lambda r: r[0]).project(1).get_type() == Types.TUPLE([Types.STRING()])


def test_project_needs_a_tuple_stream():
    env = env_of()
    with pytest.raises(TypeError, match="Only Tuple DataStreams can be projected"):
        env.from_collection([(1, "a")]).project(0)
    rows = env.from_collection([(1,)], type_info=Types.ROW([Types.INT()]))
    with pytest.raises(TypeError, match="Only Tuple DataStreams can be projected"):
        rows.project(0)
    typed = env.from_collection([(1,)], type_info=Types.TUPLE([Types.INT()]))
    with pytest.raises(IndexError, match="out of range"):
        typed.project(1)


def test_set_description_applies_to_operators_not_to_partitionings():
    stream = env_of().from_collection([1]).map(str).set_description("renders numbers")
    assert stream._transformation.description == "renders numbers"
    with pytest.raises(ValueError, match="applies to an operator"):
        stream.rebalance().set_description("x")


def test_environment_getters():
    env = env_of()
    assert env.get_checkpointing_consistency_mode() is CheckpointingMode.EXACTLY_ONCE
    env.enable_checkpointing(1000, CheckpointingMode.AT_LEAST_ONCE)
    assert env.get_checkpointing_consistency_mode() is CheckpointingMode.AT_LEAST_ONCE
    assert env.is_chaining_of_operators_with_different_max_parallelism_enabled()
    assert env.get_default_local_parallelism() == os.cpu_count()
    assert not env.is_unaligned_checkpoints_enabled()
    assert not env.is_force_unaligned_checkpoints()
    assert env.enable_changelog_state_backend(False) is env
    assert env.is_changelog_state_backend_enabled() is False


def test_close_discards_the_declared_job_and_can_be_repeated():
    env = env_of()
    env.from_collection([1]).print()
    env.close()
    env.close()
    assert env._transformations == []
    env.from_collection([2]).print()  # still usable: a new job
    assert len(env._transformations) == 2


def test_the_execution_config_is_the_environments_parallelism_settings():
    env = StreamExecutionEnvironment()
    config = env.get_config()
    assert config.get_parallelism() == -1 and config.get_max_parallelism() == -1
    config.set_parallelism(3).set_max_parallelism(64)
    assert env.get_parallelism() == 3 and env.get_max_parallelism() == 64
    assert env.get_configuration().get_integer("parallelism.default", 0) == 3
    stream = env.from_collection([1])
    assert stream.get_execution_config().get_parallelism() == 3
    env.set_parallelism(2)
    assert config.get_parallelism() == 2
    with pytest.raises(ValueError, match="parallelism must be a positive integer"):
        config.set_parallelism(0)
    with pytest.raises(ValueError, match=r"max parallelism must be in 1\.\.32768"):
        config.set_max_parallelism(40000)


def test_the_execution_config_describes_lockgate():
    config = env_of().get_config()
    assert config.is_object_reuse_enabled() and config.has_auto_generated_uids_enabled()
    assert not config.is_closure_cleaner_enabled() and not config.is_force_kryo_enabled()
    assert not config.is_force_avro_enabled() and not config.has_generic_types_disabled()
    assert not config.is_use_snapshot_compression()
    assert config.get_latency_tracking_interval() == 0
    # what is already so is accepted
    for method in (
        "enable_object_reuse",
        "enable_auto_generated_uids",
        "enable_generic_types",
        "disable_closure_cleaner",
        "disable_force_kryo",
        "disable_force_avro",
    ):
        assert getattr(config, method)() is config
    assert config.set_use_snapshot_compression(False) is config
    assert config.set_latency_tracking_interval(0) is config


def test_global_job_parameters_are_the_flink_setting_and_reach_the_job_graph():
    env = env_of()
    config = env.get_config()
    assert config.get_global_job_parameters() == {}
    parameters = {"url": "http://host:80/a,b", "quote": "it's", "empty": ""}
    config.set_global_job_parameters(parameters)
    assert config.get_global_job_parameters() == parameters
    env.from_collection([1]).print()
    assert env._job_graph(env._transformations).job_parameters == parameters
    raw = Configuration().set_string("pipeline.global-job-parameters", "a:1, b:'x,y'")
    assert StreamExecutionEnvironment(raw).get_config().get_global_job_parameters() == {
        "a": "1",
        "b": "x,y",
    }
    with pytest.raises(TypeError, match="job parameters are strings"):
        config.set_global_job_parameters({"n": 1})


def test_a_malformed_job_parameters_setting_fails_naming_the_key():
    raw = Configuration().set_string("pipeline.global-job-parameters", "novalue")
    with pytest.raises(ConfigurationError, match=r"pipeline\.global-job-parameters"):
        StreamExecutionEnvironment(raw)

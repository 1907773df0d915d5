"""PyFlink's DataStream and environment methods that lockgate honors: get_type, project,
set_description, the environment's getters, close."""

from __future__ import annotations

import os

import pytest

from lockgate.common import Types
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

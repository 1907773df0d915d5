"""Pipelined epochs: the source stages of epoch n+1 run while epoch n's keyed stage does.

Results, checkpoints and the exactly-once output are those of epochs run one after another;
a failure in a source stage that ran ahead fails over like a failure of its epoch.
"""

from __future__ import annotations

from exactly_once_job import (
    EPOCHS,
    PARALLELISMS,
    Trap,
    assert_committed_output_exact,
    assert_ran_epochs,
    build_job,
    checkpointed_env,
    record_in_epoch,
)
from lockgate_it_support import BACKENDS

from lockgate.datastream import MapFunction


class TrapInSource(MapFunction):
    def __init__(self, trap: Trap):
        self.trap = trap

    def map(self, value):
        self.trap(value)
        return value


@BACKENDS
@PARALLELISMS
def test_source_stages_run_ahead_and_the_output_is_exact(make_env, tmp_path, parallelism):
    env = checkpointed_env(make_env, tmp_path / "checkpoints", parallelism)
    build_job(env, tmp_path / "out", parallelism)
    result = env.execute("pipelined")
    # Every epoch after the first started its sources while the one before it ran, and
    # none rebuilt a subtask: each went on from the version the epoch before accepted.
    assert [e.sources_ahead for e in result.epochs] == [False] + [True] * (EPOCHS - 1)
    assert [e.restored_subtasks for e in result.epochs][1:] == [0] * (EPOCHS - 1)
    assert_ran_epochs(result)  # and a checkpoint after every epoch, as asked
    assert_committed_output_exact(tmp_path / "out", parallelism)


@BACKENDS
def test_a_failure_in_a_source_stage_that_ran_ahead_fails_over_as_its_epoch(make_env, tmp_path):
    # Two raises exhaust Spark's one task retry (local[2,2]): the restart strategy takes over.
    trap = Trap(record_in_epoch(4), tmp_path / "markers", times=2)
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 1)
    build_job(env, tmp_path / "out", 1, observer=TrapInSource(trap))
    result = env.execute("source failure ahead")
    assert trap.fired() == 2
    assert result.restarts == 1
    ahead = {e.epoch: e.sources_ahead for e in result.epochs}
    assert ahead[3], "epochs were pipelined: epoch 4's sources were started during epoch 3"
    assert not ahead[4], "epoch 4 ran again from the checkpoint of epoch 3, its sources anew"
    assert_ran_epochs(result)  # restored from the checkpoint of epoch 3: no epoch ran twice
    assert_committed_output_exact(tmp_path / "out", 1)


@BACKENDS
def test_a_failure_of_an_epoch_drops_the_sources_started_ahead(make_env, tmp_path):
    trap = Trap(record_in_epoch(3), tmp_path / "markers", times=2)  # in the keyed stage
    env = checkpointed_env(make_env, tmp_path / "checkpoints", 2)
    build_job(env, tmp_path / "out", 2, trap)
    result = env.execute("keyed failure")
    assert trap.fired() == 2 and result.restarts == 1
    assert_ran_epochs(result)
    ahead = {e.epoch: e.sources_ahead for e in result.epochs}
    assert not ahead[3], "epoch 3 ran again from its checkpoint, its sources anew"
    assert ahead[4]
    assert_committed_output_exact(tmp_path / "out", 2)

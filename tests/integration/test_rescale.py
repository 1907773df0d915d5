"""Rescaling: a job resumed at another parallelism from a retained checkpoint gets every
key's state on the subtask the key-group formulas give, and its sources read on from where
they were, so the committed output of all runs together is exactly that of one run."""

from __future__ import annotations

import pytest
from exactly_once_job import (
    RETAIN,
    assert_committed_output_exact,
    build_job,
    checkpointed_env,
    chk_dirs,
    only_job_dir,
    recovery_settings,
)
from lockgate_it_support import EACH_BACKEND

from lockgate.common import RestartStrategies
from lockgate.runtime.errors import JobExecutionError

SPLITS = 2


def failing_run(make_env, tmp_path, name, parallelism, resume=None):
    """A run that fails after its second checkpoint's _metadata (before its commit), and
    returns that checkpoint."""
    checkpoints = tmp_path / name
    settings = {"lockgate.testing.inject-failure": "after-metadata-before-commit@2"}
    if resume is not None:
        settings.update(recovery_settings(resume))
    env = checkpointed_env(
        make_env,
        checkpoints,
        parallelism,
        settings=settings,
        retention=RETAIN,
        restart=RestartStrategies.no_restart(),
    )
    build_job(env, tmp_path / "out", SPLITS, source_parallelism=parallelism)
    with pytest.raises(JobExecutionError, match="after-metadata-before-commit"):
        env.execute(name)
    return chk_dirs(only_job_dir(checkpoints))[-1]


@EACH_BACKEND  # RocksDB's rescale clips instances to key-group ranges: its own path
def test_state_and_sources_move_with_the_parallelism(make_env, tmp_path):
    """2 subtasks, then 3, then 1: keyed state by key group, the collection's two chunks
    spread over the source's subtasks (one of three idle), the pending files committed."""
    first = failing_run(make_env, tmp_path, "at-2", 2)
    second = failing_run(make_env, tmp_path, "at-3", 3, resume=first)
    env = checkpointed_env(make_env, tmp_path / "at-1", 1, settings=recovery_settings(second))
    build_job(env, tmp_path / "out", SPLITS, source_parallelism=1)
    result = env.execute("at 1")
    assert [e.epoch for e in result.epochs] == [5, 6]
    assert_committed_output_exact(tmp_path / "out", SPLITS)

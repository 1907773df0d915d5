"""State belongs to operator uids, not to chains: a job whose operators chain differently
after a restore gets every operator's state back and commits every pending file."""

from __future__ import annotations

import pytest
from exactly_once_job import (
    RETAIN,
    assert_committed_output_exact,
    build_job,
    checkpointed_env,
    chk_dirs,
    metadata_body,
    only_job_dir,
    recovery_settings,
)

from lockgate.common import RestartStrategies
from lockgate.runtime.errors import JobExecutionError


@pytest.mark.parametrize("first_apart", [False, True])
def test_a_restore_with_other_chaining_commits_every_pending_file(make_env, tmp_path, first_apart):
    """The first run fails after chk-4's _metadata, before its commit: chk-4 holds the
    sink's pending files. The second run chains the sink the other way and resumes."""
    checkpoints = tmp_path / "checkpoints"
    env = checkpointed_env(
        make_env,
        checkpoints,
        3,
        settings={"lockgate.testing.inject-failure": "after-metadata-before-commit@4"},
        retained=2,
        retention=RETAIN,
        restart=RestartStrategies.no_restart(),
    )
    build_job(env, tmp_path / "out", 3, sink_apart=first_apart)
    with pytest.raises(JobExecutionError, match="after-metadata-before-commit"):
        env.execute("first run")
    latest = chk_dirs(only_job_dir(checkpoints))[-1]
    sink = metadata_body(latest)["operators"]["file-sink"]
    assert any(s["operator_state"]["committables"] for s in sink["subtasks"]), sink

    env = checkpointed_env(make_env, tmp_path / "again", 3, settings=recovery_settings(latest))
    build_job(env, tmp_path / "out", 3, sink_apart=not first_apart)
    result = env.execute("second run, chained the other way")
    assert [e.epoch for e in result.epochs] == [5, 6]
    assert_committed_output_exact(tmp_path / "out", 3)

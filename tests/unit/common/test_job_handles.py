from concurrent.futures import CancelledError, Future

import pytest

from lockgate.common import CompletableFuture, JobID, JobStatus


def test_job_status_values_and_terminal_states_are_pyflinks():
    assert [s.value for s in JobStatus] == list(range(10))
    terminal = {s for s in JobStatus if s.is_terminal_state()}
    globally = {s for s in JobStatus if s.is_globally_terminal_state()}
    assert globally == {JobStatus.FAILED, JobStatus.CANCELED, JobStatus.FINISHED}
    assert terminal == globally | {JobStatus.SUSPENDED}


def test_job_ids_print_as_hex_and_compare_by_value():
    assert str(JobID("ab" * 16)) == "ab" * 16
    assert JobID("ab" * 16) == JobID("ab" * 16)
    assert len({JobID("ab" * 16), JobID("ab" * 16), JobID("cd" * 16)}) == 2


def test_a_future_converts_its_source_result_and_times_out_while_waiting():
    source: Future[int] = Future()
    future = CompletableFuture.of(source, str)
    with pytest.raises(TimeoutError):
        future.result(timeout=0.01)
    assert not future.done() and future.exception() is None
    source.set_result(7)
    assert future.result(timeout=0) == "7" and future.exception() is None


def test_a_failure_of_the_source_or_the_conversion_fails_the_future():
    source: Future[int] = Future()
    future = CompletableFuture.of(source, str)
    source.set_exception(ValueError("boom"))
    assert isinstance(future.exception(), ValueError)
    with pytest.raises(ValueError, match="boom"):
        future.result()

    def refuse(value: int) -> str:
        raise KeyError(value)

    source = Future()
    future = CompletableFuture.of(source, refuse)
    source.set_result(3)
    with pytest.raises(KeyError):
        future.result()


def test_cancelling_a_future_leaves_its_source_alone():
    source: Future[int] = Future()
    future = CompletableFuture.of(source, str)
    assert future.cancel() and future.cancelled() and future.done()
    source.set_result(1)  # completing the source later is not an error
    assert source.result() == 1
    with pytest.raises(CancelledError):
        future.result()
    assert future.exception() is None

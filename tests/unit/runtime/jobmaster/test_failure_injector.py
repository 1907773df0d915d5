"""FailureInjector: a planned failure strikes once, where and when it was planned."""

from __future__ import annotations

import pytest

from lockgate.runtime.errors import InjectedFailure, InjectedStorageFailure
from lockgate.runtime.jobmaster.failure_injector import FailureInjector


def test_a_failure_strikes_once_at_its_point_and_number():
    injector = FailureInjector({("mid-commit", 3)})
    injector.strike("mid-commit", 2)
    injector.strike("metadata-write", 3)
    with pytest.raises(InjectedFailure, match=r"injected failure at mid-commit \(3\)"):
        injector.strike("mid-commit", 3)
    injector.strike("mid-commit", 3)  # used up: the retry passes


def test_the_failure_type_is_the_callers():
    injector = FailureInjector({("metadata-write", 1)})
    with pytest.raises(InjectedStorageFailure):
        injector.strike("metadata-write", 1, InjectedStorageFailure)


def test_take_hands_a_failure_to_a_task_once():
    injector = FailureInjector({("after-snapshot-before-ack", 4)})
    assert not injector.take("after-snapshot-before-ack", 3)
    assert injector.take("after-snapshot-before-ack", 4)
    assert not injector.take("after-snapshot-before-ack", 4)

"""The state processor's own error, and how one raised in a Spark task reaches the driver."""

from __future__ import annotations

import re

# What a task raises when the state or the input is at fault: the message says it all
_TASK_ERROR = re.compile(
    r"lockgate\.(?:state_processor\.errors\.StateProcessorError|"
    r"state\.snapshot\.SnapshotFormatError|state\.rocksdb\.StateBackendError|"
    r"state\.canonical_snapshot\.CanonicalKeyError|"
    r"state\.operator_state_handle\.OperatorStateFormatError|"
    r"common\.records\.RecordFormatError): ([^\n]+)"
)


class StateProcessorError(ValueError):
    """A read or write the state processor refuses: an unknown uid or state, a column of the
    wrong shape, a key without a portable encoding, a target that is not empty. The message
    names the operator uid, the state and the file involved."""


def task_failure(exc: Exception) -> StateProcessorError | None:
    """The error a Spark task of the state processor raised, out of the Spark job's failure;
    None when it failed otherwise."""
    match = _TASK_ERROR.search(str(exc))
    return StateProcessorError(match.group(1).strip()) if match else None

"""The state processor's own error."""

from __future__ import annotations


class StateProcessorError(ValueError):
    """A read or write the state processor refuses: an unknown uid or state, a column of the
    wrong shape, a key without a portable encoding, a target that is not empty. The message
    names the operator uid, the state and the file involved."""

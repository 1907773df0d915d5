"""Which keyed operator subtask a state backend belongs to."""

from __future__ import annotations

from dataclasses import dataclass

from lockgate.state.key_groups import KeyGroupRange


@dataclass(frozen=True)
class KeyedSubtask:
    """Names a backend's files and its errors: state belongs to an operator uid."""

    uid: str
    name: str
    index: int
    local_name: str  # the subtask's directory among the job's local RocksDB directories
    key_groups: KeyGroupRange
    max_parallelism: int

    def describe(self) -> str:
        return f"'{self.name}' (uid '{self.uid}') subtask {self.index}"

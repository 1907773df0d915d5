"""``CheckpointConfig`` and its enums, writing through to the job's configuration keys.

Every setter is one of Flink 2.x's ``execution.checkpointing.*`` keys, so the API and a
``Configuration`` are two ways of saying the same thing and are validated alike.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, NoReturn, TypeVar

from lockgate.common import config_options as options
from lockgate.common.configuration import Configuration
from lockgate.common.time import Duration
from lockgate.common.unsupported import not_supported
from lockgate.datastream.checkpoint_storage import (
    CheckpointStorage,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
)

T = TypeVar("T")

_ALIGNED = (
    "lockgate.epoch.target-duration: lockgate's barriers are always aligned, and epochs "
    "are bounded so that a barrier never waits behind a backlog"
)


class CheckpointingMode(Enum):
    """EXACTLY_ONCE: sinks commit when a checkpoint completes; AT_LEAST_ONCE: per epoch.

    State is exactly-once either way: every epoch is an aligned, consistent cut.
    """

    EXACTLY_ONCE = "EXACTLY_ONCE"
    AT_LEAST_ONCE = "AT_LEAST_ONCE"


class ExternalizedCheckpointRetention(Enum):
    DELETE_ON_CANCELLATION = "DELETE_ON_CANCELLATION"
    RETAIN_ON_CANCELLATION = "RETAIN_ON_CANCELLATION"
    NO_EXTERNALIZED_CHECKPOINTS = "NO_EXTERNALIZED_CHECKPOINTS"


class CheckpointConfig:
    def __init__(self, configuration: Configuration):
        self._config = configuration

    def _set(self, option: options.ConfigOption[Any], value: object) -> CheckpointConfig:
        option.read({option.key: str(value)})  # fail here, naming the key, if invalid
        self._config.set_string(option.key, str(value))
        return self

    def _get(self, option: options.ConfigOption[T]) -> T:
        return option.read(self._config.to_dict())

    def is_checkpointing_enabled(self) -> bool:
        return self._get(options.CHECKPOINT_INTERVAL) is not None

    def get_checkpoint_interval(self) -> int:
        interval = self._get(options.CHECKPOINT_INTERVAL)
        return -1 if interval is None else interval

    def set_checkpoint_interval(self, checkpoint_interval: int) -> CheckpointConfig:
        if checkpoint_interval < 1:
            raise ValueError(
                f"checkpoint interval must be at least 1 ms, got {checkpoint_interval}"
            )
        return self._set(options.CHECKPOINT_INTERVAL, f"{checkpoint_interval} ms")

    def get_checkpointing_mode(self) -> CheckpointingMode:
        return CheckpointingMode(self._get(options.CHECKPOINTING_MODE))

    def set_checkpointing_mode(self, checkpointing_mode: CheckpointingMode) -> CheckpointConfig:
        return self._set(options.CHECKPOINTING_MODE, checkpointing_mode.value)

    def get_checkpoint_timeout(self) -> int:
        return self._get(options.CHECKPOINT_TIMEOUT)

    def set_checkpoint_timeout(self, checkpoint_timeout: int) -> CheckpointConfig:
        return self._set(options.CHECKPOINT_TIMEOUT, f"{checkpoint_timeout} ms")

    def get_min_pause_between_checkpoints(self) -> int:
        return self._get(options.MIN_PAUSE)

    def set_min_pause_between_checkpoints(self, min_pause: int) -> CheckpointConfig:
        return self._set(options.MIN_PAUSE, f"{min_pause} ms")

    def get_max_concurrent_checkpoints(self) -> int:
        return self._get(options.MAX_CONCURRENT)

    def set_max_concurrent_checkpoints(self, max_concurrent: int) -> CheckpointConfig:
        return self._set(options.MAX_CONCURRENT, max_concurrent)

    def get_tolerable_checkpoint_failure_number(self) -> int:
        return self._get(options.TOLERABLE_FAILURES)

    def set_tolerable_checkpoint_failure_number(self, number: int) -> CheckpointConfig:
        return self._set(options.TOLERABLE_FAILURES, number)

    def get_externalized_checkpoint_retention(self) -> ExternalizedCheckpointRetention:
        return ExternalizedCheckpointRetention(self._get(options.EXTERNALIZED_RETENTION))

    def set_externalized_checkpoint_retention(
        self, retention: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        return self._set(options.EXTERNALIZED_RETENTION, retention.value)

    def enable_externalized_checkpoints(
        self, retention: ExternalizedCheckpointRetention
    ) -> CheckpointConfig:
        return self.set_externalized_checkpoint_retention(retention)

    def is_externalized_checkpoints_enabled(self) -> bool:
        retention = self.get_externalized_checkpoint_retention()
        return retention is not ExternalizedCheckpointRetention.NO_EXTERNALIZED_CHECKPOINTS

    def enable_unaligned_checkpoints(self, enabled: bool = True) -> CheckpointConfig:
        """Accepted for PyFlink compatibility; see ``execution.checkpointing.unaligned``.

        lockgate's barriers are always aligned: an epoch's in-flight data never outlives it,
        and epochs are bounded, so a checkpoint never waits behind a backlog.
        """
        return self._set(options.UNALIGNED, "true" if enabled else "false")

    def is_unaligned_checkpoints_enabled(self) -> bool:
        return self._get(options.UNALIGNED)

    def disable_unaligned_checkpoints(self) -> CheckpointConfig:
        return self.enable_unaligned_checkpoints(False)

    def set_force_unaligned_checkpoints(
        self, force_unaligned_checkpoints: bool = True
    ) -> CheckpointConfig:
        """Only ``False``: lockgate's checkpoints are never forced unaligned (custom
        partitioners and iterations need no exception: every barrier is aligned)."""
        if force_unaligned_checkpoints:
            not_supported("CheckpointConfig.set_force_unaligned_checkpoints", _ALIGNED)
        return self

    def is_force_unaligned_checkpoints(self) -> bool:
        return False

    def set_aligned_checkpoint_timeout(self, alignment_timeout: Duration) -> NoReturn:
        not_supported("CheckpointConfig.set_aligned_checkpoint_timeout", _ALIGNED)

    def get_aligned_checkpoint_timeout(self) -> NoReturn:
        not_supported("CheckpointConfig.get_aligned_checkpoint_timeout", _ALIGNED)

    def set_alignment_timeout(self, alignment_timeout: Duration) -> NoReturn:
        not_supported("CheckpointConfig.set_alignment_timeout", _ALIGNED)

    def get_alignment_timeout(self) -> NoReturn:
        not_supported("CheckpointConfig.get_alignment_timeout", _ALIGNED)

    def is_fail_on_checkpointing_errors(self) -> bool:
        """Whether a failed checkpoint fails the job: no failed checkpoint is tolerated
        (PyFlink 2 derives it from the tolerable checkpoint failure number too)."""
        return self.get_tolerable_checkpoint_failure_number() == 0

    def set_fail_on_checkpointing_errors(
        self, fail_on_checkpointing_errors: bool
    ) -> CheckpointConfig:
        """True: tolerate no failed checkpoint; False: tolerate any number (as PyFlink 2,
        through ``set_tolerable_checkpoint_failure_number``)."""
        return self.set_tolerable_checkpoint_failure_number(
            0 if fail_on_checkpointing_errors else 2147483647
        )

    def set_num_retained_checkpoints(self, num: int) -> CheckpointConfig:
        return self._set(options.NUM_RETAINED, num)

    def set_checkpoint_storage(self, storage: CheckpointStorage) -> CheckpointConfig:
        self._set(options.CHECKPOINT_STORAGE, storage.storage_type)
        if storage.checkpoint_path:
            self._set(options.CHECKPOINT_DIR, storage.checkpoint_path)
        return self

    def set_checkpoint_storage_dir(self, checkpoint_path: str) -> CheckpointConfig:
        return self.set_checkpoint_storage(FileSystemCheckpointStorage(checkpoint_path))

    def get_checkpoint_storage(self) -> CheckpointStorage:
        directory = self._get(options.CHECKPOINT_DIR)
        if self._get(options.CHECKPOINT_STORAGE) == "JOBMANAGER" or not directory:
            return JobManagerCheckpointStorage(directory or None)
        return FileSystemCheckpointStorage(directory)


__all__ = ["CheckpointConfig", "CheckpointingMode", "ExternalizedCheckpointRetention"]

"""Checkpoint storages at PyFlink's path (``pyflink.datastream.checkpoint_storage``)."""

from __future__ import annotations

from lockgate.common.unsupported import not_supported, unsupported


class CheckpointStorage:
    """Where completed checkpoints live; set with ``CheckpointConfig.set_checkpoint_storage``."""

    storage_type = ""
    checkpoint_path: str | None = None

    def get_checkpoint_path(self) -> str | None:
        """The directory under which each job's checkpoints go (None: the driver's memory)."""
        return self.checkpoint_path

    def get_savepoint_path(self) -> None:
        """None: a storage holds no savepoint directory in lockgate; savepoints go to the
        environment's (``set_default_savepoint_directory``, the setting
        ``execution.checkpointing.savepoint-dir``) or to the one a request names."""
        return None


class JobManagerCheckpointStorage(CheckpointStorage):
    """Checkpoint metadata in the driver's memory: for small state and tests.

    Checkpoints last as long as the job's run and cannot be resumed from a new process.
    """

    storage_type = "jobmanager"

    def __init__(self, checkpoint_path: str | None = None, max_state_size: int | None = None):
        if max_state_size is not None:
            not_supported(
                "JobManagerCheckpointStorage(max_state_size=...)",
                "FileSystemCheckpointStorage for state too large for the driver's memory "
                "(lockgate sets no limit on it)",
            )
        self.checkpoint_path = checkpoint_path


class FileSystemCheckpointStorage(CheckpointStorage):
    """Checkpoints in a directory of any fsspec file system (``file://``, ``s3://``, ...)."""

    storage_type = "filesystem"
    checkpoint_path: str  # set (never None) by the constructor

    def __init__(self, checkpoint_path: str, file_state_size_threshold: int | None = None):
        if not checkpoint_path:
            raise ValueError("FileSystemCheckpointStorage needs a checkpoint path")
        if file_state_size_threshold is not None:
            not_supported(
                "FileSystemCheckpointStorage(file_state_size_threshold=...)",
                "the default: lockgate writes each subtask's state to files of its own, "
                "never inline in the checkpoint's metadata",
            )
        self.checkpoint_path = str(checkpoint_path)


CustomCheckpointStorage = unsupported(
    "CustomCheckpointStorage",
    "FileSystemCheckpointStorage (any fsspec file system) or JobManagerCheckpointStorage",
    __name__,
)


__all__ = [
    "CheckpointStorage",
    "CustomCheckpointStorage",
    "FileSystemCheckpointStorage",
    "JobManagerCheckpointStorage",
]

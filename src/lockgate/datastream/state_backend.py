"""State backends at PyFlink's path (``pyflink.datastream.state_backend``).

A backend object is a way of writing configuration: ``env.set_state_backend(backend)``
sets ``state.backend.type`` and the backend's own keys.
"""

from __future__ import annotations

from enum import Enum
from typing import NoReturn

from lockgate.common import config_options as options
from lockgate.common.unsupported import not_supported, unsupported


class StateBackend:
    backend_type = ""

    def configuration(self) -> dict[str, str]:
        """The configuration keys this backend stands for."""
        return {options.STATE_BACKEND.key: self.backend_type}


class HashMapStateBackend(StateBackend):
    """Keyed state as Python dicts per key group in the subtask's memory."""

    backend_type = "hashmap"

    def __str__(self) -> str:
        return "HashMapStateBackend"


class PredefinedOptions(Enum):
    """PyFlink's RocksDB option profiles; accepted, lockgate tunes RocksDB itself."""

    DEFAULT = 0
    SPINNING_DISK_OPTIMIZED = 1
    SPINNING_DISK_OPTIMIZED_HIGH_MEM = 2
    FLASH_SSD_OPTIMIZED = 3


class EmbeddedRocksDBStateBackend(StateBackend):
    """Keyed state in one RocksDB instance per keyed subtask, on the executor's local disk.

    ``enable_incremental_checkpointing``: None leaves ``execution.checkpointing.incremental``
    as configured (default false, as in Flink).
    """

    backend_type = "rocksdb"

    def __init__(self, enable_incremental_checkpointing: bool | None = None):
        if enable_incremental_checkpointing not in (None, True, False):
            raise TypeError(
                "Unsupported input for 'enable_incremental_checkpointing': "
                f"{enable_incremental_checkpointing!r}; use None, True or False"
            )
        self._incremental = enable_incremental_checkpointing
        self._paths: list[str] = []
        self._predefined = PredefinedOptions.DEFAULT
        self._transfer_threads = 4

    def configuration(self) -> dict[str, str]:
        config = super().configuration()
        if self._incremental is not None:
            config[options.INCREMENTAL.key] = str(self._incremental).lower()
        if self._paths:
            config[options.ROCKSDB_LOCAL_DIR.key] = ",".join(self._paths)
        return config

    def is_incremental_checkpoints_enabled(self) -> bool:
        return bool(self._incremental)

    def set_options(self, options_factory_class_name: str) -> NoReturn:
        not_supported(
            "EmbeddedRocksDBStateBackend.set_options",
            "the state.backend.rocksdb.* settings (write buffer size, block cache size, "
            "compaction style) or set_predefined_options()",
        )

    def get_options(self) -> None:
        """None: lockgate takes no Java RocksDB options factory."""
        return None

    def set_db_storage_paths(self, *paths: str) -> None:
        """Local directories for RocksDB instances (subtasks spread over them)."""
        for path in paths:
            if not isinstance(path, str) or not path:
                raise ValueError(f"a RocksDB storage path must be a non-empty string: {path!r}")
        self._paths = [path.removeprefix("file://") for path in paths]

    def get_db_storage_paths(self) -> list[str]:
        return list(self._paths)

    def set_predefined_options(self, options: PredefinedOptions) -> None:
        self._predefined = options

    def get_predefined_options(self) -> PredefinedOptions:
        return self._predefined

    def get_number_of_transfer_threads(self) -> int:
        return self._transfer_threads

    def set_number_of_transfer_threads(self, number_of_transfering_threads: int) -> None:
        self._transfer_threads = number_of_transfering_threads

    def __str__(self) -> str:
        return f"EmbeddedRocksDBStateBackend(incremental={self._incremental})"


CustomStateBackend = unsupported(
    "CustomStateBackend", "HashMapStateBackend or EmbeddedRocksDBStateBackend", __name__
)


__all__ = [
    "CustomStateBackend",
    "EmbeddedRocksDBStateBackend",
    "HashMapStateBackend",
    "PredefinedOptions",
    "StateBackend",
]

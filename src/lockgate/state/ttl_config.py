"""PyFlink's ``StateTtlConfig``: how long keyed state lives (re-exported at
``lockgate.datastream.state``). Descriptors carry it (``enable_time_to_live``); the state
backends apply it through the TTL decorators of ``lockgate.state.ttl``."""

from __future__ import annotations

from enum import Enum
from typing import TypeVar, cast

from lockgate.common.time import Duration

_E = TypeVar("_E", bound=Enum)


def _check_duration(ttl: object, what: str) -> Duration:
    if not isinstance(ttl, Duration):
        raise TypeError(f"{what} needs a Time or Duration, got {ttl!r}")
    return ttl


def _check_enum(value: object, enum: type[_E], what: str) -> _E:
    if not isinstance(value, enum):
        allowed = ", ".join(f"{enum.__qualname__}.{m.name}" for m in enum)
        raise TypeError(f"{what} must be one of {allowed}, got {value!r}")
    return value


class StateTtlConfig:
    """Configuration of state time-to-live, as ``pyflink.datastream.state.StateTtlConfig``."""

    class UpdateType(Enum):
        """When the last access timestamp, which prolongs the TTL, is updated."""

        Disabled = 0
        """TTL is disabled. State does not expire."""
        OnCreateAndWrite = 1
        """Initialised when state is created and updated on every write."""
        OnReadAndWrite = 2
        """The same as ``OnCreateAndWrite`` but also updated on read."""

    class StateVisibility(Enum):
        """Whether an expired value can be returned or not."""

        ReturnExpiredIfNotCleanedUp = 0
        """Return an expired value if it is not cleaned up yet."""
        NeverReturnExpired = 1
        """Never return an expired value."""

    class TtlTimeCharacteristic(Enum):
        """The time scale of TTL."""

        ProcessingTime = 0
        """Processing time."""

    def __init__(
        self,
        update_type: StateTtlConfig.UpdateType,
        state_visibility: StateTtlConfig.StateVisibility,
        ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic,
        ttl: Duration,
        cleanup_strategies: StateTtlConfig.CleanupStrategies,
    ) -> None:
        self._update_type = _check_enum(update_type, StateTtlConfig.UpdateType, "update type")
        self._state_visibility = _check_enum(
            state_visibility, StateTtlConfig.StateVisibility, "state visibility"
        )
        self._ttl_time_characteristic = _check_enum(
            ttl_time_characteristic,
            StateTtlConfig.TtlTimeCharacteristic,
            "TTL time characteristic",
        )
        self._ttl = _check_duration(ttl, "StateTtlConfig")
        if ttl.to_milliseconds() <= 0:
            raise ValueError(
                f"StateTtlConfig: the TTL must be positive, got {ttl.to_milliseconds()} ms"
            )
        if not isinstance(cleanup_strategies, StateTtlConfig.CleanupStrategies):
            raise TypeError(f"StateTtlConfig needs CleanupStrategies, got {cleanup_strategies!r}")
        self._cleanup_strategies = cleanup_strategies

    @staticmethod
    def new_builder(ttl: Duration) -> StateTtlConfig.Builder:
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> StateTtlConfig.UpdateType:
        return self._update_type

    def get_state_visibility(self) -> StateTtlConfig.StateVisibility:
        return self._state_visibility

    def get_ttl(self) -> Duration:
        return self._ttl

    def get_ttl_time_characteristic(self) -> StateTtlConfig.TtlTimeCharacteristic:
        return self._ttl_time_characteristic

    def is_enabled(self) -> bool:
        return self._update_type is not StateTtlConfig.UpdateType.Disabled

    def get_cleanup_strategies(self) -> StateTtlConfig.CleanupStrategies:
        return self._cleanup_strategies

    def __repr__(self) -> str:
        return (
            f"StateTtlConfig<update_type={self._update_type}, "
            f"state_visibility={self._state_visibility}, "
            f"ttl_time_characteristic={self._ttl_time_characteristic}, "
            f"ttl={self._ttl.to_milliseconds()} ms>"
        )

    class Builder:
        """Builder for the StateTtlConfig."""

        def __init__(self, ttl: Duration) -> None:
            self._ttl = _check_duration(ttl, "StateTtlConfig.new_builder")
            self._update_type = StateTtlConfig.UpdateType.OnCreateAndWrite
            self._state_visibility = StateTtlConfig.StateVisibility.NeverReturnExpired
            self._ttl_time_characteristic = StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            self._is_cleanup_in_background = True
            self._strategies: dict[
                StateTtlConfig.CleanupStrategies.Strategies,
                StateTtlConfig.CleanupStrategies.CleanupStrategy,
            ] = {}

        def set_update_type(self, update_type: StateTtlConfig.UpdateType) -> StateTtlConfig.Builder:
            self._update_type = _check_enum(update_type, StateTtlConfig.UpdateType, "update type")
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(StateTtlConfig.UpdateType.OnReadAndWrite)

        def set_state_visibility(
            self, state_visibility: StateTtlConfig.StateVisibility
        ) -> StateTtlConfig.Builder:
            self._state_visibility = _check_enum(
                state_visibility, StateTtlConfig.StateVisibility, "state visibility"
            )
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(
                StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp
            )

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(StateTtlConfig.StateVisibility.NeverReturnExpired)

        def set_ttl_time_characteristic(
            self, ttl_time_characteristic: StateTtlConfig.TtlTimeCharacteristic
        ) -> StateTtlConfig.Builder:
            self._ttl_time_characteristic = _check_enum(
                ttl_time_characteristic,
                StateTtlConfig.TtlTimeCharacteristic,
                "TTL time characteristic",
            )
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(
                StateTtlConfig.TtlTimeCharacteristic.ProcessingTime
            )

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            """Leave expired entries out of the key groups a snapshot writes."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.FULL_STATE_SCAN_SNAPSHOT] = (
                strategies.EMPTY_STRATEGY
            )
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool
        ) -> StateTtlConfig.Builder:
            """Check ``cleanup_size`` entries for expiry per state access (and per record if
            ``run_cleanup_for_every_record``). lockgate's heap backend does the checks of an
            epoch together at its end, with a cursor that walks all entries over time."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.INCREMENTAL_CLEANUP] = (
                strategies.IncrementalCleanupStrategy(cleanup_size, run_cleanup_for_every_record)
            )
            return self

        def cleanup_in_rocksdb_compact_filter(
            self,
            query_time_after_num_entries: int,
            periodic_compaction_time: Duration | None = None,
        ) -> StateTtlConfig.Builder:
            """Drop expired entries when RocksDB compacts (no effect on the heap backend)."""
            strategies = StateTtlConfig.CleanupStrategies
            self._strategies[strategies.Strategies.ROCKSDB_COMPACTION_FILTER] = (
                strategies.RocksdbCompactFilterCleanupStrategy(
                    query_time_after_num_entries,
                    periodic_compaction_time if periodic_compaction_time else Duration.of_days(30),
                )
            )
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            """Disable the default background cleanup; explicitly configured incremental or
            compaction-filter cleanup stays on."""
            self._is_cleanup_in_background = False
            return self

        def set_ttl(self, ttl: Duration) -> StateTtlConfig.Builder:
            self._ttl = _check_duration(ttl, "StateTtlConfig.Builder.set_ttl")
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(
                self._update_type,
                self._state_visibility,
                self._ttl_time_characteristic,
                self._ttl,
                StateTtlConfig.CleanupStrategies(
                    dict(self._strategies), self._is_cleanup_in_background
                ),
            )

    class CleanupStrategies:
        """When expired state is cleaned up, besides on read access (always)."""

        class Strategies(Enum):
            FULL_STATE_SCAN_SNAPSHOT = 0
            INCREMENTAL_CLEANUP = 1
            ROCKSDB_COMPACTION_FILTER = 2

        class CleanupStrategy:
            """Base class of cleanup strategy configurations."""

        class EmptyCleanupStrategy(CleanupStrategy):
            pass

        class IncrementalCleanupStrategy(CleanupStrategy):
            def __init__(self, cleanup_size: int, run_cleanup_for_every_record: bool) -> None:
                if isinstance(cleanup_size, bool) or not isinstance(cleanup_size, int):
                    raise TypeError(
                        f"incremental TTL cleanup: cleanup_size must be an int, "
                        f"got {cleanup_size!r}"
                    )
                if cleanup_size <= 0:
                    raise ValueError(
                        "incremental TTL cleanup: the number of entries cleaned up per state "
                        f"access (cleanup_size) must be positive, got {cleanup_size}"
                    )
                self._cleanup_size = cleanup_size
                self._run_cleanup_for_every_record = bool(run_cleanup_for_every_record)

            def get_cleanup_size(self) -> int:
                return self._cleanup_size

            def run_cleanup_for_every_record(self) -> bool:
                return self._run_cleanup_for_every_record

        class RocksdbCompactFilterCleanupStrategy(CleanupStrategy):
            def __init__(
                self,
                query_time_after_num_entries: int,
                periodic_compaction_time: Duration | None = None,
            ) -> None:
                n = query_time_after_num_entries
                if isinstance(n, bool) or not isinstance(n, int):
                    raise TypeError(
                        "RocksDB compaction-filter TTL cleanup: query_time_after_num_entries "
                        f"must be an int, got {n!r}"
                    )
                if n < 0:
                    raise ValueError(
                        "RocksDB compaction-filter TTL cleanup: query_time_after_num_entries "
                        f"must not be negative, got {n}"
                    )
                if not periodic_compaction_time:
                    periodic_compaction_time = Duration.of_days(30)
                _check_duration(periodic_compaction_time, "periodic_compaction_time")
                if periodic_compaction_time.to_milliseconds() < 0:
                    raise ValueError(
                        "RocksDB compaction-filter TTL cleanup: periodic_compaction_time must "
                        f"not be negative, got {periodic_compaction_time.to_milliseconds()} ms"
                    )
                self._query_time_after_num_entries = n
                self._periodic_compaction_time = periodic_compaction_time

            def get_query_time_after_num_entries(self) -> int:
                return self._query_time_after_num_entries

            def get_periodic_compaction_time(self) -> Duration:
                return self._periodic_compaction_time

        EMPTY_STRATEGY: StateTtlConfig.CleanupStrategies.EmptyCleanupStrategy

        def __init__(
            self,
            strategies: dict[
                StateTtlConfig.CleanupStrategies.Strategies,
                StateTtlConfig.CleanupStrategies.CleanupStrategy,
            ],
            is_cleanup_in_background: bool,
        ) -> None:
            self._strategies = strategies
            self._is_cleanup_in_background = is_cleanup_in_background

        def is_cleanup_in_background(self) -> bool:
            return self._is_cleanup_in_background

        def in_full_snapshot(self) -> bool:
            return self.Strategies.FULL_STATE_SCAN_SNAPSHOT in self._strategies

        def get_incremental_cleanup_strategy(
            self,
        ) -> StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None:
            """The configured strategy; by default (cleanup in background) 5 entries per
            access, as Flink's heap backend."""
            default: StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None
            default = self.IncrementalCleanupStrategy(5, False)
            if not self._is_cleanup_in_background:
                default = None
            # the builder stores each strategy under its own key
            return cast(
                "StateTtlConfig.CleanupStrategies.IncrementalCleanupStrategy | None",
                self._strategies.get(self.Strategies.INCREMENTAL_CLEANUP, default),
            )

        def get_rocksdb_compact_filter_cleanup_strategy(
            self,
        ) -> StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy | None:
            default: StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy | None
            default = self.RocksdbCompactFilterCleanupStrategy(1000)
            if not self._is_cleanup_in_background:
                default = None
            return cast(
                "StateTtlConfig.CleanupStrategies.RocksdbCompactFilterCleanupStrategy | None",
                self._strategies.get(self.Strategies.ROCKSDB_COMPACTION_FILTER, default),
            )


StateTtlConfig.CleanupStrategies.EMPTY_STRATEGY = (
    StateTtlConfig.CleanupStrategies.EmptyCleanupStrategy()
)

"""The configuration keys lockgate knows, their types, defaults and allowed values.

Validation runs before a job starts, so a typo fails fast with the key and what it allows
instead of surfacing inside a Spark task.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class ConfigurationError(ValueError):
    """A configuration key or value that lockgate cannot run with."""


@dataclass(frozen=True)
class ConfigOption(Generic[T]):
    key: str
    default: T
    parse: Callable[[str], T]
    allowed: str
    description: str

    def read(self, raw: Mapping[str, str]) -> T:
        value = raw.get(self.key)
        if value is None:
            return self.default
        try:
            return self.parse(value)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"invalid value {value!r} for configuration key '{self.key}': "
                f"allowed values are {self.allowed}"
            ) from exc


def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = int(text.strip())
        if value < minimum or (maximum is not None and value > maximum):
            raise ValueError(text)
        return value

    return parse


def _max_parallelism(text: str) -> int:
    value = int(text.strip())
    if value == -1 or 1 <= value <= 32768:
        return value
    raise ValueError(text)


def _boolean(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError(text)
    return lowered == "true"


def _one_of(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().upper()
        if value not in choices:
            raise ValueError(text)
        return value

    return parse


def _non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError(text)
    return text.strip()


def _parallelism(text: str) -> int:
    value = int(text.strip())
    if value == -1 or value >= 1:
        return value
    raise ValueError(text)


PARALLELISM = ConfigOption(
    "parallelism.default",
    -1,
    _parallelism,
    "a positive integer (or -1 for Spark's default parallelism)",
    "Default parallelism of operators.",
)
MAX_PARALLELISM = ConfigOption(
    "pipeline.max-parallelism",
    -1,
    _max_parallelism,
    "an integer in 1..32768, or -1 to derive it from the parallelism",
    "Number of key groups of keyed operators.",
)
RUNTIME_MODE = ConfigOption(
    "execution.runtime-mode",
    "STREAMING",
    _one_of("STREAMING", "BATCH", "AUTOMATIC"),
    "STREAMING, BATCH or AUTOMATIC",
    "Accepted as in Flink; bounded jobs run the same operators either way.",
)
EPOCH_MAX_RECORDS_PER_SPLIT = ConfigOption(
    "lockgate.epoch.max-records-per-split",
    100_000,
    _int_at_least(1),
    "a positive integer",
    "Most records one source split contributes to one epoch.",
)
WORK_DIR = ConfigOption(
    "lockgate.work-dir",
    "",
    _non_empty,
    "an fsspec URL or local path every executor can reach",
    "Where epoch plans, acknowledgements and per-epoch state versions live while a job runs "
    "(default: a directory under the system temp dir, which suits local Spark).",
)
PROGRESS = ConfigOption(
    "lockgate.progress",
    False,
    _boolean,
    "true or false",
    "Print a line per epoch (records, duration, state size) to stderr.",
)
CONTINUOUS_IDLE_POLL = ConfigOption(
    "lockgate.source.idle-poll-ms",
    200,
    _int_at_least(1),
    "a positive integer (milliseconds)",
    "How long the job master sleeps when a continuous source has nothing new.",
)

LOCKGATE_OPTIONS: dict[str, ConfigOption[Any]] = {
    option.key: option
    for option in (EPOCH_MAX_RECORDS_PER_SPLIT, WORK_DIR, PROGRESS, CONTINUOUS_IDLE_POLL)
}
VALIDATED_OPTIONS: dict[str, ConfigOption[Any]] = {
    **LOCKGATE_OPTIONS,
    **{option.key: option for option in (PARALLELISM, MAX_PARALLELISM, RUNTIME_MODE)},
}


def validate(raw: Mapping[str, str]) -> None:
    """Fail on unknown ``lockgate.`` keys and on invalid values of known keys."""
    for key in raw:
        if key.startswith("lockgate.") and key not in LOCKGATE_OPTIONS:
            known = ", ".join(sorted(LOCKGATE_OPTIONS))
            raise ConfigurationError(
                f"unknown configuration key '{key}': lockgate's keys are {known}"
            )
    for option in VALIDATED_OPTIONS.values():
        option.read(raw)

"""The configuration keys lockgate knows, their types, defaults and allowed values.

Validation runs before a job starts, so a typo fails fast with the key and what it allows
instead of surfacing inside a Spark task.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from lockgate.common.unsupported import unsupported

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
    #: Flink's older names of the key, read when the key itself is not set
    deprecated_keys: tuple[str, ...] = ()

    def read(self, raw: Mapping[str, str]) -> T:
        key = next((k for k in (self.key, *self.deprecated_keys) if k in raw), None)
        if key is None:
            return self.default
        value = raw[key]
        try:
            return self.parse(value)
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"invalid value {value!r} for configuration key '{key}': "
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


def _choice(choices: dict[str, str], text: str) -> str:
    value = choices.get(text.strip().lower())
    if value is None:
        raise ValueError(text)
    return value


def _comma_list(text: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in text.split(",") if item.strip())


def _split_quoted(text: str, delimiter: str, limit: int = -1, unquote: bool = True) -> list[str]:
    """``text`` split at ``delimiter`` outside quotes, as Flink's map and list settings
    are: a key or value in single or double quotes is taken as it is, a doubled quote
    inside standing for one (``unquote`` False: the parts keep their quotes, to be split
    again)."""
    parts: list[str] = []
    current: list[str] = []
    quote = ""
    fresh = True  # at the start of a key or value: a quote here opens a quoted one
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == quote and text[i + 1 : i + 2] == quote:
                current.append(char if unquote else char * 2)
                i += 1
            elif char == quote:
                quote = ""
                if not unquote:
                    current.append(char)
            else:
                current.append(char)
        elif char in "'\"" and fresh:
            quote = char
            if not unquote:
                current.append(char)
        elif char == delimiter and (limit < 0 or len(parts) < limit):
            parts.append("".join(current).strip())
            current = []
            fresh = True
        else:
            current.append(char)
            fresh = char in ",: "
        i += 1
    if quote:
        raise ValueError(f"unterminated quote in {text!r}")
    parts.append("".join(current).strip())
    return parts


def _flink_map(text: str) -> dict[str, str]:
    """Flink's map setting, ``k1:v1,k2:v2`` (quote a key or value holding , or :)."""
    result = {}
    for entry in _split_quoted(text, ",", unquote=False):
        if not entry:
            continue
        pair = _split_quoted(entry, ":", limit=1)
        if len(pair) != 2 or not pair[0]:
            raise ValueError(entry)
        result[pair[0]] = pair[1]
    return result


def format_flink_map(values: Mapping[str, str]) -> str:
    """``values`` as Flink's map setting, read back by its parse: every key and value
    quoted."""

    def quoted(text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    return ",".join(f"{quoted(key)}:{quoted(value)}" for key, value in values.items())


def _non_empty(text: str) -> str:
    if not text.strip():
        raise ValueError(text)
    return text.strip()


# fsspec file systems that live inside one process: Spark's executors cannot see them
_PROCESS_LOCAL_PROTOCOLS = {"memory"}


def _shared_url(text: str) -> str:
    value = _non_empty(text)
    protocol = value.split("://", 1)[0].lower() if "://" in value else "file"
    if protocol in _PROCESS_LOCAL_PROTOCOLS:
        raise ValueError(text)
    return value


def _parallelism(text: str) -> int:
    value = int(text.strip())
    if value == -1 or value >= 1:
        return value
    raise ValueError(text)


_DURATION_UNITS = {
    "ns": 1e-6, "nano": 1e-6, "nanos": 1e-6, "nanosecond": 1e-6, "nanoseconds": 1e-6,
    "us": 1e-3, "µs": 1e-3, "micro": 1e-3, "micros": 1e-3, "microsecond": 1e-3,
    "microseconds": 1e-3,
    "ms": 1, "milli": 1, "millis": 1, "millisecond": 1, "milliseconds": 1,
    "s": 1000, "sec": 1000, "secs": 1000, "second": 1000, "seconds": 1000,
    "m": 60_000, "min": 60_000, "mins": 60_000, "minute": 60_000, "minutes": 60_000,
    "h": 3_600_000, "hour": 3_600_000, "hours": 3_600_000,
    "d": 86_400_000, "day": 86_400_000, "days": 86_400_000,
}  # fmt: skip
_DURATION = re.compile(r"^\s*(\d+)\s*([a-zµ]*)\s*$")


def parse_duration_ms(text: str) -> int:
    """Flink's duration syntax: '500 ms', '10s', '1 min', '2h'; a bare number is ms."""
    match = _DURATION.match(text.lower())
    if not match or (match.group(2) and match.group(2) not in _DURATION_UNITS):
        raise ValueError(text)
    return int(int(match.group(1)) * _DURATION_UNITS[match.group(2) or "ms"])


def _duration(minimum_ms: int = 0) -> Callable[[str], int]:
    def parse(text: str) -> int:
        value = parse_duration_ms(text)
        if value < minimum_ms:
            raise ValueError(text)
        return value

    return parse


_MEMORY_UNITS = {
    "": 1,
    "b": 1,
    "kb": 1 << 10,
    "k": 1 << 10,
    "mb": 1 << 20,
    "m": 1 << 20,
    "gb": 1 << 30,
    "g": 1 << 30,
}


def _memory_size(text: str) -> int:
    """Flink's MemorySize syntax: a number and an optional unit (b, kb, mb, gb)."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-zA-Z]*)\s*", text)
    if match is None or match.group(2).lower() not in _MEMORY_UNITS:
        raise ValueError(text)
    value = int(match.group(1)) * _MEMORY_UNITS[match.group(2).lower()]
    if value <= 0:
        raise ValueError(text)
    return value


def _record_size(text: str) -> int:
    value = _memory_size(text)
    if value > MAX_RECORD_LIMIT:
        raise ValueError(text)
    return value


def _positive_float(text: str) -> float:
    value = float(text.strip())
    if value <= 0:
        raise ValueError(text)
    return value


def _fraction(text: str) -> float:
    value = float(text.strip())
    if not 0 <= value <= 1:
        raise ValueError(text)
    return value


_DURATION_ALLOWED = "a duration such as '500 ms', '10 s', '1 min' (a bare number is ms)"


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
    "BATCH (or AUTOMATIC with bounded sources): Flink's batch semantics.",
)
OPERATOR_CHAINING = ConfigOption(
    "pipeline.operator-chaining.enabled",
    True,
    _boolean,
    "true or false",
    "Operators joined by forward edges with equal parallelism run in one task; false: each "
    "operator runs in a task of its own.",
)
PYTHON_FILES: ConfigOption[tuple[str, ...]] = ConfigOption(
    "python.files",
    (),
    _comma_list,
    "comma-separated paths or URLs of .py, .zip or .egg files, or local directories",
    "Python dependencies put on the path of Spark's Python workers (and lockgate's subtask "
    "hosts) before the job starts, with SparkContext.addPyFile; a directory goes as a zip "
    "of its contents, so what it holds is importable, as in Flink.",
)
JOB_PARAMETERS: ConfigOption[dict[str, str]] = ConfigOption(
    "pipeline.global-job-parameters",
    {},
    _flink_map,
    "a map such as 'key1:value1,key2:value2' (quote a key or value holding , or :)",
    "What functions read with RuntimeContext.get_job_parameter "
    "(ExecutionConfig.set_global_job_parameters).",
)
EPOCH_MAX_RECORDS_PER_SPLIT = ConfigOption(
    "lockgate.epoch.max-records-per-split",
    1_000_000,
    _int_at_least(1),
    "a positive integer",
    "Most records one source split contributes to one epoch (bounds an epoch's memory).",
)
EPOCH_TARGET_DURATION = ConfigOption(
    "lockgate.epoch.target-duration",
    1000,
    _duration(0),
    _DURATION_ALLOWED,
    "Epochs are sized to take about this long (the first reads at most 100,000 records per "
    "split; later ones at least 10,000); 0: every epoch reads up to "
    "lockgate.epoch.max-records-per-split.",
)
WORK_DIR = ConfigOption(
    "lockgate.work-dir",
    "",
    _shared_url,
    "an fsspec URL or local path every executor can reach (not a process-local memory://)",
    "Where epoch plans, acknowledgements and per-epoch state versions live while a job runs "
    "(default: a directory under the system temp dir, which suits local Spark).",
)
CHECKPOINT_SIGNING_KEY_FILE = ConfigOption(
    "lockgate.security.checkpoint-signing-key-file",
    "",
    _non_empty,
    "the path of a file of 32 to 4096 bytes that only the job's user can read (mode 600)",
    "Sign every checkpoint and savepoint the job writes with the key in this file (an "
    "HMAC-SHA256 of _metadata, which gives the SHA-256 digest of every state file), and "
    "restore only checkpoints and savepoints signed with it, checking each file before it is "
    "read. Beyond Flink; see docs/concepts/trust-boundaries.md.",
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

EPOCH_HISTORY = ConfigOption(
    "lockgate.epoch.history",
    1000,
    _int_at_least(1),
    "a positive integer",
    "Statistics of this many most recent epochs are kept (a job may run for months).",
)
CHECKPOINT_HISTORY = ConfigOption(
    "web.checkpoints.history",
    10,
    _int_at_least(1),
    "a positive integer",
    "Statistics of this many most recent checkpoints are kept, as in Flink.",
)

# Checkpointing (Flink 2.x keys and defaults) ------------------------------------------------

CHECKPOINT_INTERVAL = ConfigOption(
    "execution.checkpointing.interval",
    None,
    _duration(1),
    _DURATION_ALLOWED,
    "Checkpoint at the end of the first epoch after this much time; unset: no checkpoints.",
)
CHECKPOINTING_MODE = ConfigOption(
    "execution.checkpointing.mode",
    "EXACTLY_ONCE",
    _one_of("EXACTLY_ONCE", "AT_LEAST_ONCE"),
    "EXACTLY_ONCE or AT_LEAST_ONCE",
    "EXACTLY_ONCE: sinks commit when a checkpoint completes; AT_LEAST_ONCE: per epoch.",
)
CHECKPOINT_TIMEOUT = ConfigOption(
    "execution.checkpointing.timeout",
    600_000,
    _duration(1),
    _DURATION_ALLOWED,
    "An epoch running longer is cancelled and counts as a failed checkpoint.",
)
MIN_PAUSE = ConfigOption(
    "execution.checkpointing.min-pause",
    0,
    _duration(0),
    _DURATION_ALLOWED,
    "Least time between the end of one checkpoint and the start of the next.",
)
MAX_CONCURRENT = ConfigOption(
    "execution.checkpointing.max-concurrent-checkpoints",
    1,
    _int_at_least(1),
    "a positive integer",
    "Accepted as in Flink; epochs run one at a time, so at most one checkpoint is pending.",
)
TOLERABLE_FAILURES = ConfigOption(
    "execution.checkpointing.tolerable-failed-checkpoints",
    0,
    _int_at_least(0),
    "a non-negative integer",
    "Consecutive failed checkpoints (timeouts, storage errors) tolerated before failover.",
)
NUM_RETAINED = ConfigOption(
    "execution.checkpointing.num-retained",
    1,
    _int_at_least(1),
    "a positive integer",
    "Completed checkpoints kept; older ones and the files only they use are deleted.",
)
EXTERNALIZED_RETENTION = ConfigOption(
    "execution.checkpointing.externalized-checkpoint-retention",
    "NO_EXTERNALIZED_CHECKPOINTS",
    _one_of("NO_EXTERNALIZED_CHECKPOINTS", "RETAIN_ON_CANCELLATION", "DELETE_ON_CANCELLATION"),
    "NO_EXTERNALIZED_CHECKPOINTS, RETAIN_ON_CANCELLATION or DELETE_ON_CANCELLATION",
    "What happens to retained checkpoints when a job is cancelled or fails.",
)
UNALIGNED = ConfigOption(
    "execution.checkpointing.unaligned.enabled",
    False,
    _boolean,
    "true or false",
    "Accepted as in Flink; lockgate's barriers are always aligned and epochs are bounded.",
)
INCREMENTAL = ConfigOption(
    "execution.checkpointing.incremental",
    False,
    _boolean,
    "true or false",
    "RocksDB: checkpoints upload only new SST files and share the rest (shared/); when "
    "false every checkpoint holds its own copy of all files. The heap backend always writes "
    "only the key groups that changed.",
)
CHECKPOINT_STORAGE = ConfigOption(
    "execution.checkpointing.storage",
    "",
    _one_of("JOBMANAGER", "FILESYSTEM"),
    "jobmanager or filesystem",
    "Where checkpoints go (default: filesystem when a directory is set, else jobmanager).",
)
CHECKPOINT_DIR = ConfigOption(
    "execution.checkpointing.dir",
    "",
    _shared_url,
    "an fsspec URL or path every executor can reach (not a process-local memory://)",
    "Directory of checkpoints (<dir>/<job-id>/chk-<n>/_metadata, shared/, taskowned/).",
    ("state.checkpoints.dir",),
)
SAVEPOINT_DIR = ConfigOption(
    "execution.checkpointing.savepoint-dir",
    "",
    _non_empty,
    "an fsspec URL or path",
    "Default directory of savepoints.",
    ("state.savepoints.dir",),
)
STATE_RECOVERY_PATH = ConfigOption(
    "execution.state-recovery.path",
    "",
    _non_empty,
    "a savepoint or chk-<n> directory, or its _metadata file",
    "Checkpoint or savepoint to start the job from.",
    ("execution.savepoint.path",),
)
IGNORE_UNCLAIMED_STATE = ConfigOption(
    "execution.state-recovery.ignore-unclaimed-state",
    False,
    _boolean,
    "true or false",
    "Start even if the checkpoint has state of operators the job no longer has.",
    ("execution.savepoint.ignore-unclaimed-state",),
)
STATE_BACKEND = ConfigOption(
    "state.backend.type",
    "HASHMAP",
    _one_of("HASHMAP", "ROCKSDB"),
    "hashmap or rocksdb",
    "Keyed state backend.",
)
ROCKSDB_LOCAL_DIR = ConfigOption(
    "state.backend.rocksdb.localdir",
    "",
    _non_empty,
    "a local directory path writable on every executor",
    "Where RocksDB instances live (default: Spark's local directory of the application).",
)
ROCKSDB_WRITE_BUFFER = ConfigOption(
    "state.backend.rocksdb.writebuffer.size",
    64 << 20,
    _memory_size,
    "a memory size such as 64mb",
    "Size of one RocksDB memtable.",
)
ROCKSDB_BLOCK_CACHE = ConfigOption(
    "state.backend.rocksdb.block.cache-size",
    8 << 20,
    _memory_size,
    "a memory size such as 8mb",
    "RocksDB block cache per instance.",
)
ROCKSDB_COMPACTION_STYLE = ConfigOption(
    "state.backend.rocksdb.compaction.style",
    "UNIVERSAL",
    _one_of("LEVEL", "UNIVERSAL"),
    "level or universal",
    "RocksDB's compaction style. Universal by default (Flink: level): every epoch flushes "
    "a small file whose keys span all key groups, and a leveled compaction of such files "
    "rewrites the whole instance; universal compaction merges the small files among "
    "themselves.",
)
SHUFFLE_BATCH_MAX_RECORDS = ConfigOption(
    "lockgate.shuffle.batch.max-records",
    8192,
    _int_at_least(1),
    "a positive integer",
    "Most records in one batch that a subtask hands to Spark's shuffle for one target subtask.",
)
SHUFFLE_BATCH_MAX_SIZE = ConfigOption(
    "lockgate.shuffle.batch.max-size",
    1 << 20,
    _memory_size,
    "a memory size such as 1mb",
    "Most bytes of pickled records in one shuffle batch; a larger record travels alone.",
)
# PySpark frames each item it moves between the JVM and Python with a 4-byte signed length:
# a record travels in one item, with a little framing around it.
MAX_RECORD_LIMIT = 1536 << 20
RECORD_MAX_SIZE = ConfigOption(
    "lockgate.record.max-size",
    256 << 20,
    _record_size,
    "a memory size such as 256mb, at most 1536mb",
    "Most bytes of one pickled record that a subtask sends to another subtask or to the "
    "driver (execute_and_collect); a larger one fails its task, naming the operator, uid, "
    "subtask and size. PySpark moves each item with a 4-byte length, hence the upper bound.",
)
STATE_CACHE_ENTRIES = ConfigOption(
    "lockgate.state.rocksdb.cache-entries",
    100_000,
    _int_at_least(1),
    "a positive integer",
    "Keys per state that RocksDB's write-back cache holds before writing them to RocksDB.",
)

# Restart strategies (Flink 2.x keys and defaults) ------------------------------------------

RESTART_TYPE = ConfigOption(
    "restart-strategy.type",
    "",
    lambda text: _choice(_RESTART_ALIASES, text),
    "none (or off, disable), fixed-delay, failure-rate or exponential-delay",
    "Default: none without checkpointing, exponential-delay with it.",
)
_RESTART_ALIASES: dict[str, str] = {
    "none": "none", "off": "none", "disable": "none",
    "fixed-delay": "fixed-delay", "fixeddelay": "fixed-delay",
    "failure-rate": "failure-rate", "failurerate": "failure-rate",
    "exponential-delay": "exponential-delay", "exponentialdelay": "exponential-delay",
}  # fmt: skip
FIXED_DELAY_ATTEMPTS = ConfigOption(
    "restart-strategy.fixed-delay.attempts", 1, _int_at_least(0), "a non-negative integer", ""
)
FIXED_DELAY_DELAY = ConfigOption(
    "restart-strategy.fixed-delay.delay", 1000, _duration(0), _DURATION_ALLOWED, ""
)
FAILURE_RATE_MAX = ConfigOption(
    "restart-strategy.failure-rate.max-failures-per-interval",
    1,
    _int_at_least(1),
    "a positive integer",
    "",
)
FAILURE_RATE_INTERVAL = ConfigOption(
    "restart-strategy.failure-rate.failure-rate-interval",
    60_000,
    _duration(1),
    _DURATION_ALLOWED,
    "",
)
FAILURE_RATE_DELAY = ConfigOption(
    "restart-strategy.failure-rate.delay", 1000, _duration(0), _DURATION_ALLOWED, ""
)
EXP_INITIAL = ConfigOption(
    "restart-strategy.exponential-delay.initial-backoff",
    1000,
    _duration(0),
    _DURATION_ALLOWED,
    "",
)
EXP_MAX = ConfigOption(
    "restart-strategy.exponential-delay.max-backoff", 60_000, _duration(0), _DURATION_ALLOWED, ""
)
EXP_MULTIPLIER = ConfigOption(
    "restart-strategy.exponential-delay.backoff-multiplier",
    1.5,
    _positive_float,
    "a number greater than 0",
    "",
)
EXP_RESET = ConfigOption(
    "restart-strategy.exponential-delay.reset-backoff-threshold",
    3_600_000,
    _duration(1),
    _DURATION_ALLOWED,
    "",
)
EXP_JITTER = ConfigOption(
    "restart-strategy.exponential-delay.jitter-factor", 0.1, _fraction, "a number in 0..1", ""
)
EXP_ATTEMPTS = ConfigOption(
    "restart-strategy.exponential-delay.attempts-before-reset-backoff",
    2**31 - 1,
    _int_at_least(1),
    "a positive integer",
    "",
)

# Test-only ---------------------------------------------------------------------------------

INJECT_FAILURE = ConfigOption(
    "lockgate.testing.inject-failure",
    "",
    _non_empty,
    "comma-separated '<point>@<n>': after-snapshot-before-ack@<epoch>, "
    "metadata-write@<checkpoint id>, after-metadata-before-commit@<checkpoint id>, "
    "mid-commit@<checkpoint id>, "
    "during-restore@<restore number, from 1>",
    "Fail once at a named point; for lockgate's own fault-tolerance tests only.",
)

KILL_DRIVER = ConfigOption(
    "lockgate.testing.kill-driver",
    "",
    _non_empty,
    "'<point>@<checkpoint id>': metadata-write, after-metadata-before-commit or mid-commit",
    "SIGKILL the driver's process at a named point of a checkpoint, as when its machine "
    "dies; for lockgate's own fault-tolerance tests only.",
)

LOCKGATE_OPTIONS: dict[str, ConfigOption[Any]] = {
    option.key: option
    for option in (
        EPOCH_MAX_RECORDS_PER_SPLIT,
        EPOCH_TARGET_DURATION,
        EPOCH_HISTORY,
        WORK_DIR,
        CHECKPOINT_SIGNING_KEY_FILE,
        PROGRESS,
        CONTINUOUS_IDLE_POLL,
        SHUFFLE_BATCH_MAX_RECORDS,
        SHUFFLE_BATCH_MAX_SIZE,
        RECORD_MAX_SIZE,
        STATE_CACHE_ENTRIES,
        INJECT_FAILURE,
        KILL_DRIVER,
    )
}
VALIDATED_OPTIONS: dict[str, ConfigOption[Any]] = {
    **LOCKGATE_OPTIONS,
    **{
        option.key: option
        for option in (
            PARALLELISM,
            MAX_PARALLELISM,
            RUNTIME_MODE,
            OPERATOR_CHAINING,
            PYTHON_FILES,
            JOB_PARAMETERS,
            CHECKPOINT_HISTORY,
            CHECKPOINT_INTERVAL,
            CHECKPOINTING_MODE,
            CHECKPOINT_TIMEOUT,
            MIN_PAUSE,
            MAX_CONCURRENT,
            TOLERABLE_FAILURES,
            NUM_RETAINED,
            EXTERNALIZED_RETENTION,
            UNALIGNED,
            INCREMENTAL,
            CHECKPOINT_STORAGE,
            CHECKPOINT_DIR,
            SAVEPOINT_DIR,
            STATE_RECOVERY_PATH,
            IGNORE_UNCLAIMED_STATE,
            STATE_BACKEND,
            ROCKSDB_LOCAL_DIR,
            ROCKSDB_WRITE_BUFFER,
            ROCKSDB_BLOCK_CACHE,
            ROCKSDB_COMPACTION_STYLE,
            RESTART_TYPE,
            FIXED_DELAY_ATTEMPTS,
            FIXED_DELAY_DELAY,
            FAILURE_RATE_MAX,
            FAILURE_RATE_INTERVAL,
            FAILURE_RATE_DELAY,
            EXP_INITIAL,
            EXP_MAX,
            EXP_MULTIPLIER,
            EXP_RESET,
            EXP_JITTER,
            EXP_ATTEMPTS,
        )
    },
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


ConfigOptions = unsupported(
    "ConfigOptions",
    "Configuration's set_string/set_integer/set_boolean with the option's key",
    __name__,
)

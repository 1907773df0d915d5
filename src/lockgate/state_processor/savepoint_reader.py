"""``SavepointReader``: a savepoint or a retained checkpoint as Spark DataFrames (Flink's
State Processor API, ``SavepointReader.read``).

The driver reads only ``_metadata``. Every DataFrame of state is an RDD of Spark tasks, one
per state file (a savepoint's subtask, a heap checkpoint's file, a subtask's operator-state
file) or per RocksDB instance, each decoding its files (``state_files``, ``state_rows``,
``operator_state_rows``); column types are given, or inferred from a sample of rows that
Spark reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from lockgate.checkpoint.metadata import CheckpointMetadata, OperatorState
from lockgate.checkpoint.operator_state_repartitioner import state_modes
from lockgate.checkpoint.savepoint import load_snapshot
from lockgate.checkpoint.signing_key import CheckpointSigningKey, SigningKeyError
from lockgate.state import manifests
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor, StateDescriptor
from lockgate.state.key_groups import KeyGroupRange
from lockgate.state.namespaces import NAMESPACED
from lockgate.state.operator_state_handle import (
    BROADCAST,
    KINDS,
    SPLIT_DISTRIBUTE,
    UNION,
    OperatorStatePart,
)
from lockgate.state.timer_queues import TIMERS_KIND
from lockgate.state.ttl import TTL_KIND_PREFIX, is_ttl_kind
from lockgate.state_processor import task_records
from lockgate.state_processor.errors import StateProcessorError, task_failure
from lockgate.state_processor.spark_types import SAMPLE_ROWS, infer_column, spark_type
from lockgate.state_processor.task_records import (
    OperatorStateReadTask,
    ReadTask,
    SubtaskFiles,
    split_by_file,
)
from lockgate.state_processor.tasks.operator_state_rows import read_operator_state_rows
from lockgate.state_processor.tasks.state_rows import read_rows

KEY = "key"
NAMESPACE = "namespace"
VALUE = "value"
LAST_ACCESS = "last_access_timestamp"
SUBTASK = "subtask"
# The reader of each operator state mode
READERS = {SPLIT_DISTRIBUTE: "list_state", UNION: "union_state", BROADCAST: "broadcast_state"}


def user_kind(kind: str) -> str:
    """``ttl-map/ns`` -> ``map``: the kind of the descriptor that declared the state."""
    return kind.removesuffix(NAMESPACED).removeprefix(TTL_KIND_PREFIX)


def operator_kinds(operator: OperatorState) -> dict[str, str]:
    """State name -> kind as stored, of every keyed state of ``operator``'s subtasks."""
    kinds: dict[str, str] = {}
    for subtask in operator.subtasks:
        if subtask.keyed is not None:
            kinds.update(subtask.keyed.kinds)
    return kinds


def is_keyed(operator: OperatorState) -> bool:
    return any(subtask.key_groups is not None for subtask in operator.subtasks)


def unknown_uid(uid: str, metadata: CheckpointMetadata, where: str) -> StateProcessorError:
    known = ", ".join(repr(u) for u in sorted(metadata.operators)) or "none"
    return StateProcessorError(f"{where} has no operator with uid {uid!r} (its uids: {known})")


def subtask_files(operator: OperatorState) -> list[SubtaskFiles]:
    """The state files of each keyed subtask of ``operator`` that has state, split into the
    parts that Spark tasks read."""
    parts: list[SubtaskFiles] = []
    for subtask in operator.subtasks:
        if subtask.keyed is None or subtask.key_groups is None or subtask.keyed.is_empty():
            continue
        files = SubtaskFiles(
            operator.uid,
            operator.name,
            subtask.index,
            operator.max_parallelism,
            KeyGroupRange(*subtask.key_groups),
            subtask.keyed,
        )
        parts.extend(split_by_file(files))
    return parts


def operator_state_tasks(
    operator: OperatorState, name: str, mode: str, where: str
) -> list[OperatorStateReadTask]:
    """The Spark tasks that read operator state ``name`` of ``operator``, asked for in
    ``mode``: one per subtask whose file holds it for list and union list state (each
    subtask wrote its own elements: together they are the state), the first such subtask's
    alone for broadcast state (each holds the same copy; Flink reads subtask 0's). ``where``
    names the savepoint in errors."""
    subtasks = sorted(operator.subtasks, key=lambda s: s.index)
    modes = state_modes([s.managed for s in subtasks], f"{where}, operator {operator.uid!r}")
    found = modes.get(name)
    if found is None:
        known = ", ".join(f"{n!r} ({KINDS[m]})" for n, m in sorted(modes.items())) or "none"
        keyed = name in operator_kinds(operator)
        hint = " (it is keyed state: read it with keyed_state)" if keyed else ""
        raise StateProcessorError(
            f"{where}: operator {operator.uid!r} has no operator state {name!r}{hint}; its "
            f"operator states: {known}"
        )
    if found != mode:
        raise StateProcessorError(
            f"{where}: state {name!r} of operator {operator.uid!r} is {KINDS[found]} state, "
            f"not {KINDS[mode]} state: read it with {READERS[found]}"
        )
    tasks = [
        OperatorStateReadTask(
            s.index, name, OperatorStatePart(s.managed, {name: (0, s.managed.states[name].count)})
        )
        for s in subtasks
        if s.managed is not None and name in s.managed.states
    ]
    return tasks[:1] if mode == BROADCAST else tasks


def signing_key(path: str | None) -> CheckpointSigningKey | None:
    """The signing key in the file ``path`` (None: none)."""
    if path is None:
        return None
    try:
        return CheckpointSigningKey.load(str(path))
    except SigningKeyError as exc:
        raise StateProcessorError(str(exc)) from None


class SavepointReader:
    """The state of a savepoint or a retained checkpoint (``chk-<n>``), of either backend."""

    def __init__(self, spark: SparkSession, metadata: CheckpointMetadata, path: str):
        self.spark = spark
        self.checkpoint = metadata  # state file paths absolute
        self.path = path

    @staticmethod
    def read(
        spark: SparkSession, path: str, signing_key_file: str | None = None
    ) -> SavepointReader:
        """A savepoint directory (or its ``_metadata``) or a ``chk-<n>`` directory; only its
        ``_metadata`` is read here. With ``signing_key_file`` (what the job that wrote it had
        as ``lockgate.security.checkpoint-signing-key-file``), only when signed with that
        key; every state file is then checked before it is read."""
        completed, skipped = load_snapshot(str(path), signing_key(signing_key_file))
        if skipped:
            raise StateProcessorError(
                f"checkpoint {path} cannot be read: {'; '.join(skipped)} (an older retained "
                "checkpoint of the job may be readable)"
            )
        return SavepointReader(spark, completed.metadata, str(path))

    # Metadata ------------------------------------------------------------------------------

    def uids(self) -> list[str]:
        return sorted(self.checkpoint.operators)

    def operator(self, uid: str) -> OperatorState:
        operator = self.checkpoint.operators.get(uid)
        if operator is None:
            raise unknown_uid(uid, self.checkpoint, f"savepoint {self.path}")
        return operator

    def state_kinds(self, uid: str) -> dict[str, str]:
        """State name -> kind as stored (``value``, ``ttl-list``, ``map/ns``, ``timers``...)
        of the keyed states of operator ``uid``."""
        return operator_kinds(self.operator(uid))

    def metadata(self) -> DataFrame:
        """One row per operator and subtask: uid, name, parallelism, max parallelism, the
        subtask's index and key-group range (null for an operator that is not keyed), the
        backend whose files hold its keyed state, its keyed states (name -> kind), their
        bytes, its watermark, and its operator states (name -> ``list``, ``union list`` or
        ``broadcast``)."""
        rows = []
        for uid in self.uids():
            operator = self.checkpoint.operators[uid]
            for subtask in sorted(operator.subtasks, key=lambda s: s.index):
                keyed = subtask.keyed
                groups = subtask.key_groups
                managed = subtask.managed.states if subtask.managed is not None else {}
                rows.append(
                    (
                        uid,
                        operator.name,
                        operator.parallelism,
                        operator.max_parallelism,
                        subtask.index,
                        groups[0] if groups else None,
                        groups[1] if groups else None,
                        keyed.backend if keyed is not None else None,
                        dict(keyed.kinds) if keyed is not None else {},
                        manifests.size(keyed) if keyed is not None else 0,
                        subtask.watermark,
                        {name: KINDS[meta.mode] for name, meta in managed.items()},
                    )
                )
        return self.spark.createDataFrame(rows, METADATA_SCHEMA)

    # Keyed state ---------------------------------------------------------------------------

    def keyed_state(
        self,
        uid: str,
        state: str | StateDescriptor,
        key_type: Any = None,
        value_type: Any = None,
        namespace_type: Any = None,
        ttl_timestamps: bool = False,
    ) -> DataFrame:
        """One row per key (and namespace, for a state kept per window) of keyed state
        ``state`` (its name, or the descriptor that declared it) of operator ``uid``.

        Columns: ``key``, ``namespace`` (window state only), ``value``, and with
        ``ttl_timestamps`` (TTL states only) ``last_access_timestamp``. ``value`` is the
        value of a value or reducing state, the accumulator of an aggregating state, an
        array for a list state, a map for a map state; a TTL state's values come without
        their timestamps (expired ones included: filter on ``last_access_timestamp``).
        Column types are those given (``Types.*`` or a Spark ``DataType``; ``value_type`` is
        the type of the whole ``value`` column, ``Types.LIST(...)`` for a list state,
        ``Types.MAP(...)`` for a map state), else those the descriptor's type information
        gives, else inferred as Spark infers them from the first rows.
        """
        operator = self._keyed_operator(uid)
        kinds = operator_kinds(operator)
        name = state.name if isinstance(state, StateDescriptor) else state
        kind = kinds.get(name)
        states = {n: k for n, k in kinds.items() if k != TIMERS_KIND}
        if kind is None or kind == TIMERS_KIND:
            known = ", ".join(f"{n!r} ({k})" for n, k in sorted(states.items())) or "none"
            hint = " (timers are read with timers(uid))" if kind == TIMERS_KIND else ""
            raise StateProcessorError(
                f"savepoint {self.path}: operator {uid!r} has no keyed state {name!r}{hint}; "
                f"its keyed states: {known}"
            )
        where = f"savepoint {self.path}, operator {uid!r}, state {name!r}"
        declared: Any = None
        if isinstance(state, StateDescriptor):
            if state.kind != user_kind(kind):
                raise StateProcessorError(
                    f"{where}: the state is {kind} state, the descriptor declares "
                    f"{state.kind} state"
                )
            declared = _descriptor_type(state, where)
        ttl = is_ttl_kind(kind)
        if ttl_timestamps and not ttl:
            raise StateProcessorError(
                f"{where}: ttl_timestamps needs a state with TTL; this one is {kind} state"
            )
        namespaced = kind.endswith(NAMESPACED)
        columns: list[tuple[str, T.DataType | None]] = [
            (KEY, _given(key_type, f"{where}, key_type")),
        ]
        if namespaced:
            columns.append((NAMESPACE, _given(namespace_type, f"{where}, namespace_type")))
        value = _given(value_type, f"{where}, value_type")
        if value is None and declared is not None:
            value = declared
        _check_value_shape(value, user_kind(kind), where)
        columns.append((VALUE, value))
        if ttl_timestamps:
            columns.append((LAST_ACCESS, _ttl_type(user_kind(kind), value)))
        tasks = [
            task_records.dump(ReadTask(files, task_records.KEYED, name, kind, ttl_timestamps))
            for files in subtask_files(operator)
        ]
        hint = (
            "pass key_type=, value_type= or namespace_type= (lockgate Types.* or a Spark "
            "DataType), or read the state with a descriptor that declares its types"
        )
        return self._frame(tasks, read_rows, columns, where, hint)

    def timers(self, uid: str, key_type: Any = None, namespace_type: Any = None) -> DataFrame:
        """One row per timer of operator ``uid``: ``key``, ``timestamp`` (ms), ``namespace``
        (the window of a window operator's timers, null for a process function's),
        ``timer_service`` (``user`` for a process function's timers, ``window`` for a window
        operator's) and ``time_domain`` (``event`` or ``processing``)."""
        operator = self._keyed_operator(uid)
        where = f"savepoint {self.path}, operator {uid!r}, timers"
        columns: list[tuple[str, T.DataType | None]] = [
            (KEY, _given(key_type, f"{where}, key_type")),
            ("timestamp", T.LongType()),
            (NAMESPACE, _given(namespace_type, f"{where}, namespace_type")),
            ("timer_service", T.StringType()),
            ("time_domain", T.StringType()),
        ]
        tasks = [
            task_records.dump(ReadTask(files, task_records.TIMERS, "", TIMERS_KIND, False))
            for files in subtask_files(operator)
            if TIMERS_KIND in files.manifest.kinds.values()
        ]
        hint = "pass key_type= or namespace_type= (lockgate Types.* or a Spark DataType)"
        return self._frame(tasks, read_rows, columns, where, hint)

    # Operator state ------------------------------------------------------------------------

    def list_state(
        self, uid: str, state: str | ListStateDescriptor, value_type: Any = None
    ) -> DataFrame:
        """One row per element of list state ``state`` (its name, or the
        ``ListStateDescriptor`` that declared it) of operator ``uid``, of every subtask
        (Flink's ``readListState``): columns ``subtask`` (whose snapshot held the element)
        and ``value``. The type of ``value`` is ``value_type`` (``Types.*`` or a Spark
        ``DataType``), else the descriptor's element type, else inferred."""
        return self._operator_state(uid, state, SPLIT_DISTRIBUTE, None, value_type)

    def union_state(
        self, uid: str, state: str | ListStateDescriptor, value_type: Any = None
    ) -> DataFrame:
        """One row per element of union list state ``state`` of operator ``uid`` (Flink's
        ``readUnionState``): the union that every subtask gets on a restore, each element
        once, with the subtask that wrote it (``subtask``, ``value``). Types as for
        ``list_state``."""
        return self._operator_state(uid, state, UNION, None, value_type)

    def broadcast_state(
        self,
        uid: str,
        state: str | MapStateDescriptor,
        key_type: Any = None,
        value_type: Any = None,
    ) -> DataFrame:
        """One row per entry of broadcast state ``state`` (its name, or the
        ``MapStateDescriptor`` that declared it) of operator ``uid``: columns ``key`` and
        ``value``, of one subtask's copy (every subtask holds the same; Flink's
        ``readBroadcastState`` reads subtask 0's). Types from ``key_type`` and
        ``value_type``, else from the descriptor, else inferred."""
        return self._operator_state(uid, state, BROADCAST, key_type, value_type)

    def _operator_state(
        self, uid: str, state: Any, mode: str, key_type: Any, value_type: Any
    ) -> DataFrame:
        descriptor = MapStateDescriptor if mode == BROADCAST else ListStateDescriptor
        name, declared = self._operator_descriptor(state, descriptor, READERS[mode])
        tasks = operator_state_tasks(self.operator(uid), name, mode, f"savepoint {self.path}")
        where = f"savepoint {self.path}, operator {uid!r}, state {name!r}"
        columns: list[tuple[str, T.DataType | None]]
        if mode == BROADCAST:
            key_info, value_info = declared if declared is not None else (None, None)
            columns = [
                (KEY, _column_type(key_type, key_info, where, "key_type")),
                (VALUE, _column_type(value_type, value_info, where, "value_type")),
            ]
            given = "key_type= or value_type="
        else:
            columns = [
                (SUBTASK, T.IntegerType()),
                (VALUE, _column_type(value_type, declared, where, "value_type")),
            ]
            given = "value_type="
        hint = (
            f"pass {given} (lockgate Types.* or a Spark DataType), or read the state with a "
            f"{descriptor.__name__} that declares its types"
        )
        records = [task_records.dump(task) for task in tasks]
        return self._frame(records, read_operator_state_rows, columns, where, hint)

    def _operator_descriptor(
        self, state: Any, kind: type[StateDescriptor], reader: str
    ) -> tuple[str, Any]:
        """The name of the state that ``state`` (a name or a descriptor of ``kind``) asks
        for, and the type information the descriptor declares (None for a name)."""
        if isinstance(state, str):
            return state, None
        if not isinstance(state, kind):
            raise StateProcessorError(
                f"savepoint {self.path}: {reader} takes a state name or a {kind.__name__}, "
                f"got {state!r}"
            )
        return state.name, state.type_info

    # ---------------------------------------------------------------------------------------

    def _keyed_operator(self, uid: str) -> OperatorState:
        operator = self.operator(uid)
        if not is_keyed(operator):
            raise StateProcessorError(
                f"savepoint {self.path}: operator {uid!r} ('{operator.name}') is not keyed: "
                "it has no keyed state or timers"
            )
        return operator

    def _frame(
        self,
        tasks: Sequence[str],
        read: Callable[[str], Iterable[tuple[Any, ...]]],
        columns: list[tuple[str, T.DataType | None]],
        where: str,
        hint: str,
    ) -> DataFrame:
        """The DataFrame of the rows that ``read`` gives of each task (a record's JSON text),
        in Spark tasks; ``columns`` not typed are inferred from a sample."""
        context = self.spark.sparkContext
        rows = context.parallelize(list(tasks), max(1, len(tasks))).flatMap(read)
        sample: list[tuple[Any, ...]] = []
        if any(data_type is None for _, data_type in columns):
            try:
                sample = rows.take(SAMPLE_ROWS)
            except Exception as exc:
                failure = task_failure(exc)
                if failure is None:
                    raise
                raise failure from None
        fields = []
        for index, (column, data_type) in enumerate(columns):
            if data_type is None:
                data_type = infer_column(
                    [row[index] for row in sample], f"{where}, column {column!r}", hint
                )
            fields.append(T.StructField(column, data_type, True))
        return self.spark.createDataFrame(rows, T.StructType(fields))


METADATA_SCHEMA = T.StructType(
    [
        T.StructField("uid", T.StringType(), False),
        T.StructField("name", T.StringType(), False),
        T.StructField("parallelism", T.IntegerType(), False),
        T.StructField("max_parallelism", T.IntegerType(), False),
        T.StructField("subtask", T.IntegerType(), False),
        T.StructField("key_group_start", T.IntegerType(), True),
        T.StructField("key_group_end", T.IntegerType(), True),
        T.StructField("backend", T.StringType(), True),
        T.StructField("states", T.MapType(T.StringType(), T.StringType()), False),
        T.StructField("state_bytes", T.LongType(), False),
        T.StructField("watermark", T.LongType(), True),
        T.StructField("operator_states", T.MapType(T.StringType(), T.StringType()), False),
    ]
)


def _given(given: Any, what: str) -> T.DataType | None:
    return None if given is None else spark_type(given, what)


def _column_type(given: Any, declared: Any, where: str, what: str) -> T.DataType | None:
    """A column's type: ``given`` (the argument ``what``), else the type information a
    descriptor ``declared``, else None (inferred)."""
    if given is not None:
        return spark_type(given, f"{where}, {what}")
    if declared is not None:
        return spark_type(declared, f"{where}, the descriptor's type information")
    return None


def _descriptor_type(descriptor: StateDescriptor, where: str) -> T.DataType | None:
    """The ``value`` column's type that a descriptor's type information declares, if it
    declares one whole."""
    info = descriptor.type_info
    what = f"{where}, the descriptor's type information"
    if descriptor.kind == "map":
        key_info, value_info = info
        if key_info is None or value_info is None:
            return None
        return T.MapType(spark_type(key_info, what), spark_type(value_info, what))
    if info is None:
        return None
    element = spark_type(info, what)
    return T.ArrayType(element) if descriptor.kind == "list" else element


def _check_value_shape(value: T.DataType | None, kind: str, where: str) -> None:
    if value is None:
        return
    if kind == "list" and not isinstance(value, T.ArrayType):
        raise StateProcessorError(
            f"{where}: a list state's value column is an array: give Types.LIST(<element "
            f"type>) or an ArrayType, not {value.simpleString()}"
        )
    if kind == "map" and not isinstance(value, T.MapType):
        raise StateProcessorError(
            f"{where}: a map state's value column is a map: give Types.MAP(<key type>, <value "
            f"type>) or a MapType, not {value.simpleString()}"
        )


def _ttl_type(kind: str, value: T.DataType | None) -> T.DataType | None:
    """The type of the last access times of a TTL state's values; None (inferred) for a map
    state whose key type is not given."""
    if kind == "list":
        return T.ArrayType(T.LongType())
    if kind == "map":
        return T.MapType(value.keyType, T.LongType()) if isinstance(value, T.MapType) else None
    return T.LongType()

"""``SavepointWriter``: a new savepoint from an existing savepoint or checkpoint and Spark
DataFrames (Flink's State Processor API, ``SavepointWriter``).

Changes are recorded in the order they are made and applied by ``write``, which runs one
Spark job per keyed operator: tasks read the operator's kept state from the source
(``existing_entries``) and the DataFrames given (``bootstrap_entries``), the entries are
partitioned by key group to the operator's subtasks, and each subtask's task writes one
canonical file (``write_subtask``). An operator given operator state gets one more Spark
job (and one that counts rows first, for list state cut into chunks): its kept operator
state (``existing_elements``) and the DataFrames' elements (``bootstrap_elements``) are
partitioned by subtask, and each subtask's task writes its operator-state file
(``write_operator_state_subtask``). The driver writes only ``_metadata``, last. The source
is never changed; the new savepoint holds every file it needs (relative paths), so it
restores into either backend at any parallelism.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from operator import itemgetter
from urllib.parse import quote

from pyspark.rdd import RDD
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from lockgate.checkpoint.metadata import CheckpointMetadata, OperatorState, OperatorSubtaskState
from lockgate.checkpoint.operator_state_repartitioner import split_state, state_modes
from lockgate.checkpoint.savepoint import complete_savepoint
from lockgate.common.clock import processing_time_ms
from lockgate.core.fs.storage import Storage, read_url
from lockgate.state import state_digest
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor, StateDescriptor
from lockgate.state.key_groups import (
    UPPER_BOUND_MAX_PARALLELISM,
    check_parallelism,
    key_group_range,
    operator_index_for_key_group,
)
from lockgate.state.manifests import CanonicalManifest
from lockgate.state.operator_state_backend import NO_TTL
from lockgate.state.operator_state_handle import (
    BROADCAST,
    KINDS,
    SPLIT_DISTRIBUTE,
    UNION,
    OperatorStatePart,
)
from lockgate.state.ttl import RAW_KINDS, stored_kind
from lockgate.state_processor import task_records
from lockgate.state_processor.errors import StateProcessorError, task_failure
from lockgate.state_processor.savepoint_reader import (
    SUBTASK,
    SavepointReader,
    is_keyed,
    operator_kinds,
    signing_key,
    subtask_files,
)
from lockgate.state_processor.task_records import (
    BootstrapTask,
    CountedPartition,
    EntriesTask,
    OperatorStateBootstrapTask,
    OperatorStateReadTask,
    OperatorStateWriteTask,
    WriteTask,
    WrittenOperatorState,
    WrittenSubtask,
)
from lockgate.state_processor.tasks.canonical_entries import (
    Entry,
    bootstrap_entries,
    existing_entries,
    write_subtask,
)
from lockgate.state_processor.tasks.operator_state_elements import (
    Element,
    bootstrap_elements,
    count_rows,
    existing_elements,
    write_operator_state_subtask,
)

# The writer of each operator state mode
WRITERS = {
    SPLIT_DISTRIBUTE: "with_list_state",
    UNION: "with_union_state",
    BROADCAST: "with_broadcast_state",
}


@dataclass
class _Bootstrap:
    """Keyed state from a DataFrame: its key column and one column per state."""

    dataframe: DataFrame
    key_column: str
    states: tuple[tuple[str, str], ...]  # (name, kind as stored)


@dataclass
class _OperatorStateBootstrap:
    """One operator state from a DataFrame."""

    dataframe: DataFrame
    name: str
    mode: str  # SPLIT_DISTRIBUTE, UNION or BROADCAST
    key_column: str  # broadcast state's; "" for list and union list state
    value_column: str
    by_subtask: bool  # the DataFrame's subtask column places each list element


@dataclass
class _Operator:
    """One operator of the new savepoint."""

    uid: str
    name: str
    parallelism: int
    max_parallelism: int
    keyed: bool
    base: OperatorState | None  # its state in the source (None: a new operator)
    kept: dict[str, str]  # keyed states of ``base`` that go on as they are: name -> kind
    bootstraps: list[_Bootstrap] = field(default_factory=list)
    operator_state_bootstraps: list[_OperatorStateBootstrap] = field(default_factory=list)

    def kinds(self) -> dict[str, str]:
        kinds = dict(self.kept)
        for bootstrap in self.bootstraps:
            kinds.update(bootstrap.states)
        return kinds

    def operator_state_names(self) -> set[str]:
        """Its operator states: those of ``base`` and those from DataFrames."""
        names = {b.name for b in self.operator_state_bootstraps}
        for subtask in self.base.subtasks if self.base is not None else ():
            names.update(subtask.managed.states if subtask.managed is not None else ())
        return names


def _check_max_parallelism(max_parallelism: object) -> int:
    if (
        not isinstance(max_parallelism, int)
        or isinstance(max_parallelism, bool)
        or not 1 <= max_parallelism <= UPPER_BOUND_MAX_PARALLELISM
    ):
        raise StateProcessorError(
            f"max parallelism must be an int in 1..{UPPER_BOUND_MAX_PARALLELISM}, got "
            f"{max_parallelism!r}"
        )
    return max_parallelism


def _check_uid(uid: object, what: str) -> str:
    if not isinstance(uid, str) or not uid:
        raise StateProcessorError(f"{what} must be a non-empty string, got {uid!r}")
    return uid


class SavepointWriter:
    def __init__(
        self,
        spark: SparkSession,
        source: CheckpointMetadata | None,
        source_path: str | None,
        max_parallelism: int | None,
    ):
        self.spark = spark
        self._source = source
        self._source_path = source_path
        self._max_parallelism = max_parallelism  # of every operator, when set
        self._operators: dict[str, _Operator] = {}
        for operator in source.operators.values() if source is not None else ():
            self._operators[operator.uid] = _Operator(
                operator.uid,
                operator.name,
                operator.parallelism,
                operator.max_parallelism,
                is_keyed(operator),
                operator,
                operator_kinds(operator),
            )

    @staticmethod
    def from_existing_savepoint(
        spark: SparkSession, path: str, signing_key_file: str | None = None
    ) -> SavepointWriter:
        """Start from a savepoint or a retained checkpoint (``chk-<n>``) of either backend:
        its operators and their state, which ``write`` copies into the new savepoint unless
        they were removed or replaced. ``signing_key_file``: read only one signed with that
        key (``SavepointReader.read``)."""
        reader = SavepointReader.read(spark, path, signing_key_file)
        return SavepointWriter(spark, reader.checkpoint, str(path), None)

    @staticmethod
    def new_savepoint(spark: SparkSession, max_parallelism: int) -> SavepointWriter:
        """Start from nothing: operators get state only from ``with_keyed_state``,
        ``with_list_state``, ``with_union_state`` and ``with_broadcast_state``."""
        return SavepointWriter(spark, None, None, _check_max_parallelism(max_parallelism))

    def _where(self) -> str:
        return f"savepoint {self._source_path}" if self._source_path else "the new savepoint"

    def _operator(self, uid: str) -> _Operator:
        operator = self._operators.get(uid)
        if operator is None:
            known = ", ".join(repr(u) for u in sorted(self._operators)) or "none"
            raise StateProcessorError(
                f"{self._where()} has no operator with uid {uid!r} (after the changes made so "
                f"far its uids are: {known})"
            )
        return operator

    # Changes -------------------------------------------------------------------------------

    def with_max_parallelism(self, max_parallelism: int) -> SavepointWriter:
        """Give every operator this max parallelism (the number of key groups): keyed state
        is hashed into the new key groups, as a job with ``pipeline.max-parallelism`` set to
        it expects."""
        self._max_parallelism = _check_max_parallelism(max_parallelism)
        return self

    def remove_operator(self, uid: str) -> SavepointWriter:
        """Leave operator ``uid`` and all its state out of the new savepoint."""
        self._operator(uid)
        del self._operators[uid]
        return self

    def change_operator_identifier(self, uid: str, new_uid: str) -> SavepointWriter:
        """Give operator ``uid``'s state to ``new_uid``, the uid of the operator that is to
        restore it."""
        operator = self._operator(uid)
        _check_uid(new_uid, "the new uid")
        if new_uid in self._operators:
            raise StateProcessorError(
                f"{self._where()}: cannot rename operator {uid!r} to {new_uid!r}: an operator "
                f"with uid {new_uid!r} exists already (remove it first)"
            )
        del self._operators[uid]
        operator.uid = new_uid
        self._operators[new_uid] = operator
        return self

    def with_keyed_state(
        self,
        uid: str,
        dataframe: DataFrame,
        states: Sequence[StateDescriptor],
        key_column: str = "key",
        parallelism: int | None = None,
        name: str | None = None,
    ) -> SavepointWriter:
        """Keyed state of operator ``uid`` from ``dataframe``: one row per key, the key in
        ``key_column``, and for each state descriptor a column of the state's name holding
        the key's value: the value of a value or reducing state, the accumulator of an
        aggregating state, an array for a list state, a map for a map state; null (or an
        empty array or map) for a key without that state. Values are stored as the state's
        serializer (pickle) stores them; a state with TTL gets the time of the write as its
        values' last access time.

        An existing keyed operator keeps its other states and timers; the states named here
        replace its states of those names (so a state may change kind, or get TTL). A new
        uid adds an operator with ``parallelism`` subtasks (default: Spark's default
        parallelism, at most the max parallelism) named ``name`` (default: the uid).
        """
        _check_uid(uid, "the operator uid")
        where = f"operator {uid!r}"
        if not isinstance(dataframe, DataFrame):
            raise StateProcessorError(f"{where}: needs a Spark DataFrame, got {dataframe!r}")
        columns = {f.name: f.dataType for f in dataframe.schema.fields}
        if key_column not in columns:
            raise StateProcessorError(
                f"{where}: the DataFrame has no key column {key_column!r} (its columns: "
                f"{', '.join(columns)})"
            )
        if not states:
            raise StateProcessorError(f"{where}: no state descriptors given")
        declared: list[tuple[str, str]] = []
        for descriptor in states:
            declared.append(_declared_state(descriptor, columns, key_column, where))
        names = [n for n, _ in declared]
        if len(set(names)) != len(names):
            raise StateProcessorError(f"{where}: a state is named twice in {names}")
        operator = self._operators.get(uid)
        if operator is None:
            operator = self._new_operator(uid, parallelism, name, keyed=True)
        elif parallelism is not None or name is not None:
            raise StateProcessorError(
                f"{where} exists already with parallelism {operator.parallelism} and name "
                f"{operator.name!r}: parallelism and name are only for a new operator"
            )
        elif not operator.keyed and operator.base is not None:
            raise StateProcessorError(
                f"{self._where()}: operator {uid!r} is not keyed: it cannot have keyed state"
            )
        operator.keyed = True  # a new operator may have been given operator state first
        for bootstrap in operator.bootstraps:
            again = set(names) & {n for n, _ in bootstrap.states}
            if again:
                raise StateProcessorError(
                    f"{where}: state {sorted(again)[0]!r} was given by an earlier "
                    "with_keyed_state already"
                )
        taken = set(names) & operator.operator_state_names()
        if taken:
            raise StateProcessorError(
                f"{where}: {sorted(taken)[0]!r} is an operator state of the operator: keyed "
                "state needs another name"
            )
        for state_name in names:
            operator.kept.pop(state_name, None)
        operator.bootstraps.append(_Bootstrap(dataframe, key_column, tuple(declared)))
        return self

    def with_list_state(
        self,
        uid: str,
        dataframe: DataFrame,
        descriptor: ListStateDescriptor,
        value_column: str = "value",
        parallelism: int | None = None,
    ) -> SavepointWriter:
        """List state ``descriptor`` of operator ``uid`` (what a ``CheckpointedFunction``
        gets with ``get_list_state``; Flink's ``bootstrapWith(data).transform(...)`` with a
        ``StateBootstrapFunction``): the values of ``value_column`` are its elements,
        pickled as the operator state backend pickles them (none may be null).

        With a ``subtask`` column (as ``list_state`` reads it), each element goes to that
        subtask; without, the elements are cut into contiguous chunks, one per subtask, as a
        restore at another parallelism cuts list state. Within a subtask the elements keep
        the DataFrame's partition order: its Spark partitions in order, each row by row (the
        order ``collect()`` gives; sort the DataFrame for another). Without a subtask column
        Spark computes the DataFrame twice (to count the rows, then to write them): it must
        give the same rows both times.

        An existing operator keeps its parallelism and its other states (keyed state too);
        this one replaces its operator state of the name. A new uid adds an operator with
        ``parallelism`` subtasks (default: Spark's default parallelism, at most the max
        parallelism); ``with_keyed_state`` may give it keyed state too.
        """
        return self._with_operator_state(
            uid, dataframe, descriptor, SPLIT_DISTRIBUTE, "", value_column, parallelism
        )

    def with_union_state(
        self,
        uid: str,
        dataframe: DataFrame,
        descriptor: ListStateDescriptor,
        value_column: str = "value",
        parallelism: int | None = None,
    ) -> SavepointWriter:
        """Union list state ``descriptor`` of operator ``uid`` (``get_union_list_state``),
        written as ``with_list_state`` writes list state (a ``subtask`` column places the
        elements, as ``union_state`` reads them); on a restore every subtask gets all of
        them."""
        return self._with_operator_state(
            uid, dataframe, descriptor, UNION, "", value_column, parallelism
        )

    def with_broadcast_state(
        self,
        uid: str,
        dataframe: DataFrame,
        descriptor: MapStateDescriptor,
        key_column: str = "key",
        value_column: str = "value",
        parallelism: int | None = None,
    ) -> SavepointWriter:
        """Broadcast state ``descriptor`` of operator ``uid`` (``get_broadcast_state``;
        Flink's ``BroadcastStateBootstrapFunction``): one entry per row, its key in
        ``key_column`` and its value in ``value_column``; every subtask gets a copy, as
        broadcast state is. Two rows of one key fail the write. Operators as for
        ``with_list_state``."""
        return self._with_operator_state(
            uid, dataframe, descriptor, BROADCAST, key_column, value_column, parallelism
        )

    def _with_operator_state(
        self,
        uid: str,
        dataframe: DataFrame,
        descriptor: StateDescriptor,
        mode: str,
        key_column: str,
        value_column: str,
        parallelism: int | None,
    ) -> SavepointWriter:
        _check_uid(uid, "the operator uid")
        where = f"operator {uid!r}"
        if not isinstance(dataframe, DataFrame):
            raise StateProcessorError(f"{where}: needs a Spark DataFrame, got {dataframe!r}")
        kind = MapStateDescriptor if mode == BROADCAST else ListStateDescriptor
        if not isinstance(descriptor, kind):
            raise StateProcessorError(
                f"{where}: {WRITERS[mode]} takes a {kind.__name__}, got {descriptor!r}"
            )
        name = descriptor.name
        state = f"{where}, {KINDS[mode]} state {name!r}"
        if descriptor.ttl_config is not None:
            raise StateProcessorError(f"{state}: {NO_TTL}")
        columns = {f.name: f.dataType for f in dataframe.schema.fields}
        for column in (key_column, value_column) if mode == BROADCAST else (value_column,):
            if column not in columns:
                raise StateProcessorError(
                    f"{state}: the DataFrame has no column {column!r} (its columns: "
                    f"{', '.join(columns)})"
                )
        by_subtask = mode != BROADCAST and SUBTASK in columns and value_column != SUBTASK
        if by_subtask and not isinstance(columns[SUBTASK], T.IntegralType):
            raise StateProcessorError(
                f"{state}: column {SUBTASK!r} gives each element's subtask: it must hold "
                f"integers, not {columns[SUBTASK].simpleString()}"
            )
        operator = self._operators.get(uid)
        if operator is None:
            operator = self._new_operator(uid, parallelism, None, keyed=False)
        elif parallelism is not None:
            raise StateProcessorError(
                f"{where} exists already with parallelism {operator.parallelism}: parallelism "
                "is only for a new operator"
            )
        if name in operator.kinds():
            raise StateProcessorError(
                f"{where}: {name!r} is a keyed state of the operator: operator state needs "
                "another name"
            )
        for earlier in operator.operator_state_bootstraps:
            if earlier.name == name:
                raise StateProcessorError(
                    f"{where}: state {name!r} was given as {KINDS[earlier.mode]} state by an "
                    f"earlier {WRITERS[earlier.mode]} already"
                )
        operator.operator_state_bootstraps.append(
            _OperatorStateBootstrap(dataframe, name, mode, key_column, value_column, by_subtask)
        )
        return self

    def _new_operator(
        self, uid: str, parallelism: int | None, name: str | None, keyed: bool
    ) -> _Operator:
        max_parallelism = self._max_parallelism
        if max_parallelism is None:
            shared = {op.max_parallelism for op in self._operators.values()}
            if len(shared) != 1:
                raise StateProcessorError(
                    f"{self._where()}: the max parallelism of new operator {uid!r} is not "
                    "known (the operators have different ones): call with_max_parallelism first"
                )
            (max_parallelism,) = shared
        if parallelism is None:
            parallelism = min(self.spark.sparkContext.defaultParallelism, max_parallelism)
        try:
            check_parallelism(parallelism, max_parallelism)
        except (TypeError, ValueError) as exc:
            raise StateProcessorError(f"new operator {uid!r}: {exc}") from None
        operator = _Operator(uid, name or uid, parallelism, max_parallelism, keyed, None, {})
        self._operators[uid] = operator
        return operator

    # Writing -------------------------------------------------------------------------------

    def write(self, path: str, signing_key_file: str | None = None) -> str:
        """Write the new savepoint into directory ``path`` (which must not exist or be
        empty); returns its URL, for ``execution.state-recovery.path``. With
        ``signing_key_file``, the savepoint is signed with that key, for a job that has it
        as ``lockgate.security.checkpoint-signing-key-file`` (this also signs a savepoint
        that was read without a key, once you trust it)."""
        key = signing_key(signing_key_file)
        directory = Storage(str(path))
        if directory.list(""):
            raise StateProcessorError(
                f"cannot write a savepoint into {directory.url}: the directory is not empty"
            )
        try:
            body = self._write_operators(directory, digests=key is not None)
            return complete_savepoint(directory, body, key)
        except Exception as exc:
            directory.remove("")  # it was empty: what is there now is this write's
            failure = task_failure(exc)
            if failure is None:
                raise
            raise failure from None

    def _write_operators(self, directory: Storage, digests: bool) -> CheckpointMetadata:
        operators: dict[str, OperatorState] = {}
        for uid in sorted(self._operators):
            operator = self._operators[uid]
            max_parallelism = self._max_parallelism or operator.max_parallelism
            if operator.parallelism > max_parallelism:
                raise StateProcessorError(
                    f"operator {uid!r} has parallelism {operator.parallelism}, more than the "
                    f"max parallelism {max_parallelism}"
                )
            if operator.keyed:
                state = self._write_keyed(operator, max_parallelism, directory, digests)
            elif operator.base is not None:
                state = replace(operator.base, uid=uid, max_parallelism=max_parallelism)
            else:  # a new operator with operator state only
                subtasks = tuple(
                    OperatorSubtaskState(index, None, None, None)
                    for index in range(operator.parallelism)
                )
                state = OperatorState(
                    uid, operator.name, operator.parallelism, max_parallelism, subtasks
                )
            if operator.operator_state_bootstraps:
                operators[uid] = self._write_operator_state(operator, state, directory, digests)
            else:
                operators[uid] = _with_own_operator_state(state, directory, digests)
        source = self._source
        return CheckpointMetadata(
            source.job_id if source is not None else uuid.uuid4().hex,
            source.checkpoint_id if source is not None else 0,
            source.epoch if source is not None else 0,
            operators,
        )

    def _write_keyed(
        self, operator: _Operator, max_parallelism: int, directory: Storage, digests: bool
    ) -> OperatorState:
        context = self.spark.sparkContext
        parts: list[RDD[Entry]] = []
        if operator.base is not None and operator.kept:
            tasks = [
                task_records.dump(EntriesTask(files, tuple(sorted(operator.kept)), max_parallelism))
                for files in subtask_files(operator.base)
            ]
            if tasks:
                parts.append(context.parallelize(tasks, len(tasks)).flatMap(existing_entries))
        now = processing_time_ms()
        for bootstrap in operator.bootstraps:
            task = task_records.dump(
                BootstrapTask(
                    operator.uid, bootstrap.key_column, bootstrap.states, max_parallelism, now
                )
            )
            selected = bootstrap.dataframe.select(
                bootstrap.key_column, *(name for name, _ in bootstrap.states)
            )
            parts.append(selected.rdd.mapPartitions(partial(bootstrap_entries, task)))
        entries = context.union(parts) if parts else context.parallelize([], 1)
        kinds = operator.kinds()
        write = WriteTask(operator.uid, directory.url, quote(operator.uid, safe=""), kinds, digests)
        written = (
            entries.map(lambda entry: (entry[0], entry[1:]))
            .repartitionAndSortWithinPartitions(
                operator.parallelism,
                partial(operator_index_for_key_group, max_parallelism, operator.parallelism),
            )
            .mapPartitionsWithIndex(partial(write_subtask, task_records.dump(write)))
            .collect()
        )
        by_index = {w.subtask: w for w in map(WrittenSubtask.load, written)}
        # What else an existing subtask holds (its operator state, its watermark) goes on
        base = operator.base
        old = {s.index: s for s in base.subtasks} if base is not None else {}
        subtasks = []
        for index in range(operator.parallelism):
            groups = key_group_range(max_parallelism, operator.parallelism, index)
            manifest = CanonicalManifest(kinds, by_index[index].groups)
            before = old.get(index)
            subtasks.append(
                replace(before, keyed=manifest, key_groups=(groups.start, groups.end))
                if before is not None
                else OperatorSubtaskState(index, None, manifest, (groups.start, groups.end))
            )
        if base is not None:
            return replace(
                base, uid=operator.uid, max_parallelism=max_parallelism, subtasks=tuple(subtasks)
            )
        return OperatorState(
            operator.uid, operator.name, operator.parallelism, max_parallelism, tuple(subtasks)
        )

    def _write_operator_state(
        self, operator: _Operator, state: OperatorState, directory: Storage, digests: bool
    ) -> OperatorState:
        """``state`` with an operator-state file per subtask, written by Spark tasks: the
        operator states from DataFrames, and those of the source that they do not replace
        (each subtask keeps its own)."""
        context = self.spark.sparkContext
        given = {b.name: b.mode for b in operator.operator_state_bootstraps}
        modes: dict[str, str] = {}
        parts: list[RDD[Element]] = []
        base = operator.base
        if base is not None:
            subtasks = sorted(base.subtasks, key=lambda s: s.index)
            where = f"{self._where()}, operator {operator.uid!r}"
            found = state_modes([s.managed for s in subtasks], where)
            modes = {name: mode for name, mode in found.items() if name not in given}
            tasks = [
                task_records.dump(
                    OperatorStateReadTask(
                        s.index,
                        name,
                        OperatorStatePart(s.managed, {name: (0, s.managed.states[name].count)}),
                    )
                )
                for s in subtasks
                if s.managed is not None
                for name in sorted(modes)
                if name in s.managed.states
            ]
            if tasks:
                parts.append(context.parallelize(tasks, len(tasks)).flatMap(existing_elements))
        modes.update(given)
        for bootstrap in operator.operator_state_bootstraps:
            parts.append(self._bootstrap_elements(operator, bootstrap))
        key_columns = {
            b.name: b.key_column for b in operator.operator_state_bootstraps if b.mode == BROADCAST
        }
        write = OperatorStateWriteTask(
            operator.uid, directory.url, quote(operator.uid, safe=""), modes, key_columns, digests
        )
        written = (
            context.union(parts)
            .repartitionAndSortWithinPartitions(operator.parallelism, itemgetter(0))
            .mapPartitionsWithIndex(partial(write_operator_state_subtask, task_records.dump(write)))
            .collect()
        )
        handles = {w.subtask: w.handle for w in map(WrittenOperatorState.load, written)}
        return replace(
            state,
            subtasks=tuple(replace(s, managed=handles[s.index]) for s in state.subtasks),
        )

    def _bootstrap_elements(
        self, operator: _Operator, bootstrap: _OperatorStateBootstrap
    ) -> RDD[Element]:
        """The elements of one operator state from its DataFrame; list state without a
        subtask column is counted first, to cut it into chunks."""
        if bootstrap.mode == BROADCAST:
            columns = [bootstrap.key_column, bootstrap.value_column]
        else:
            columns = [bootstrap.value_column, *([SUBTASK] if bootstrap.by_subtask else [])]
        rows = bootstrap.dataframe.select(*columns).rdd
        chunks: tuple[tuple[int, int, int, int], ...] = ()
        if bootstrap.mode != BROADCAST and not bootstrap.by_subtask:
            counted = rows.mapPartitionsWithIndex(count_rows).collect()
            chunks = chunks_of(map(CountedPartition.load, counted), operator.parallelism)
        task = OperatorStateBootstrapTask(
            operator.uid,
            bootstrap.name,
            bootstrap.mode,
            bootstrap.key_column,
            bootstrap.value_column,
            bootstrap.by_subtask,
            operator.parallelism,
            chunks,
        )
        return rows.mapPartitionsWithIndex(partial(bootstrap_elements, task_records.dump(task)))


def chunks_of(
    counted: Iterable[CountedPartition], parallelism: int
) -> tuple[tuple[int, int, int, int], ...]:
    """(Spark partition, subtask, first, end) of each chunk of list state whose Spark
    partitions have ``counted`` rows: cut as a restore at another parallelism cuts list
    state (``split_state``), the partitions, in order, in the place of the old subtasks."""
    chunks: list[tuple[int, int, int, int]] = []

    def give(subtask: int, partition: int, _name: str, first: int, end: int) -> None:
        chunks.append((partition, subtask, first, end))

    split_state(sorted((c.partition, c.rows) for c in counted), parallelism, 0, "", give)
    return tuple(chunks)


def _with_own_operator_state(
    operator: OperatorState, directory: Storage, digests: bool
) -> OperatorState:
    """``operator`` with the operator-state files of its subtasks copied into the new
    savepoint's ``directory`` (a savepoint names no file outside itself), with their digests
    when ``digests``."""
    subtasks = []
    for subtask in operator.subtasks:
        managed = subtask.managed
        if managed is not None:
            relative = f"{quote(operator.uid, safe='')}/{subtask.index}-operator.lgos"
            data = read_url(managed.file)
            state_digest.check(data, managed.sha256, f"operator state file {managed.file}")
            directory.write_bytes(relative, data)
            sha256 = state_digest.digest(data) if digests else None
            managed = replace(managed, file=relative, sha256=sha256)
        subtasks.append(replace(subtask, managed=managed))
    return replace(operator, subtasks=tuple(subtasks))


def _declared_state(
    descriptor: object, columns: dict[str, T.DataType], key_column: str, where: str
) -> tuple[str, str]:
    """(name, kind as stored) of a state to bootstrap, after checking its column."""
    if not isinstance(descriptor, StateDescriptor):
        raise StateProcessorError(
            f"{where}: states are declared with state descriptors (ValueStateDescriptor, "
            f"ListStateDescriptor, ...), got {descriptor!r}"
        )
    name = descriptor.name
    if descriptor.kind not in RAW_KINDS:
        raise StateProcessorError(f"{where}: cannot bootstrap {descriptor!r}")
    if name == key_column or name not in columns:
        raise StateProcessorError(
            f"{where}: state {name!r} needs a column of its name besides the key column "
            f"{key_column!r} (the DataFrame's columns: {', '.join(columns)})"
        )
    data_type = columns[name]
    if descriptor.kind == "list" and not isinstance(data_type, T.ArrayType):
        raise StateProcessorError(
            f"{where}: list state {name!r} needs an array column, not {data_type.simpleString()}"
        )
    if descriptor.kind == "map" and not isinstance(data_type, T.MapType):
        raise StateProcessorError(
            f"{where}: map state {name!r} needs a map column, not {data_type.simpleString()}"
        )
    return name, stored_kind(descriptor)

"""What ``SavepointWriter.with_list_state``, ``with_union_state`` and ``with_broadcast_state``
check before any Spark job: the descriptor's class, the columns, the operator's parallelism,
and that a name is one state of one operator (not keyed state too, not given twice); an
operator may have keyed state and operator state."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from lockgate.checkpoint.metadata import CheckpointMetadata, OperatorState, OperatorSubtaskState
from lockgate.common import Time
from lockgate.core.fs.storage import Storage
from lockgate.datastream.state import StateTtlConfig
from lockgate.state.descriptors import ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor
from lockgate.state.manifests import CanonicalManifest
from lockgate.state.operator_state_backend import OperatorStateBackend
from lockgate.state_processor import SavepointWriter, StateProcessorError

SPARK = SimpleNamespace(sparkContext=SimpleNamespace(defaultParallelism=2))


class Frame(DataFrame):
    """A DataFrame's schema alone, which is all the writer looks at before writing."""

    def __new__(cls, **columns: T.DataType) -> Frame:
        return object.__new__(cls)  # DataFrame's makes a classic DataFrame of a JVM one

    def __init__(self, **columns: T.DataType):
        self._fields = T.StructType([T.StructField(n, t) for n, t in columns.items()])

    @property
    def schema(self) -> T.StructType:
        return self._fields


VALUES = Frame(value=T.LongType())
ENTRIES = Frame(key=T.StringType(), value=T.LongType())


def existing(tmp_path: Path) -> SavepointWriter:
    """A savepoint with operator 'tally' (not keyed, 2 subtasks: list state 'seen', union
    state 'counts') and keyed operator 'counting' (keyed state 'count', list state
    'buffer')."""
    storage = Storage(str(tmp_path))
    subtasks = []
    for index in range(2):
        backend = OperatorStateBackend(f"subtask {index}", [])
        backend.get_list_state(ListStateDescriptor("seen")).add(index)
        backend.get_union_list_state(ListStateDescriptor("counts")).add(index)
        handle = backend.snapshot(storage, f"tally/{index}.lgos", reuse=False)
        subtasks.append(OperatorSubtaskState(index, None, None, None, managed=handle))
    backend = OperatorStateBackend("counting", [])
    backend.get_list_state(ListStateDescriptor("buffer")).add("x")
    handle = backend.snapshot(storage, "counting/0.lgos", reuse=False)
    keyed = OperatorSubtaskState(
        0, None, CanonicalManifest({"count": "value"}, {}), (0, 127), managed=handle
    )
    operators = {
        "tally": OperatorState("tally", "Tally", 2, 128, tuple(subtasks)),
        "counting": OperatorState("counting", "Counting", 1, 128, (keyed,)),
    }
    return SavepointWriter(SPARK, CheckpointMetadata("job", 1, 1, operators), "sp", None)


def test_each_mode_takes_its_descriptor_class():
    writer = SavepointWriter.new_savepoint(SPARK, 128)
    with pytest.raises(
        StateProcessorError,
        match=r"^operator 'tally': with_list_state takes a ListStateDescriptor, got "
        r"MapStateDescriptor\('seen'\)$",
    ):
        writer.with_list_state("tally", VALUES, MapStateDescriptor("seen"))
    with pytest.raises(StateProcessorError, match=r"with_union_state takes a ListStateDescriptor"):
        writer.with_union_state("tally", VALUES, ValueStateDescriptor("seen"))
    with pytest.raises(
        StateProcessorError, match=r"with_broadcast_state takes a MapStateDescriptor"
    ):
        writer.with_broadcast_state("tally", ENTRIES, ListStateDescriptor("latest"))
    with pytest.raises(StateProcessorError, match=r"operator 'tally': needs a Spark DataFrame"):
        writer.with_list_state("tally", [1, 2], ListStateDescriptor("seen"))
    with pytest.raises(StateProcessorError, match=r"the operator uid must be a non-empty string"):
        writer.with_list_state("", VALUES, ListStateDescriptor("seen"))
    with_ttl = ListStateDescriptor("seen")
    with_ttl.enable_time_to_live(StateTtlConfig.new_builder(Time.hours(1)).build())
    with pytest.raises(
        StateProcessorError,
        match=r"^operator 'tally', list state 'seen': time-to-live is for keyed state",
    ):
        writer.with_list_state("tally", VALUES, with_ttl)


def test_missing_columns_are_named_with_the_uid_and_state():
    writer = SavepointWriter.new_savepoint(SPARK, 128)
    with pytest.raises(
        StateProcessorError,
        match=r"^operator 'tally', list state 'seen': the DataFrame has no column 'element' "
        r"\(its columns: value\)$",
    ):
        writer.with_list_state("tally", VALUES, ListStateDescriptor("seen"), value_column="element")
    with pytest.raises(
        StateProcessorError,
        match=r"^operator 'tally', broadcast state 'latest': the DataFrame has no column 'key' ",
    ):
        writer.with_broadcast_state("tally", VALUES, MapStateDescriptor("latest"))
    with pytest.raises(
        StateProcessorError,
        match=r"union list state 'counts': column 'subtask' gives each element's subtask: it "
        r"must hold integers, not string",
    ):
        writer.with_union_state(
            "tally",
            Frame(subtask=T.StringType(), value=T.LongType()),
            ListStateDescriptor("counts"),
        )


def test_a_name_is_one_state_of_an_operator():
    writer = SavepointWriter.new_savepoint(SPARK, 128)
    writer.with_list_state("tally", VALUES, ListStateDescriptor("seen"))
    for again in (writer.with_list_state, writer.with_union_state):
        with pytest.raises(
            StateProcessorError,
            match=r"^operator 'tally': state 'seen' was given as list state by an earlier "
            r"with_list_state already$",
        ):
            again("tally", VALUES, ListStateDescriptor("seen"))
    writer.with_broadcast_state("tally", ENTRIES, MapStateDescriptor("latest"))
    with pytest.raises(StateProcessorError, match=r"'latest' was given as broadcast state by"):
        writer.with_union_state("tally", VALUES, ListStateDescriptor("latest"))
    with pytest.raises(
        StateProcessorError,
        match=r"^operator 'tally': 'seen' is an operator state of the operator: keyed state "
        r"needs another name$",
    ):
        writer.with_keyed_state(
            "tally", Frame(key=T.StringType(), seen=T.LongType()), [ValueStateDescriptor("seen")]
        )


def test_an_operator_may_have_keyed_and_operator_state(tmp_path):
    writer = SavepointWriter.new_savepoint(SPARK, 128)
    # operator state first: the new operator becomes keyed with its keyed state
    writer.with_list_state("tally", VALUES, ListStateDescriptor("seen"), parallelism=3)
    writer.with_keyed_state(
        "tally", Frame(key=T.StringType(), n=T.LongType()), [ValueStateDescriptor("n")]
    )
    with pytest.raises(
        StateProcessorError,
        match=r"^operator 'tally': 'n' is a keyed state of the operator: operator state needs "
        r"another name$",
    ):
        writer.with_broadcast_state("tally", ENTRIES, MapStateDescriptor("n"))
    with pytest.raises(
        StateProcessorError,
        match=r"operator 'tally' exists already with parallelism 3: parallelism is only for a "
        r"new operator",
    ):
        writer.with_union_state("tally", VALUES, ListStateDescriptor("counts"), parallelism=3)

    # an existing keyed operator gets operator state; its keyed state's names are taken
    source = existing(tmp_path)
    source.with_union_state("counting", VALUES, ListStateDescriptor("offsets"))
    with pytest.raises(StateProcessorError, match=r"'count' is a keyed state of the operator"):
        source.with_list_state("counting", VALUES, ListStateDescriptor("count"))
    # an existing operator that is not keyed stays so
    with pytest.raises(StateProcessorError, match=r"operator 'tally' is not keyed"):
        source.with_keyed_state(
            "tally", Frame(key=T.StringType(), n=T.LongType()), [ValueStateDescriptor("n")]
        )


def test_an_existing_operator_s_operator_state_is_replaced_by_name(tmp_path):
    writer = existing(tmp_path)
    # union state 'counts' becomes list state: a state may change mode, as keyed state may
    # change kind
    writer.with_list_state("tally", VALUES, ListStateDescriptor("counts"))
    writer.with_broadcast_state("tally", ENTRIES, MapStateDescriptor("latest"))
    with pytest.raises(StateProcessorError, match=r"'counts' was given as list state by"):
        writer.with_list_state("tally", VALUES, ListStateDescriptor("counts"))
    # the names of a keyed operator's operator state, kept or given, are not for keyed state
    writer.with_broadcast_state("counting", ENTRIES, MapStateDescriptor("rules"))
    for name in ("buffer", "rules"):
        with pytest.raises(
            StateProcessorError, match=rf"'{name}' is an operator state of the operator"
        ):
            writer.with_keyed_state(
                "counting",
                Frame(key=T.StringType(), **{name: T.LongType()}),
                [ValueStateDescriptor(name)],
            )
    writer.with_list_state("counting", VALUES, ListStateDescriptor("buffer"))  # replaced

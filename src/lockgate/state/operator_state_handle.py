"""The snapshot of one operator subtask's operator state (Flink's OperatorStateHandle).

Operator state is a set of named lists (Flink's list, union list and broadcast state; a
broadcast state's elements are its ``(key, value)`` entries). A subtask writes all of them
into one file per epoch::

    file  := magic "LGOS" | u16 state count | state* | element*
    state := u16 name length | name | u8 mode | u32 element count
    element := u32 length | pickled element      (states in header order)

The handle names the file, its size and CRC-32 (and its SHA-256 digest when the job signs
its checkpoints: ``state_digest``), and per state its mode and element count:
enough for the driver to redistribute the elements on a rescale without reading a file
(``operator_state_repartitioner``); a subtask then reads the element ranges it was given
(``OperatorStatePart``).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pickle import HIGHEST_PROTOCOL, dumps, loads
from typing import Annotated, Any

from lockgate.common.records import ADDED, Minimum, Record, RecordFormatError
from lockgate.core.fs.storage import read_url
from lockgate.state import state_digest

MAGIC = b"LGOS"
SPLIT_DISTRIBUTE = "split"  # get_list_state: the elements are spread over the subtasks
UNION = "union"  # get_union_list_state: every subtask gets all elements
BROADCAST = "broadcast"  # get_broadcast_state: every subtask gets one subtask's copy
MODES = (SPLIT_DISTRIBUTE, UNION, BROADCAST)
# The state of each mode as Flink names it, for messages and the state processor
KINDS = {SPLIT_DISTRIBUTE: "list", UNION: "union list", BROADCAST: "broadcast"}
_STATE = struct.Struct(">BI")  # mode, element count
_LENGTH = struct.Struct(">I")
_COUNT = struct.Struct(">H")


class OperatorStateFormatError(ValueError):
    """An operator-state file that is damaged or is not one."""


@dataclass(frozen=True)
class StateMeta(Record, array=True):
    """JSON: ``[mode, count]``."""

    mode: str
    count: Annotated[int, Minimum(0)]  # elements

    def validate(self, where: str) -> None:
        if self.mode not in MODES:
            raise RecordFormatError(f"{where}: unknown mode {self.mode!r}")


@dataclass(frozen=True)
class OperatorStateHandle(Record):
    file: str
    size: int
    crc: int
    states: dict[str, StateMeta]  # by state name, sorted
    sha256: Annotated[str | None, ADDED] = None

    @staticmethod
    def of(
        url: str, data: bytes, states: dict[str, StateMeta], digests: bool
    ) -> OperatorStateHandle:
        """The handle of ``data``, written to ``url``; with its digest when ``digests``."""
        sha256 = state_digest.digest(data) if digests else None
        return OperatorStateHandle(url, len(data), zlib.crc32(data), states, sha256)

    def map_url(self, mapping: Callable[[str], str]) -> OperatorStateHandle:
        return replace(self, file=mapping(self.file))


@dataclass(frozen=True)
class OperatorStatePart(Record):
    """What a subtask takes of one handle: per state, the elements [start, end)."""

    handle: OperatorStateHandle
    ranges: dict[str, tuple[int, int]]

    @staticmethod
    def whole(handle: OperatorStateHandle) -> OperatorStatePart:
        return OperatorStatePart(handle, {n: (0, m.count) for n, m in handle.states.items()})

    def is_whole(self) -> bool:
        return self.ranges == {n: (0, m.count) for n, m in self.handle.states.items()}

    def validate(self, where: str) -> None:
        for name, (start, end) in self.ranges.items():
            meta = self.handle.states.get(name)
            if meta is None or not 0 <= start <= end <= meta.count:
                raise RecordFormatError(
                    f"{where}: range [{start}, {end}] of state {name!r} is invalid"
                )


def pickled(element: Any) -> bytes:
    """An element as the file holds it."""
    return dumps(element, HIGHEST_PROTOCOL)


def encode(states: dict[str, tuple[str, list[Any]]]) -> tuple[bytes, dict[str, StateMeta]]:
    """The file of ``states`` (name -> (mode, elements)) and each state's meta."""
    return encode_pickled(
        {name: (mode, [pickled(e) for e in elements]) for name, (mode, elements) in states.items()}
    )


def encode_pickled(
    states: dict[str, tuple[str, list[bytes]]],
) -> tuple[bytes, dict[str, StateMeta]]:
    """``encode`` of elements pickled already (``pickled``), as the state processor writes
    elements it has as bytes only."""
    names = sorted(states)
    header = [MAGIC, _COUNT.pack(len(names))]
    body: list[bytes] = []
    for name in names:
        mode, elements = states[name]
        encoded = name.encode()
        header += [
            _COUNT.pack(len(encoded)),
            encoded,
            _STATE.pack(MODES.index(mode), len(elements)),
        ]
        for blob in elements:
            body += [_LENGTH.pack(len(blob)), blob]
    metas = {name: StateMeta(states[name][0], len(states[name][1])) for name in names}
    return b"".join(header + body), metas


def read_part(part: OperatorStatePart) -> Iterator[tuple[str, str, list[Any]]]:
    """(name, mode, elements in range) of every state of ``part``, from its file."""
    for name, mode, blobs in read_pickled_part(part):
        yield name, mode, [loads(blob) for blob in blobs]


def read_pickled_part(part: OperatorStatePart) -> Iterator[tuple[str, str, list[bytes]]]:
    """``read_part`` with the elements as the file holds them (pickled)."""
    handle = part.handle
    data = read_url(handle.file)
    if len(data) != handle.size or zlib.crc32(data) != handle.crc:
        raise OperatorStateFormatError(
            f"operator state file {handle.file} is damaged: {len(data)} bytes with CRC "
            f"{zlib.crc32(data)}, expected {handle.size} bytes with CRC {handle.crc}"
        )
    state_digest.check(data, handle.sha256, f"operator state file {handle.file}")
    if data[:4] != MAGIC:
        raise OperatorStateFormatError(f"{handle.file} is not an operator state file")
    (count,) = _COUNT.unpack_from(data, 4)
    position = 6
    layout = []
    for _ in range(count):
        (length,) = _COUNT.unpack_from(data, position)
        name = data[position + 2 : position + 2 + length].decode()
        position += 2 + length
        mode, elements = _STATE.unpack_from(data, position)
        position += _STATE.size
        layout.append((name, MODES[mode], elements))
    for name, mode, elements in layout:
        start, end = part.ranges.get(name, (0, 0))
        blobs = []
        for index in range(elements):
            (length,) = _LENGTH.unpack_from(data, position)
            position += _LENGTH.size
            if start <= index < end:
                blobs.append(data[position : position + length])
            position += length
        if name in part.ranges:
            yield name, mode, blobs

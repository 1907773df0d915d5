"""The canonical form of keyed state (Flink's canonical savepoint format): the same bytes
whichever backend wrote them, so a savepoint taken on the heap backend restores into RocksDB
and back, at any parallelism.

A canonical file is a key-groups file (``snapshot.frame_chunks``, magic ``LGCS``): one checksummed
blob per key group. A blob names its states and then lists entries::

    blob   := u16 state count | (u16 len, name, u16 len, kind) per state | entry*
    entry  := u16 state | u32 key len | u32 sub len | u32 value len | key | sub | value

- ``key``: the portable encoding of the user's key (``key_codec.encode_portable_key``), the
  same on every machine and Python version, so a key finds its state after a restore;
- ``sub``: what addresses the entry below the key, as ``key_codec`` encodings one after
  the other: the namespace (a window) of a namespaced state, then the user key of a map
  entry; for timers the timestamp, then the namespace (``encode_namespace``: a window comes
  back as its class, not as the tuple it equals);
- ``value``: the state's serializer's bytes (pickle) of the stored value: a value, list,
  reducing or aggregating state's value, one map entry's value, TTL values with their
  timestamps; empty for a timer.

The "heap form" of a key group is what the heap backend holds and snapshots: state name ->
entries, where a namespaced state's key is ``(key, namespace)``, a map state's value is a
dict, and a timer is a key ``(timestamp, key, namespace)`` with the value None.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pickle import HIGHEST_PROTOCOL, dumps, loads
from typing import Any

from lockgate.state import snapshot
from lockgate.state.key_codec import (
    decode_key,
    decode_key_prefix,
    encode_key,
    encode_namespace,
    encode_portable_key,
)
from lockgate.state.namespaces import NAMESPACED
from lockgate.state.timer_queues import TIMERS_KIND

MAGIC = b"LGCS"
_COUNT = struct.Struct(">H")
_ENTRY = struct.Struct(">HIII")  # state, key length, sub length, value length


@dataclass(frozen=True, slots=True)
class StateShape:
    """How a state's entries are addressed below the key, from its kind."""

    namespaced: bool  # per key and namespace (a window)
    is_map: bool  # one entry per map key
    timers: bool  # timers: (timestamp, namespace) per key, no value


def shape(kind: str) -> StateShape:
    if kind == TIMERS_KIND:
        return StateShape(False, False, True)
    namespaced = kind.endswith(NAMESPACED)
    base = kind[: -len(NAMESPACED)] if namespaced else kind
    return StateShape(namespaced, base.endswith("map"), False)


class CanonicalKeyError(TypeError):
    """A key that cannot go into a savepoint: its encoding would not be portable."""


class GroupWriter:
    """Builds one key group's blob."""

    __slots__ = ("body", "ids", "states")

    def __init__(self) -> None:
        self.states: list[tuple[str, str]] = []
        self.ids: dict[str, int] = {}
        self.body = bytearray()

    def state(self, name: str, kind: str) -> int:
        sid = self.ids.get(name)
        if sid is None:
            sid = self.ids[name] = len(self.states)
            self.states.append((name, kind))
        return sid

    def add(self, sid: int, key: bytes, sub: bytes, value: bytes) -> None:
        body = self.body
        body += _ENTRY.pack(sid, len(key), len(sub), len(value))
        body += key
        body += sub
        body += value

    def finish(self) -> bytes:
        """The blob; empty when no entry was added."""
        if not self.body:
            return b""
        head = bytearray(_COUNT.pack(len(self.states)))
        for name, kind in self.states:
            for text in (name.encode(), kind.encode()):
                head += _COUNT.pack(len(text))
                head += text
        return bytes(head + self.body)


def portable_key(key: Any, state: str) -> bytes:
    try:
        return encode_portable_key(key)
    except TypeError as exc:
        raise CanonicalKeyError(f"state {state!r}: {exc}") from None


def write_contents(writer: GroupWriter, kinds: dict[str, str], contents: dict[str, Any]) -> None:
    """Add a key group in heap form (state name -> entries) to ``writer``."""
    for name, entries in contents.items():
        kind = kinds[name]
        form = shape(kind)
        sid = writer.state(name, kind)
        add = writer.add
        if form.timers:
            for timestamp, key, namespace in entries:
                add(
                    sid,
                    portable_key(key, name),
                    encode_key(timestamp) + encode_namespace(namespace),
                    b"",
                )
        elif form.namespaced:
            for (key, namespace), stored in entries.items():
                key_bytes = portable_key(key, name)
                sub = encode_key(namespace)
                if form.is_map:
                    for map_key, value in stored.items():
                        add(
                            sid,
                            key_bytes,
                            sub + encode_key(map_key),
                            dumps(value, HIGHEST_PROTOCOL),
                        )
                else:
                    add(sid, key_bytes, sub, dumps(stored, HIGHEST_PROTOCOL))
        elif form.is_map:
            for key, stored in entries.items():
                key_bytes = portable_key(key, name)
                for map_key, value in stored.items():
                    add(sid, key_bytes, encode_key(map_key), dumps(value, HIGHEST_PROTOCOL))
        else:
            for key, stored in entries.items():
                add(sid, portable_key(key, name), b"", dumps(stored, HIGHEST_PROTOCOL))


def read_entries(blob: bytes) -> Iterator[tuple[str, str, bytes, bytes, bytes]]:
    """(state name, kind, key, sub, value) of every entry of a blob, in order."""
    view = memoryview(blob)
    (count,) = _COUNT.unpack_from(view, 0)
    pos = _COUNT.size
    states = []
    for _ in range(count):
        texts = []
        for _ in range(2):
            (length,) = _COUNT.unpack_from(view, pos)
            pos += _COUNT.size
            texts.append(bytes(view[pos : pos + length]).decode())
            pos += length
        states.append((texts[0], texts[1]))
    end = len(blob)
    unpack = _ENTRY.unpack_from
    while pos < end:
        sid, key_len, sub_len, value_len = unpack(view, pos)
        pos += _ENTRY.size
        key = blob[pos : pos + key_len]
        pos += key_len
        sub = blob[pos : pos + sub_len]
        pos += sub_len
        value = blob[pos : pos + value_len]
        pos += value_len
        name, kind = states[sid]
        yield name, kind, key, sub, value


def decode_sub(form: StateShape, sub: bytes) -> tuple[Any, ...]:
    """The parts of ``sub``: (namespace?, map key?) or (timestamp, namespace) for timers."""
    parts = []
    pos = 0
    while pos < len(sub):
        part, pos = decode_key_prefix(sub, pos)
        parts.append(part)
    expected = (2 if form.timers else 0) + form.namespaced + form.is_map
    if len(parts) != expected:
        raise snapshot.SnapshotFormatError(
            f"an entry has {len(parts)} parts below its key, its state's kind {expected}"
        )
    return tuple(parts)


def read_contents(blob: bytes) -> tuple[dict[str, str], dict[str, dict[Any, Any]]]:
    """A key group's blob in heap form: (state name -> kind, state name -> entries)."""
    kinds: dict[str, str] = {}
    contents: dict[str, dict[Any, Any]] = {}
    shapes: dict[str, StateShape] = {}
    for name, kind, key_bytes, sub, value in read_entries(blob):
        entries = contents.get(name)
        if entries is None:
            entries = contents[name] = {}
            kinds[name] = kind
            shapes[name] = shape(kind)
        form = shapes[name]
        key = decode_key(key_bytes)
        if form.timers:
            timestamp, namespace = decode_sub(form, sub)
            entries[(timestamp, key, namespace)] = None
            continue
        parts = decode_sub(form, sub)
        if form.namespaced:
            key = (key, parts[0])
        if form.is_map:
            entries.setdefault(key, {})[parts[-1]] = loads(value)
        else:
            entries[key] = loads(value)
    return kinds, contents

"""``EmbeddedRocksDBStateBackend``'s keyed state: one RocksDB instance per keyed subtask.

Key layout (key group first, so a key group is one contiguous range)::

    key group (2 bytes) | state id (2 bytes) | key           -> value (pickled)
    key group (2 bytes) | state id (2 bytes) | key | map key -> map value (pickled)

Keys and map keys go through ``key_codec`` (prefix-free, so a key's map entries are exactly
the range that starts with its prefix). The state registry (name -> id, kind) is kept in
the database itself under a prefix no key group can have.

Value, list, reducing and aggregating states read and write through a write-back cache of
the keys touched lately: a record costs a dict lookup, and RocksDB sees one batched write
per key at the end of the epoch (or when the cache is full). Map states go to RocksDB
directly, so a large map is never loaded whole. The instance runs without a WAL: an epoch
is made durable by its snapshot, and a failed epoch's instance is thrown away.

After every epoch the instance is checkpointed on local disk (``snap-<tag>``, SSTs
hard-linked) and the SST files that storage does not hold yet are uploaded
(``RocksDBKeyedStateBackend.snapshot``); ``rocksdb_restore`` builds instances again.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pickle import HIGHEST_PROTOCOL, dumps, loads
from typing import Any

import rocksdict

from lockgate.common.clock import processing_time_ms
from lockgate.common.records import Record
from lockgate.core.fs.storage import Storage
from lockgate.state import state_digest
from lockgate.state.canonical_snapshot import (
    GroupWriter,
    decode_sub,
    portable_key,
    read_entries,
    shape,
)
from lockgate.state.descriptors import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueStateDescriptor,
)
from lockgate.state.interfaces import (
    AggregatingState,
    ListState,
    MapState,
    ReducingState,
    State,
    ValueState,
)
from lockgate.state.key_codec import decode_key, decode_key_prefix, encode_key, encode_namespace
from lockgate.state.key_groups import NO_KEY_GROUP, KeyGroupRange, foreign_key_group
from lockgate.state.keyed_backend import KeyContext, kind_mismatch
from lockgate.state.keyed_subtask import KeyedSubtask
from lockgate.state.manifests import FileHandle, KeyedStateSnapshot, RocksDBManifest
from lockgate.state.namespaces import NamespaceMerging, namespaced_kind
from lockgate.state.timer_queues import (
    TIMERS_KIND,
    RocksDBTimerQueue,
    read_timer_entry,
    timer_entry,
)
from lockgate.state.ttl import (
    TtlState,
    purge_expired,
    ttl_settings,
    wrap_with_ttl,
)

_PREFIX = struct.Struct(">HH")  # key group, state id
_NO_KEY = object()
_GROUP = struct.Struct(">H")
# encode_key((key, namespace)) is a tuple head, then the two encodings one after the other
_PAIR_HEAD = len(encode_key((0, 0))) - 2 * len(encode_key(0))
# The registry's key names the version of key_codec's encodings the keys were written
# with, as lookups must encode alike: 2 gave dates, times, timedeltas and enums encodings of
# their own (1, whose registry key had no suffix, pickled them).
_REGISTRY_KEY = b"\xff\xff" + b"lockgate-state-registry-2"
_OLDER_REGISTRY_KEYS = {b"\xff\xff" + b"lockgate-state-registry": "1"}
# In a local snapshot (snap-<tag>, next to the instance): file name -> URL in storage
UPLOADED_INDEX = "lockgate-uploaded.json"
LOCAL_SNAPSHOTS_KEPT = 3


class StateBackendError(RuntimeError):
    """A state backend that cannot work where it was asked to (names the path)."""


@dataclass(frozen=True)
class RocksDBSettings(Record):
    """Per-instance tuning; the defaults follow Flink's RocksDB options but for compaction."""

    write_buffer_bytes: int = 64 << 20
    block_cache_bytes: int = 8 << 20
    cache_entries: int = 100_000  # per state: keys held by the write-back cache
    background_jobs: int = 2
    compaction_style: str = "UNIVERSAL"  # or LEVEL (see the configuration key)


def _options(settings: RocksDBSettings) -> rocksdict.Options:
    options = rocksdict.Options(raw_mode=True)
    options.create_if_missing(True)
    options.set_write_buffer_size(settings.write_buffer_bytes)
    options.set_max_background_jobs(settings.background_jobs)
    if settings.compaction_style == "UNIVERSAL":
        options.set_compaction_style(rocksdict.DBCompactionStyle.universal())
    table = rocksdict.BlockBasedOptions()
    table.set_block_cache(rocksdict.Cache(settings.block_cache_bytes))
    table.set_bloom_filter(10, False)
    options.set_block_based_table_factory(table)
    return options


def open_instance(path: str, settings: RocksDBSettings) -> rocksdict.Rdict:
    """Open (or create) the instance at ``path``; errors name the path and the cause."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise StateBackendError(
            f"RocksDB local directory {path} cannot be created: {exc.strerror or exc}"
        ) from None
    if not os.access(path, os.W_OK):
        raise StateBackendError(f"RocksDB local directory {path} is not writable")
    try:
        db = rocksdict.Rdict(path, _options(settings))
    except Exception as exc:  # rocksdict raises plain Exception for I/O errors
        message = str(exc)
        if "/LOCK" in message:  # RocksDB could not take the instance's LOCK file
            raise StateBackendError(
                f"RocksDB instance {path} is locked by another live instance (another job "
                f"or process has it open): {message}"
            ) from None
        raise StateBackendError(f"cannot open RocksDB instance {path}: {message}") from None
    write_options = rocksdict.WriteOptions()
    # rocksdict's stub declares disable_wal a method; at runtime it is a settable property
    write_options.disable_wal = True  # type: ignore[method-assign, assignment]
    db.set_write_options(write_options)
    return db


_MISS = object()


class _CachedState:
    """Reads and writes go to ``cache`` (key -> value, None = absent); ``dirty`` (key ->
    key group) lists what the next write-back must put into RocksDB."""

    __slots__ = ("_backend", "_cache", "_ctx", "_dirty", "_first", "_last", "_sid")

    def __init__(self, backend: RocksDBKeyedStateBackend, sid: int, ctx: KeyContext):
        self._backend = backend
        self._ctx = ctx
        self._sid = sid
        self._first = backend.key_groups.start
        self._last = backend.key_groups.end
        self._cache: dict[Any, Any] = {}
        self._dirty: dict[Any, int] = {}
        backend.cached_states.append(self)

    def _load(self) -> Any:
        ctx = self._ctx
        backend = self._backend
        backend.check_group(ctx.group)
        if len(self._cache) >= backend.settings.cache_entries:
            backend.write_back()  # the cache is full: write it out and forget it
        raw = backend.db.get(_PREFIX.pack(ctx.group, self._sid) + encode_key(ctx.key))
        value = None if raw is None else loads(raw)
        self._cache[ctx.key] = value
        return value

    def _current(self) -> Any:
        value = self._cache.get(self._ctx.key, _MISS)
        return self._load() if value is _MISS else value

    def _set(self, value: Any) -> None:
        ctx = self._ctx
        if not self._first <= ctx.group <= self._last:
            self._backend.check_group(ctx.group)
        self._cache[ctx.key] = value
        dirty = self._dirty
        dirty[ctx.key] = ctx.group
        if len(dirty) >= self._backend.settings.cache_entries:
            self._backend.write_back()

    def clear(self) -> None:
        self._set(None)

    def write_back(self, batch: rocksdict.WriteBatch) -> None:
        cache = self._cache
        sid = self._sid
        pack = _PREFIX.pack
        for key, group in self._dirty.items():
            value = cache[key]
            db_key = pack(group, sid) + encode_key(key)
            if value is None:
                batch.delete(db_key)
            else:
                batch.put(db_key, dumps(value, HIGHEST_PROTOCOL))
        self._dirty.clear()
        if len(cache) >= self._backend.settings.cache_entries:
            cache.clear()

    def drop_cache(self) -> None:
        """Forget cached values (written back already) after RocksDB changed underneath."""
        self._cache.clear()


class RocksDBValueState(_CachedState, ValueState):
    __slots__ = ()

    def value(self) -> Any:
        value = self._cache.get(self._ctx.key, _MISS)
        return self._load() if value is _MISS else value

    def update(self, value: Any) -> None:
        self._set(value)


class _CachedMerging(_CachedState, NamespaceMerging):
    __slots__ = ()

    def _raw(self) -> Any:
        return self._current()

    def _store(self, value: Any) -> None:
        self._set(value)


class RocksDBListState(_CachedMerging, ListState):
    __slots__ = ()

    def _merge(self, a: Any, b: Any) -> Any:
        return a + b

    def get(self) -> list[Any]:
        return list(self._current() or ())

    def add(self, value: Any) -> None:
        if value is None:
            raise ValueError("cannot add None to a ListState")
        values = self._current()
        if values is None:
            self._set([value])
        else:  # the cached list is never handed out: append in place
            values.append(value)
            self._set(values)

    def add_all(self, values: list[Any]) -> None:
        for value in values:
            if value is None:
                raise ValueError("cannot add None to a ListState")
        if values:
            current = self._current()
            if current is None:
                self._set(list(values))
            else:
                current.extend(values)
                self._set(current)

    def update(self, values: list[Any]) -> None:
        self._set(list(values) if values else None)


class RocksDBReducingState(_CachedMerging, ReducingState):
    __slots__ = ("_reduce",)

    def __init__(
        self,
        backend: RocksDBKeyedStateBackend,
        sid: int,
        ctx: KeyContext,
        reduce: Callable[[Any, Any], Any],
    ) -> None:
        super().__init__(backend, sid, ctx)
        self._reduce = reduce

    def _merge(self, a: Any, b: Any) -> Any:
        return self._reduce(a, b)

    def get(self) -> Any:
        return self._current()

    def add(self, value: Any) -> None:
        current = self._current()
        self._set(value if current is None else self._reduce(current, value))


class RocksDBAggregatingState(_CachedMerging, AggregatingState):
    __slots__ = ("_agg",)

    def __init__(
        self, backend: RocksDBKeyedStateBackend, sid: int, ctx: KeyContext, agg: Any
    ) -> None:
        super().__init__(backend, sid, ctx)
        self._agg = agg

    def _merge(self, a: Any, b: Any) -> Any:
        return self._agg.merge(a, b)

    def get(self) -> Any:
        accumulator = self._current()
        return None if accumulator is None else self._agg.get_result(accumulator)

    def add(self, value: Any) -> None:
        if value is None:  # as PyFlink: adding None clears the state
            self.clear()
            return
        accumulator = self._current()
        if accumulator is None:
            accumulator = self._agg.create_accumulator()
        self._set(self._agg.add(value, accumulator))


class RocksDBMapState(MapState):
    """Every call reads or writes RocksDB; iteration walks the key's range lazily."""

    __slots__ = ("_backend", "_ctx", "_last", "_sid")

    def __init__(self, backend: RocksDBKeyedStateBackend, sid: int, ctx: KeyContext):
        self._backend = backend
        self._ctx = ctx
        self._sid = sid
        # key, key group, prefix; no key equals _MISS, so the first call computes a prefix
        # (a no-key context must fail there, not read and write under the empty prefix)
        self._last: tuple[Any, int, bytes] = (_MISS, NO_KEY_GROUP, b"")

    def _prefix(self) -> bytes:
        """The current key's prefix; a record makes several calls for one key, so the last
        one is kept."""
        ctx = self._ctx
        key, group, prefix = self._last
        if ctx.group == group and ctx.key == key and type(ctx.key) is type(key):
            return prefix
        self._backend.check_group(ctx.group)
        prefix = _PREFIX.pack(ctx.group, self._sid) + encode_key(ctx.key)
        self._last = (ctx.key, ctx.group, prefix)
        return prefix

    def get(self, key: Any) -> Any:
        raw = self._backend.db.get(self._prefix() + encode_key(key))
        return None if raw is None else loads(raw)

    def put(self, key: Any, value: Any) -> None:
        self._backend.db.put(self._prefix() + encode_key(key), dumps(value, HIGHEST_PROTOCOL))

    def put_all(self, dict_value: dict[Any, Any]) -> None:
        if not dict_value:
            return
        prefix = self._prefix()
        batch = rocksdict.WriteBatch(raw_mode=True)
        for key, value in dict_value.items():
            batch.put(prefix + encode_key(key), dumps(value, HIGHEST_PROTOCOL))
        self._backend.db.write(batch)

    def remove(self, key: Any) -> None:
        self._backend.db.delete(self._prefix() + encode_key(key))

    def contains(self, key: Any) -> bool:
        return self._backend.db.get(self._prefix() + encode_key(key)) is not None

    def _entries(self) -> Iterator[tuple[bytes, bytes]]:
        prefix = self._prefix()
        start = len(prefix)
        iterator = self._backend.db.iter()
        iterator.seek(prefix)
        while iterator.valid():
            db_key = iterator.key()
            if not db_key.startswith(prefix):
                return
            yield db_key[start:], iterator.value()
            iterator.next()

    def items(self) -> Iterator[tuple[Any, Any]]:
        for key, raw in self._entries():
            yield decode_key(key), loads(raw)

    def keys(self) -> Iterator[Any]:
        for key, _ in self._entries():
            yield decode_key(key)

    def values(self) -> Iterator[Any]:
        for _, raw in self._entries():
            yield loads(raw)

    def is_empty(self) -> bool:
        return next(self._entries(), None) is None

    def clear(self) -> None:
        prefix = self._prefix()
        self._backend.db.delete_range(prefix, _successor(prefix))


def _successor(prefix: bytes) -> bytes:
    """The smallest byte string greater than every string that starts with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    return stripped[:-1] + bytes([stripped[-1] + 1])


class RocksDBKeyedStateBackend:
    """Keyed state of one subtask of one operator, held in a RocksDB instance on local disk."""

    def __init__(
        self,
        key_groups: KeyGroupRange,
        max_parallelism: int,
        path: str,
        settings: RocksDBSettings,
        *,
        incremental: bool = False,
        ttl_clock: Callable[[], int] | None = None,
    ):
        self.key_groups = key_groups
        self.max_parallelism = max_parallelism
        self.path = path
        self.settings = settings
        self.incremental = incremental  # checkpoints share SST files with earlier ones
        self.ctx = KeyContext()
        self.ns_ctx = KeyContext()  # of namespaced states: its key is (key, namespace)
        self.db = open_instance(path, settings)
        raw = self.db.get(_REGISTRY_KEY)
        for older, encoding in _OLDER_REGISTRY_KEYS.items():
            if raw is None and self.db.get(older) is not None:
                self.db.close()
                raise StateBackendError(
                    f"RocksDB instance {path} holds keys in encoding {encoding}, written by "
                    "an older lockgate; this one reads encoding 2"
                )
        self._registry: dict[str, list[Any]] = json.loads(raw) if raw is not None else {}
        self._states: dict[str, State] = {}
        self.cached_states: list[_CachedState | RocksDBTimerQueue] = []
        # Names uploads of this instance's files apart from those of other instances
        self.instance_id = os.path.basename(path)
        self.uploaded: dict[str, FileHandle] = {}  # SST file name -> its copy in storage
        self.ttl_clock: Callable[[], int] = ttl_clock or processing_time_ms
        self._ttl_states: dict[int, TtlState] = {}  # state id -> TTL state
        self._ttl_cursor = b""  # where the next TTL cleanup scan starts

    def set_current_key(self, key_group: int, key: Any) -> None:
        ctx = self.ctx
        ctx.key = key
        ctx.group = key_group

    def get_current_key(self) -> Any:
        return self.ctx.key

    def check_group(self, key_group: int) -> None:
        """A key of another subtask's key group must fail, not land in this instance."""
        if not self.key_groups.start <= key_group <= self.key_groups.end:
            raise foreign_key_group(key_group, self.key_groups)

    @property
    def kinds(self) -> dict[str, str]:
        return {name: kind for name, (_, kind) in self._registry.items()}

    def get_state(self, descriptor: StateDescriptor, namespaced: bool = False) -> State:
        """The state ``descriptor`` names, per key, or per key and namespace (read from
        ``ns_ctx``)."""
        name = descriptor.name
        ttl = ttl_settings(descriptor) if descriptor.ttl_config is not None else None
        kind = descriptor.kind if ttl is None else ttl.stored_kind
        if namespaced:
            kind = namespaced_kind(kind)
        state = self._states.get(name)
        if state is not None:
            self._check_kind(name, kind)
            return state
        sid = self._register(name, kind)
        ctx = self.ns_ctx if namespaced else self.ctx
        if ttl is None:
            state = self._create(descriptor, sid, ctx)
        else:
            state = wrap_with_ttl(
                descriptor, lambda raw: self._create(raw, sid, ctx), self.ttl_clock
            )
            self._ttl_states[sid] = state
        self._states[name] = state
        return state

    def keys(self, name: str, key_group: int) -> Iterator[Any]:
        """The keys of ``key_group`` that have state ``name`` (one that is not namespaced),
        each once (a map state has an entry per map key, in key order)."""
        registered = self._registry.get(name)
        if registered is None:
            return
        self.write_back()
        prefix = _PREFIX.pack(key_group, registered[0])
        iterator = self.db.iter()
        iterator.seek(prefix)
        last: Any = _NO_KEY
        while iterator.valid():
            db_key = iterator.key()
            if db_key[: _PREFIX.size] != prefix:
                break
            key, _ = decode_key_prefix(db_key, _PREFIX.size)
            if key != last:
                yield key
                last = key
            iterator.next()

    def timer_queue(self, name: str) -> RocksDBTimerQueue:
        """The timers named ``name`` (one queue per operator and time domain)."""
        queue = RocksDBTimerQueue(
            self.db,
            _PREFIX,
            self._register(name, TIMERS_KIND),
            self.key_groups,
            self.settings.cache_entries,
            self.write_back,
        )
        self.cached_states.append(queue)
        return queue

    def _check_kind(self, name: str, kind: str) -> None:
        known = self._registry[name][1]
        if known != kind:
            raise kind_mismatch(name, known, kind)

    def _register(self, name: str, kind: str) -> int:
        if name in self._registry:
            self._check_kind(name, kind)
            sid: int = self._registry[name][0]  # the registry holds [id, kind]
            return sid
        sid = len(self._registry)
        self._registry[name] = [sid, kind]
        self.db.put(_REGISTRY_KEY, json.dumps(self._registry).encode())
        return sid

    def _create(self, descriptor: StateDescriptor, sid: int, ctx: KeyContext) -> State:
        if isinstance(descriptor, ValueStateDescriptor):
            return RocksDBValueState(self, sid, ctx)
        if isinstance(descriptor, ListStateDescriptor):
            return RocksDBListState(self, sid, ctx)
        if isinstance(descriptor, MapStateDescriptor):
            return RocksDBMapState(self, sid, ctx)
        if isinstance(descriptor, ReducingStateDescriptor):
            return RocksDBReducingState(self, sid, ctx, descriptor.reduce)
        if isinstance(descriptor, AggregatingStateDescriptor):
            return RocksDBAggregatingState(self, sid, ctx, descriptor.agg_function)
        raise TypeError(f"unsupported state descriptor {descriptor!r}")

    # Snapshots -----------------------------------------------------------------------------

    def write_back(self) -> None:
        """Put every cached change into RocksDB in one batch."""
        batch = rocksdict.WriteBatch(raw_mode=True)
        for state in self.cached_states:
            state.write_back(batch)
        if not batch.is_empty():
            self.db.write(batch)

    def checkpoint_to(self, directory: str) -> list[str]:
        """A consistent copy of the instance (SST files hard-linked); returns its files."""
        self.write_back()
        self.db.flush()
        shutil.rmtree(directory, ignore_errors=True)
        rocksdict.Checkpoint(self.db).create_checkpoint(directory)
        return sorted(os.listdir(directory))

    def snapshot(
        self,
        subtask: KeyedSubtask,
        storage: Storage,
        tag: str,
        checkpoint: bool,
        *,
        digests: bool = False,
    ) -> KeyedStateSnapshot:
        """Checkpoint the instance on local disk (``snap-<tag>`` next to it, SSTs
        hard-linked) and upload the files that storage does not hold yet; a restore builds a
        new instance from such a local snapshot when this executor has one with the files
        (``rocksdb_restore``). A checkpoint that is not incremental holds its own copy of
        every file."""
        subtask_dir = os.path.dirname(self.path)
        snap_dir = f"{subtask_dir}/snap-{tag}"
        names = [name for name in self.checkpoint_to(snap_dir) if not name.endswith(".log")]
        # (The WAL is off and the memtable was flushed: the log is empty.) SST names are
        # never reused, so a file compaction removed is gone for good: forget its upload.
        present = set(names)
        self.uploaded = {n: h for n, h in self.uploaded.items() if n in present}
        # A full (non-incremental) checkpoint holds its own copy of every file.
        fresh = checkpoint and not self.incremental
        files: dict[str, FileHandle] = {}
        written = 0
        prefix = f"{subtask.uid}/{subtask.index}"
        for name in names:
            local_path = f"{snap_dir}/{name}"
            handle = None if fresh else self.uploaded.get(name)
            if handle is None or (digests and handle.sha256 is None):
                if name.endswith(".sst"):
                    suffix = f"-{tag}" if fresh else ""
                    relative = f"{prefix}/{self.instance_id}-{name}{suffix}"
                else:
                    relative = f"{prefix}/{tag}/{name}"
                size = os.path.getsize(local_path)
                sha256 = state_digest.file_digest(local_path) if digests else None
                # A signed checkpoint's files are copies: the local snapshot, which a later
                # restore here uses unchecked, must not be the stored file itself
                storage.put_file(local_path, relative, link=not digests)
                handle = FileHandle(storage.url_of(relative), size, sha256)
                written += size
                if name.endswith(".sst"):
                    self.uploaded[name] = handle
            files[name] = handle
        with open(f"{snap_dir}/{UPLOADED_INDEX}", "w") as index_file:
            json.dump({name: handle.url for name, handle in files.items()}, index_file)
        _drop_old_snapshots(subtask_dir, keep=snap_dir)
        return KeyedStateSnapshot(
            RocksDBManifest(dict(self.kinds), files, tag), written, self.num_entries()
        )

    def end_epoch(self, records: int = 0) -> None:
        """TTL cleanup, once per epoch before the snapshot.

        RocksDB's compaction filter is out of reach from Python, so expired values go in a
        scan that resumes where the last one stopped: per TTL state with the compaction-filter
        cleanup, ``query_time_after_num_entries`` entries per epoch. Incremental cleanup is a
        heap-backend strategy (as in Flink) and does not apply here.
        """
        if not self._ttl_states:
            return
        budget = 0
        for state in self._ttl_states.values():
            state.accesses = 0
            compaction = state.settings.compaction_filter
            if compaction is not None:
                budget += max(compaction.get_query_time_after_num_entries(), 1)
        if budget:
            self.cleanup_expired(budget)

    def cleanup_expired(self, max_entries: int) -> int:
        """Check up to ``max_entries`` RocksDB entries from the scan cursor (wrapping round)
        and drop the expired values, list elements and map entries of TTL states."""
        self.write_back()
        now = self.ttl_clock()
        # only states that asked for a background cleanup (the others expire when read)
        cleaned = {
            sid: state
            for sid, state in self._ttl_states.items()
            if state.settings.compaction_filter is not None
        }
        batch = rocksdict.WriteBatch(raw_mode=True)
        iterator = self.db.iter()
        start = self._ttl_cursor
        iterator.seek(start)
        scanned = changed = 0
        wrapped = not start
        while scanned < max_entries:
            if not iterator.valid() or iterator.key().startswith(b"\xff\xff"):
                if wrapped:
                    break
                wrapped = True
                iterator.seek(b"")
                continue
            db_key = iterator.key()
            if wrapped and start and db_key >= start:
                break  # round the whole range once
            scanned += 1
            state = cleaned.get(_PREFIX.unpack_from(db_key)[1])
            if state is not None:
                stored = loads(iterator.value())
                kind = "value" if isinstance(state, MapState) else state.settings.kind
                kept = purge_expired(kind, stored, state.settings.ttl_ms, now)
                if kept is None:
                    batch.delete(db_key)
                    changed += 1
                elif kept is not stored:
                    batch.put(db_key, dumps(kept, HIGHEST_PROTOCOL))
                    changed += 1
            iterator.next()
        self._ttl_cursor = iterator.key() if iterator.valid() else b""
        if changed:
            self.db.write(batch)
            for cached in self.cached_states:
                cached.drop_cache()
        return changed

    # Canonical form (savepoints, rescaling) ------------------------------------------------

    def export_group(self, key_group: int, writer: GroupWriter) -> None:
        """Add the entries of ``key_group`` to ``writer`` in canonical form."""
        self.write_back()
        by_sid = {sid: (name, kind) for name, (sid, kind) in self._registry.items()}
        ids: dict[int, tuple[int, Any, str]] = {}
        group_prefix = _GROUP.pack(key_group)
        iterator = self.db.iter()
        iterator.seek(group_prefix)
        add = writer.add
        while iterator.valid():
            db_key = iterator.key()
            if db_key[:2] != group_prefix:
                break
            sid = _PREFIX.unpack_from(db_key)[1]
            known = ids.get(sid)
            if known is None:
                name, kind = by_sid[sid]
                known = ids[sid] = (writer.state(name, kind), shape(kind), name)
            out, form, name = known
            if form.timers:
                timestamp, key, namespace = read_timer_entry(db_key, _PREFIX.size)
                sub = encode_key(timestamp) + encode_namespace(namespace)
                add(out, portable_key(key, name), sub, b"")
            else:
                # a namespaced state's key is encode_key((key, namespace)): skip the pair's
                # head; what follows the key (namespace, map key) is the sub as it stands
                start = _PREFIX.size + (_PAIR_HEAD if form.namespaced else 0)
                key, end = decode_key_prefix(db_key, start)
                add(out, portable_key(key, name), db_key[end:], iterator.value())
            iterator.next()

    def keep_only(self, key_groups: KeyGroupRange) -> None:
        """Drop every key group outside ``key_groups`` (a restore from an instance that held
        more), and compact, so that the next snapshot does not carry them."""
        dropped = []
        if key_groups.start > 0:
            dropped.append((b"", _GROUP.pack(key_groups.start)))
        dropped.append((_GROUP.pack(key_groups.end + 1), _REGISTRY_KEY[:2]))
        for begin, end in dropped:
            self.db.delete_range(begin, end)
            self.db.compact_range(begin, end)

    def copy_groups(self, source: RocksDBKeyedStateBackend, key_groups: KeyGroupRange) -> None:
        """Copy the entries of ``key_groups`` from ``source`` (an old subtask's instance) as
        they are: only the state ids differ between instances."""
        source_states = {sid: (name, kind) for name, (sid, kind) in source._registry.items()}
        ids: dict[int, bytes] = {}
        batch = rocksdict.WriteBatch(raw_mode=True)
        iterator = source.db.iter()
        iterator.seek(_GROUP.pack(key_groups.start))
        while iterator.valid():
            db_key = iterator.key()
            key_group, sid = _PREFIX.unpack_from(db_key)
            if key_group > key_groups.end:
                break
            new_sid = ids.get(sid)
            if new_sid is None:
                new_sid = ids[sid] = _GROUP.pack(self._register(*source_states[sid]))
            batch.put(db_key[:2] + new_sid + db_key[4:], iterator.value())
            if batch.len() >= 10_000:
                self.db.write(batch)
                batch = rocksdict.WriteBatch(raw_mode=True)
            iterator.next()
        if not batch.is_empty():
            self.db.write(batch)

    def import_group(self, key_group: int, blob: bytes) -> None:
        """Put a canonical blob of ``key_group`` into the instance."""
        self.check_group(key_group)
        batch = rocksdict.WriteBatch(raw_mode=True)
        prefixes: dict[str, tuple[bytes, Any]] = {}
        for name, kind, key, sub, value in read_entries(blob):
            known = prefixes.get(name)
            if known is None:
                known = prefixes[name] = (
                    _PREFIX.pack(key_group, self._register(name, kind)),
                    shape(kind),
                )
            prefix, form = known
            # Parts below the key are decoded and encoded again: an encoding that holds a
            # pickle may differ on this Python version, and lookups encode anew
            parts = decode_sub(form, sub)
            if form.timers:
                batch.put(timer_entry(prefix, parts[0], key, parts[1]), b"")
                continue
            if form.namespaced:
                db_key = prefix + encode_key((decode_key(key), parts[0]))
            else:
                db_key = prefix + key
            if form.is_map:
                db_key += encode_key(parts[-1])
            batch.put(db_key, value)
        self.db.write(batch)

    def num_entries(self) -> int:
        """RocksDB's estimate: versions that compaction has not merged yet count apart."""
        return self.db.property_int_value("rocksdb.estimate-num-keys") or 0

    def dispose(self) -> None:
        """Close the instance and delete its directory (its snapshots stay)."""
        # a disposed backend is not used again; None makes a second dispose() a no-op
        db, self.db = self.db, None  # type: ignore[assignment]
        if db is not None:
            db.cancel_all_background(False)  # a compaction of a discarded instance is waste
            with suppress(Exception):  # close() flushes, which a cancelled instance refuses
                db.close()
        shutil.rmtree(self.path, ignore_errors=True)


def _drop_old_snapshots(subtask_dir: str, keep: str) -> None:
    snaps = sorted(
        (e for e in os.scandir(subtask_dir) if e.name.startswith("snap-")),
        key=lambda e: e.stat().st_mtime_ns,
    )
    for entry in snaps[:-LOCAL_SNAPSHOTS_KEPT]:
        if entry.path != keep:
            shutil.rmtree(entry.path, ignore_errors=True)

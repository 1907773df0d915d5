"""Typed, versioned JSON records for control data that crosses a process boundary.

Acknowledgements, staging records, checkpoint metadata and the messages between a task and
its subtask host are written by one process and read by another (a task and the driver, a
crashed run and its successor). Each is a frozen dataclass that subclasses ``Record``; its
fields carry their types once, as annotations, and one generic codec writes and reads them:

    @dataclass(frozen=True)
    class StagedFiles(Record, format="lockgate-staged-files", version=1):
        epoch: int
        attempt: str
        files: tuple[str, ...]

    StagedFiles(3, "e3a1", ("file:///out/.part-0",)).to_json()
    # {"format": "lockgate-staged-files", "version": 1, "epoch": 3, "attempt": "e3a1", ...}
    StagedFiles.from_json(raw, "staging record e3/0-0-e3a1.json")

Reading checks the format, the version and the type of every field, so a damaged or foreign
file fails naming where it came from (``where``: a file, "the ack of subtask 3 of vertex
2"), the record path inside it and the field, instead of surfacing later as a ``KeyError``.

The class keywords:

- ``format``, ``version``: a record with its own envelope; its JSON starts with
  ``"format"`` and ``"version"``. Another format is refused, and so is another version
  (naming both) unless ``reads`` lists it: ``upgrade`` then brings it to the current shape.
  A record without a format is written inside others (or in a file that has the version).
- ``tag="backend"``: the class attribute ``backend`` (a ``ClassVar``) is written first under
  that name, checked when read, and picks the class where a field's type is a union of such
  records.
- ``array=True``: written as a JSON array of its fields in order (``[file, offset, length,
  crc]``), for small records that a file holds many of.

Field types: ``int`` (not bool), ``float`` (an int is read as a float), ``str``, ``bool``,
``Any`` (any JSON, as it is), records, ``X | None``, unions of tagged records,
``list[X]``, ``tuple[X, ...]``, ``tuple[X, Y]`` (a JSON array of that length),
``dict[str, X]`` and ``Mapping[str, X]``, ``dict[int, X]`` (keys as decimal strings), enums
(by value) and ``Literal[...]``. ``Annotated`` adds rules: ``Minimum`` (a least value),
``Custom`` (a field's own encoding, such as front-coded paths), ``MAP_KEY`` (the field is the
key under which the record is kept in a dict, and is not written in the record itself),
``ADDED`` (a field with a default, added after records were first written: when absent, it
takes its default; an array record leaves it out while it holds the default, and only after
the fields before it). A rule across fields goes in the record's ``validate``.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
from collections.abc import Callable, Mapping, Sequence
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NamedTuple,
    Self,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)


class RecordFormatError(ValueError):
    """A control record that is damaged, foreign, of another version, or lacks a field."""


# Rules that Annotated adds to a field's type ---------------------------------------------


@dataclasses.dataclass(frozen=True)
class Minimum:
    """``Annotated[int, Minimum(0, "a position")]``: the value is at least ``value``
    (``what`` names such a value in messages)."""

    value: int
    what: str = ""


@dataclasses.dataclass(frozen=True)
class Custom:
    """``Annotated[T, Custom(encode, decode)]``: the field has its own JSON form.
    ``decode(raw, where)`` raises ``RecordFormatError`` naming ``where`` (the field's
    place)."""

    encode: Callable[[Any], Any]
    decode: Callable[[Any, str], Any]


class _MapKey:
    def __repr__(self) -> str:
        return "MAP_KEY"


#: ``Annotated[str, MAP_KEY]``: the field is the key of the dict the record is kept in
MAP_KEY = _MapKey()


class _Added:
    def __repr__(self) -> str:
        return "ADDED"


#: ``Annotated[str | None, ADDED] = None``: the field may be absent (written before it existed)
ADDED = _Added()


# The base class ---------------------------------------------------------------------------


class Record:
    """Base of typed JSON records (see the module docstring)."""

    __slots__ = ()
    _record_format: ClassVar[str | None] = None
    _record_version: ClassVar[int | None] = None
    _record_reads: ClassVar[tuple[int, ...]] = ()
    _record_tag: ClassVar[str | None] = None
    _record_array: ClassVar[bool] = False

    def __init_subclass__(
        cls,
        *,
        format: str | None = None,
        version: int | None = None,
        reads: Sequence[int] = (),
        tag: str | None = None,
        array: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        # Only what a class declares is set: a subclass keeps its base's, and so does the
        # class that dataclass(slots=True) creates in the place of a declared one.
        if (format is None) != (version is None):
            raise TypeError(f"record {cls.__name__}: give both a format and a version, or none")
        if format is not None:
            cls._record_format = format
            cls._record_version = version
            cls._record_reads = tuple(reads)
        if tag is not None:
            cls._record_tag = tag
        if array:
            cls._record_array = True

    def to_json(self) -> Any:
        """The record as JSON values (an object; an array for ``array`` records)."""
        return _record_codec(type(self)).encode(self)

    @classmethod
    def from_json(cls, raw: Any, where: str) -> Self:
        """The record in ``raw`` (parsed JSON); a damaged one raises ``RecordFormatError``
        naming ``where``, the path inside it and the field."""
        record: Self = _record_codec(cls).decode(raw, where, "")
        return record

    def encode(self) -> bytes:
        """The record as compact JSON text."""
        return json.dumps(self.to_json(), separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes | str, where: str) -> Self:
        """The record in JSON text ``data`` (``from_json``)."""
        return cls.from_json(parse_json(data, where), where)

    def validate(self, where: str) -> None:
        """Hook: rules beyond the fields' types, checked after a read; raise
        ``RecordFormatError`` naming ``where``."""

    @classmethod
    def upgrade(cls, raw: dict[str, Any], version: int, where: str) -> dict[str, Any]:
        """Hook: the fields of an older ``version`` (one that ``reads`` lists) in the
        current shape."""
        raise NotImplementedError(f"{cls.__name__} lists version {version} but cannot upgrade it")


def parse_json(data: bytes | str, where: str) -> Any:
    """``data`` parsed as JSON; anything else raises ``RecordFormatError`` naming ``where``."""
    try:
        return json.loads(data)
    except ValueError:  # UnicodeDecodeError included
        unit = "characters" if isinstance(data, str) else "bytes"
        raise RecordFormatError(f"{where} is not JSON ({len(data)} {unit})") from None


def value_to_json(kind: Any, value: Any) -> Any:
    """``value``, of type ``kind`` (a union of records, ``list[X]``, ...), as JSON values."""
    return _compile(kind, "a value").encode(value)


def value_from_json(kind: Any, raw: Any, where: str) -> Any:
    """The value of type ``kind`` in ``raw`` (``Record.from_json`` for any field type)."""
    codec = _compile(kind, "a value")
    try:
        return codec.decode(raw, where, "")
    except _Mismatch as mismatch:
        raise RecordFormatError(f"{where}{mismatch.element} {mismatch.problem}") from None


# The codec --------------------------------------------------------------------------------


class _Mismatch(Exception):
    """A value that is not of its type; the record around it names the field."""

    def __init__(self, problem: str, element: str = ""):
        super().__init__(problem)
        self.problem = problem  # "is str '7', not int"
        self.element = element  # where in the field's value: "['a'][2]"

    def inside(self, element: str) -> _Mismatch:
        self.element = element + self.element
        return self


def _found(raw: Any) -> str:
    if isinstance(raw, bool):
        return repr(raw)
    return f"{type(raw).__name__} {raw!r:.80}"


def _not(raw: Any, expected: str) -> _Mismatch:
    return _Mismatch(f"is {_found(raw)}, not {expected}")


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _loc(where: str, path: str) -> str:
    if not path:
        return where
    return f"{where}{path}" if path[0] == "[" else f"{where}, {path}"


Decode = Callable[[Any, str, str], Any]  # (raw, where, path of the value) -> value


def _identity(value: Any) -> Any:
    return value


class _Codec(NamedTuple):
    encode: Callable[[Any], Any]
    decode: Decode
    expected: str  # what a message says the value should be
    plain: bool = False  # JSON as it is: encode is the identity
    record: _RecordCodec | None = None  # of a record type


def _exact(kind: type, name: str) -> _Codec:
    def decode(raw: Any, where: str, path: str) -> Any:
        if type(raw) is kind:
            return raw
        raise _not(raw, name)

    return _Codec(_identity, decode, name, plain=True)


def _decode_float(raw: Any, where: str, path: str) -> float:
    if type(raw) is float or type(raw) is int:
        return float(raw)
    raise _not(raw, "float")


def _decode_none(raw: Any, where: str, path: str) -> None:
    if raw is not None:
        raise _not(raw, "null")


def _decode_any(raw: Any, where: str, path: str) -> Any:
    return raw


_PRIMITIVES = {
    int: _exact(int, "int"),
    str: _exact(str, "str"),
    bool: _exact(bool, "bool"),
    float: _Codec(_identity, _decode_float, "float", plain=True),
    type(None): _Codec(_identity, _decode_none, "null", plain=True),
    Any: _Codec(_identity, _decode_any, "any JSON", plain=True),
    object: _Codec(_identity, _decode_any, "any JSON", plain=True),
}


def _compile(kind: Any, owner: str) -> _Codec:
    """The codec of a field type (``owner`` names the field in a TypeError)."""
    primitive = _PRIMITIVES.get(kind) if isinstance(kind, type) or kind is Any else None
    if primitive is not None:
        return primitive
    origin = get_origin(kind)
    args = get_args(kind)
    if origin is Annotated:
        return _annotated(_compile(args[0], owner), args[1:], owner)
    if origin is Union or origin is types.UnionType:
        return _union(args, owner)
    if origin is Literal:
        return _literal(args)
    if origin in (list, tuple, Sequence):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return _fixed_tuple([_compile(arg, owner) for arg in args])
        return _sequence(_compile(args[0], owner), tuple if origin is tuple else list)
    if origin in (dict, Mapping):
        if args[0] not in (str, int):
            raise TypeError(f"{owner}: dict keys must be str or int, not {args[0]!r}")
        return _dict(args[0] is int, _compile(args[1], owner))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return _enum(kind)
    if isinstance(kind, type) and issubclass(kind, Record):
        return _record_codec(kind).as_value()
    raise TypeError(f"{owner}: a record field cannot be of type {kind!r}")


def _annotated(codec: _Codec, extras: tuple[Any, ...], owner: str) -> _Codec:
    for extra in extras:
        if isinstance(extra, Minimum):
            codec = _minimum(codec, extra)
        elif isinstance(extra, Custom):
            codec = _custom(extra)
        elif extra is not MAP_KEY and extra is not ADDED:
            raise TypeError(f"{owner}: unknown annotation {extra!r}")
    return codec


def _minimum(codec: _Codec, rule: Minimum) -> _Codec:
    inner, least = codec.decode, rule.value
    expected = f"{rule.what} (>= {least})" if rule.what else f">= {least}"

    def decode(raw: Any, where: str, path: str) -> Any:
        value = inner(raw, where, path)
        if value < least:
            raise _Mismatch(f"is {value!r}, not {expected}")
        return value

    return codec._replace(decode=decode, expected=expected)


def _custom(rule: Custom) -> _Codec:
    convert = rule.decode

    def decode(raw: Any, where: str, path: str) -> Any:
        return convert(raw, _loc(where, path))

    return _Codec(rule.encode, decode, "its own form")


def _union(args: tuple[Any, ...], owner: str) -> _Codec:
    members = [arg for arg in args if arg is not type(None)]
    if len(members) == 1:
        inner = _compile(members[0], owner)
    elif all(isinstance(m, type) and issubclass(m, Record) and m._record_tag for m in members):
        inner = _tagged_union(members)
    else:
        raise TypeError(f"{owner}: a union must be of tagged records (and None), not {args!r}")
    if len(members) == len(args):
        return inner
    encode, decode_inner = inner.encode, inner.decode

    def encode_optional(value: Any) -> Any:
        return None if value is None else encode(value)

    expected = f"{inner.expected} or null"

    def decode_optional(raw: Any, where: str, path: str) -> Any:
        if raw is None:
            return None
        try:
            return decode_inner(raw, where, path)
        except _Mismatch as mismatch:
            if mismatch.element:
                raise
            raise _not(raw, expected) from None

    return _Codec(
        encode_optional if not inner.plain else _identity, decode_optional, expected, inner.plain
    )


def _tagged_union(members: list[type[Record]]) -> _Codec:
    tags = {m._record_tag for m in members}
    if len(tags) != 1:
        raise TypeError(
            f"the records of a union must share their tag, not {sorted(map(str, tags))}"
        )
    (tag,) = tags
    assert tag is not None
    by_tag = {getattr(m, tag): _record_codec(m) for m in members}
    if len(by_tag) != len(members):
        raise TypeError(f"two records of {members!r} have the same {tag}")
    names = ", ".join(by_tag)

    def encode(value: Any) -> Any:
        return _record_codec(type(value)).encode(value)

    def decode(raw: Any, where: str, path: str) -> Any:
        if type(raw) is not dict:
            raise RecordFormatError(f"{_loc(where, path)} is not an object")
        codec = by_tag.get(raw.get(tag))
        if codec is None:
            if tag not in raw:
                raise RecordFormatError(f"{_loc(where, path)} lacks the field '{tag}'")
            raise RecordFormatError(
                f"{_loc(where, path)}: unknown {tag} {raw[tag]!r} (expected one of {names})"
            )
        return codec.decode(raw, where, path)

    return _Codec(encode, decode, f"a record with a {tag} of {names}")


def _literal(values: tuple[Any, ...]) -> _Codec:
    allowed = set(values)
    expected = "one of " + ", ".join(map(repr, values))

    def decode(raw: Any, where: str, path: str) -> Any:
        if type(raw) in (str, int) and raw in allowed:
            return raw
        raise _Mismatch(f"is {raw!r:.80}, not {expected}")

    return _Codec(_identity, decode, expected, plain=True)


def _enum(kind: type[enum.Enum]) -> _Codec:
    by_value = {member.value: member for member in kind}
    expected = f"a {kind.__name__} (" + ", ".join(map(repr, by_value)) + ")"

    def encode(value: Any) -> Any:
        return value.value

    def decode(raw: Any, where: str, path: str) -> Any:
        member = by_value.get(raw) if type(raw) in (str, int, float) else None
        if member is None:
            raise _Mismatch(f"is {raw!r:.80}, not {expected}")
        return member

    return _Codec(encode, decode, expected)


def _sequence(item: _Codec, make: type) -> _Codec:
    encode_item, decode_item = item.encode, item.decode

    def encode(value: Any) -> Any:
        if item.plain:
            return list(value)
        return [encode_item(v) for v in value]

    def decode(raw: Any, where: str, path: str) -> Any:
        if type(raw) is not list:
            raise _not(raw, "a list")
        values = []
        for index, value in enumerate(raw):
            try:
                values.append(decode_item(value, where, f"{path}[{index}]"))
            except _Mismatch as mismatch:
                raise mismatch.inside(f"[{index}]") from None
        return make(values)

    return _Codec(encode, decode, f"a list of {item.expected}")


def _fixed_tuple(items: list[_Codec]) -> _Codec:
    expected = "[" + ", ".join(item.expected for item in items) + "]"
    size = len(items)

    def encode(value: Any) -> Any:
        return [item.encode(v) for item, v in zip(items, value, strict=True)]

    def decode(raw: Any, where: str, path: str) -> Any:
        if type(raw) is not list or len(raw) != size:
            raise _not(raw, expected)
        values = []
        for index, (item, value) in enumerate(zip(items, raw, strict=True)):
            try:
                values.append(item.decode(value, where, f"{path}[{index}]"))
            except _Mismatch as mismatch:
                raise mismatch.inside(f"[{index}]") from None
        return tuple(values)

    return _Codec(encode, decode, expected)


def _dict(int_keys: bool, item: _Codec) -> _Codec:
    encode_item, decode_item = item.encode, item.decode
    keyed = item.record if item.record is not None and item.record.key_field else None

    def encode(value: Any) -> Any:
        if int_keys:
            return {str(k): encode_item(v) for k, v in value.items()}
        if item.plain:
            return dict(value)
        return {k: encode_item(v) for k, v in value.items()}

    def decode(raw: Any, where: str, path: str) -> Any:
        if type(raw) is not dict:
            raise _not(raw, "an object")
        values = {}
        for key, value in raw.items():
            element = f"[{key!r}]"
            name: Any = key
            if int_keys:
                if not (key.isdigit() or (key[:1] == "-" and key[1:].isdigit())):
                    raise _Mismatch(f"has the key {key!r}, not a number", "")
                name = int(key)
            try:
                if keyed is not None:
                    values[name] = keyed.decode(value, where, f"{path}{element}", key)
                else:
                    values[name] = decode_item(value, where, f"{path}{element}")
            except _Mismatch as mismatch:
                raise mismatch.inside(element) from None
        return values

    return _Codec(encode, decode, f"an object of {item.expected}")


class _Field(NamedTuple):
    name: str
    encode: Callable[[Any], Any]
    decode: Decode
    default: Callable[[], Any] | None  # the value of an ADDED field when absent; else None


def _added_default(
    field: dataclasses.Field[Any], hint: Any, owner: str
) -> Callable[[], Any] | None:
    if not (get_origin(hint) is Annotated and ADDED in get_args(hint)[1:]):
        return None
    if field.default is not dataclasses.MISSING:
        value = field.default
        return lambda: value
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory
    raise TypeError(f"{owner}: an ADDED field needs a default")


_RECORD_CODECS: dict[type, _RecordCodec] = {}


def _record_codec(cls: type) -> _RecordCodec:
    codec = _RECORD_CODECS.get(cls)
    if codec is None:
        codec = _RECORD_CODECS[cls] = _RecordCodec(cls)
    return codec


def _holds_default(field: _Field, value: Any) -> bool:
    return field.default is not None and bool(value == field.default())


class _RecordCodec:
    """Writes and reads one record class; its fields are compiled when first used (their
    annotations may name classes defined after it)."""

    def __init__(self, cls: type):
        if not (dataclasses.is_dataclass(cls) and issubclass(cls, Record)):
            raise TypeError(f"{cls!r} is not a dataclass that subclasses Record")
        self.cls = cls
        self.name = cls.__name__
        self.format = cls._record_format
        self.version = cls._record_version
        self.reads = cls._record_reads
        self.tag = cls._record_tag
        self.tag_value = getattr(cls, self.tag, None) if self.tag is not None else None
        self.array = cls._record_array
        self._fields: list[_Field] | None = None
        self.key_field: str | None = None
        self.key_field = self._key_field()

    def _key_field(self) -> str | None:
        hints = self._hints()
        keys = [
            f.name
            for f in dataclasses.fields(self.cls)
            if get_origin(hints[f.name]) is Annotated and MAP_KEY in get_args(hints[f.name])[1:]
        ]
        if len(keys) > 1:
            raise TypeError(f"record {self.name} has two MAP_KEY fields: {keys}")
        return keys[0] if keys else None

    def _hints(self) -> dict[str, Any]:
        return get_type_hints(self.cls, include_extras=True)

    @property
    def fields(self) -> list[_Field]:
        if self._fields is None:
            hints = self._hints()
            self._fields = [
                _Field(
                    f.name,
                    codec.encode,
                    codec.decode,
                    _added_default(f, hints[f.name], f"field '{f.name}' of {self.name}"),
                )
                for f in dataclasses.fields(self.cls)
                if f.name != self.key_field
                for codec in [_compile(hints[f.name], f"field '{f.name}' of {self.name}")]
            ]
        return self._fields

    def as_value(self) -> _Codec:
        expected = "[" + ", ".join(f.name for f in self.fields) + "]" if self.array else "an object"
        return _Codec(self.encode, self.decode, expected, record=self)

    def encode(self, record: Any) -> Any:
        if self.array:
            fields = self.fields
            end = len(fields)
            while end and _holds_default(fields[end - 1], getattr(record, fields[end - 1].name)):
                end -= 1
            return [f.encode(getattr(record, f.name)) for f in fields[:end]]
        out: dict[str, Any] = {}
        if self.format is not None:
            out["format"] = self.format
            out["version"] = self.version
        if self.tag is not None:
            out[self.tag] = self.tag_value
        for f in self.fields:
            out[f.name] = f.encode(getattr(record, f.name))
        return out

    def decode(self, raw: Any, where: str, path: str, key: Any = None) -> Any:
        loc = _loc(where, path)
        fields = self.fields
        if self.array:
            if (
                type(raw) is not list
                or len(raw) > len(fields)
                or any(f.default is None for f in fields[len(raw) :])
            ):
                raise RecordFormatError(f"{loc} is {_found(raw)}, not {self.as_value().expected}")
            values = dict(zip((f.name for f in fields), raw, strict=False))
        else:
            values = self._open(raw, loc)
        decoded = {}
        for f in fields:
            try:
                value = values[f.name]
            except KeyError:
                if f.default is None:
                    raise RecordFormatError(f"{loc} lacks the field '{f.name}'") from None
                decoded[f.name] = f.default()
                continue
            try:
                decoded[f.name] = f.decode(value, where, _child(path, f.name))
            except _Mismatch as mismatch:
                raise RecordFormatError(
                    f"{loc}: field '{f.name}'{mismatch.element} {mismatch.problem}"
                ) from None
        if self.key_field is not None:
            decoded[self.key_field] = key
        record = self.cls(**decoded)
        record.validate(loc)
        return record

    def _open(self, raw: Any, loc: str) -> Any:
        """The fields of an object record, its envelope and tag checked."""
        if type(raw) is not dict or (self.format is not None and raw.get("format") != self.format):
            what = f"a {self.format} record" if self.format is not None else "an object"
            raise RecordFormatError(f"{loc} is not {what}")
        if self.format is not None:
            version = raw.get("version")
            if not (type(version) is int and version == self.version):
                if type(version) is int and version in self.reads:
                    raw = self.cls.upgrade(raw, version, loc)
                else:
                    raise RecordFormatError(
                        f"{loc} is a {self.format} record of version {version!r}; this "
                        f"lockgate reads version {self.version}"
                    )
        if self.tag is not None and raw.get(self.tag) != self.tag_value:
            if self.tag not in raw:
                raise RecordFormatError(f"{loc} lacks the field '{self.tag}'")
            raise RecordFormatError(
                f"{loc}: it is a {raw[self.tag]!r} {self.tag}, not {self.tag_value!r}"
            )
        return raw

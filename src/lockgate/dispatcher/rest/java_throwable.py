"""A failed savepoint's cause as Flink's CLI reads it: a ``SerializedThrowable`` in Java's
object serialization format, base64 in ``failure-cause.serialized-throwable``.

Flink's CLI rebuilds the exception from those bytes and ignores the rest of
``failure-cause``; without them it retries for a minute and then fails with a parsing error
instead of the reason. So the Dispatcher writes the one object the CLI expects: a
``org.apache.flink.util.SerializedThrowable`` (no stack trace) holding a
``java.lang.RuntimeException`` with the failure's message, laid out as Java's
``ObjectOutputStream`` writes it (the Java Object Serialization Stream Protocol: class
descriptors with their serialVersionUIDs, then field values, each new class descriptor,
string and object taking the next handle, which later references name).
"""

from __future__ import annotations

import base64
import struct

_MAGIC = b"\xac\xed\x00\x05"
_OBJECT, _CLASS, _STRING, _ARRAY = b"s", b"r", b"t", b"u"
_NULL, _END = b"p", b"x"  # no object; the end of a class's annotations or of a block
_SERIALIZABLE = b"\x02"  # a class's flags: Serializable
_WITH_WRITE_METHOD = b"\x03"  # Serializable with its own writeObject (Throwable)
# serialVersionUIDs of the classes written (Java's values, fixed by those classes)
_UID = {
    "org.apache.flink.util.SerializedThrowable": "65169df51fa713f3",
    "java.lang.RuntimeException": "9e5f06470a3483e5",
    "java.lang.Exception": "d0fd1f3e1a3b1cc4",
    "java.lang.Throwable": "d5c635273977b8cb",
    "[Ljava.lang.StackTraceElement;": "02462a3c3cfd2239",
    "java.util.Collections$EmptyList": "7ab817b43ca79ede",
    "[B": "acf317f8060854e0",
}
_MAX_MESSAGE = 8000  # characters: a short string holds at most 65535 bytes


def modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8: NUL in two bytes, characters beyond U+FFFF as surrogates."""
    out = bytearray()
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        unit = units[i] << 8 | units[i + 1]
        if 0 < unit < 0x80:
            out.append(unit)
        elif unit < 0x800:
            out += bytes((0xC0 | unit >> 6, 0x80 | unit & 0x3F))
        else:
            out += bytes((0xE0 | unit >> 12, 0x80 | unit >> 6 & 0x3F, 0x80 | unit & 0x3F))
    return bytes(out)


def _utf(text: str) -> bytes:
    data = modified_utf8(text)
    return struct.pack(">H", len(data)) + data


def _string(text: str) -> bytes:
    return _STRING + _utf(text)


def _reference(handle: int) -> bytes:
    return b"q" + struct.pack(">I", 0x7E0000 + handle)


def _class(name: str, flags: bytes, fields: bytes, count: int) -> bytes:
    return (
        _CLASS
        + _utf(name)
        + bytes.fromhex(_UID[name])
        + flags
        + struct.pack(">H", count)
        + fields
        + _END
    )


def _field(kind: str, name: str, type_: bytes) -> bytes:
    return kind.encode() + _utf(name) + type_


def _throwable_class(string_type: bytes) -> bytes:
    """``java.lang.Throwable``'s descriptor (``string_type``: the ``Ljava/lang/String;``
    type, or a reference to it when the stream has it already)."""
    fields = (
        _field("L", "cause", _string("Ljava/lang/Throwable;"))
        + _field("L", "detailMessage", string_type)
        + _field("[", "stackTrace", _string("[Ljava/lang/StackTraceElement;"))
        + _field("L", "suppressedExceptions", _string("Ljava/util/List;"))
    )
    return _class("java.lang.Throwable", _WITH_WRITE_METHOD, fields, 4)


def _no_stack_and_no_suppressed() -> bytes:
    """An empty stack trace, an empty suppressed list, and the end of Throwable's block."""
    empty_trace = (
        _ARRAY
        + _class("[Ljava.lang.StackTraceElement;", _SERIALIZABLE, b"", 0)
        + _NULL
        + struct.pack(">I", 0)
    )
    empty_list = _OBJECT + _class("java.util.Collections$EmptyList", _SERIALIZABLE, b"", 0) + _NULL
    return empty_trace + empty_list + _END


def _runtime_exception(message: str) -> bytes:
    """A ``java.lang.RuntimeException(message)`` with no stack trace, as a whole stream.

    Handles: 0 RuntimeException, 1 Exception, 2 Throwable, 3-6 Throwable's field types,
    7 the exception itself (its cause is itself: Java's way of saying "no cause")."""
    return (
        _MAGIC
        + _OBJECT
        + _class("java.lang.RuntimeException", _SERIALIZABLE, b"", 0)
        + _class("java.lang.Exception", _SERIALIZABLE, b"", 0)
        + _throwable_class(_string("Ljava/lang/String;"))
        + _NULL
        + _reference(7)
        + _string(message)
        + _no_stack_and_no_suppressed()
    )


def serialized_throwable(message: str) -> str:
    """Base64 of a ``SerializedThrowable`` of ``java.lang.RuntimeException(message)``.

    Handles: 0 SerializedThrowable, 1 ``Ljava/lang/String;``, 2 ``[B``, 3 Exception,
    4 Throwable, 5-7 Throwable's other field types, 8 the object itself."""
    message = message[:_MAX_MESSAGE]
    inner = _runtime_exception(message)
    text = f"java.lang.RuntimeException: {message}"
    fields = (
        _field("L", "fullStringifiedStackTrace", _string("Ljava/lang/String;"))
        + _field("L", "originalErrorClassName", _reference(1))
        + _field("[", "serializedException", _string("[B"))
    )
    stream = (
        _MAGIC
        + _OBJECT
        + _class("org.apache.flink.util.SerializedThrowable", _SERIALIZABLE, fields, 3)
        + _class("java.lang.Exception", _SERIALIZABLE, b"", 0)
        + _throwable_class(_reference(1))
        + _NULL
        + _NULL  # Throwable.cause
        + _string(text)
        + _no_stack_and_no_suppressed()
        + _string(text + "\n")
        + _string("java.lang.RuntimeException")
        + _ARRAY
        + _class("[B", _SERIALIZABLE, b"", 0)
        + _NULL
        + struct.pack(">I", len(inner))
        + inner
    )
    return base64.b64encode(stream).decode()

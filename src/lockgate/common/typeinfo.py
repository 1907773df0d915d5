"""PyFlink's type information (``pyflink.common.typeinfo``): ``Types`` and the classes its
factory methods return, with PyFlink's names, constructors, ``__eq__`` and ``__repr__``.

An operator's declared ``output_type`` converts its records as PyFlink's coders do, and
``print()`` writes them as Flink's Java ``toString`` (``lockgate.common.type_conversion``);
state descriptors' type information gives the state processor its column types. There is
no JVM, hence no ``get_java_type_info``. Unlike PyFlink's, type information hashes, in
line with its ``__eq__``.
"""

from __future__ import annotations

from enum import Enum
from typing import Any


class TypeInformation:
    """The type of the values of a stream or a state, as PyFlink's ``TypeInformation``."""

    def __init__(self) -> None:
        pass

    @property
    def _name(self) -> str:
        """lockgate's own name of the type (``Types``' factory method: ``INT``, ``ROW``, ...)."""
        return type(self).__name__

    @property
    def _params(self) -> tuple[Any, ...]:
        """The type informations (and field names) this one is made of, as the factory got them."""
        return ()

    def _hash_key(self) -> Any:
        return type(self).__name__

    def __hash__(self) -> int:
        return hash(self._hash_key())


class BasicType(Enum):
    STRING = "String"
    BYTE = "Byte"
    BOOLEAN = "Boolean"
    SHORT = "Short"
    INT = "Integer"
    LONG = "Long"
    FLOAT = "Float"
    DOUBLE = "Double"
    CHAR = "Char"
    BIG_INT = "BigInteger"
    BIG_DEC = "BigDecimal"
    INSTANT = "Instant"


class BasicTypeInfo(TypeInformation):
    """Primitive types (int, long, double, byte, ...), String, BigInteger and BigDecimal."""

    def __init__(self, basic_type: BasicType):
        self._basic_type = basic_type
        super().__init__()

    @property
    def _name(self) -> str:
        return self._basic_type.name

    def _hash_key(self) -> Any:
        return self._basic_type

    def __eq__(self, o: object) -> bool:
        if isinstance(o, BasicTypeInfo):
            return self._basic_type == o._basic_type
        return False

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return self._basic_type.value

    @staticmethod
    def STRING_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.STRING)

    @staticmethod
    def BOOLEAN_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BOOLEAN)

    @staticmethod
    def BYTE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BYTE)

    @staticmethod
    def SHORT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.SHORT)

    @staticmethod
    def INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.INT)

    @staticmethod
    def LONG_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.LONG)

    @staticmethod
    def FLOAT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.FLOAT)

    @staticmethod
    def DOUBLE_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.DOUBLE)

    @staticmethod
    def CHAR_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.CHAR)

    @staticmethod
    def BIG_INT_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BIG_INT)

    @staticmethod
    def BIG_DEC_TYPE_INFO() -> BasicTypeInfo:
        return BasicTypeInfo(BasicType.BIG_DEC)

    @staticmethod
    def INSTANT_TYPE_INFO() -> InstantTypeInfo:
        return InstantTypeInfo(BasicType.INSTANT)


class InstantTypeInfo(BasicTypeInfo):
    """``Instant`` values (``lockgate.common.time.Instant``)."""


class SqlTimeTypeInfo(TypeInformation):
    """The SQL date, time and timestamp types."""

    @staticmethod
    def DATE() -> DateTypeInfo:
        return DateTypeInfo()

    @staticmethod
    def TIME() -> TimeTypeInfo:
        return TimeTypeInfo()

    @staticmethod
    def TIMESTAMP() -> TimestampTypeInfo:
        return TimestampTypeInfo()


class _ElementTypeInfo(TypeInformation):
    """An array of ``element_type`` values; PyFlink's array types share their shape."""

    _factory = ""
    _repr = ""

    def __init__(self, element_type: TypeInformation):
        self._element_type = element_type
        super().__init__()

    @property
    def _name(self) -> str:
        return self._factory

    @property
    def _params(self) -> tuple[Any, ...]:
        return (self._element_type,)

    def __eq__(self, o: object) -> bool:
        if isinstance(o, type(self)):
            return bool(self._element_type == o._element_type)
        return False

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return f"{self._repr}<{self._element_type}>"


class PrimitiveArrayTypeInfo(_ElementTypeInfo):
    """Arrays of primitive types (int, long, double, ...)."""

    _factory = "PRIMITIVE_ARRAY"
    _repr = "PrimitiveArrayTypeInfo"


class BasicArrayTypeInfo(_ElementTypeInfo):
    """Arrays of boxed primitive types (Integer, Long, Double, ...)."""

    _factory = "BASIC_ARRAY"
    _repr = "BasicArrayTypeInfo"


class ObjectArrayTypeInfo(_ElementTypeInfo):
    """Arrays of non-primitive types."""

    _factory = "OBJECT_ARRAY"
    _repr = "ObjectArrayTypeInfo"


class PickledBytesTypeInfo(TypeInformation):
    """Any Python value, pickled."""

    @property
    def _name(self) -> str:
        return "PICKLED_BYTE_ARRAY"

    def __eq__(self, o: object) -> bool:
        return isinstance(o, PickledBytesTypeInfo)

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return "PickledByteArrayTypeInfo"


class RowTypeInfo(TypeInformation):
    """``Row`` values; equal when their field types are (as PyFlink's, names aside)."""

    def __init__(self, field_types: list[TypeInformation], field_names: list[str] | None = None):
        self._field_types = field_types
        self._field_names = field_names
        super().__init__()

    @property
    def _name(self) -> str:
        return "ROW" if self._field_names is None else "ROW_NAMED"

    @property
    def _params(self) -> tuple[Any, ...]:
        if self._field_names is None:
            return (tuple(self._field_types),)
        return (tuple(self._field_names), tuple(self._field_types))

    def get_field_names(self) -> list[str]:
        """The field names; Flink's defaults (``f0``, ``f1``, ...) when none were given."""
        if not self._field_names:
            return [f"f{i}" for i in range(len(self._field_types))]
        return self._field_names

    def get_field_index(self, field_name: str) -> int:
        if self._field_names:
            return self._field_names.index(field_name)
        return -1

    def get_field_types(self) -> list[TypeInformation]:
        return self._field_types

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RowTypeInfo):
            return bool(self._field_types == other._field_types)
        return False

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        if self._field_names:
            named = zip(self._field_names, self._field_types, strict=False)
            fields = ", ".join(f"{name}: {field_type}" for name, field_type in named)
        else:
            fields = ", ".join(str(field_type) for field_type in self._field_types)
        return f"RowTypeInfo({fields})"


class TupleTypeInfo(TypeInformation):
    """Tuple values."""

    def __init__(self, field_types: list[TypeInformation]):
        self._field_types = field_types
        super().__init__()

    @property
    def _name(self) -> str:
        return "TUPLE"

    @property
    def _params(self) -> tuple[Any, ...]:
        return (tuple(self._field_types),)

    def get_field_types(self) -> list[TypeInformation]:
        return self._field_types

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TupleTypeInfo):
            return bool(self._field_types == other._field_types)
        return False

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        fields = ", ".join(str(field_type) for field_type in self._field_types)
        return f"TupleTypeInfo({fields})"


class _SingletonTypeInfo(TypeInformation):
    """A type without parameters: all its instances are equal."""

    _factory = ""

    @property
    def _name(self) -> str:
        return self._factory

    def __eq__(self, o: object) -> bool:
        return isinstance(o, type(self))

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return type(self).__name__


class DateTypeInfo(_SingletonTypeInfo):
    """``datetime.date`` values."""

    _factory = "SQL_DATE"


class TimeTypeInfo(_SingletonTypeInfo):
    """``datetime.time`` values."""

    _factory = "SQL_TIME"


class TimestampTypeInfo(_SingletonTypeInfo):
    """``datetime.datetime`` values."""

    _factory = "SQL_TIMESTAMP"


class ListTypeInfo(TypeInformation):
    """Lists of ``element_type`` values."""

    def __init__(self, element_type: TypeInformation):
        self.elem_type = element_type
        super().__init__()

    @property
    def _name(self) -> str:
        return "LIST"

    @property
    def _params(self) -> tuple[Any, ...]:
        return (self.elem_type,)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ListTypeInfo):
            return bool(self.elem_type == other.elem_type)
        return False

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return f"ListTypeInfo<{self.elem_type}>"


class MapTypeInfo(TypeInformation):
    """Dicts from ``key_type_info`` to ``value_type_info`` values."""

    def __init__(self, key_type_info: TypeInformation, value_type_info: TypeInformation):
        self._key_type_info = key_type_info
        self._value_type_info = value_type_info
        super().__init__()

    @property
    def _name(self) -> str:
        return "MAP"

    @property
    def _params(self) -> tuple[Any, ...]:
        return (self._key_type_info, self._value_type_info)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MapTypeInfo):
            return bool(
                self._key_type_info == other._key_type_info
                and self._value_type_info == other._value_type_info
            )
        return False

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return f"MapTypeInfo<{self._key_type_info}, {self._value_type_info}>"


class LocalTimeTypeInfo(TypeInformation):
    """``LocalDate``, ``LocalTime`` and ``LocalDateTime`` values."""

    class TimeType(Enum):
        LOCAL_DATE = 0
        LOCAL_TIME = 1
        LOCAL_DATE_TIME = 2

    def __init__(self, time_type: LocalTimeTypeInfo.TimeType):
        super().__init__()
        self._time_type = time_type

    def __eq__(self, other: object) -> bool:
        return (
            self.__class__ == other.__class__
            and isinstance(other, LocalTimeTypeInfo)
            and self._time_type == other._time_type
        )

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return f"LocalTimeTypeInfo<{self._time_type.name}>"


class ExternalTypeInfo(TypeInformation):
    """A type information wrapped for the Table API."""

    def __init__(self, type_info: TypeInformation):
        super().__init__()
        self._type_info = type_info

    def __eq__(self, other: object) -> bool:
        return (
            self.__class__ == other.__class__
            and isinstance(other, ExternalTypeInfo)
            and self._type_info == other._type_info
        )

    def __hash__(self) -> int:
        return hash(self._hash_key())

    def __repr__(self) -> str:
        return f"ExternalTypeInfo<{self._type_info}>"


class Types:
    """Type information of the most common types, as PyFlink's ``Types``."""

    @staticmethod
    def STRING() -> TypeInformation:
        return BasicTypeInfo.STRING_TYPE_INFO()

    @staticmethod
    def BYTE() -> TypeInformation:
        return BasicTypeInfo.BYTE_TYPE_INFO()

    @staticmethod
    def BOOLEAN() -> TypeInformation:
        return BasicTypeInfo.BOOLEAN_TYPE_INFO()

    @staticmethod
    def SHORT() -> TypeInformation:
        return BasicTypeInfo.SHORT_TYPE_INFO()

    @staticmethod
    def INT() -> TypeInformation:
        return BasicTypeInfo.INT_TYPE_INFO()

    @staticmethod
    def LONG() -> TypeInformation:
        return BasicTypeInfo.LONG_TYPE_INFO()

    @staticmethod
    def FLOAT() -> TypeInformation:
        return BasicTypeInfo.FLOAT_TYPE_INFO()

    @staticmethod
    def DOUBLE() -> TypeInformation:
        return BasicTypeInfo.DOUBLE_TYPE_INFO()

    @staticmethod
    def CHAR() -> TypeInformation:
        return BasicTypeInfo.CHAR_TYPE_INFO()

    @staticmethod
    def BIG_INT() -> TypeInformation:
        return BasicTypeInfo.BIG_INT_TYPE_INFO()

    @staticmethod
    def BIG_DEC() -> TypeInformation:
        return BasicTypeInfo.BIG_DEC_TYPE_INFO()

    @staticmethod
    def INSTANT() -> TypeInformation:
        return BasicTypeInfo.INSTANT_TYPE_INFO()

    @staticmethod
    def SQL_DATE() -> TypeInformation:
        return SqlTimeTypeInfo.DATE()

    @staticmethod
    def SQL_TIME() -> TypeInformation:
        return SqlTimeTypeInfo.TIME()

    @staticmethod
    def SQL_TIMESTAMP() -> TypeInformation:
        return SqlTimeTypeInfo.TIMESTAMP()

    @staticmethod
    def PICKLED_BYTE_ARRAY() -> TypeInformation:
        return PickledBytesTypeInfo()

    @staticmethod
    def ROW(field_types: list[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types)

    @staticmethod
    def ROW_NAMED(field_names: list[str], field_types: list[TypeInformation]) -> TypeInformation:
        return RowTypeInfo(field_types, field_names)

    @staticmethod
    def TUPLE(field_types: list[TypeInformation]) -> TypeInformation:
        return TupleTypeInfo(field_types)

    @staticmethod
    def PRIMITIVE_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return PrimitiveArrayTypeInfo(element_type)

    @staticmethod
    def BASIC_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return BasicArrayTypeInfo(element_type)

    @staticmethod
    def OBJECT_ARRAY(element_type: TypeInformation) -> TypeInformation:
        return ObjectArrayTypeInfo(element_type)

    @staticmethod
    def MAP(key_type_info: TypeInformation, value_type_info: TypeInformation) -> TypeInformation:
        return MapTypeInfo(key_type_info, value_type_info)

    @staticmethod
    def LIST(element_type_info: TypeInformation) -> TypeInformation:
        return ListTypeInfo(element_type_info)


__all__ = ["TypeInformation", "Types"]

"""A PyFlink job (not a test; ``test_pyflink_examples.py`` runs it on PyFlink and, its
imports swapped, on lockgate, as it does PyFlink's examples): one value per declared type
crosses a shuffle, and the job prints what the next function got (its class and repr)
and what ``print()`` writes for the typed stream; and a tuple declared as a row reaches a
chained function unconverted, as in PyFlink."""

import datetime
import decimal

from pyflink.common import Row, RowKind, Types
from pyflink.datastream import StreamExecutionEnvironment

# Plain values only: the functions below carry them to the workers (PyFlink's types hold
# Java objects, which do not pickle).
VALUES = {
    "row_named": Row(1, "x"),
    "row_named_kw": Row(a=2, b="y"),
    "row": Row(1, True),
    "row_nested": Row(Row(1), ["x"]),
    "row_null": Row(None, None),
    "row_kind": Row.of_kind(RowKind.UPDATE_BEFORE, "x"),
    "tuple": ("k", 5),
    "tuple_nested": ((1, 0.1), "z"),
    "map": {"a": 1, "b": 2},
    "list": [1, 2.5],
    "basic_array": ["a", None],
    "pickled": {"any": [1, (2, 3)]},
    "float": 0.1,
    "double_of_int": 3,
    "double_big": 1e7,
    "int": 7,
    "long": 1 << 40,
    "short": 300,
    "byte": -5,
    "boolean": True,
    "string": "s t",
    "big_dec": decimal.Decimal("1.50"),
    "date": datetime.date(2024, 1, 2),
    "timestamp": datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
}


def declared_types():
    return [
        ("row_named", Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()])),
        ("row_named_kw", Types.ROW_NAMED(["a", "b"], [Types.INT(), Types.STRING()])),
        ("row", Types.ROW([Types.DOUBLE(), Types.BOOLEAN()])),
        ("row_nested", Types.ROW([Types.ROW([Types.INT()]), Types.LIST(Types.STRING())])),
        ("row_null", Types.ROW([Types.INT(), Types.STRING()])),
        ("row_kind", Types.ROW_NAMED(["a"], [Types.STRING()])),
        ("tuple", Types.TUPLE([Types.STRING(), Types.LONG()])),
        ("tuple_nested", Types.TUPLE([Types.TUPLE([Types.INT(), Types.FLOAT()]), Types.STRING()])),
        ("map", Types.MAP(Types.STRING(), Types.INT())),
        ("list", Types.LIST(Types.DOUBLE())),
        ("basic_array", Types.BASIC_ARRAY(Types.STRING())),
        ("pickled", Types.PICKLED_BYTE_ARRAY()),
        ("float", Types.FLOAT()),
        ("double_of_int", Types.DOUBLE()),
        ("double_big", Types.DOUBLE()),
        ("int", Types.INT()),
        ("long", Types.LONG()),
        ("short", Types.SHORT()),
        ("byte", Types.BYTE()),
        ("boolean", Types.BOOLEAN()),
        ("string", Types.STRING()),
        ("big_dec", Types.BIG_DEC()),
        ("date", Types.SQL_DATE()),
        ("timestamp", Types.SQL_TIMESTAMP()),
    ]


def produce(name):
    return lambda _: VALUES[name]


def describe(name):
    return lambda value: f"{name} got {type(value).__name__} {value!r}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    for name, type_info in declared_types():
        typed = env.from_collection([0]).map(produce(name), output_type=type_info).rebalance()
        typed.map(describe(name)).print()
        if name != "basic_array":  # PyFlink prints a Java array's identity (its hash)
            typed.print(f"{name} printed")
    # chained functions get what the one before returned, whatever it declared: PyFlink
    # converts only where a record leaves the chain (here, into print's sink)
    env.from_collection([0]).map(produce("tuple"), output_type=declared_types()[0][1]).map(
        describe("chained")
    ).print()
    env.execute("types")


if __name__ == "__main__":
    main()

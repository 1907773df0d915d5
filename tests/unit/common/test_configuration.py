"""Configuration: PyFlink's methods over a string-to-string map."""

from __future__ import annotations

import pytest

from lockgate.common import Configuration


def test_string_values():
    config = Configuration()
    assert config.get_string("a.key", "fallback") == "fallback"
    assert config.set_string("a.key", "value") is config
    assert config.get_string("a.key", "fallback") == "value"


def test_integer_values_are_stored_as_strings():
    config = Configuration()
    assert config.get_integer("n", 7) == 7
    assert config.set_integer("n", 42) is config
    assert config.get_integer("n", 0) == 42
    assert config.get_string("n", "") == "42"
    assert config.to_dict() == {"n": "42"}


def test_integer_from_a_string():
    config = Configuration().set_string("n", " 12 ")
    assert config.get_integer("n", 0) == 12


def test_boolean_values_are_stored_as_lowercase_strings():
    config = Configuration()
    assert config.get_boolean("b", True) is True
    assert config.set_boolean("b", True) is config
    assert config.get_string("b", "") == "true"
    assert config.get_boolean("b", False) is True
    config.set_boolean("b", False)
    assert config.get_string("b", "") == "false"
    assert config.get_boolean("b", True) is False


def test_boolean_from_strings():
    config = Configuration()
    config.set_string("b", "TRUE")
    assert config.get_boolean("b", False) is True
    config.set_string("b", True)  # a bool given to set_string is written Flink's way
    assert config.get_string("b", "") == "true"


def test_float_values_are_stored_as_strings():
    config = Configuration()
    assert config.get_float("f", 0.5) == 0.5
    assert config.set_float("f", 1.25) is config
    assert config.get_float("f", 0.0) == 1.25
    assert config.get_string("f", "") == "1.25"
    config.set_float("f", 3)
    assert config.get_string("f", "") == "3.0"
    config.set_string("i", "4")
    assert config.get_float("i", 0.0) == 4.0


def test_bytearray_values():
    config = Configuration()
    assert config.get_bytearray("x", bytearray(b"d")) == bytearray(b"d")
    config.set_bytearray("x", bytearray(b"\x00\xffab"))
    assert config.get_bytearray("x", bytearray()) == bytearray(b"\x00\xffab")
    assert isinstance(config.get_string("x", None), str)


def test_all_values_are_strings_in_to_dict():
    config = Configuration()
    config.set_string("s", "x")
    config.set_integer("i", 5)
    config.set_boolean("b", True)
    config.set_float("f", 0.5)
    assert config.to_dict() == {"s": "x", "i": "5", "b": "true", "f": "0.5"}
    assert all(type(v) is str for v in config.to_dict().values())


def test_to_dict_is_a_copy():
    config = Configuration().set_string("a", "1")
    config.to_dict()["a"] = "changed"
    assert config.get_string("a", "") == "1"


def test_contains_key_and_key_set():
    config = Configuration()
    assert not config.contains_key("a")
    assert config.key_set() == set()
    config.set_string("a", "1").set_integer("b", 2)
    assert config.contains_key("a")
    assert not config.contains_key("c")
    assert config.key_set() == {"a", "b"}


def test_remove_config():
    config = Configuration().set_string("a", "1")
    assert config.remove_config("a") is True
    assert not config.contains_key("a")
    assert config.remove_config("a") is False
    assert config.get_string("a", "gone") == "gone"


def test_add_all_with_and_without_prefix():
    base = Configuration().set_string("a", "1")
    other = Configuration().set_string("b", "2").set_string("a", "override")
    assert base.add_all(other) is base
    assert base.to_dict() == {"a": "override", "b": "2"}
    prefixed = Configuration().add_all(other, "spark.")
    assert prefixed.to_dict() == {"spark.b": "2", "spark.a": "override"}
    assert other.to_dict() == {"b": "2", "a": "override"}  # the source is unchanged


def test_add_all_to_dict():
    target = {"x": "0"}
    Configuration().set_integer("n", 3).add_all_to_dict(target)
    assert target == {"x": "0", "n": "3"}


def test_from_dict():
    config = Configuration.from_dict({"parallelism.default": "4", "flag": True, "n": 8})
    assert isinstance(config, Configuration)
    assert config.to_dict() == {"parallelism.default": "4", "flag": "true", "n": "8"}
    assert config.get_integer("parallelism.default", 1) == 4


def test_copy_constructor_is_independent():
    original = Configuration().set_string("a", "1")
    copy = Configuration(original)
    copy.set_string("a", "2")
    copy.set_string("b", "3")
    assert original.to_dict() == {"a": "1"}
    assert copy.to_dict() == {"a": "2", "b": "3"}


def test_equality_and_hash():
    a = Configuration().set_integer("n", 1).set_string("s", "x")
    b = Configuration().set_string("s", "x").set_string("n", "1")
    assert a == b
    assert hash(a) == hash(b)
    assert a != Configuration().set_string("s", "x")
    assert a != {"n": "1", "s": "x"}


def test_get_integer_of_a_non_integer_raises():
    config = Configuration().set_string("n", "many")
    with pytest.raises(ValueError):
        config.get_integer("n", 0)

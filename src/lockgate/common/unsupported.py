"""Placeholders for PyFlink names lockgate does not support yet.

Every public name of PyFlink's ``pyflink.datastream`` and ``pyflink.common`` imports from the
same ``lockgate.`` path, so a job's imports never fail; a name lockgate cannot run yet is a
placeholder class made by :func:`unsupported`, which raises :class:`NotSupportedYetError`
(naming the feature and what to use instead) when it is constructed, subclassed and
constructed, or one of its attributes (``KafkaSource.builder()``, ``Semantic.EXACTLY_ONCE``)
is used. A PyFlink method lockgate does not support yet raises the same error through
:func:`not_supported`.
"""

from __future__ import annotations

from typing import Any, NoReturn


class NotSupportedYetError(NotImplementedError):
    """A PyFlink feature lockgate does not support yet; the message names the alternative."""


class _UnsupportedAttributeError(NotSupportedYetError, AttributeError):
    """Raised for a placeholder's attributes: an AttributeError too, so that ``hasattr`` and
    ``getattr`` with a default (introspection, documentation tools) see no attribute."""


def _message(name: str, alternative: str) -> str:
    return f"{name} is not supported yet by lockgate: use {alternative}"


class _UnsupportedMeta(type):
    """The metaclass of placeholders: constructing one, or using its attributes, raises."""

    _lockgate_name: str
    _lockgate_alternative: str

    def __call__(cls, *args: Any, **kwargs: Any) -> NoReturn:
        raise NotSupportedYetError(_message(cls._lockgate_name, cls._lockgate_alternative))

    def __getattr__(cls, attribute: str) -> NoReturn:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        raise _UnsupportedAttributeError(_message(cls._lockgate_name, cls._lockgate_alternative))


def not_supported(name: str, alternative: str) -> NoReturn:
    """Raise for PyFlink's method ``name`` (``Class.method``), which lockgate does not support
    yet, pointing to ``alternative``: the same message as a placeholder class's."""
    raise NotSupportedYetError(_message(name, alternative))


def unsupported(name: str, alternative: str, module: str) -> type:
    """A placeholder class for PyFlink's ``name`` (in ``module``) that points to ``alternative``."""
    return _UnsupportedMeta(
        name,
        (),
        {
            "__module__": module,
            "__qualname__": name,
            "__doc__": _message(name, alternative) + ".",
            "_lockgate_name": name,
            "_lockgate_alternative": alternative,
        },
    )


__all__ = ["NotSupportedYetError", "not_supported", "unsupported"]

"""``OutputTag``: names a side output, as PyFlink's ``pyflink.datastream.output_tag``."""

from __future__ import annotations

from typing import Any

from lockgate.common.type_conversion import declared_type


class OutputTag:
    """A side output of an operator: functions ``yield tag, value`` to send ``value`` there,
    and ``DataStream.get_side_output(tag)`` reads it. Tags are equal when their ids are."""

    def __init__(self, tag_id: str, type_info: Any = None):
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError("OutputTag tag_id cannot be None or empty string")
        self.tag_id = tag_id
        #: what the side output's records are converted to (None: kept as they are)
        self.type_info = declared_type(type_info, f"the type_info of OutputTag '{tag_id}'")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"

"""``OutputTag``: names a side output, as PyFlink's ``pyflink.datastream.output_tag``."""

from __future__ import annotations

from typing import Any


class OutputTag:
    """A side output of an operator: functions ``yield tag, value`` to send ``value`` there,
    and ``DataStream.get_side_output(tag)`` reads it. Tags are equal when their ids are."""

    def __init__(self, tag_id: str, type_info: Any = None):
        if not isinstance(tag_id, str) or not tag_id:
            raise ValueError("OutputTag tag_id cannot be None or empty string")
        self.tag_id = tag_id
        self.type_info = type_info

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutputTag) and other.tag_id == self.tag_id

    def __hash__(self) -> int:
        return hash(self.tag_id)

    def __repr__(self) -> str:
        return f"OutputTag({self.tag_id!r})"

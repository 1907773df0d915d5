"""``Duration`` and ``Time`` as in PyFlink: millisecond spans."""

from __future__ import annotations


class Duration:
    def __init__(self, millis: int):
        self._millis = int(millis)

    @staticmethod
    def of_millis(millis: int) -> Duration:
        return Duration(millis)

    @staticmethod
    def of_seconds(seconds: int) -> Duration:
        return Duration(seconds * 1000)

    @staticmethod
    def of_minutes(minutes: int) -> Duration:
        return Duration(minutes * 60_000)

    @staticmethod
    def of_hours(hours: int) -> Duration:
        return Duration(hours * 3_600_000)

    @staticmethod
    def of_days(days: int) -> Duration:
        return Duration(days * 86_400_000)

    @staticmethod
    def of_nanos(nanos: int) -> Duration:
        return Duration(nanos // 1_000_000)

    def to_milliseconds(self) -> int:
        return self._millis

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Duration) and self._millis == other._millis

    def __hash__(self) -> int:
        return hash(self._millis)

    def __repr__(self) -> str:
        return f"Duration({self._millis} ms)"


class Time(Duration):
    @staticmethod
    def milliseconds(millis: int) -> Time:
        return Time(millis)

    @staticmethod
    def seconds(seconds: int) -> Time:
        return Time(seconds * 1000)

    @staticmethod
    def minutes(minutes: int) -> Time:
        return Time(minutes * 60_000)

    @staticmethod
    def hours(hours: int) -> Time:
        return Time(hours * 3_600_000)

    @staticmethod
    def days(days: int) -> Time:
        return Time(days * 86_400_000)


class Instant:
    """An instant on the time-line, as PyFlink's (and Java's) ``Instant``: seconds and nanos."""

    def __init__(self, seconds: int, nanos: int):
        self.seconds = seconds
        self.nanos = nanos

    def to_epoch_milli(self) -> int:
        if self.seconds < 0 < self.nanos:
            return (self.seconds + 1) * 1000 + self.nanos // 1_000_000 - 1000
        return self.seconds * 1000 + self.nanos // 1_000_000

    @staticmethod
    def of_epoch_milli(epoch_milli: int) -> Instant:
        return Instant(epoch_milli // 1000, epoch_milli % 1000 * 1_000_000)

    def __eq__(self, other: object) -> bool:
        return (
            self.__class__ == other.__class__
            and isinstance(other, Instant)
            and self.seconds == other.seconds
            and self.nanos == other.nanos
        )

    def __hash__(self) -> int:
        return hash((self.seconds, self.nanos))

    def __repr__(self) -> str:
        return f"Instant<{self.seconds}, {self.nanos}>"


__all__ = ["Duration", "Instant", "Time"]

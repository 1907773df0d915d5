"""Write the configuration reference, docs/reference/configuration.md, from the code.

Every ``ConfigOption`` of ``lockgate.common.config_options`` (its key, default, allowed
values, description and older names) becomes one entry of the page, grouped by key prefix,
in the order the module defines them. The page is committed, and ``make docs`` (so ``make
test``) runs this script with ``--check``, which fails when the committed page differs from
what the code gives now: a new option, or a changed default or description, is a failing
build until the page is written again with ``make docs-config``.

Usage: ``python tools/gen_config_reference.py [--check] [--output PATH]``.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lockgate.common import config_options
from lockgate.common.config_options import ConfigOption

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "configuration.md"
REGENERATE = "make docs-config"


@dataclass(frozen=True)
class Group:
    title: str
    prefixes: tuple[str, ...]
    intro: str


# Checked in order: an option goes to the first group with a prefix of its key (so the
# testing keys before the other lockgate.* keys). Keys of no group go to "Other keys".
GROUPS = (
    Group(
        "Pipeline and execution",
        ("parallelism.", "pipeline.", "python.", "execution.runtime-mode"),
        "Flink's keys for the shape of a job: parallelism, key groups, chaining, "
        "the runtime mode, Python files and job parameters.",
    ),
    Group(
        "Checkpointing",
        ("execution.checkpointing.",),
        "Flink 2.x's keys and defaults. A checkpoint is taken at the end of the first epoch "
        "after the interval; see [Checkpoints and recovery](../concepts/checkpoints.md).",
    ),
    Group(
        "Starting from a checkpoint or savepoint",
        ("execution.state-recovery.",),
        "See [Savepoints and rescaling](../concepts/savepoints-and-rescaling.md).",
    ),
    Group(
        "State backends",
        ("state.",),
        "See [State backends and state TTL](../concepts/state-backends.md).",
    ),
    Group(
        "Restart strategies",
        ("restart-strategy.",),
        "Flink 2.x's keys and defaults: `restart-strategy.type` picks the strategy, and the "
        "keys under its name configure it (attempts and delay of `fixed-delay`; failures per "
        "interval, the interval and the delay of `failure-rate`; the backoff of "
        "`exponential-delay`). `env.set_restart_strategy(RestartStrategies...)` sets the "
        "same keys.",
    ),
    Group(
        "Testing",
        ("lockgate.testing.",),
        "For lockgate's own fault-tolerance tests, not for jobs.",
    ),
    Group(
        "lockgate's own keys",
        ("lockgate.",),
        "Keys of what Flink does not have: epochs, the work directory, shuffle batches, "
        "RocksDB's write-back cache. An unknown `lockgate.*` key fails before the job starts.",
    ),
    Group(
        "Statistics",
        ("web.",),
        "Flink's key for the number of checkpoint statistics kept.",
    ),
)
OTHER = Group("Other keys", (), "")


def options() -> list[ConfigOption[Any]]:
    """Every option the module defines, in definition order, and those it only registers."""
    found: dict[str, ConfigOption[Any]] = {}
    for value in vars(config_options).values():
        if isinstance(value, ConfigOption):
            found.setdefault(value.key, value)
    for option in config_options.VALIDATED_OPTIONS.values():
        found.setdefault(option.key, option)
    return list(found.values())


def group_of(key: str) -> Group:
    for group in GROUPS:
        if any(key == prefix or key.startswith(prefix) for prefix in group.prefixes):
            return group
    return OTHER


def _duration(ms: int) -> str:
    if ms == 0:
        return "0 ms"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _memory(size: int) -> str:
    for unit, bytes_ in (("gb", 1 << 30), ("mb", 1 << 20), ("kb", 1 << 10)):
        if size % bytes_ == 0:
            return f"{size // bytes_}{unit}"
    return f"{size}b"


def kind(option: ConfigOption[Any]) -> str:
    """What sort of value the key takes, from its allowed values and its default."""
    allowed = option.allowed.lower()
    default = option.default
    if "duration" in allowed:
        return "duration"
    if "memory size" in allowed:
        return "memory size"
    if isinstance(default, bool):
        return "boolean"
    if isinstance(default, dict):
        return "map"
    if isinstance(default, tuple):
        return "list"
    if isinstance(default, int):
        return "integer"
    if isinstance(default, float):
        return "number"
    if not option.allowed.startswith(("a ", "an ", "comma-separated")) and " or " in allowed:
        return "choice"
    return "string"


def default_text(option: ConfigOption[Any]) -> str:
    default = option.default
    if default is None or default in ("", (), {}):
        return "unset"
    if isinstance(default, bool):
        return f"`{str(default).lower()}`"
    kind_ = kind(option)
    if kind_ == "duration":
        return f"`{_duration(default)}`"
    if kind_ == "memory size":
        return f"`{_memory(default)}`"
    if isinstance(default, str) and default.lower() in option.allowed:
        # choices are read case-insensitively and kept upper-case: show them as allowed
        return f"`{default.lower()}`"
    return f"`{default}`"


_ESCAPES = {"<": "&lt;", ">": "&gt;", "*": "\\*", "_": "\\_", "`": "\\`", "\n": " "}


def _text(text: str) -> str:
    """Plain text, shown as it is in Markdown."""
    return "".join(_ESCAPES.get(char, char) for char in text)


def render() -> str:
    grouped: dict[str, list[ConfigOption[Any]]] = {}
    for option in options():
        grouped.setdefault(group_of(option.key).title, []).append(option)
    lines = [
        "<!-- Generated by tools/gen_config_reference.py from "
        "src/lockgate/common/config_options.py.",
        f"     Do not edit: change the options there and run `{REGENERATE}`. -->",
        "",
        "# Configuration reference",
        "",
        "Every key lockgate reads from a job's `Configuration`, with its default, the values "
        "it allows and what it does. The page is generated from the code "
        "(`lockgate.common.config_options`), so it lists exactly what the running version "
        "knows. How to set keys, the `spark.*` keys and which Spark setting wins are in "
        "[Configuration](../configuration.md).",
        "",
        "Values are checked before the job starts: an invalid value fails naming the key "
        "and what it allows. Durations take Flink's syntax (`500 ms`, `10 s`, `1 min`; a bare "
        "number is milliseconds), memory sizes a number and a unit (`64mb`), and choices "
        "are read in any case.",
        "",
    ]
    for group in (*GROUPS, OTHER):
        members = grouped.get(group.title)
        if not members:
            continue
        lines += [f"## {group.title}", ""]
        if group.intro:
            lines += [group.intro, ""]
        for option in members:
            lines += [f"### `{option.key}` {{ #{option.key} }}", ""]
            if option.description.strip():
                lines += [_text(option.description.strip()), ""]
            lines += [
                f"- Default: {default_text(option)}",
                f"- Type: {kind(option)}",
                f"- Allowed values: {_text(option.allowed)}",
            ]
            if option.deprecated_keys:
                older = ", ".join(f"`{key}`" for key in option.deprecated_keys)
                lines.append(f"- Older name, read when the key is unset: {older}")
            lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="compare the page with what the code gives; exit 1 if it differs",
    )
    parser.add_argument("--output", type=Path, default=PAGE, help="the page to write or check")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current == page:
            return 0
        diff = difflib.unified_diff(
            current.splitlines(),
            page.splitlines(),
            "committed",
            "from the code",
            lineterm="",
        )
        print("\n".join(list(diff)[:40]), file=sys.stderr)
        shown = args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output
        print(
            f"\n{shown} is out of date with src/lockgate/common/config_options.py: "
            f"run `{REGENERATE}` and commit the page.",
            file=sys.stderr,
        )
        return 1
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())

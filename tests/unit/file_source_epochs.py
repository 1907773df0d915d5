"""Reading a FileSource epoch by epoch as a job does, without Spark (not a test module)."""

from __future__ import annotations

import json
from typing import Any

from lockgate.core.source import Source, SplitAssignment, SplitProgress


def through_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def read_epochs(source: Source, parallelism: int, max_records: int) -> list[list[Any]]:
    """The records of each epoch until a bounded source is finished. Every epoch starts from
    a restore of the previous epoch's snapshot (a checkpoint), is read twice (a task's retry
    must read the same records) and is acknowledged through JSON, as the job master does."""
    source.validate()
    enumerator = source.create_enumerator(parallelism)
    epochs: list[list[Any]] = []
    while not enumerator.is_finished():
        assert len(epochs) < 1000, "the source does not finish"
        snapshot = through_json(enumerator.snapshot())
        enumerator = source.create_enumerator(parallelism)
        enumerator.restore(snapshot, "test")
        plan = enumerator.plan(max_records)
        records, progress = read_plan(source, plan)
        assert read_plan(source, plan) == (records, progress)  # a re-run reads the same
        enumerator.acknowledge(
            {
                split: SplitProgress.from_json(through_json(report.to_json()), "test")
                for split, report in progress.items()
            }
        )
        epochs.append(records)
    return epochs


def read_plan(
    source: Source, plan: dict[int, list[SplitAssignment]]
) -> tuple[list[Any], dict[str, SplitProgress]]:
    records: list[Any] = []
    progress: dict[str, SplitProgress] = {}
    for subtask in sorted(plan):
        for assignment in plan[subtask]:
            received = SplitAssignment.from_json(through_json(assignment.to_json()), "test")
            records.extend(source.read(received, None, progress))
    return records, progress


def flat(epochs: list[list[Any]]) -> list[Any]:
    return [record for epoch in epochs for record in epoch]

"""Running account balances and alerts: keyed state on embedded local Spark.

The job reads card transactions (CSV lines ``txn_id,account,amount_cents,merchant``) from
files with ``FileSource``, keys them by account, and keeps per account a running balance
(``ValueState``) and the last few amounts (``ListState``) in a ``KeyedProcessFunction``.
Every transaction yields a balance update; an alert is raised when the balance drops below
the overdraft threshold or a purchase is much larger than the account's recent ones. Both
streams are written by ``FileSink`` to their own directories.

lockgate runs the job as a series of epochs (Flink's checkpoint intervals), one Spark job
each; ``lockgate.epoch.max-records-per-split`` bounds how much input an epoch takes, and
``lockgate.progress`` prints a line per epoch. The code is PyFlink's DataStream API with
``lockgate`` in place of ``pyflink`` in the imports.

Run: ``python examples/account_balances.py [--out DIR] [--transactions N] [--master URL]``
"""

from __future__ import annotations

import argparse
import math
import random
import shutil
import time
from collections import Counter
from pathlib import Path

from lockgate.common import Configuration, Encoder, Types, WatermarkStrategy
from lockgate.datastream import (
    CheckpointingMode,
    KeyedProcessFunction,
    StreamExecutionEnvironment,
)
from lockgate.datastream.connectors.file_system import (
    BucketAssigner,
    FileSink,
    FileSource,
    OutputFileConfig,
    StreamFormat,
)
from lockgate.datastream.state import ListStateDescriptor, ValueStateDescriptor

PARALLELISM = 2
TRANSACTION_FILES = 2  # one split per file: both source subtasks read
TARGET_EPOCHS = 8  # input epochs; a bounded job adds a final, empty one

ACCOUNTS = 2_000
OVERDRAFT_THRESHOLD_CENTS = -10_000  # alert when a balance drops below -$100.00
RECENT_AMOUNTS = 5  # how many amounts per account the ListState keeps
LARGE_FACTOR = 5  # a purchase is "large" at 5x the recent average ...
LARGE_MIN_CENTS = 20_000  # ... and at least $200.00

MERCHANTS = [
    "grocer",
    "coffee-bar",
    "fuel-station",
    "bookshop",
    "pharmacy",
    "online-market",
    "restaurant",
    "electronics",
    "airline",
    "hardware",
]


# Input ------------------------------------------------------------------------------------


def write_transactions(directory: Path, count: int, seed: int = 7) -> list[Path]:
    """Write ``count`` transactions round-robin into a few CSV files; same seed, same files."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    paths = [directory / f"transactions-{i:02d}.csv" for i in range(TRANSACTION_FILES)]
    lines: list[list[str]] = [[] for _ in paths]
    for txn in range(count):
        account = f"ACC-{rng.randrange(ACCOUNTS):05d}"
        roll = rng.random()
        if roll < 0.10:  # salary or incoming transfer
            amount = rng.randrange(20_000, 150_000)
            merchant = rng.choice(["payroll", "transfer-in"])
        elif roll < 0.995:  # everyday purchase, median about $24
            amount = -int(rng.lognormvariate(7.8, 0.9))
            merchant = rng.choice(MERCHANTS)
        else:  # the occasional big-ticket purchase
            amount = -rng.randrange(50_000, 400_000)
            merchant = rng.choice(["electronics", "airline", "jeweller"])
        lines[txn % len(paths)].append(f"T{txn:08d},{account},{amount},{merchant}\n")
    for path, content in zip(paths, lines, strict=True):
        path.write_text("".join(content))
    return paths


def parse_transaction(line: str) -> tuple[str, str, int, str]:
    txn_id, account, amount_cents, merchant = line.split(",")
    return txn_id, account, int(amount_cents), merchant


# The stateful logic -------------------------------------------------------------------------


class BalanceTracker(KeyedProcessFunction):
    """Per account: the running balance and the last few amounts, both in keyed state.

    Emits ``("balance", txn_id, account, amount, balance)`` for every transaction and
    ``("alert", kind, txn_id, account, amount, balance, detail)`` when something looks wrong.
    """

    def open(self, runtime_context):
        self.balance = runtime_context.get_state(
            ValueStateDescriptor("balance_cents", Types.LONG())
        )
        self.recent = runtime_context.get_list_state(
            ListStateDescriptor("recent_amounts_cents", Types.LONG())
        )

    def process_element(self, value, ctx):
        txn_id, account, amount, _merchant = value
        before = self.balance.value() or 0
        after = before + amount
        self.balance.update(after)
        yield "balance", txn_id, account, amount, after

        if before >= OVERDRAFT_THRESHOLD_CENTS > after:
            yield (
                "alert",
                "LOW_BALANCE",
                txn_id,
                account,
                amount,
                after,
                f"balance fell below {dollars(OVERDRAFT_THRESHOLD_CENTS)}",
            )

        recent = list(self.recent.get())  # list(): PyFlink's ListState.get() is lazy
        if amount < 0 and len(recent) >= 3:
            typical = sum(abs(a) for a in recent) / len(recent)
            if -amount >= LARGE_MIN_CENTS and -amount > LARGE_FACTOR * typical:
                yield (
                    "alert",
                    "LARGE_TRANSACTION",
                    txn_id,
                    account,
                    amount,
                    after,
                    f"{-amount / typical:.0f}x the recent average of {dollars(typical)}",
                )
        self.recent.update([*recent, amount][-RECENT_AMOUNTS:])


def dollars(cents: float) -> str:
    sign = "-" if cents < 0 else ""
    return f"{sign}${abs(cents) / 100:,.2f}"


def is_alert(record: tuple) -> bool:
    return record[0] == "alert"


def is_balance(record: tuple) -> bool:
    return record[0] == "balance"


def format_csv(record: tuple) -> str:
    """The record without its tag, as a CSV line."""
    return ",".join(str(field) for field in record[1:])


# Output -------------------------------------------------------------------------------------


def csv_sink(directory: Path, prefix: str) -> FileSink:
    return (
        FileSink.for_row_format(str(directory), Encoder.simple_string_encoder())
        .with_bucket_assigner(BucketAssigner.base_path_bucket_assigner())
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix(prefix).with_part_suffix(".csv").build()
        )
        .build()
    )


def part_files(directory: Path) -> list[Path]:
    """The published part files (in-progress files are hidden: their names start with '.')."""
    return sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith("."))


def read_lines(files: list[Path]) -> list[str]:
    return [line for path in files for line in path.read_text().splitlines()]


# The job ------------------------------------------------------------------------------------


def build_environment(
    master: str, records_per_split: int, checkpoint_dir: Path
) -> StreamExecutionEnvironment:
    config = Configuration()
    config.set_string("spark.master", master)
    config.set_string("spark.ui.enabled", "false")
    config.set_boolean("lockgate.progress", True)
    config.set_integer("lockgate.epoch.max-records-per-split", records_per_split)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(PARALLELISM)
    # Exactly-once output: part files become visible when the checkpoint covering them
    # completes. A 1 s interval checkpoints the first epoch to end after each second.
    env.enable_checkpointing(1000, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_checkpoint_storage_dir(checkpoint_dir.as_uri())
    return env


def define_job(
    env: StreamExecutionEnvironment, input_dir: Path, balances_dir: Path, alerts_dir: Path
) -> None:
    source = FileSource.for_record_stream_format(
        StreamFormat.text_line_format(), str(input_dir)
    ).build()
    updates = (
        env.from_source(source, WatermarkStrategy.no_watermarks(), "transactions")
        .map(parse_transaction)
        .name("parse")
        .key_by(lambda txn: txn[1], key_type=Types.STRING())
        .process(BalanceTracker())
        .name("balance-tracker")
        .uid("balance-tracker")
    )
    (
        updates.filter(is_balance)
        .map(format_csv, output_type=Types.STRING())
        .sink_to(csv_sink(balances_dir, "balances"))
        .name("balances")
        .uid("balances-sink")
    )
    (
        updates.filter(is_alert)
        .map(format_csv, output_type=Types.STRING())
        .sink_to(csv_sink(alerts_dir, "alerts"))
        .name("alerts")
        .uid("alerts-sink")
    )


def print_summary(result, wall_seconds: float, balances_dir: Path, alerts_dir: Path) -> None:
    # ``epochs`` (per-epoch figures) is lockgate's addition to PyFlink's JobExecutionResult.
    records = sum(epoch.records for epoch in result.epochs)
    print(
        f"\nDone: {len(result.epochs)} epochs, {records:,} transactions in "
        f"{result.get_net_runtime() / 1000:.1f} s "
        f"(wall time {wall_seconds:.1f} s, including Spark start-up); "
        f"{len(result.checkpoints)} checkpoints committed the output"
    )

    balance_files = part_files(balances_dir)
    balances = read_lines(balance_files)
    print(
        f"\n{len(balances):,} balance updates in {len(balance_files)} part files: {balances_dir}/"
    )
    for line in balances[:3]:
        print(f"  {line}")

    alert_files = part_files(alerts_dir)
    alerts = read_lines(alert_files)
    kinds = Counter(line.split(",", 1)[0] for line in alerts)
    print(f"\n{len(alerts):,} alerts in {len(alert_files)} part files: {alerts_dir}/")
    for kind, count in sorted(kinds.items()):
        example = next(line for line in alerts if line.startswith(kind + ","))
        print(f"  {count:>6,} {kind:<18} e.g. {example}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="out/account_balances", help="output directory")
    parser.add_argument("--transactions", type=int, default=200_000, help="how many to generate")
    parser.add_argument("--master", default="local[2]", help="Spark master URL")
    args = parser.parse_args()

    started = time.perf_counter()
    out = Path(args.out).resolve()
    input_dir, balances_dir, alerts_dir = out / "transactions", out / "balances", out / "alerts"
    for directory in (input_dir, balances_dir, alerts_dir):
        shutil.rmtree(directory, ignore_errors=True)  # a fresh run, not appended output
    write_transactions(input_dir, args.transactions)
    print(
        f"Wrote {args.transactions:,} transactions for {ACCOUNTS:,} accounts to {input_dir}/",
        flush=True,
    )

    records_per_split = max(1, math.ceil(args.transactions / TRANSACTION_FILES / TARGET_EPOCHS))
    env = build_environment(args.master, records_per_split, out / "checkpoints")
    define_job(env, input_dir, balances_dir, alerts_dir)
    result = env.execute("account_balances")
    print_summary(result, time.perf_counter() - started, balances_dir, alerts_dir)


if __name__ == "__main__":
    main()

"""Running a benchmark's peers (bench/peers/): the options, the PyFlink scripts run in
their own interpreter, and the ratios against them.

A PyFlink peer is a script of bench/peers/ run by the interpreter that ``--pyflink-python``
(default ``$LOCKGATE_PYFLINK_PYTHON``) names, the one of a venv with ``apache-flink``
(``bench/requirements-peers.txt``); without one the peer is skipped and its figures are
``nan`` with the reason, as are those of a peer that failed.
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
from pathlib import Path

PEERS_DIR = Path(__file__).resolve().parent / "peers"
PEER_TIMEOUT_S = 3600
PYFLINK_NOT_INSTALLED = (
    "not installed: give --pyflink-python or LOCKGATE_PYFLINK_PYTHON "
    "(an interpreter with apache-flink)"
)


def add_peer_arguments(parser: argparse.ArgumentParser, peers_help: str) -> None:
    """``--peers`` (what it runs: ``peers_help``) and ``--pyflink-python``."""
    parser.add_argument("--peers", action="store_true", help=peers_help)
    parser.add_argument(
        "--pyflink-python",
        default=os.environ.get("LOCKGATE_PYFLINK_PYTHON"),
        help="interpreter with apache-flink installed (default: $LOCKGATE_PYFLINK_PYTHON; "
        "unset: the PyFlink peer is skipped)",
    )


def peer_environment() -> dict[str, str]:
    """This process's environment without PYTHONPATH, for a peer in another interpreter:
    packages put on this one's path (lockgate's src, pandas for Spark's peer) must not
    shadow that venv's own."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def run_pyflink_script(python: str, script: str, arguments: list[str]) -> tuple[list[str], str]:
    """Run ``bench/peers/<script>`` with ``arguments`` in the interpreter ``python``; echo its
    stdout lines that start with ``pyflink `` (its details). Its stdout lines, and why it
    failed (the last line of its stderr, or its exit code; empty if it did not)."""
    try:
        done = subprocess.run(
            [python, str(PEERS_DIR / script), *arguments],
            capture_output=True,
            text=True,
            timeout=PEER_TIMEOUT_S,
            check=False,
            env=peer_environment(),
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return [], str(error)
    lines = done.stdout.strip().splitlines()
    for line in lines:
        if line.startswith("pyflink "):
            print(line, flush=True)
    if done.returncode == 0:
        return lines, ""
    errors = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return lines, errors[-1] if errors else f"exit code {done.returncode}"


def ratio(rate: float, peer_rate: float) -> float:
    """``rate`` over the peer's; ``nan`` when the peer has no figure."""
    if math.isnan(peer_rate) or peer_rate <= 0:
        return math.nan
    return rate / peer_rate

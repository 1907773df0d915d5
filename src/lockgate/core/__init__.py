"""What every layer builds on that is not PyFlink's public API (after flink-core): the
contracts between connectors and the runtime (sources, two-phase-commit sinks), and the file
systems (``fs``)."""

# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# CONTRIBUTING.md describes every target.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# PyFlink's own Python package, downloaded and never installed: the apache-flink wheel alone
# (about 3 MB, Python code and a few compiled modules, no jars), without the dependencies it
# declares (--no-deps: apache-flink-libraries, which holds Flink's jars, is not fetched).
# tests/unit/test_pyflink_names.py reads every module's __all__ from it.
PYFLINK_VERSION := 2.3.0
PYFLINK_WHEEL_DIR := $(VENV)/pyflink-wheel
PYFLINK_WHEEL := $(PYFLINK_WHEEL_DIR)/.downloaded-$(PYFLINK_VERSION)
# PyFlink itself, with its jars, in a venv of its own: tests/integration/test_pyflink_examples.py
# runs PyFlink's examples on it and on lockgate; bench peers may use it (--pyflink-python: numpy
# for bench/nexmark.py's peer, which generates its events with lockgate's generator).
PYFLINK_VENV := $(VENV)/pyflink
PYFLINK := $(PYFLINK_VENV)/.installed-$(PYFLINK_VERSION)

.PHONY: demo test unit integration integration-full pyflink-examples-expected cluster soak lint typecheck format docs docs-config java postgresql chromium clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Its own rule, so that a venv made before it existed gets the package too.
$(PYFLINK_WHEEL): $(STAMP)
	$(BIN)/pip download --quiet --no-deps --dest $(PYFLINK_WHEEL_DIR) apache-flink==$(PYFLINK_VERSION)
	touch $(PYFLINK_WHEEL)

$(PYFLINK): $(PYFLINK_WHEEL)
	$(PYTHON) -m venv $(PYFLINK_VENV)
	$(PYFLINK_VENV)/bin/pip install --quiet --find-links $(PYFLINK_WHEEL_DIR) apache-flink==$(PYFLINK_VERSION) 'numpy>=1.26,<3'
	touch $(PYFLINK)

# PySpark 4 needs Java 17+. Install it when running as root; otherwise say what to install.
java:
	@if java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "Java 17+ not found: installing openjdk-17-jre-headless"; \
		apt-get update -qq && apt-get install -y -qq openjdk-17-jre-headless; \
	else \
		echo "lockgate needs Java 17 or newer for PySpark 4. Install it, e.g.:"; \
		echo "  sudo apt-get install openjdk-17-jre-headless"; exit 1; \
	fi

# The JDBC sink's tests start a PostgreSQL server from Debian's package (tests/unit/postgres_server.py).
postgresql:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "PostgreSQL not found: installing postgresql"; \
		apt-get update -qq && apt-get install -y -qq postgresql; \
	else \
		echo "lockgate's tests need PostgreSQL's server binaries. Install them, e.g.:"; \
		echo "  sudo apt-get install postgresql"; exit 1; \
	fi

# The Web UI's test drives Debian's Chromium with Playwright (tests/unit/dispatcher/test_web_ui.py);
# Playwright's own browser downloads are never used.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
		echo "Chromium not found: installing chromium"; \
		apt-get update -qq && apt-get install -y -qq chromium; \
	else \
		echo "lockgate's Web UI test needs Debian's Chromium (/usr/bin/chromium). Install it, e.g.:"; \
		echo "  sudo apt-get install chromium"; exit 1; \
	fi

demo: $(PYFLINK_WHEEL) java
	$(BIN)/python examples/account_balances.py

# Two pytest workers (pytest-xdist), each with its Spark session: one worker's jobs leave the
# cores idle between their stages, in timeouts and in sleeps that the other's fill. A test
# file runs on one worker, its tests one after another (module fixtures run once).
PARALLEL := -n 2 --dist loadfile

# Lint, type check and the docs build first: a failing check fails the run like a failing test.
# --durations: the slowest tests, for keeping the suite within its time (CONTRIBUTING.md)
test: $(PYFLINK_WHEEL) $(PYFLINK) java postgresql chromium lint typecheck docs
	$(BIN)/python -m pytest -q $(PARALLEL) --durations=15 tests

unit: $(PYFLINK_WHEEL) postgresql chromium
	$(BIN)/python -m pytest -q tests/unit

integration: $(PYFLINK) java postgresql
	$(BIN)/python -m pytest -q $(PARALLEL) tests/integration

# Not part of `test`: the integration tests with every variant of their matrices (both state
# backends and every parallelism everywhere; `test` runs one of each, marked in the tests).
integration-full: $(PYFLINK) java postgresql
	$(BIN)/python -m pytest -q $(PARALLEL) -m 'not soak and not cluster' tests/integration

# Records what PyFlink's examples print (tests/integration/pyflink_examples_expected.json),
# which `test` compares lockgate's output with; again after a change of PyFlink's version or
# of tests/integration/pyflink_types_job.py (the test says so).
pyflink-examples-expected: $(PYFLINK)
	$(BIN)/python tests/integration/pyflink_examples_support.py $(PYFLINK_VENV)/bin/python

# Not part of `test` (2.5 to 5 min on this 2-core machine, by its load): a Spark standalone
# cluster (a master and two one-core workers on Spark hosts 127.0.0.1 and 127.0.0.2, from PySpark's own distribution)
# runs jobs with both state backends, and executors and workers are killed mid-epoch.
cluster: $(STAMP) java
	$(BIN)/python -m pytest -q -m cluster tests/integration/cluster

# Not part of `test`: a continuous job with failures every few minutes, checked for exactly-once
# output and flat driver memory; LOCKGATE_SOAK_MINUTES (default 30) per state backend.
soak: $(STAMP) java
	$(BIN)/python -m pytest -q -s -m soak tests/soak

lint: $(STAMP)
	$(BIN)/ruff format --check src tests examples bench tools
	$(BIN)/ruff check src tests examples bench tools

# mypy, strict on the whole package, src/lockgate (see pyproject.toml)
typecheck: $(STAMP)
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format src tests examples bench tools
	$(BIN)/ruff check --fix src tests examples bench tools

# The documentation site, built into site/ in strict mode: a warning (a broken link or anchor,
# a page missing from the nav, a docstring the API reference cannot read) fails the build, and
# so does a configuration reference that differs from what the code gives (make docs-config
# writes it again). Offline: no plugin fetches anything. `$(BIN)/mkdocs serve` shows the site
# while you edit.
docs: $(STAMP)
	$(BIN)/python tools/gen_config_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# Writes docs/reference/configuration.md from src/lockgate/common/config_options.py.
docs-config: $(STAMP)
	$(BIN)/python tools/gen_config_reference.py

clean:
	rm -rf $(VENV) out site

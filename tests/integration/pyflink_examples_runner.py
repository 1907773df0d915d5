"""Runs example scripts one after another in this process (not a test; run by
``test_pyflink_examples.py``), on PyFlink or, their imports swapped, on lockgate.

    python pyflink_examples_runner.py EXAMPLE.py...

Each runs as ``python EXAMPLE.py`` would (as ``__main__``, without arguments). One that
fails prints ``@@failed <file>: <error>`` on stdout, its traceback on stderr, and the next
one runs. Logging goes to stderr at WARNING, so the examples' own
``logging.basicConfig(stream=sys.stdout, level=logging.INFO)`` does nothing and stdout
holds only what they print.
"""

from __future__ import annotations

import logging
import runpy
import sys
import traceback


def main(paths: list[str]) -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    for path in paths:
        sys.argv = [path]
        try:
            runpy.run_path(path, run_name="__main__")
        except BaseException as exc:  # SystemExit too: the next example still runs
            print(f"@@failed {path}: {type(exc).__name__}: {exc}", flush=True)
            traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()


if __name__ == "__main__":
    main(sys.argv[1:])

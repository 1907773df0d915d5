"""Turn a failed Spark job into an error that names what failed, not a JVM stack trace."""

from __future__ import annotations

import re

from lockgate.runtime.errors import JobExecutionError

# lockgate's own errors from tasks, by class name (not module path: modules move): their
# message names what failed and where, and is shown whole
_LOCKGATE_ERROR = re.compile(
    r"lockgate\.[\w.]+\.(?:UserFunctionError|InjectedFailure|SourceError|SnapshotFormatError|"
    r"JobGraphVersionError|KafkaSinkError|CommitFailedError): ([^\n]+)"
)


def job_failure(exc: BaseException, epoch: int) -> JobExecutionError:
    return JobExecutionError(failure_text(exc, f"epoch {epoch}"))


def failure_text(exc: BaseException, what: str) -> str:
    """What made a Spark job (``what``: an epoch, a commit) fail: a lockgate error's own
    message, or the last Python error its trace names."""
    text = str(exc)
    match = _LOCKGATE_ERROR.search(text)
    if match:
        return match.group(1).strip()
    lines = [line for line in text.splitlines() if line.strip()]
    python_error = next(
        (line for line in reversed(lines) if re.match(r"^\w+(\.\w+)*(Error|Exception): ", line)),
        lines[-1] if lines else type(exc).__name__,
    )
    return f"{what} failed in Spark: {python_error.strip()}"

"""The log of a table run inside `tabled simulate`: kept out of its view.

simulate runs the daemon in its own process, so the daemon's log lines (JSON when stderr
is no terminal) went to the same screen as the results table, and a broker outage
mixed a dozen of them into it (issue 26). The view already says what happened in its
own words; the log is counted here instead, and the summary names how many lines it had
and the last of them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


class TableLog(logging.Handler):
    """Counts the records of WARNING and above, keeping the last one's text."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.last = ""

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        with contextlib.suppress(Exception):  # a record that cannot be formatted is still one
            self.last = f"{record.levelname.lower()} {record.name}: {record.getMessage()}"


@contextlib.contextmanager
def kept_apart() -> Iterator[TableLog]:
    """While inside, every log record goes to the returned TableLog, not to stderr."""
    root = logging.getLogger()
    handlers = root.handlers[:]
    log = TableLog()
    root.handlers[:] = [log]
    try:
        yield log
    finally:
        root.handlers[:] = handlers

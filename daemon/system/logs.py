"""Logging: structlog over the standard library, so library and daemon lines look alike.

JSON lines when stderr is not a terminal (journald, files, pipes); readable lines on a
terminal. The round id is bound (contextvars) while a round's effects are applied, so
every line about a round names it.

Under systemd, stderr is journald's stream and each line starts with its syslog priority
(``<4>`` for a warning, sd-daemon(3)): journald strips the prefix and files the line at
that priority, so ``journalctl -u tabled -p warning`` shows the warnings and errors and
nothing else. Without it every line was filed at the unit's default, info.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import IO, Any

import structlog

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# syslog(3) priorities, as journald reads them from a "<N>" at the start of a line.
PRIORITY = {"critical": 2, "error": 3, "warning": 4, "info": 6, "debug": 7}
NOTICE = 5  # what a line with no known level is filed as: between info and warning
ERROR = PRIORITY["error"]


def journal_stream(stream: IO[str], env: Mapping[str, str] | None = None) -> bool:
    """True if ``stream`` is journald's own: systemd sets ``$JOURNAL_STREAM`` to the
    device and inode of the stream it connects (systemd.exec(5)). Compared, not merely
    present: a child whose stderr was redirected inherits the variable."""
    env = os.environ if env is None else env
    dev, _, ino = env.get("JOURNAL_STREAM", "").partition(":")
    if not (dev.isdigit() and ino.isdigit()):
        return False
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError):  # a closed or in-memory stream
        return False
    return (st.st_dev, st.st_ino) == (int(dev), int(ino))


def prefixed(render: Any) -> Any:
    """A renderer that puts the line's priority in front of what ``render`` makes."""
    def _render(logger: Any, name: str, event_dict: Any) -> str:
        priority = PRIORITY.get(str(event_dict.get("level", "")), NOTICE)
        return f"<{priority}>{render(logger, name, event_dict)}"
    return _render


def to_stderr(text: str, priority: int = ERROR) -> None:
    """A line for the operator written before (or instead of) logging: each line of it
    carries its priority when journald reads it, as the log lines do."""
    if journal_stream(sys.stderr):
        text = "\n".join(f"<{priority}>{line}" for line in text.splitlines())
    print(text, file=sys.stderr, flush=True)


def setup(level: str = "INFO", *, json: bool | None = None) -> None:
    if json is None:
        json = not sys.stderr.isatty()
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer())
    if journal_stream(sys.stderr):
        renderer = prefixed(renderer)
    structlog.configure(
        # filter_by_level first: a line below the level costs a level check, not the chain.
        processors=[structlog.stdlib.filter_by_level, *shared,
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    set_level(level)
    for noisy in ("transitions", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def set_level(level: str) -> None:
    """The daemon's log level, now (a reload changes it without a restart)."""
    logging.getLogger().setLevel(level)

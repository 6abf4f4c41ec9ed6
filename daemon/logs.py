"""Logging: structlog over the standard library, so library and daemon lines look alike.

JSON lines when stderr is not a terminal (journald, files, pipes); readable lines on a
terminal. The round id is bound (contextvars) while a round's effects are applied, so
every line about a round names it.
"""

from __future__ import annotations

import logging
import sys

import structlog


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
    root.setLevel(level)
    for noisy in ("transitions", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)

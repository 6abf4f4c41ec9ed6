"""journald priorities (issue 29, Build 2): under systemd every line carries the syslog
priority journald files it at, so ``journalctl -p warning`` shows exactly the warnings
and errors; anywhere else the lines stay plain JSON."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import pytest
import structlog

from daemon.system import logs

LINE = re.compile(r"^<(\d)>(\{.*\})$")


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    config = structlog.get_config()
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    structlog.configure(**config)


def as_journal(monkeypatch: pytest.MonkeyPatch, stream: IO[str]) -> None:
    st = os.fstat(stream.fileno())
    monkeypatch.setenv("JOURNAL_STREAM", f"{st.st_dev}:{st.st_ino}")


def emit() -> None:
    std = logging.getLogger("tabled.test")
    std.debug("std debug")
    std.info("std info")
    std.warning("std warning")
    std.error("std error")
    try:
        raise ValueError("boom")
    except ValueError:
        std.exception("std exception")
    s = structlog.get_logger("tabled.test.s")
    s.info("s info", round_id="r-1")
    s.warning("s warning")
    s.critical("s critical")


def test_every_line_carries_its_syslog_priority_under_journald(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logging: None) -> None:
    path = tmp_path / "stderr"
    with path.open("w") as stderr:
        monkeypatch.setattr("sys.stderr", stderr)
        as_journal(monkeypatch, stderr)
        logs.setup("DEBUG", json=True)
        emit()
    lines = path.read_text().splitlines()
    seen = []
    for line in lines:  # one journal entry per line: the traceback is inside the JSON
        m = LINE.match(line)
        assert m is not None, line
        seen.append((int(m[1]), json.loads(m[2])["event"]))
    assert seen == [(7, "std debug"), (6, "std info"), (4, "std warning"), (3, "std error"),
                    (3, "std exception"), (6, "s info"), (4, "s warning"), (2, "s critical")]
    # What journalctl -p warning keeps (priority <= 4): the warnings and errors, exactly.
    assert [e for p, e in seen if p <= 4] == ["std warning", "std error", "std exception",
                                              "s warning", "s critical"]


def test_a_level_changed_at_run_time_filters_both_loggers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logging: None) -> None:
    path = tmp_path / "stderr"
    with path.open("w") as stderr:
        monkeypatch.setattr("sys.stderr", stderr)
        as_journal(monkeypatch, stderr)
        logs.setup("INFO", json=True)
        logs.set_level("WARNING")
        emit()
    events = [json.loads(LINE.match(x)[2])["event"]  # type: ignore[index]
              for x in path.read_text().splitlines()]
    assert events == ["std warning", "std error", "std exception", "s warning", "s critical"]


def test_no_prefix_when_stderr_is_not_the_journal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_logging: None) -> None:
    """A pipe (a test, a shell) gets plain JSON lines, even with $JOURNAL_STREAM inherited
    from a unit whose stream this is not."""
    other = tmp_path / "other"
    other.write_text("")
    path = tmp_path / "stderr"
    with path.open("w") as stderr, other.open() as elsewhere:
        monkeypatch.setattr("sys.stderr", stderr)
        as_journal(monkeypatch, elsewhere)
        logs.setup("INFO", json=True)
        logging.getLogger("tabled.test").warning("plain")
    assert json.loads(path.read_text())["event"] == "plain"


def test_operator_lines_before_logging_carry_a_priority_per_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "stderr"
    with path.open("w") as stderr:
        monkeypatch.setattr("sys.stderr", stderr)
        as_journal(monkeypatch, stderr)
        logs.to_stderr("tabled: config is not valid:\n  table.layout: Z")
        logs.to_stderr("tabled: waiting", logs.NOTICE)
    assert path.read_text().splitlines() == [
        "<3>tabled: config is not valid:", "<3>  table.layout: Z", "<5>tabled: waiting"]

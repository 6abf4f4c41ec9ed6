"""The command line follows the conventions a technician expects (issue 16): --version,
help and a default for every option, plain top-level help, case-insensitive log levels
whose typo is an exit-2 error, one message per log line, bash completion."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from daemon import __version__
from daemon.cli.main import _walk, parser
from daemon.drivers.device import session_ended_line


def _tabled(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "daemon", *argv], capture_output=True,
                          text=True, timeout=60, check=False)


def test_version() -> None:
    proc = _tabled("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"tabled {__version__}"


def test_top_level_help_is_plain_text_and_names_every_command() -> None:
    text = parser().format_help()
    assert "``" not in text
    for command in ("run", "simulate", "doctor", "watch", "config", "completion"):
        assert f"    {command} " in text or f"    {command}\n" in text, command


def _options() -> list[tuple[str, argparse.ArgumentParser, argparse.Action]]:
    return [(p.prog, p, a) for p in _walk(parser()) for a in p._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction | \
                                                   argparse._VersionAction)]


def test_every_option_has_help_text_and_shows_its_default() -> None:
    missing, hidden = [], []
    for prog, p, a in _options():
        if not a.help or a.help == argparse.SUPPRESS:
            missing.append(f"{prog} {a.option_strings[0]}")
        text = "".join(p.format_help().split())  # wrapped, also at hyphens
        if a.default not in (None, False) and not a.required:
            shown = f"(default: {a.default})"
            if shown.replace(" ", "") not in text and f"default{a.default}" not in text:
                hidden.append(f"{prog} {a.option_strings[0]} {shown}")
        assert "(default:None)" not in text, prog
    assert not missing, f"options without help: {missing}"
    assert not hidden, f"defaults not shown: {hidden}"


@pytest.mark.parametrize("level", ["debug", "Info", "WARNING", "error"])
def test_log_levels_in_any_case(level: str) -> None:
    args = parser().parse_args(["run", "--log-level", level])
    assert args.log_level == level.upper()


@pytest.mark.parametrize("command", [["run"], ["doctor"]])
def test_a_bad_log_level_is_an_exit_2_error_listing_the_choices(command: list[str]) -> None:
    proc = _tabled(*command, "--log-level", "verbose")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "invalid choice: 'VERBOSE'" in proc.stderr
    assert "'DEBUG', 'INFO', 'WARNING', 'ERROR', 'CRITICAL'" in proc.stderr


def test_a_device_log_line_names_the_device_once_and_is_one_line() -> None:
    line = session_ended_line("shoe", "shoe: cannot open serial:///dev/tabled/shoe: "
                                      "[Errno 2] No such file or directory", [])
    assert line == ("shoe: cannot open serial:///dev/tabled/shoe: [Errno 2] No such file "
                    "or directory")
    frames = [f"rx 1.{i:03d} 7e01" for i in range(30)]
    line = session_ended_line("shuffler", "silent for 3.0 s", frames)
    assert "\n" not in line and line.startswith("shuffler: silent for 3.0 s; last 20 frames: ")
    assert line.endswith("rx 1.029 7e01") and "rx 1.009 " not in line


def _complete(script: Path, *words: str) -> list[str]:
    line = " ".join(f'"{w}"' for w in words)
    proc = subprocess.run(["bash", "-c", f'source {script}; COMP_WORDS=({line}); '
                           f'COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); _tabled; '
                           'printf "%s\\n" "${COMPREPLY[@]}"'],
                          capture_output=True, text=True, timeout=30, check=True)
    return proc.stdout.split()


def test_bash_completion_from_the_parser(tmp_path: Path) -> None:
    proc = _tabled("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "tabled.bash"
    script.write_text(proc.stdout, encoding="utf-8")
    assert _complete(script, "tabled", "co") == ["command", "completion", "config"]
    assert _complete(script, "tabled", "do") == ["doctor"]
    assert _complete(script, "tabled", "config", "") == ["-h", "--help", "check"]
    assert "debug" in _complete(script, "tabled", "run", "--log-level", "")
    assert _complete(script, "tabled", "simulate", "--ga") == ["--game"]
    assert "tai-sai-open-cover" in _complete(script, "tabled", "simulate", "--game", "")
    assert _complete(script, "tabled", "rules", "par-sheet", "--j") == ["--json"]


def test_every_command_has_its_description_on_its_own_line_of_the_top_level_help() -> None:
    """Review of issue 16: `protocols` (and `completion`) showed no description beside
    them; argparse had put it on the next line."""
    text = _tabled("--help").stdout
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name in sub.choices:
        assert any(line.startswith(f"    {name} ") and line[4 + len(name):].strip()
                   for line in text.splitlines()), (name, text)

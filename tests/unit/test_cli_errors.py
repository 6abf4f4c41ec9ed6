"""Every subcommand, given a bad path, port or value, says what is wrong in one line and
exits 2: never a traceback, never a message about something else (issue 26). A new
subcommand must be added to BAD, or test_every_subcommand_is_walked fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.cli.main import _walk, parser
from daemon.errors import FAMILIES, InputError, ToolError
from tests.keys import TABLE_KEY_FILE

GONE = "/nonexistent/dir"
KEY = str(TABLE_KEY_FILE)
PUB = "IrjRv2dQcJ7XcRGOJtkPyLryA6BNX+YteHMPynsAbHc="  # key text, not a file
SIGN = ["command", "sign", "--key", KEY, "--table", "bac-07"]

# subcommand -> (arguments, what the one line must say)
BAD: dict[str, list[tuple[list[str], str]]] = {
    "rules par-sheet": [(["--game", "poker", "--layout", "A"], "unknown game 'poker'"),
                        (["--game", "tiger-baccarat", "--layout", "A", "--decks", "99"],
                         "4 to 10 decks")],
    "rules settle": [(["--game", "tiger-buffalo", "--layout", "P", "XX"],
                      "card rank 'X'")],
    "rules docs": [(["--output", f"{GONE}/games.md"], f"{GONE}/games.md")],
    "protocols docs": [(["--directory", GONE], GONE)],
    "run": [(["--config", f"{GONE}/table.toml"], f"{GONE}/table.toml")],
    "simulate": [(["--speed", "0"], "--speed 0"),
                 (["--broker", "mqtt://127.0.0.1:99999"], "expected mqtt://host:port"),
                 (["--table", "a/b"], "--table 'a/b': letters, digits")],
    "watch": [(["--broker", "mqtt://127.0.0.1:99999", "--key", PUB], "mqtt://host:port"),
              (["--broker", "mqtt://127.0.0.1:1883", "--key", "/nonexistent.pub"],
               "--key /nonexistent.pub: no such file"),
              (["--broker", "mqtt://127.0.0.1:1883", "--key", PUB, "--password-file",
                f"{GONE}/pw"], f"{GONE}/pw"),
              (["--broker", "mqtt://127.0.0.1:1883", "--key", PUB, "--table", "a/b"],
               "--table 'a/b'")],
    "doctor": [(["--config", f"{GONE}/table.toml"], f"{GONE}/table.toml")],
    "keys generate": [(["--out", f"{GONE}/x"], f"{GONE}/x")],
    "verify": [(["--key", "/nonexistent.pub", "-"], "/nonexistent.pub"),
               (["--key", KEY, "-"], "not a public key")],
    "command sign": [
        (["--key", f"{GONE}/sup.pem", "--table", "bac-07", "open_betting"], f"{GONE}/sup.pem"),
        (["--key", KEY, "--table", "a/b", "open_betting"], "--table 'a/b'"),
        ([*SIGN[2:], "--id", "x" * 80, "open_betting"], "'id' must be a string of 1-64"),
        ([*SIGN[2:], "--round", "r1", "launch"], "unknown command 'launch'"),
        ([*SIGN[2:], "--round", "r1", "void_round"], "void_round needs 'reason'"),
        ([*SIGN[2:], "--round", "r1", "--hold", "r1:1", "--swap", "abc", "confirm_order"],
         "confirm_order.swap must be two draw numbers"),
        ([*SIGN[2:], "close_betting"], "give --round")],
    "hil run": [([f"{GONE}/scenario.json"], f"{GONE}/scenario.json"),
                # Read by the command line's own parser (a port that is no number was a
                # traceback from the runner's parse by hand).
                ([f"{GONE}/scenario.json", "--broker", "mqtt://127.0.0.1:port"],
                 "--broker mqtt://127.0.0.1:port: expected mqtt://host:port"),
                ([f"{GONE}/scenario.json", "--broker", "mqtts://127.0.0.1:8883"],
                 "hil run speaks plain MQTT")],
    "completion": [(["zsh"], "zsh")],
    "display": [(["--broker", "mqtt://127.0.0.1:1883", "--key", PUB, "--listen",
                  "127.0.0.1:99999"], "the port must be 1 to 65535"),
                (["--broker", "mqtt://127.0.0.1:1883", "--key", "/nonexistent.pub"],
                 "/nonexistent.pub")],
    "config check": [(["--config", f"{GONE}/table.toml"], f"{GONE}/table.toml")],
    "principals list": [(["--config", f"{GONE}/table.toml"], f"{GONE}/table.toml")],
    "principals add": [(["--config", f"{GONE}/table.toml", "--enrolment", f"{GONE}/e.json"],
                        GONE)],
    "principals revoke": [(["--config", f"{GONE}/table.toml", "pit"], f"{GONE}/table.toml")],
}


def test_every_subcommand_is_walked() -> None:
    leaves = {p.prog.removeprefix("tabled ") for p in _walk(parser())
              if not any(a.dest.endswith("command") and a.required for a in p._actions)
              and p.prog != "tabled"}
    assert leaves == set(BAD), leaves ^ set(BAD)


CASES = [(name, args, says) for name, cases in BAD.items() for args, says in cases]


@pytest.mark.parametrize(("name", "args", "says"), CASES,
                         # Ids never name a temporary path: every xdist worker must
                         # collect the same ids.
                         ids=[f"{n} {' '.join(a).replace(str(TABLE_KEY_FILE.parent), 'KEYS')[:40]}"
                              f" #{i}" for i, (n, a, _) in enumerate(CASES)])
def test_a_bad_argument_is_one_line_and_exit_2(name: str, args: list[str], says: str,
                                               tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "daemon", *name.split(), *args],
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    said = [line for line in (proc.stderr + proc.stdout).splitlines()
            if line.startswith(("tabled", "FAIL"))]
    assert len(said) == 1, proc.stderr + proc.stdout
    assert says in said[0], said[0]


def test_a_missing_program_is_one_line_and_the_tool_familys_exit_status(
        tmp_path: Path) -> None:
    """hil run on a virtual rig with no QEMU on PATH: it printed QemuMissingError's
    traceback and exited 1; every TabledError is now caught at the command line's top."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to("/bin/bash")  # the firmware build's shell, not QEMU
    root = Path(__file__).resolve().parents[2]
    scenario = next((root / "hil" / "scenarios").glob("tiger-buffalo-*.json"))
    proc = subprocess.run([sys.executable, "-m", "daemon", "hil", "run", str(scenario),
                           "--rig", str(root / "hil" / "rigs" / "qemu-shoe.json")],
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=tmp_path, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PATH": str(bin_dir)})
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == ToolError.exit_status == 5, (proc.returncode, proc.stderr)
    assert proc.stderr.splitlines() == [
        "tabled: missing: qemu-system-arm, gcc-arm-none-eabi (apt-get install "
        "qemu-system-arm gcc-arm-none-eabi libnewlib-arm-none-eabi)"], proc.stderr


def test_each_family_has_its_own_exit_status() -> None:
    statuses = [f.exit_status for f in FAMILIES]
    assert len(set(statuses)) == len(statuses)
    assert InputError.exit_status == 2  # the one systemd does not restart (operations.md)

"""The tabled command line: par sheets, settlement, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.cli import main


def test_par_sheet_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "par-sheet", "--game", "tai-sai-open-cover", "--layout", "E"]) == 0
    out = capsys.readouterr().out
    assert "Exact over all 216 ordered outcomes of three dice." in out
    assert "house edge 2.7778%" in out


def test_par_sheet_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "par-sheet", "--game", "tiger-baccarat", "--layout", "A",
                 "--decks", "8", "--json"]) == 0
    sheet = json.loads(capsys.readouterr().out)
    assert sheet["total"] == 4_998_398_275_503_360
    assert {b["bet"] for b in sheet["bets"]} == {"player", "banker", "tie", "tiger_pair",
                                                 "tiger", "small_tiger", "big_tiger",
                                                 "tiger_tie"}


def test_settle_cards(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "settle", "--game", "tiger-buffalo", "--layout", "P",
                 "2S", "3H", "3S", "3D", "KC"]) == 0
    results = {r["bet"]: r for r in json.loads(capsys.readouterr().out)}
    assert results["tiger"]["pays"] == "12:1" and results["banker"]["pays"] == "1:2"


@pytest.mark.parametrize(("argv", "message"), [
    (["rules", "par-sheet", "--game", "poker", "--layout", "A"], "unknown game 'poker'"),
    (["rules", "par-sheet", "--game", "tiger-buffalo", "--layout", "Z"],
     "has no layout 'Z': clause 2.1.1"),
    (["rules", "par-sheet", "--game", "tiger-buffalo", "--layout", "A", "--decks", "11"],
     "4 to 10 decks (clause 2.2.1), not 11"),
    (["rules", "par-sheet", "--game", "tai-sai-open-cover", "--layout", "A", "--decks", "8"],
     "--decks does not apply"),
    (["rules", "settle", "--game", "tiger-buffalo", "--layout", "A", "9H", "1S"],
     "card rank '1'"),
    (["rules", "settle", "--game", "tiger-buffalo", "--layout", "A", "9S", "2H", "KH", "3D", "4C"],
     "not required by the Table of Play"),
    (["rules", "settle", "--game", "tai-sai-open-cover", "--layout", "A", "1", "2", "9"],
     "a die shows 1 to 6"),
])
def test_errors_are_clear_and_exit_2(argv: list[str], message: str,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_console_script_runs_as_a_process() -> None:
    proc = subprocess.run([sys.executable, "-m", "daemon", "rules", "par-sheet", "--game",
                           "tai-sai-open-cover", "--layout", "C", "--json"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["layout"] == "C"


def test_config_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "table.toml"
    bad.write_text('[table]\nid = "t1"\ngame = "tiger-buffalo"\nlayout = "Q"\ndecks = 11\n',
                   encoding="utf-8")
    assert main(["config", "check", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "table.decks: 11 is outside 4-10" in err
    assert "devices.shoe: missing" in err
    root = Path(__file__).resolve().parents[2]
    assert main(["config", "check", "--config", str(root / "systemd/table.example.toml")]) == 0

"""The tabled command line: par sheets, settlement, and clear errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.cli.main import main
from daemon.security.authority import sign_command
from daemon.security.signing import Signer, load_private_key, public_key_text
from tests.keys import TABLE_KEY, TABLE_KEY_FILE


def verify(tmp_path: Path, capture: list[str], *extra: str) -> int:
    """``tabled verify`` of these lines (as ``mosquitto_sub -v`` prints them), trusting the
    table's key; ``extra``: more options (--command-key FILE)."""
    (tmp_path / "table.pub").write_text(public_key_text(TABLE_KEY.public_key()))
    path = tmp_path / "capture.txt"
    path.write_text("".join(line + "\n" for line in capture), encoding="utf-8")
    return main(["verify", "--key", str(tmp_path / "table.pub"), *extra, str(path)])

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
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "signing-key").write_bytes(TABLE_KEY_FILE.read_bytes())
    example = root / "systemd/table.example.toml"
    assert main(["config", "check", "--credentials", str(creds), "--config",
                 str(example), "--config-only"]) == 2  # trusts no principal as shipped (issue 12)
    assert "tabled keys generate --out pit-supervisor-1" in capsys.readouterr().err
    edited = tmp_path / "edited.toml"
    real = public_key_text(Ed25519PrivateKey.generate().public_key())
    edited.write_text(re.sub(r'"REPLACE-ME[^"]*"', f'"{real}"',
                             example.read_text(encoding="utf-8")), encoding="utf-8")
    assert main(["config", "check", "--credentials", str(creds), "--config",
                 str(edited), "--config-only"]) == 0
    assert "1 command principal(s): pit-supervisor-1" in capsys.readouterr().out


def _table_toml(tmp_path: Path, devices: str, journal: Path, broker: str = "") -> Path:
    path = tmp_path / "table.toml"
    path.write_text(f'[table]\nid = "ts-1"\ngame = "tai-sai-open-cover"\nlayout = "E"\n'
                    f'[devices]\n{devices}\nserials = {{ tumbler = "TM0001" }}\n{broker}'
                    f'[journal]\npath = "{journal}"\n'
                    f'[signing]\nkey_file = "{TABLE_KEY_FILE}"\n', encoding="utf-8")
    return path


def test_config_check_looks_at_the_machine(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A missing device node and a journal folder that does not exist are errors (exit 2)
    even though the file itself is valid; --config-only checks the file alone."""
    config = _table_toml(tmp_path, 'tumbler = "serial:///dev/tabled/tumbler"',
                         tmp_path / "nowhere" / "journal.db")
    assert main(["config", "check", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "FAIL  device tumbler node: /dev/tabled/tumbler does not exist" in err
    assert f"FAIL  journal: {tmp_path / 'nowhere'} does not exist" in err
    assert "this machine is not ready for it" in err
    assert main(["config", "check", "--config", str(config), "--config-only"]) == 0
    # On this machine: a real serial device (a pty) and a journal folder that exists.
    master, slave = os.openpty()
    try:
        config = _table_toml(tmp_path, f'tumbler = "serial://{os.ttyname(slave)}"',
                             tmp_path / "journal.db")
        assert main(["config", "check", "--config", str(config)]) == 0
    finally:
        os.close(master)
        os.close(slave)
    out = capsys.readouterr().out
    assert "ok; on this machine: libusb, device nodes, journal folder ok" in out
    # broker.url left out: the default is said, not silently taken.
    assert "broker mqtt://127.0.0.1:1883 (the default: broker.url is not set" in out


def test_config_check_credentials_help_names_the_credstore() -> None:
    """The folder install.sh writes the credentials to."""
    help_text = subprocess.run([sys.executable, "-m", "daemon", "config", "check", "--help"],
                               capture_output=True, text=True, check=True).stdout
    assert "/etc/credstore/tabled" in " ".join(help_text.split())


def test_keys_sign_and_verify_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    assert main(["keys", "generate", "--out", str(tmp_path / "sup")]) == 0
    assert (tmp_path / "sup.pem").stat().st_mode & 0o777 == 0o600
    assert main(["keys", "generate", "--out", str(tmp_path / "sup")]) == 2  # never overwrite
    capsys.readouterr()
    assert main(["command", "sign", "--key", str(tmp_path / "sup.pem"), "--table", "bac-07",
                 "--id", "c1", "--reason", "dropped card", "--irregularity",
                 "incorrect_card_count", "--round", "bac-07-r1", "void_round"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["id"] == "c1" and body["reason"] == "dropped card" and body["sig"]["kid"]
    assert body["irregularity"] == "incorrect_card_count" and body["round_id"] == "bac-07-r1"
    assert main(["command", "sign", "--key", str(tmp_path / "sup.pem"), "--table", "bac-07",
                 "--swap", "5,6", "--hold", "bac-07-r1:1", "--round", "bac-07-r1",
                 "confirm_order"]) == 0
    assert json.loads(capsys.readouterr().out)["swap"] == "5,6"
    # A round-scoped command is never signed without its round (issue 12, item 1).
    assert main(["command", "sign", "--key", str(tmp_path / "sup.pem"), "--table", "bac-07",
                 "close_betting"]) == 2
    assert "give --round" in capsys.readouterr().err
    assert main(["command", "sign", "--key", str(tmp_path / "sup.pem"), "--table", "bac-07",
                 "open_betting"]) == 0
    capsys.readouterr()
    # A consumer checks a stream as mosquitto_sub -v prints it: one good, two bad lines.
    signer = Signer(load_private_key(TABLE_KEY_FILE))
    good = {"type": "result", "seq": 7, "winner": "banker", "replayed": False,
            "table": "bac-07"}
    tampered = {**signer.sign(good), "winner": "player"}
    assert verify(tmp_path, [f"tables/bac-07/results {signer.seal(good)}",
                             f"tables/bac-07/results {json.dumps(tampered)}",
                             json.dumps(good)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"ok line 1 (tables/bac-07/results): result seq 7, key {signer.kid}"
    assert out[1].startswith(f"REJECTED line 2 (tables/bac-07/results): bad signature for key "
                             f"{signer.kid}")
    assert out[2] == "REJECTED line 3: unsigned: the payload has no 'sig' object"
    assert verify(tmp_path, [signer.seal(good)]) == 0


def test_the_example_configs_own_check_command_names_credentials(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Review of issue 16: the command in the example's header failed on its
    credential:signing-key without saying that --credentials is the way outside systemd."""
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    example = Path(__file__).resolve().parents[2] / "systemd/table.example.toml"
    header = example.read_text(encoding="utf-8").split("\n[", 1)[0]
    assert "--credentials" in header
    assert main(["config", "check", "--config", str(example), "--config-only"]) == 2
    err = capsys.readouterr().err
    assert "signing.key_file: 'credential:signing-key' needs $CREDENTIALS_DIRECTORY" in err
    assert "outside systemd, give --credentials DIR (the folder holding signing-key)" in err


def test_doctor_gives_the_config_problem_itself_as_the_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review: doctor's fix for a config failure was 'tabled config check --config ...',
    which only prints the same failure again."""
    bad = tmp_path / "table.toml"
    bad.write_text('[table]\nid = "t1"\ngame = "tiger-buffalo"\nlayout = "Q"\ndecks = 11\n',
                   encoding="utf-8")
    assert main(["doctor", "--config", str(bad)]) == 2
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("FAIL  config:")]
    assert f"FAIL  config: {bad}: table.decks: 11 is outside 4-10" in "\n".join(lines)
    assert lines and not any("tabled config check" in line for line in lines), lines
    assert all("fix" in line for line in lines), lines


def test_verify_tells_table_payloads_from_commands_and_replay_requests(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review: a capture of tables/sim-1/# (what simulate says to subscribe to) failed
    with 'N rejected': the dealer's commands (signed by a principal) and consumers'
    replay requests (unsigned, as documented) are not the table's payloads."""
    table = Signer(load_private_key(TABLE_KEY_FILE))
    dealer = Signer(Ed25519PrivateKey.generate())
    result = table.seal({"type": "result", "seq": 1, "table": "sim-1"})
    command = dealer.seal({"id": "c1", "table": "sim-1", "command": "open_betting"})
    request = json.dumps({"id": "r1", "from_msg_seq": 1, "reply_to": "me"})
    capture = [f"tables/sim-1/results {result}", f"tables/sim-1/cmd/open_betting {command}",
               f"tables/sim-1/replay/request {request}"]
    assert verify(tmp_path, capture) == 0
    out, err = capsys.readouterr()
    assert "REJECTED" not in out
    assert "1 verified, 0 rejected; 2 skipped (1 command, 1 replay request: not the " \
        "table's payloads)" in err
    # A table payload that fails still fails the run.
    capture.append(f"tables/sim-1/results {json.dumps({'type': 'result', 'seq': 2})}")
    assert verify(tmp_path, capture) == 1


def test_verify_checks_commands_against_the_principals_keys(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An auditor's capture holds the Pit's commands beside the table's payloads: with
    --command-key each is checked against the principals' keys, bound to its table and
    name by its topic, instead of being skipped."""
    pit = Ed25519PrivateKey.generate()
    (tmp_path / "pit.pub").write_text(public_key_text(pit.public_key()))
    pit_key = ("--command-key", str(tmp_path / "pit.pub"))
    table = Signer(load_private_key(TABLE_KEY_FILE))
    good = sign_command(pit, "sim-1", "open_betting", "c1", 1.8e9)
    other_table = sign_command(pit, "sim-2", "open_betting", "c2", 1.8e9)
    renamed = sign_command(pit, "sim-1", "open_betting", "c3", 1.8e9)
    stranger = sign_command(Ed25519PrivateKey.generate(), "sim-1", "open_betting", "c4",
                            1.8e9)
    altered = {**sign_command(pit, "sim-1", "void_round", "c5", 1.8e9, reason="x"),
               "reason": "y"}
    first = table.seal({'type': 'result', 'seq': 1, 'table': 'sim-1'})
    capture = [f"tables/sim-1/results {first}",
               f"tables/sim-1/cmd/open_betting {json.dumps(good)}",
               f"tables/sim-1/cmd/open_betting {json.dumps(other_table)}",  # elsewhere
               f"tables/sim-1/cmd/close_betting {json.dumps(renamed)}",  # signed as another
               f"tables/sim-1/cmd/open_betting {json.dumps(stranger)}",
               f"tables/sim-1/cmd/void_round {json.dumps(altered)}",
               f"tables/sim-1/replay/request {json.dumps({'id': 'r1', 'reply_to': 'me'})}"]
    assert verify(tmp_path, capture, *pit_key) == 1
    out, err = capsys.readouterr()
    assert "ok line 2 (tables/sim-1/cmd/open_betting): command open_betting id 'c1' " \
        "signed by pit" in out
    assert [n for n in range(1, 8) if f"REJECTED line {n} " in out] == [3, 4, 5, 6]
    assert "2 verified, 4 rejected; 1 skipped (1 replay request" in err
    assert verify(tmp_path, capture[:2], *pit_key) == 0
    # A table may be called "cmd": its own topics are not commands (review).
    to_cmd = sign_command(pit, "cmd", "open_betting", "c6", 1.8e9)
    mine = table.seal({'type': 'result', 'seq': 1, 'table': 'cmd'})
    assert verify(tmp_path, [f"tables/cmd/results {mine}",
                             f"tables/cmd/cmd/open_betting {json.dumps(to_cmd)}"],
                  *pit_key) == 0
    out, _ = capsys.readouterr()
    assert "ok line 1 (tables/cmd/results): result seq 1" in out
    assert "command open_betting id 'c6' signed by pit" in out


def test_verify_into_a_closed_pipe_prints_no_traceback(tmp_path: Path) -> None:
    signer = Signer(load_private_key(TABLE_KEY_FILE))
    line = f"tables/t/results {signer.seal({'type': 'result', 'seq': 1, 'table': 't'})}\n"
    capture = tmp_path / "capture.txt"
    capture.write_text(line * 20_000, encoding="utf-8")
    (tmp_path / "table.pub").write_text(public_key_text(TABLE_KEY.public_key()))
    proc = subprocess.Popen([sys.executable, "-m", "daemon", "verify", "--key",
                             str(tmp_path / "table.pub"), str(capture)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"ok line 1")
    proc.stdout.close()  # as `| head -1` does
    err = proc.stderr.read().decode()
    proc.wait(60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err

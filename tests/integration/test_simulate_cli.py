"""`tabled simulate` as a tool, through its process (issue 16): one-line exit-2 errors,
a terminal view that fits 100 columns with a header, a live line and a summary, nothing
left behind, two runs on one broker, and a broker outage survived."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hil.broker import Mosquitto, free_port
from tests.integration.simulate_run import TABLED, simulate_env, through_a_broker_outage
from tests.terminal import Terminal, every_line_drawn, screen_lines


@pytest.mark.parametrize(("args", "message"), [
    (["--broker", "mqtt://127.0.0.1:{free}"], "cannot connect: Connection refused"),
    (["--broker", "mqtts://127.0.0.1:8883"], "simulate speaks plain MQTT"),
    (["--broker", "127.0.0.1:1883x"], "expected mqtt://host:port"),
    (["--broker", "mqtt://127.0.0.1:99999"], "expected mqtt://host:port"),
    (["--table", "a/b"], "--table 'a/b': letters, digits"),
    (["--rounds", "0"], "--rounds 0: play at least one round"),
    (["--decks", "3"], "4 to 10 decks"),
    (["--game", "tai-sai-open-cover", "--decks", "8"], "played with dice"),
    (["--game", "tai-sai-open-cover", "--layout", "B"], "has no layout 'B'"),
    (["--rounds", "x"], "invalid int value: 'x'"),
])
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    args = [a.replace("{free}", str(free_port())) for a in args]
    proc = subprocess.run([*TABLED, "simulate", *args], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    assert len([line for line in proc.stderr.splitlines() if line.startswith("tabled")]) == 1


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A TMPDIR with a short path, as /tmp is: paths are printed whole, on one line."""
    path = Path(tempfile.mkdtemp(prefix="t16-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_in_a_terminal_tai_sai_without_a_layout(short_tmp: Path) -> None:
    """Header, how to watch, the key, a live line while a round is under way, results
    within 100 columns, a summary that explains the outbox; the temporary folder (with the
    table's private key) is gone afterwards."""
    term = Terminal([*TABLED, "simulate", "--game", "tai-sai-open-cover", "--rounds", "4",
                     "--speed", "20"], env=simulate_env(short_tmp))
    assert term.finish(180) == 0, term.text
    screen = screen_lines(term.text)
    assert any(line.startswith("tabled simulate: table sim-1, tai-sai-open-cover layout E")
               for line in screen), term.text
    assert any("the table signs with key" in line for line in screen)
    assert any(line.startswith("watch it: /") and " watch --broker mqtt://127.0.0.1:" in line
               for line in screen), screen
    assert any("mosquitto_sub -h 127.0.0.1" in line for line in screen)
    assert any(line.startswith("seq   round     dice") for line in screen)
    assert sum(line.startswith("#") for line in screen) == 4
    assert "4 rounds published (4 valid, 0 void)" in term.text
    assert "outbox pending: 0: the broker acknowledged everything" in term.text
    drawn = every_line_drawn(term.text)
    assert any("sim-1 round" in line and ("tumbl" in line or "no more bets" in line
                                          or "dice" in line) for line in drawn), drawn
    too_wide = [line for line in drawn if len(line) > 100]
    assert not too_wide, too_wide
    assert list(short_tmp.iterdir()) == []  # keys, journal, pty links, broker files: gone


def test_two_runs_on_one_broker_with_their_own_tables(tmp_path: Path) -> None:
    broker = Mosquitto(tmp_path)
    broker.start()
    try:
        runs = [subprocess.Popen([*TABLED, "simulate", "--rounds", "5", "--speed", "50",
                                  "--table", table, "--broker",
                                  f"mqtt://127.0.0.1:{broker.port}"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=simulate_env(tmp_path))
                for table in ("bac-1", "bac-2")]
        for run in runs:
            out, err = run.communicate(timeout=180)
            assert run.returncode == 0, out + err
            assert "5 rounds published (5 valid, 0 void)" in out
            assert "Traceback" not in err
    finally:
        broker.cleanup()


@pytest.mark.parametrize("game", [[], ["--game", "tai-sai-open-cover", "--layout", "E"]],
                         ids=["cards", "dice"])
def test_a_broker_outage_is_survived(tmp_path: Path, game: list[str]) -> None:
    """The round under way when the broker went away is finished from where the table is
    (SimDealer.resume_round: a card game's next card, or the tumbler's button)."""
    returncode, out, err = through_a_broker_outage(
        tmp_path, [*game, "--rounds", "8", "--speed", "20"], merged=False)
    assert returncode == 0, out + err
    assert "Traceback" not in err, err
    assert "never retrieved" not in out + err, out + err  # issue 26 (test_mqtt_client)
    assert "broker connection lost" in out and "broker back after" in out
    assert "8 rounds published (8 valid, 0 void)" in out, out
    assert "1 broker outage(s)" in out
    seqs = [line.split()[0] for line in out.splitlines() if line.startswith("#")]
    assert seqs == [f"#{n}" for n in range(1, 9)], out  # each once, in order


def test_ctrl_c_stops_it_cleanly(short_tmp: Path) -> None:
    """Ctrl-C at the terminal: one line saying so, no traceback, nothing left behind (the
    private broker, in its own session, is stopped by simulate, not by the signal)."""
    term = Terminal([*TABLED, "simulate", "--rounds", "50", "--speed", "5"],
                    env=simulate_env(short_tmp))
    term.wait_for("#2 ", 120)
    assert term.stop(signal.SIGINT) == 130
    assert "interrupted after " in term.text
    assert "Traceback" not in term.text and "error" not in term.text.lower()
    assert list(short_tmp.iterdir()) == []


def _processes_under(path: Path) -> list[str]:
    """Processes whose command line names something under ``path`` (the private
    Mosquitto's config lives in simulate's folder)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if proc.name.isdigit() and str(path) in argv:
            found.append(argv.replace("\0", " "))
    return found


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_clean_up_as_ctrl_c_does(short_tmp: Path, sig: int) -> None:
    """Issue 26: a CI runner, `timeout`, a closed terminal. Before, the folder with the
    table's private key and journal stayed, and so did the private Mosquitto."""
    term = Terminal([*TABLED, "simulate", "--rounds", "50", "--speed", "5"],
                    env=simulate_env(short_tmp))
    term.wait_for("#2 ", 120)
    assert term.stop(sig) == 128 + sig, term.text
    assert "interrupted after " in term.text
    assert "Traceback" not in term.text
    assert list(short_tmp.iterdir()) == []
    assert _processes_under(short_tmp) == []


def test_sigterm_with_a_broker_leaves_the_table_offline_not_its_will(
        tmp_path: Path, short_tmp: Path) -> None:
    """With --broker the retained status is the clean stop's "offline" (with a time),
    not the will the broker sends for a connection that was dropped (time null)."""
    import asyncio  # noqa: PLC0415

    from tests.integration.retained import retained  # noqa: PLC0415

    broker = Mosquitto(tmp_path)
    broker.start()
    try:
        term = Terminal([*TABLED, "simulate", "--rounds", "50", "--speed", "5", "--broker",
                         f"mqtt://127.0.0.1:{broker.port}"], env=simulate_env(short_tmp))
        term.wait_for("#2 ", 120)
        assert term.stop(signal.SIGTERM) == 128 + signal.SIGTERM, term.text
        left = asyncio.run(retained(broker.port, "tables/sim-1/#"))
    finally:
        broker.cleanup()
    status = left["tables/sim-1/status"]
    assert status["state"] == "offline" and status["at"] is not None, status
    assert {left[t]["state"] for t in left if "/devices/" in t} == {"offline"}
    assert list(short_tmp.iterdir()) == []


def test_what_it_prints_works_when_pasted(tmp_path: Path) -> None:
    """Issue 26: it printed "tabled watch ..." (not on PATH after set-up: command not
    found) with a key path under the folder removed at the end. Pasted into a shell in
    another folder, without the venv on PATH, after the run, the watch must run."""
    broker = Mosquitto(tmp_path)
    broker.start()
    try:
        run = subprocess.run([*TABLED, "simulate", "--rounds", "2", "--speed", "50",
                              "--broker", f"mqtt://127.0.0.1:{broker.port}"],
                             capture_output=True, text=True, timeout=180, check=False,
                             env=simulate_env(tmp_path))
        assert run.returncode == 0, run.stdout + run.stderr
        lines = run.stdout.splitlines()
        first = next(i for i, line in enumerate(lines) if line.startswith("watch it: "))
        command = lines[first].removeprefix("watch it: ") + "\n" + lines[first + 1]
        path = ":".join(p for p in os.environ["PATH"].split(":") if ".venv" not in p)
        pasted = subprocess.run(["bash", "-c", f"timeout 5 {command}"], capture_output=True,
                                text=True, timeout=60, check=False, cwd=tmp_path,
                                env={**os.environ, "PATH": path}, stdin=subprocess.DEVNULL)
    finally:
        broker.cleanup()
    assert pasted.returncode == 124, (command, pasted.stdout, pasted.stderr)  # still watching
    assert "not found" not in pasted.stderr and "tabled:" not in pasted.stderr, pasted.stderr

"""Every shipped scenario passes against the daemon, run as its own process; the runner
reports mismatches and bad scenario files clearly; rig tests skip without a rig."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.games import GAMES
from hil.ports import PtyPort
from hil.runner import check, run_scenario
from hil.scenario import ScenarioError, load_rig, load_scenario, parse_scenario
from hil.tumbler import Throw, TumblerSim

SCENARIOS = sorted((Path(__file__).resolve().parents[2] / "hil" / "scenarios").glob("*.json"))


# Clauses the rule data marks controller-detected that no scenario shows yet, and why.
# This list may only shrink: a new gap, or a gap closed without updating it, fails.
NO_SCENARIO_YET: dict[str, dict[str, str]] = {
    "tiger-buffalo": {},
    "tiger-buffalo-insurance-plus": {},
    "tiger-baccarat": {},
    "tai-sai-open-cover": {
        "5.4.1": "the dice and the result commit together: no restart can fall between",
    },
}


def test_controller_irregularity_clauses_with_scenarios() -> None:
    covered: dict[str, set[str]] = {}
    for path in SCENARIOS:
        s = load_scenario(path)
        covered.setdefault(s.game, set()).update(s.clauses)
    for game in GAMES.values():
        needed = {i.clause for i in game.irregularities if i.detected_by == "controller"}
        missing = needed - covered.get(game.id, set())
        print(f"{game.id}: {len(needed) - len(missing)}/{len(needed)} controller clauses "
              f"have a scenario")
        assert missing == set(NO_SCENARIO_YET[game.id]), (
            f"{game.id}: update NO_SCENARIO_YET; without a scenario now: {sorted(missing)}")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
async def test_scenario(path: Path, tmp_path: Path) -> None:
    s = load_scenario(path)
    report = await run_scenario(s, workdir=tmp_path, speed=50)
    print(report.render())
    assert report.ok, report.render()


def test_hil_run_command_exits_non_zero_on_a_mismatch(tmp_path: Path) -> None:
    scenario = json.loads(SCENARIOS[0].read_text(encoding="utf-8"))
    good = tmp_path / "good.json"
    good.write_text(json.dumps(scenario), encoding="utf-8")
    wrong = dict(scenario)
    wrong["rounds"] = [dict(scenario["rounds"][0], expect={"status": "valid", "total": 99})]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(wrong), encoding="utf-8")
    ok = subprocess.run([sys.executable, "-m", "daemon", "hil", "run", str(good)],
                        capture_output=True, text=True, timeout=300, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "PASS" in ok.stdout
    failed = subprocess.run([sys.executable, "-m", "daemon", "hil", "run", str(bad)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert failed.returncode == 1
    assert "expected total 99, got" in failed.stdout and "FAIL" in failed.stdout


def test_check_names_each_mismatch() -> None:
    result = {"status": "void", "void_reason": {"clause": "5.5.1", "code": "card_not_of_set"},
              "bets": [{"bet": "banker", "result": "push"}], "cards": []}
    assert check({"status": "valid", "void_clause": "5.5.1", "alerts": ["face_up_card"]},
                 result, ["card_not_of_set"]) == [
        "expected status 'valid', got 'void'",
        "expected alert face_up_card, saw ['card_not_of_set']"]
    assert check({"status": "valid"}, None, []) == [
        "expected a valid result, but the round was refused"]


@pytest.mark.parametrize(("data", "message"), [
    ({"table": {"game": "poker"}, "rounds": []}, "table.game: one of"),
    ({"table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
      "rounds": [{"cards": ["ZZ"]}]}, "rounds[0].cards: 'ZZ' is not a card code"),
    ({"table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
      "rounds": [{"cards": ["9H"], "faults": [{"fault": "face_up"}]}]},
     "rounds[0].faults[0]: face_up needs 'draw'"),
    ({"table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
      "rounds": [{"cards": ["9H"], "faults": [{"fault": "melt"}]}]},
     "rounds[0].faults[0]: a fault is an object"),
    ({"table": {"game": "tai-sai-open-cover", "layout": "E"},
      "rounds": [{"dice": [7, 1, 1]}]}, "rounds[0].dice: three dice 1-6"),
    ({"table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
      "rounds": [{"cards": ["9H"], "expect": {"alerts": []}}]},
     "rounds[0].expect.alerts: the codes of the alerts expected, at least one"),
    ({"table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
      "rounds": [{"cards": ["9H"], "expect": {"colour": "red"}}]}, "rounds[0].expect.colour"),
])
def test_bad_scenarios_name_every_problem(data: dict[str, object], message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data, "s.json")
    assert any(p.startswith(message) for p in err.value.problems), err.value.problems


RIG = os.environ.get("TABLED_RIG")


@pytest.mark.skipif(RIG is None, reason="no rig: set TABLED_RIG to a rig description "
                                        "(hil/rigs/example.json) to run on real devices")
async def test_on_the_rig(tmp_path: Path) -> None:
    assert RIG is not None
    rig = load_rig(RIG)
    game = "tai-sai-open-cover" if "tumbler" in rig.devices else "tiger-buffalo"
    path = next(p for p in SCENARIOS if load_scenario(p).game == game)
    report = await run_scenario(load_scenario(path), rig=rig, workdir=tmp_path)
    assert report.ok, report.render()


def test_rig_descriptions_are_checked(tmp_path: Path) -> None:
    bad = tmp_path / "rig.json"
    bad.write_text(json.dumps({"devices": {"shoe": "serial://dev/ttyUSB0", "dice": "x"}}))
    with pytest.raises(ScenarioError) as err:
        load_rig(bad)
    assert any("devices.shoe" in p for p in err.value.problems)
    assert any("devices.dice: not one of" in p for p in err.value.problems)
    assert "serials: an object naming the serial number each device reports (the table " \
        "pins it: devices.serials)" in err.value.problems  # issue 12, item 6
    example = Path(__file__).resolve().parents[2] / "hil" / "rigs" / "example.json"
    assert load_rig(example).devices["shoe"].startswith("serial:///dev/tabled/shoe")


class PressingOperator(io.StringIO):
    """Stands in for the person at a rig: does what the runner tells it, on a simulator
    behind a real pty, so the rig path (hil/operator.py) runs end to end here too."""

    def __init__(self, tumbler: TumblerSim, port: PtyPort) -> None:
        super().__init__()
        self.tumbler, self.port = tumbler, port
        self.tasks: list[asyncio.Task[None]] = []

    def write(self, text: str) -> int:
        said = re.search(r"press the tumbler button; expected dice \[(\d), (\d), (\d)\]", text)
        if said:
            dice = (int(said[1]), int(said[2]), int(said[3]))
            self.tasks.append(asyncio.get_running_loop().create_task(self._press(dice)))
        return super().write(text)

    async def _press(self, dice: tuple[int, int, int]) -> None:
        self.tumbler.scripted = [Throw(dice)]
        while not self.tumbler.armed:  # a person waits for the armed light
            await asyncio.sleep(0.01)
        self.tumbler.press_button(self.port.now())
        self.port.kick()


async def tumbler_rig(tmp_path: Path) -> tuple[PtyPort, Path, PressingOperator]:
    """A simulated tumbler on a real pty, a rig description naming it, and its operator."""
    tumbler = TumblerSim(speed=50)
    port = PtyPort(tumbler, link=tmp_path / "tumbler")
    await port.start()
    rig_file = tmp_path / "rig.json"
    rig_file.write_text(json.dumps({"name": "bench-test", "devices": {
        "tumbler": f"serial://{tmp_path / 'tumbler'}?baud=115200"},
        "serials": {"tumbler": tumbler.identity.serial}}), encoding="utf-8")
    return port, rig_file, PressingOperator(tumbler, port)


async def test_the_rig_path_gives_command_faults_itself(tmp_path: Path) -> None:
    """A pit void under a named clause (D14) on a rig: the runner signs and sends it; the
    person is asked to press only for the round that is thrown."""
    port, rig_file, operator = await tumbler_rig(tmp_path)
    scenario = parse_scenario({
        "table": {"game": "tai-sai-open-cover", "layout": "E"},
        "rounds": [
            {"dice": [1, 2, 3], "faults": [{"fault": "void", "after": 0,
                                            "irregularity": "damaged_dice",
                                            "reason": "a chipped die"}],
             "expect": {"status": "void", "void_code": "damaged_dice", "void_clause": "5.6"}},
            {"dice": [4, 4, 2], "expect": {"status": "valid", "total": 10}}]}, "inline")
    try:
        report = await run_scenario(scenario, rig=load_rig(rig_file), workdir=tmp_path,
                                    out=operator)
    finally:
        await port.stop()
    assert report.ok, report.render()
    assert operator.getvalue().count(">>> press the tumbler button") == 1
    assert "fault to inject by hand" not in operator.getvalue()


async def test_the_rig_path_with_an_operator(tmp_path: Path) -> None:
    port, rig_file, operator = await tumbler_rig(tmp_path)
    try:
        scenario = load_scenario(next(p for p in SCENARIOS if p.stem == "tai-sai-valid"))
        report = await run_scenario(scenario, rig=load_rig(rig_file), workdir=tmp_path,
                                    out=operator)
    finally:
        await port.stop()
    assert report.ok, report.render()
    assert [r.result["dice"] for r in report.rounds if r.result] == [[3, 4, 5], [6, 6, 6]]
    assert operator.getvalue().count(">>> press the tumbler button") == 2

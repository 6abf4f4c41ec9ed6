"""Every shipped scenario passes against the daemon, run as its own process; the runner
reports mismatches and bad scenario files clearly; rig tests skip without a rig."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.games import GAMES
from firmware_protocols.common import DeviceState
from hil import runner
from hil.faults import LineFaults
from hil.ports import PtyPort
from hil.report import check
from hil.rig import SimRig
from hil.runner import run_scenario
from hil.scenario import (
    EXPECT_KEYS,
    FAULTS,
    RANDOM_EXPECT_KEYS,
    Scenario,
    ScenarioError,
    load_rig,
    load_scenario,
    parse_scenario,
)
from hil.tumbler import Throw, TumblerSim
from tests import schemas

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


# Issue 13: each case has a test named by its clause and a scenario in every game it
# applies to, which uses the fault or expectation that shows it. A case without either
# fails here; so does a test or scenario renamed away.
ISSUE_13: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "Tai Sai: one Tumble message with count 3": (
        ("test_tai_sai_5_5_1_one_tumble_message_with_count_3_is_one_tumble",),
        {"tai-sai-tumble-count-3": "tumble_count"}),
    "Tai Sai: one Tumble message with count 255": (
        ("test_tai_sai_5_5_1_one_tumble_message_with_count_255_is_one_tumble",),
        {"tai-sai-tumble-count-255": "tumble_count"}),
    "Tai Sai: three tumbles with no Activated": (
        ("test_tai_sai_3_7_three_tumbles_with_no_activation_are_not_a_result",),
        {"tai-sai-no-activation": "no_activation"}),
    "Tai Sai: a flat flag of 2": (
        ("test_tai_sai_3_8_a_flat_flag_of_2_is_not_flat",),
        {"tai-sai-flat-flag-out-of-range": "flat_flag"}),
    "Tai Sai: a dice confidence of 0, and the table's floor": (
        ("test_tai_sai_5_14_a_dice_confidence_of_0_is_not_a_result",
         "test_tai_sai_5_14_the_confidence_floor_is_the_tables"),
        {"tai-sai-dice-confidence-floor": "dice_confidence"}),
    "Tai Sai: activated while idle, tumbling in betting, settled after": (
        ("test_tai_sai_5_5_3_activated_while_idle_tumbling_in_betting_settled_after",),
        {"tai-sai-activated-while-idle": "activate_idle",
         "tai-sai-activated-early": "activate_early"}),
    "Tai Sai: 5.5.1 and 5.5.2 void before the Pit is asked": (
        ("test_tai_sai_5_5_1_two_tumbles_and_an_unreadable_die_void_first",
         "test_tai_sai_5_5_2_a_tilted_die_and_an_unreadable_die_void_first"),
        {"tai-sai-two-tumbles": "no_alerts", "tai-sai-die-not-flat": "no_alerts"}),
    "Tai Sai: an arm the tumbler never confirmed": (
        ("test_tai_sai_5_14_an_arm_the_tumbler_never_confirmed_is_not_a_result",),
        {"tai-sai-arm-unconfirmed": "arm_unconfirmed"}),
    "Tai Sai: a disarmed activation after \"No more Bets\" is the Pit's (D21)": (
        ("test_tai_sai_5_5_3_does_not_apply_to_a_disarmed_activation_after_no_more_bets",),
        {"tai-sai-arm-unconfirmed": "arm_lost"}),
    "Tai Sai: the tumbler's own count disagrees (the Pit's)": (
        ("test_tai_sai_5_14_the_tumblers_count_disagreeing_goes_to_the_pit",),
        {"tai-sai-device-count-mismatch": "device_count"}),
    "Tai Sai 5.14: the Pit has the dice thrown again": (
        ("test_tai_sai_5_14_throw_again_rearms_and_the_new_throw_is_the_result",),
        {"tai-sai-arm-unconfirmed": "throw_again"}),
    "Tai Sai 5.6: a Pit correction of a published round": (
        ("test_tai_sai_5_6_damaged_dice_void_an_already_published_round",
         "test_rws_5_6_and_mbs_5_1_2_earlier_outcomes_stand"),
        {"tai-sai-damaged-dice-correction": "corrections"}),
    "Tai Sai: the dice watch": (
        ("test_dice_watch_alerts_when_a_die_is_loaded",),
        {"tai-sai-dice-watch-loaded-die": "alert_text",
         "tai-sai-dice-watch-fair-dice": "no_alerts"}),
    "IP 3.14: the squeeze waiver": (
        ("test_rws_ip_3_14_the_squeeze_waives_insurance_after_the_player_third_card",),
        {"tiger-buffalo-insurance-plus-squeeze-waiver": "squeeze"}),
    "IP 4.2.2: a private table": (
        ("test_rws_ip_4_2_2_a_private_table_offers_no_insurance_and_5_13_2_does_not_apply",),
        {"tiger-buffalo-insurance-plus-private-table": "wins"}),
    "IP 5.13.1: the late offer's payout cap": (
        ("test_rws_ip_5_13_1_late_offer_carries_the_payout_cap",),
        {"tiger-buffalo-insurance-plus-late-offer-payout-cap": "payout_cap",
         "tiger-buffalo-insurance-plus-insurance-not-offered": "payout_cap"}),
    "MBS 3.22.1: the cut card as a round's first card": (
        ("test_mbs_3_22_1_cut_card_as_the_first_card_of_a_round_is_published",),
        {"tiger-baccarat-cut-card-first-card": "alerts"}),
    "D2: the Twin Tiger Pair per document": (
        ("test_rws_1_33_two_picture_pairs_are_a_twin_by_value",
         "test_rws_3_2_2_a_pair_of_tens_has_value_10_not_a_twin_with_kings",
         "test_mbs_1_1_14_3_face_card_pairs_twin_only_as_the_same_face_cards",
         "test_d2_house_edges_as_decided_and_as_quoted"),
        {"tiger-buffalo-twin-tiger-pair-by-value": "pays",
         "tiger-baccarat-twin-tiger-pair-by-rank": "pays"}),
    "D2, issue 23: the RWS Twin is the table's setting, named in every result": (
        ("test_rws_1_33_twin_tiger_pair_is_a_table_setting_value_by_default",
         "test_d2_par_sheet_gives_the_house_edge_of_both_readings",
         "test_rws_1_33_every_result_names_the_tables_twin_tiger_pair_reading",
         "test_rws_1_33_twin_tiger_pair_is_read_from_table_and_defaults_to_the_decision"),
        {"tiger-buffalo-twin-tiger-pair-setting-rank": "rules",
         "tiger-buffalo-twin-tiger-pair-by-value": "rules"}),
    # A layout's position count settles nothing: no round can show it.
    "D20: MBS Appendix H, no position count invented": (
        ("test_mbs_2_2_appendix_h_position_count_is_not_invented",), {}),
    "D16: MBS 5.9, drawn cards stay in the deal": (
        ("test_mbs_5_9_reset_reopens_betting_and_keeps_the_drawn_cards_in_order",),
        {"tiger-baccarat-device-reset": "reset_device"}),
}


# Issue 23: each case the round core was found to get wrong, played through the real
# daemon by a scenario that uses the fault showing it, beside its clause-named core test.
ISSUE_23: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "a wrong read of the last card, re-sent with the true card (D23)": (
        ("test_rws_5_6_d23_a_wrong_read_of_the_last_card_holds_the_next_round",
         "test_d23_the_pit_may_confirm_a_disputed_result_and_a_later_round_is_out_of_reach"),
        {"tiger-buffalo-wrong-read-last-card": "wrong_read"}),
    "a card forced past the locked gate, reconstructed into the held deal (RWS 5.8)": (
        ("test_rws_5_8_a_carried_card_reconstructed_into_the_held_deal_is_in_no_other_round",),
        {"tiger-buffalo-forced-into-held-deal": "force_into_hold"}),
    "a draw number 0 (D19)": (
        ("test_d19_a_draw_number_no_draw_has_belongs_to_the_round_it_left_the_shoe_in",),
        {"tiger-buffalo-draw-number-zero": "draw_number"}),
    "a redelivered result_held answered twice (D18)": (
        ("test_d18_a_reconstruction_answers_a_hold_once_and_nothing_else",),
        {"tiger-buffalo-held-answered-twice": "answer_again"}),
    "a late trustworthy read (D18)": (
        ("test_d18_a_late_trustworthy_read_is_checked",),
        {"tiger-buffalo-late-read": "late_read"}),
    "a double draw the Pit re-orders so the deal needs another card (RWS 5.11)": (
        ("test_rws_5_11_the_pit_takes_the_carried_other_card_of_a_pair_into_the_deal",),
        {"tiger-buffalo-double-draw-reordered": "confirm_order"}),
    "a restart while held, with an unread card that settles a bet (RWS 5.4.1)": (
        ("test_rws_5_4_1_a_restart_holds_when_an_unread_card_may_have_settled_a_bet",),
        {"tiger-buffalo-restart-held-unread-settles-bet": "kill_daemon"}),
    "a kill right after a lost read (the script must not wait forever)": (
        ("test_a_kill_right_after_a_lost_read_does_not_wait_for_its_record",),
        {"tiger-buffalo-lost-read-kill": "kill_daemon"}),
}


def _uses(s: Scenario) -> set[str]:
    """The faults, expectation keys and scenario options a scenario uses."""
    out = {key for key in ("dice_watch", "tumbler") if getattr(s, key)}
    for r in s.rounds:
        out |= {f.fault for f in r.faults} | set(r.expect)
    return out


def test_issue_13_each_case_has_a_clause_test_and_scenarios() -> None:
    tests = Path(__file__).resolve().parents[1]
    defined = {m for f in tests.rglob("test_*.py")
               for m in re.findall(r"def (test_\w+)\(", f.read_text(encoding="utf-8"))}
    by_stem = {p.stem: load_scenario(p) for p in SCENARIOS}
    problems = []
    for case, (names, scenarios) in {**ISSUE_13, **ISSUE_23}.items():
        problems += [f"{case}: no test {n}" for n in names if n not in defined]
        for stem, used in scenarios.items():
            if stem not in by_stem:
                problems.append(f"{case}: no scenario {stem}")
            elif used not in _uses(by_stem[stem]):
                problems.append(f"{case}: scenario {stem} does not use {used}")
    assert not problems, "\n".join(problems)


async def test_a_kill_right_after_a_lost_read_does_not_wait_for_its_record(
        tmp_path: Path) -> None:
    """Issue 23: a read lost on the line is never recorded, so a kill "after" it, or
    after the card drawn next, must not wait for that record: it is injected, the round
    goes on under the restart's rules, and the run ends."""
    s = parse_scenario({
        "table": {"game": "tiger-buffalo", "layout": "A", "decks": 8},
        "rounds": [
            {"cards": ["9S", "2H", "AS", "KD", "9C", "7C"],
             "faults": [{"fault": "lost_read", "draw": 3}, {"fault": "kill_daemon", "after": 4}],
             "expect": {"status": "valid", "winner": "tie", "cards": 6,
                        "alerts": ["technical_interruption_outcome_established"]}}]}, "inline")
    async with asyncio.timeout(90):
        report = await run_scenario(s, workdir=tmp_path, speed=50)
    assert report.ok, report.render()


def test_the_readme_counts_the_shipped_scenarios() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    said = re.search(r"`hil/scenarios/\*\.json`, (\d+) shipped", readme)
    assert said and int(said[1]) == len(SCENARIOS), (said and said[1], len(SCENARIOS))


def test_every_fault_expectation_and_option_is_used_by_a_shipped_scenario() -> None:
    """A fault or expectation the runner knows and no scenario uses is not shown to work."""
    used = set().union(*(_uses(load_scenario(p)) for p in SCENARIOS))
    known = set(FAULTS) | EXPECT_KEYS | RANDOM_EXPECT_KEYS | {"dice_watch", "tumbler"}
    assert known - used == set(), f"used by no scenario: {sorted(known - used)}"


def _known_defect(path: Path) -> str:
    return str(json.loads(path.read_text(encoding="utf-8")).get("known_defect", ""))


@pytest.mark.parametrize("path", [
    pytest.param(p, marks=pytest.mark.xfail(reason=_known_defect(p), strict=True))
    if _known_defect(p) else p for p in SCENARIOS], ids=[p.stem for p in SCENARIOS])
async def test_scenario(path: Path, tmp_path: Path) -> None:
    s = load_scenario(path)
    report = await run_scenario(s, workdir=tmp_path, speed=50)
    print(report.render())
    assert report.ok, report.render()
    # What the table published under faults, restarts and corrections: the contract too.
    assert report.payloads
    assert schemas.problems(report.payloads) == []


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


def test_check_names_each_mismatch_of_corrections_caps_and_alert_words() -> None:
    result = {"status": "valid", "bets": [
        {"bet": "banker_insurance", "result": "win", "pays": "3:2", "window": "four_cards",
         "payout_cap": {"limit": "original_bet", "clause": "5.13.1"}}], "cards": []}
    fix = {"round": 1, "void_clause": "5.6", "void_code": "damaged_dice"}
    assert check({"payout_cap": {}, "no_alerts": ["dice_watch"],
                  "alert_text": {"dice_watch": "die_1"}, "corrections": [fix]},
                 result, ["dice_watch"], [("dice_watch", "totals chi-squared")], []) == [
        "expected payout caps {}, got [('banker_insurance', 'four_cards', {'limit': "
        "'original_bet', 'clause': '5.13.1'})]",
        "expected no alert dice_watch, saw 1",
        "expected an alert dice_watch saying 'die_1', saw ['totals chi-squared']",
        f"expected corrections [{fix}], got []"]
    # A correction no scenario expects is a mismatch: it voids a round.
    assert check({}, result, [], [], [fix]) == [f"expected corrections [], got [{fix}]"]
    assert check({"payout_cap": {"four_cards": "5.13.1"}, "corrections": [fix]}, result,
                 [], [], [fix]) == []


TAI_SAI = {"game": "tai-sai-open-cover", "layout": "E"}


@pytest.mark.parametrize(("data", "message"), [
    ({"table": TAI_SAI, "rounds": [{"dice": [1, 2, 3], "faults": [
        {"fault": "void_settled", "round": 2}]}]},
     "rounds[0].faults[0]: void_settled's 'round' is the number of a round already played"),
    ({"table": TAI_SAI, "dice_watch": {"window": 10}, "rounds": [{"dice": [1, 2, 3]}]},
     "dice_watch: window: 10 must be a whole number of throws"),
    ({"table": TAI_SAI, "tumbler": {"loaded": {"die": 4, "face": 6, "probability": 0.5}},
      "rounds": [{"dice": [1, 2, 3]}]}, "tumbler: {\"loaded\""),
    ({"table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
      "rounds": [{"cards": ["9H"], "faults": [{"fault": "arm_unconfirmed"}]}]},
     "rounds[0].faults[0]: arm_unconfirmed is a fault of the dice tumbler"),
    ({"table": TAI_SAI, "rounds": [{"random": 5, "expect": {"total": 7}}]},
     "rounds[0]: {'random': N} takes a positive N and an 'expect'"),
    ({"table": TAI_SAI, "rounds": [{"dice": [1, 2, 3], "faults": [
        {"fault": "flat_flag", "die": 0, "value": 2}]}]},
     "rounds[0].faults[0]: flat_flag needs 'die' (1-3)"),
    ({"table": TAI_SAI, "rounds": [{"dice": [1, 2, 3], "expect": {"corrections": [{}]}}]},
     "rounds[0].expect.corrections: a list of"),

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
        said = re.search(r"press the tumbler button once its armed light is on; "
                         r"expected dice \[(\d), (\d), (\d)\]", text)
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


class LateReadLine(PtyPort):
    """A tumbler's line that a starved daemon reads late: what the tumbler sends from its
    arming until its dice settle reaches the daemon in one read, in the order sent (the
    Arm's answer, the activation, the tumbles, the dice), as after a long pause."""

    def __init__(self, device: TumblerSim, link: Path) -> None:
        super().__init__(device, link=link)
        self.tumbler, self.late = device, bytearray()

    def _send(self, data: bytes) -> None:
        self.late += data
        if not (self.tumbler.armed or self.tumbler.state is DeviceState.BUSY):
            data, self.late = bytes(self.late), bytearray()
            super()._send(data)


async def tumbler_rig(tmp_path: Path, line: type[PtyPort] = PtyPort
                      ) -> tuple[PtyPort, Path, PressingOperator]:
    """A simulated tumbler on a real pty, a rig description naming it, and its operator."""
    tumbler = TumblerSim(speed=50)
    port = line(tumbler, link=tmp_path / "tumbler")
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
            {"dice": [4, 4, 2], "expect": {"status": "valid", "total": 10}},
            {"dice": [1, 1, 2], "faults": [{"fault": "void_settled", "round": 2,
                                            "irregularity": "damaged_dice",
                                            "reason": "the die was chipped in round 2"}],
             "expect": {"status": "valid", "total": 4, "corrections": [
                 {"round": 2, "void_clause": "5.6", "void_code": "damaged_dice"}]}}]},
        "inline")
    try:
        report = await run_scenario(scenario, rig=load_rig(rig_file), workdir=tmp_path,
                                    out=operator)
    finally:
        await port.stop()
    assert report.ok, report.render()
    assert operator.getvalue().count(">>> press the tumbler button") == 2
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


async def test_a_throw_read_late_is_judged_as_the_tumbler_sent_it(tmp_path: Path) -> None:
    """The tumbler answered the Arm before the press; a daemon that reads all of it in one
    go (starved of CPU) must still bind the throw to that arm, not hold it for the Pit
    as unconfirmed (this test's rig run once failed so under load)."""
    port, rig_file, operator = await tumbler_rig(tmp_path, LateReadLine)
    try:
        scenario = load_scenario(next(p for p in SCENARIOS if p.stem == "tai-sai-valid"))
        async with asyncio.timeout(120):  # held for the Pit, the operator would wait 300 s
            report = await run_scenario(scenario, rig=load_rig(rig_file), workdir=tmp_path,
                                        out=operator)
    finally:
        await port.stop()
    assert report.ok, report.render()
    assert [r.result["dice"] for r in report.rounds if r.result] == [[3, 4, 5], [6, 6, 6]]


async def test_the_pit_answers_a_late_read_only_once_the_daemon_has_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pit's contradicting word on a late read must meet the read already recorded,
    however slow the line: on a shoe line a second late, an answer given after a fixed
    pause reached the daemon before the read and was accepted."""
    set_up = runner._set_up_devices

    def slow_shoe_line(s: Scenario, sim: SimRig, seed: int) -> None:
        set_up(s, sim, seed)
        sim.ports["shoe"].faults_out = LineFaults(delay=1.0)

    monkeypatch.setattr(runner, "_set_up_devices", slow_shoe_line)
    s = load_scenario(next(p for p in SCENARIOS if p.stem == "tiger-buffalo-late-read"))
    s = dataclasses.replace(s, rounds=s.rounds[:1])  # the late read's round is enough
    report = await run_scenario(s, workdir=tmp_path, speed=50)
    assert report.ok, report.render()

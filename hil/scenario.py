"""HIL scenarios and rig descriptions: JSON files, validated with every problem named.

A scenario::

    {"name": "...", "clauses": ["5.10"],
     "table": {"game": "tiger-buffalo", "layout": "P", "decks": 8},
     "shuffle": {"remove": ["AS"]},   # optional: a bad shuffle (add, foreign, not_shuffled),
                                      # or "cut_card": false to deal to the last card,
                                      # or N: the cut card comes out before card N + 1
     "rounds": [
       {"cards": ["9H", "KS", "TD", "2C"],               # every card drawn, in order
        "faults": [{"fault": "face_up", "draw": 2}],
        "expect": {"status": "valid", "winner": "player", "alerts": ["face_up_card"]}},
       {"dice": [3, 3, 5], "tumbles": 3, "flat": [true, true, true]},
       {"random": 20}                                     # rounds from a random shoe
     ]}

``cards`` lists every card that leaves the shoe in that round, extra draws included;
the dealer draws only when the daemon asks, except where a fault says otherwise.

"table" may also set the config's other [table] settings: "insurance",
"dice_confidence_floor", and a game's reading of text that reads two ways
("twin_tiger_pair": "rank", D2), which each result names in "rules" (expect "rules").

A Tai Sai scenario may also set the config's ``"dice_watch"`` section and load one of the
simulated tumbler's dice for the rounds thrown at random (``"tumbler": {"loaded": {"die":
1, "face": 6, "probability": 0.5}}``); a block of random rounds may then expect alerts
over all its rounds (``{"random": 120, "expect": {"alerts": ["dice_watch"]}}``). A Pit
correction of a published round (fault ``void_settled``) is expected with
``"corrections"``; a correction no round expects is a mismatch.

A scenario that shows a defect of the round core not yet fixed says so in words
(``"known_defect": "..."``): it is expected to fail, and passing is news.

A rig description names the real devices::

    {"name": "bench-2", "devices": {"shoe": "serial:///dev/ttyUSB0?baud=115200",
                                    "shuffler": "usb://1d50:6178?serial=SF0001"},
     "serials": {"shoe": "SH0001", "shuffler": "SF0001"}}

and the serial number each reports (the table's ``devices.serials``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from daemon.config import SETTING_KEYS
from daemon.drivers.device_url import DeviceUrlError, parse_device_url
from daemon.errors import InputError
from daemon.games import GAMES
from daemon.games.cards import parse_card
from daemon.games.dice_watch import DiceWatchError, DiceWatchSettings
from daemon.games.errors import RulesError
from daemon.games.model import GameRules
from daemon.round.kinds import table_kind

# fault -> (where it applies, extra keys it takes)
FAULTS: dict[str, tuple[str, frozenset[str]]] = {
    # one drawn card, by its number in the round ("draw": 1 is the round's first card)
    "face_up": ("draw", frozenset()),
    "double_draw": ("draw", frozenset()),
    "foreign_back": ("draw", frozenset({"deck_set"})),
    "low_confidence": ("draw", frozenset({"confidence"})),
    # issue 11: the shoe re-sends draw n after a link reset; draw n's read is lost (the
    # next draw number skips); draw n is read as "??". The Pit reconstructs the deal.
    "repeat_draw": ("draw", frozenset()),
    "lost_read": ("draw", frozenset()),
    "unreadable": ("draw", frozenset()),
    # issue 23: draw n is read as "read_as" (a wrong read, full confidence); once the
    # round's result is out the shoe re-sends it with the true card. The next open_betting
    # must be refused until the Pit answers (a "settled" fault: void_settled or
    # confirm_result, D23); the runner tries it and reports one accepted.
    "wrong_read": ("draw", frozenset({"read_as"})),
    # issue 23: draw n's message carries this draw number ("value": 0, out of range, D19)
    "draw_number": ("draw", frozenset({"value"})),
    # issue 23: draw n's read is lost, then arrives late (the true card, 99%) once the
    # round is held; with "pit_says", the Pit first reconstructs with that card at draw
    # n, which the late read contradicts: the runner reports it accepted (D18)
    "late_read": ("draw", frozenset({"pit_says"})),
    # the tumbler reports a face out of range (e.g. 7): the Pit voids the round
    "bad_die": ("round", frozenset({"value"})),
    # after the round's n-th card ("after": 0 is just after "No more bets")
    "extra_draw": ("after", frozenset()),
    "kill_daemon": ("after", frozenset()),
    "unplug": ("after", frozenset({"device", "seconds"})),
    "reboot": ("after", frozenset({"device"})),
    "void": ("after", frozenset({"reason", "irregularity"})),  # the pit voids it
    "end_shoe": ("after", frozenset()),
    "reset_device": ("after", frozenset()),  # MBS 5.9: reset, bet again, "No more bets"
    "confirm_order": ("after", frozenset({"swap"})),  # the Pit's order for a double draw
    "squeeze": ("after", frozenset()),  # IP 3.14: the Pit declares the squeeze waiver
    # every insurance window of the round: the dealer draws on without closing it
    "skip_insurance": ("insurance", frozenset()),
    # before "No more bets"
    "draw_during_betting": ("betting", frozenset()),
    "activate_early": ("betting", frozenset()),
    # the whole round
    "line_noise": ("round", frozenset({"device", "ber"})),
    # issue 23: when the round is first held for its reads, the dealer forces the next
    # card past the locked gate (RWS 5.8), and the Pit's reconstruction puts it in the
    # held deal; it must not be carried into the next round as well
    "force_into_hold": ("round", frozenset()),
    # issue 23: the Pit answers every copy of a result_held (delivered at least once),
    # and answers a hold once more after its answer was taken: each further answer must
    # be refused (D18, hold_id); the runner reports one accepted
    "answer_again": ("round", frozenset()),
    # Tai Sai: the tumbler reports its tumbles in one Tumble message with count n
    "tumble_count": ("round", frozenset({"count"})),
    # Tai Sai: the tumbler numbers its last tumble n (its own count disagrees: the Pit's)
    "device_count": ("round", frozenset({"count"})),
    # Tai Sai: the tumbler arms after "No more bets" but never confirms the Arm command
    "arm_unconfirmed": ("round", frozenset()),
    # Tai Sai: the tumbler never hears that Arm; the dealer presses without the armed light
    "arm_lost": ("round", frozenset()),
    # Tai Sai: the dice are read with this confidence (the table's floor decides)
    "dice_confidence": ("round", frozenset({"confidence"})),
    # Tai Sai: the tumbler tumbles and settles without an Activated message (3.7)
    "no_activation": ("round", frozenset()),
    # Tai Sai: die n's flat flag is reported as this value (2: out of range, D19)
    "flat_flag": ("round", frozenset({"die", "value"})),
    # Tai Sai: the button is pressed while no round is open, and the dice (these, or
    # random) settle before betting opens; the round is then played as scripted
    "activate_idle": ("round", frozenset({"dice"})),
    # Tai Sai 5.14: the Pit has the dice thrown again ("after": 1, once they are at rest);
    # "dice": what the new throw shows (the round's dice unless given)
    "throw_again": ("after", frozenset({"dice"})),
    # after the round's result: the Pit voids a published round (Tai Sai 5.6), "round"
    # its number in the scenario (this round unless given)
    "void_settled": ("settled", frozenset({"round", "irregularity", "reason"})),
    # after the round's result: the Pit confirms a disputed result as published (D23)
    "confirm_result": ("settled", frozenset({"round"})),
}
EXPECT_KEYS = {"status", "winner", "player_total", "banker_total", "natural", "total", "dice",
               "void_clause", "void_code", "wins", "alerts", "cards", "pays",
               # codes none of whose alerts may come in the round; {code: words} an alert
               # of that code must say; the Pit's corrections published in the round, each
               # {"round": n, "void_clause": ..., "void_code": ...} (exactly these);
               # {window: clause}: the insurance windows whose bets carry a payout cap
               # (IP 5.13.1), exactly these
               "no_alerts", "alert_text", "corrections", "payout_cap",
               # the result's "rules": the table's readings (e.g. twin_tiger_pair, D2)
               "rules"}
# What a block of random rounds may expect, over all its rounds.
RANDOM_EXPECT_KEYS = {"alerts", "no_alerts", "alert_text"}
DEVICES = ("shoe", "shuffler", "tumbler")
# A scenario's "table" may also set these, as the daemon's config does: a game's readings
# of text that reads two ways (e.g. "twin_tiger_pair": "rank", D2) among them.
TABLE_SETTINGS: dict[str, type] = {"insurance": bool, "dice_confidence_floor": int,
                                   **dict.fromkeys(SETTING_KEYS, str)}
DICE_FAULTS = {"bad_die", "activate_early", "tumble_count", "device_count", "arm_unconfirmed",
               "dice_confidence", "throw_again", "no_activation", "arm_lost", "flat_flag",
               "activate_idle"}


class ScenarioError(InputError, ValueError):
    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{source} is not a valid scenario:\n" +
                         "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class Fault:
    fault: str
    draw: int | None = None
    after: int | None = None
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Round:
    cards: tuple[str, ...] = ()
    dice: tuple[int, int, int] | None = None
    tumbles: int = 3
    flat: tuple[bool, bool, bool] = (True, True, True)
    random: int = 0
    faults: tuple[Fault, ...] = ()
    expect: dict[str, Any] = field(default_factory=dict)

    def faults_at(self, where: str, n: int | None = None) -> list[Fault]:
        out = []
        for f in self.faults:
            kind = FAULTS[f.fault][0]
            if kind == where and (n is None or (f.draw if where == "draw" else f.after) == n):
                out.append(f)
        return out


@dataclass(frozen=True)
class Scenario:
    name: str
    game: str
    layout: str
    decks: int | None
    rounds: tuple[Round, ...]
    shuffle: dict[str, Any] = field(default_factory=dict)
    clauses: tuple[str, ...] = ()
    source: str = ""
    # [table] settings of the config beyond game, layout and decks (TABLE_SETTINGS)
    table_settings: dict[str, Any] = field(default_factory=dict)
    # The config's [dice_watch] section, e.g. a small window a scenario can fill
    dice_watch: dict[str, Any] = field(default_factory=dict)
    # The simulated tumbler's dice: {"loaded": {"die": 1-3, "face": 1-6, "probability": p}}
    # makes that die show that face with probability p in the rounds it throws at random
    tumbler: dict[str, Any] = field(default_factory=dict)
    # A defect of the round core this scenario shows, not yet fixed: the scenario is
    # expected to fail, for this reason (tests/hil/test_scenarios.py: a strict xfail)
    known_defect: str = ""

    @property
    def dice(self) -> bool:
        return table_kind(GAMES[self.game]).dice

    def rules(self) -> GameRules[Any]:
        """The game as the scenario's table plays it (its readings, e.g. twin_tiger_pair)."""
        return GAMES[self.game].configured({k: v for k, v in self.table_settings.items()
                                            if k in SETTING_KEYS})

    def scripted_cards(self) -> list[str]:
        return [c for r in self.rounds for c in r.cards]


@dataclass(frozen=True)
class Rig:
    name: str
    devices: dict[str, str]
    serials: dict[str, str] = field(default_factory=dict)  # pinned: devices.serials
    # A virtual rig: this device is the reference firmware on an emulated MCU (QEMU), the
    # rest are simulators (hil/qemu_rig.py); no devices or serials are named then.
    qemu: str | None = None


def _dice_ok(d: Any) -> bool:
    return isinstance(d, list) and len(d) == 3 and all(type(x) is int and 1 <= x <= 6
                                                       for x in d)


def _fault(raw: Any, where: str, problems: list[str], number: int = 1,
           dice: bool = True) -> Fault | None:
    """One fault of round ``number`` (1-based) of a game played with dice or not."""
    if not isinstance(raw, dict) or raw.get("fault") not in FAULTS:
        problems.append(f"{where}: a fault is an object with 'fault' one of "
                        f"{', '.join(FAULTS)}; got {raw!r}")
        return None
    name = raw["fault"]
    kind, extra = FAULTS[name]
    allowed = {"fault"} | extra | ({"draw"} if kind == "draw" else set()) | (
        {"after"} if kind == "after" else set())
    for key in sorted(set(raw) - allowed):
        problems.append(f"{where}: {name} takes no {key!r} (it takes "
                        f"{', '.join(sorted(allowed - {'fault'})) or 'nothing'})")
    n = raw.get(kind) if kind in ("draw", "after") else None
    if kind in ("draw", "after") and (not isinstance(n, int) or n < (1 if kind == "draw" else 0)):
        problems.append(f"{where}: {name} needs {kind!r}, the card number in the round")
    if "count" in extra and (not isinstance(raw.get("count"), int) or
                             not 0 <= raw["count"] <= 255):
        problems.append(f"{where}: {name} needs 'count', 0-255 (one byte on the wire)")
    if "device" in extra and raw.get("device") not in DEVICES:
        problems.append(f"{where}: {name} needs 'device', one of {', '.join(DEVICES)}")
    if "confidence" in raw and (type(raw["confidence"]) is not int or
                                not 0 <= raw["confidence"] <= 100):
        problems.append(f"{where}: {name}'s 'confidence' is a whole percent 0-100")
    if "dice" in raw and not _dice_ok(raw["dice"]):
        problems.append(f"{where}: {name}'s 'dice' are three dice 1-6, e.g. [3, 3, 5]")
    if name == "flat_flag" and not (raw.get("die") in (1, 2, 3) and
                                    type(raw.get("value")) is int and 0 <= raw["value"] <= 255):
        problems.append(f"{where}: flat_flag needs 'die' (1-3) and 'value' (0-255, one byte)")
    if "round" in raw and (type(raw["round"]) is not int or not 1 <= raw["round"] <= number):
        problems.append(f"{where}: {name}'s 'round' is the number of a round already played "
                        f"(1-{number})")
    for key in ("read_as", "pit_says"):  # read_as is required, pit_says optional
        if key in extra and (key in raw or key == "read_as"):
            try:
                parse_card(str(raw.get(key)))
            except (RulesError, TypeError, ValueError):
                problems.append(f"{where}: {name}'s {key!r} is a card code like 7D")
    if name == "draw_number" and not (type(raw.get("value")) is int and
                                      0 <= raw["value"] <= 0xFFFF):
        problems.append(f"{where}: draw_number needs 'value', 0-65535 (two bytes on the wire)")
    if name in DICE_FAULTS and not dice:
        problems.append(f"{where}: {name} is a fault of the dice tumbler; this game is "
                        "played with cards")
    args = {k: v for k, v in raw.items() if k in extra}
    return Fault(name, n if kind == "draw" else None, n if kind == "after" else None, args)


def _check_expect(expect: dict[str, Any], where: str, problems: list[str]) -> None:
    """The shape of the expectations whose shape is not checked where they are used."""
    for key in ("alerts", "no_alerts"):
        if key in expect and not (isinstance(expect[key], list) and expect[key] and
                                  all(isinstance(c, str) for c in expect[key])):
            # Alerts are checked as "at least these": an empty list would check nothing.
            problems.append(f"{where}.expect.{key}: the codes of the alerts expected, at least one")
    text = expect.get("alert_text", {})
    if not (isinstance(text, dict) and all(isinstance(v, str) and v for v in text.values())):
        problems.append(f"{where}.expect.alert_text: {{alert code: words its detail says}}")
    for c in expect.get("corrections", []) if isinstance(expect.get("corrections", []),
                                                           list) else [None]:
        if not (isinstance(c, dict) and set(c) == {"round", "void_clause", "void_code"}):
            problems.append(f"{where}.expect.corrections: a list of {{'round': n, "
                            f"'void_clause': ..., 'void_code': ...}}, got {c!r}")
    cap = expect.get("payout_cap", {})
    if not (isinstance(cap, dict) and all(isinstance(v, str) for v in cap.values())):
        problems.append(f"{where}.expect.payout_cap: {{insurance window: clause}}")


def _round(raw: Any, where: str, dice: bool, problems: list[str],
           number: int = 1) -> Round | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be an object")
        return None
    if "random" in raw:
        n = raw["random"]
        expect = raw.get("expect", {})
        if not isinstance(n, int) or n < 1 or set(raw) - {"random", "expect"} or \
                not isinstance(expect, dict) or set(expect) - RANDOM_EXPECT_KEYS:
            problems.append(f"{where}: {{'random': N}} takes a positive N and an 'expect' "
                            f"over all N rounds ({', '.join(sorted(RANDOM_EXPECT_KEYS))}), "
                            "nothing else")
            return None
        _check_expect(expect, where, problems)
        return Round(random=n, expect=expect)
    for key in sorted(set(raw) - {"cards", "dice", "tumbles", "flat", "faults", "expect"}):
        problems.append(f"{where}.{key}: unknown key")
    faults = []
    for i, f in enumerate(raw.get("faults", [])):
        fault = _fault(f, f"{where}.faults[{i}]", problems, number, dice)
        if fault is not None:
            faults.append(fault)
    expect = raw.get("expect", {})
    if not isinstance(expect, dict):
        problems.append(f"{where}.expect: must be an object")
        expect = {}
    for key in sorted(set(expect) - EXPECT_KEYS):
        problems.append(f"{where}.expect.{key}: unknown (known: {', '.join(sorted(EXPECT_KEYS))})")
    _check_expect(expect, where, problems)
    if dice:
        d = raw.get("dice")
        if not (isinstance(d, list) and len(d) == 3 and all(isinstance(x, int) and 0 <= x <= 6
                                                            for x in d)):
            problems.append(f"{where}.dice: three dice 1-6 (0: unreadable), e.g. [3, 3, 5]")
            return None
        flat = raw.get("flat", [True, True, True])
        if not (isinstance(flat, list) and len(flat) == 3 and all(isinstance(x, bool)
                                                                  for x in flat)):
            problems.append(f"{where}.flat: three booleans")
            flat = [True, True, True]
        tumbles = raw.get("tumbles", 3)
        if not isinstance(tumbles, int) or not 0 <= tumbles <= 20:
            problems.append(f"{where}.tumbles: 0-20")
            tumbles = 3
        return Round(dice=(d[0], d[1], d[2]), tumbles=tumbles,
                     flat=(flat[0], flat[1], flat[2]), faults=tuple(faults), expect=expect)
    cards = raw.get("cards")
    if not isinstance(cards, list) or not cards:
        problems.append(f"{where}.cards: the cards drawn in this round, e.g. [\"9H\", \"KS\"]")
        return None
    for c in cards:
        try:
            parse_card(c)
        except (RulesError, TypeError, ValueError):
            problems.append(f"{where}.cards: {c!r} is not a card code like 9H, TD, KS")
    for f in faults:
        if f.draw is not None and f.draw > len(cards):
            problems.append(f"{where}: {f.fault} on draw {f.draw}, but the round lists "
                            f"{len(cards)} cards")
    return Round(cards=tuple(cards), faults=tuple(faults), expect=expect)


def _table_settings(game: GameRules[Any], table: dict[str, Any], problems: list[str]
                    ) -> dict[str, Any]:
    """The config's [table] settings a scenario gives besides game, layout and decks."""
    settings = {k: v for k, v in table.items() if k in TABLE_SETTINGS}
    for key in sorted(set(table) - {"game", "layout", "decks", *TABLE_SETTINGS}):
        problems.append(f"table.{key}: unknown key")
    for key, kind in TABLE_SETTINGS.items():
        if key in settings and type(settings[key]) is not kind:
            problems.append(f"table.{key}: must be {kind.__name__}")
        elif key in settings and key in SETTING_KEYS:
            try:
                game.configured({key: settings[key]})
            except RulesError as exc:
                problems.append(f"table.{key}: {exc}")
    return settings


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    problems: list[str] = []
    if not isinstance(data, dict):
        raise ScenarioError(source, ["the file must hold a JSON object"])
    for key in sorted(set(data) - {"name", "table", "rounds", "shuffle", "clauses",
                                   "dice_watch", "tumbler", "known_defect"}):
        problems.append(f"{key}: unknown key")
    table = data.get("table", {})
    game_id = table.get("game") if isinstance(table, dict) else None
    game = GAMES.get(game_id or "")
    if game is None:
        raise ScenarioError(source, [*problems, f"table.game: one of {', '.join(GAMES)}"])
    layout = str(table.get("layout", ""))
    try:
        game.check_layout(layout)
    except RulesError as exc:
        problems.append(f"table.layout: {exc}")
    settings = _table_settings(game, table, problems)
    decks = table.get("decks") if game.decks is not None else None
    if game.decks is not None:
        try:
            game.check_decks(int(decks) if isinstance(decks, int) else -1)
        except RulesError as exc:
            problems.append(f"table.decks: {exc}")
    rounds = []
    raw_rounds = data.get("rounds")
    if not isinstance(raw_rounds, list) or not raw_rounds:
        problems.append("rounds: a non-empty list")
        raw_rounds = []
    for i, r in enumerate(raw_rounds):
        parsed = _round(r, f"rounds[{i}]", table_kind(game).dice, problems, i + 1)
        if parsed is not None:
            rounds.append(parsed)
    if any(r.random for r in rounds) and any(r.cards for r in rounds):
        problems.append("rounds: scripted cards and random rounds cannot share a shoe")
    shuffle = data.get("shuffle", {})
    if not isinstance(shuffle, dict) or set(shuffle) - {"remove", "add", "foreign",
                                                        "not_shuffled", "switch", "cut_card"}:
        problems.append("shuffle: an object with 'remove' and 'add' (lists of cards), "
                        "'foreign' (a count), 'not_shuffled' (true), 'switch' "
                        "({draw number: card}: a card switched in the loaded shoe) and "
                        "'cut_card' (false: the shoe is dealt to its last card; N: the "
                        "cut card comes out before card N + 1)")
        shuffle = {}
    cut = shuffle.get("cut_card", True)
    if not isinstance(cut, bool) and (not isinstance(cut, int) or cut < 0):
        problems.append(f"shuffle.cut_card: true, false or a card count, got {cut!r}")
    watch, tumbler = data.get("dice_watch", {}), data.get("tumbler", {})
    _check_dice_options(watch, tumbler, table_kind(game).dice, problems)
    defect = data.get("known_defect", "")
    if not isinstance(defect, str) or ("known_defect" in data and not defect.strip()):
        problems.append("known_defect: the core defect the scenario shows, in words")
    if problems:
        raise ScenarioError(source, problems)
    return Scenario(str(data.get("name", Path(source).stem)), game.id, layout, decks,
                    tuple(rounds), dict(shuffle),
                    tuple(data.get("clauses", [])), source, settings, dict(watch),
                    dict(tumbler), str(defect))


def _check_dice_options(watch: Any, tumbler: Any, dice: bool, problems: list[str]) -> None:
    if (watch or tumbler) and not dice:
        problems.append("dice_watch, tumbler: only for a game played with dice")
        return
    if not isinstance(watch, dict):
        problems.append("dice_watch: the config's [dice_watch] section, an object")
    else:
        try:
            DiceWatchSettings(**watch)
        except (DiceWatchError, TypeError) as exc:
            problems.append(f"dice_watch: {exc}")
    loaded = tumbler.get("loaded") if isinstance(tumbler, dict) else None
    loaded_ok = loaded is None or (
        isinstance(loaded, dict) and set(loaded) == {"die", "face", "probability"} and
        loaded["die"] in (1, 2, 3) and loaded["face"] in range(1, 7) and
        isinstance(loaded["probability"], int | float) and 0 < loaded["probability"] <= 1)
    if not isinstance(tumbler, dict) or set(tumbler) - {"loaded"} or not loaded_ok:
        problems.append("tumbler: {\"loaded\": {\"die\": 1-3, \"face\": 1-6, "
                        "\"probability\": p}}: that die shows that face with probability p "
                        "(0 < p <= 1) when the dice are thrown at random")


def load_scenario(path: Path | str) -> Scenario:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScenarioError(str(p), [f"cannot read: {exc.strerror}"]) from None
    except json.JSONDecodeError as exc:
        raise ScenarioError(str(p), [f"not valid JSON: {exc}"]) from None
    return parse_scenario(data, str(p))


def load_rig(path: Path | str) -> Rig:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ScenarioError(str(p), [f"cannot read the rig description: {exc}"]) from None
    problems = []
    if isinstance(data, dict) and data.get("kind") == "qemu":
        if data.get("device") not in ("shoe", "shuffler", "tumbler"):
            raise ScenarioError(str(p), ["device: the device the firmware is, shoe, shuffler "
                                         "or tumbler"])
        return Rig(str(data.get("name", p.stem)), {}, {}, qemu=str(data["device"]))
    devices = data.get("devices") if isinstance(data, dict) else None
    if not isinstance(devices, dict) or not devices:
        problems.append("devices: an object naming each device's URL")
        devices = {}
    for name, url in devices.items():
        if name not in DEVICES:
            problems.append(f"devices.{name}: not one of {', '.join(DEVICES)}")
            continue
        try:
            parse_device_url(url)
        except (DeviceUrlError, TypeError) as exc:
            problems.append(f"devices.{name}: {exc}")
    serials = data.get("serials") if isinstance(data, dict) else None
    if not isinstance(serials, dict):
        problems.append("serials: an object naming the serial number each device reports "
                        "(the table pins it: devices.serials)")
        serials = {}
    for name in devices:
        if not isinstance(serials.get(name), str):
            problems.append(f"serials.{name}: the serial number the {name} reports")
    if problems:
        raise ScenarioError(str(p), problems)
    return Rig(str(data.get("name", p.stem)), dict(devices), dict(serials))

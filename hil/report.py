"""What a scenario's run found: each round's result and alerts against the scenario's
expectations, and the run's report. Shared by the runner (simulators, virtual rigs) and
the operator (real devices); a module of its own so that neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hil.dealer import CORRECTION
from hil.scenario import Scenario


@dataclass
class RoundReport:
    index: int
    result: dict[str, Any] | None
    alerts: list[str]
    mismatches: list[str] = field(default_factory=list)
    mark: int = 0  # where this round's messages begin in the dealer's record
    expect: dict[str, Any] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)  # mismatches not from expectations
    # Checked over a window of messages (a scripted round, or a block of random rounds).
    windowed: bool = False
    details: list[tuple[str, str]] = field(default_factory=list)  # (code, detail) of alerts
    # The Pit's corrections published in the window: {"round": n, "void_clause", "void_code"}
    corrections: list[dict[str, Any]] = field(default_factory=list)

    def line(self) -> str:
        r = self.result
        if r is None:
            what = "no result (refused)"
        elif r["status"] == "void":
            what = f"seq {r['seq']} VOID {r['void_reason']['clause']} {r['void_reason']['code']}"
        elif "dice" in r:
            what = f"seq {r['seq']} dice {r['dice']} total {r['total']}"
        else:
            what = (f"seq {r['seq']} {r['winner']} {r['player_total']}-{r['banker_total']} "
                    f"({len(r['cards'])} cards)")
        alerts = f"; alerts {', '.join(self.alerts)}" if self.alerts else ""
        alerts += "".join(f"; corrects round {c['round']} (VOID {c['void_clause']} "
                          f"{c['void_code']})" for c in self.corrections)
        mark = "ok  " if not self.mismatches else "FAIL"
        out = f"{mark} round {self.index + 1}: {what}{alerts}"
        return out + "".join(f"\n       {m}" for m in self.mismatches)


@dataclass
class Report:
    scenario: Scenario
    rounds: list[RoundReport] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # Every payload the dealer received from the table (topic after the table's prefix,
    # body), in order: for checks of the contract (tests validate them against the schemas).
    payloads: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # Why the scenario was not played on this rig (a fault only the simulators inject).
    not_run: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.not_run and not self.problems and all(not r.mismatches
                                                               for r in self.rounds)

    def render(self) -> str:
        s = self.scenario
        lines = [f"scenario {s.name} ({s.game} layout {s.layout}"
                 f"{f', {s.decks} decks' if s.decks else ''}"
                 f"{'; clauses ' + ', '.join(s.clauses) if s.clauses else ''})"]
        lines += [r.line() for r in self.rounds]
        lines += [f"FAIL {p}" for p in self.problems]
        if s.known_defect:
            lines.append(f"known defect, expected to fail: {s.known_defect}")
        if self.not_run:
            return "\n".join(lines + [f"NOT RUN on this rig: {w}" for w in self.not_run]) + "\n"
        bad = sum(1 for r in self.rounds if r.mismatches) + len(self.problems)
        lines.append(f"{len(self.rounds)} rounds, {bad} mismatch(es): "
                     f"{'PASS' if self.ok else 'FAIL'}")
        return "\n".join(lines) + "\n"


def check_messages(expect: dict[str, Any], alerts: list[str],
                   details: list[tuple[str, str]] | None = None,
                   corrections: list[dict[str, Any]] | None = None) -> list[str]:
    """Every expectation about the alerts and corrections of a round (or a block of
    rounds) not met, as a sentence. ``None``: not collected, not checked."""
    out: list[str] = []
    for code in expect.get("alerts", []):
        if code not in alerts:
            out.append(f"expected alert {code}, saw {alerts or 'none'}")
    for code in expect.get("no_alerts", []):
        if code in alerts:
            out.append(f"expected no alert {code}, saw {alerts.count(code)}")
    for code, words in expect.get("alert_text", {}).items():
        said = [d for c, d in details or [] if c == code]
        if details is not None and not any(words in d for d in said):
            out.append(f"expected an alert {code} saying {words!r}, saw {said or 'none'}")
    if corrections is not None:
        want = sorted(expect.get("corrections", []), key=lambda c: c["round"])
        got = sorted(corrections, key=lambda c: c["round"])
        if want != got:
            out.append(f"expected corrections {want}, got {got}")
    return out


def check(expect: dict[str, Any], result: dict[str, Any] | None, alerts: list[str],
          details: list[tuple[str, str]] | None = None,
          corrections: list[dict[str, Any]] | None = None) -> list[str]:
    """Every expectation the result does not meet, as a sentence."""
    out: list[str] = []
    if result is None:
        if expect.get("status", "refused") != "refused":
            out.append(f"expected a {expect['status']} result, but the round was refused")
        return out + check_messages(expect, alerts, details, corrections)
    actual: dict[str, Any] = {
        "status": result["status"], "winner": result.get("winner"),
        "player_total": result.get("player_total"), "banker_total": result.get("banker_total"),
        "natural": result.get("natural"), "total": result.get("total"),
        "dice": result.get("dice"), "cards": len(result.get("cards", [])),
        "void_clause": (result.get("void_reason") or {}).get("clause"),
        "void_code": (result.get("void_reason") or {}).get("code"),
        "wins": sorted(b["bet"] for b in result["bets"] if b["result"] == "win"),
        "rules": result.get("rules"),
    }
    for key, want in expect.items():
        if key in MESSAGE_KEYS:
            continue  # check_messages
        if key == "payout_cap":  # IP 5.13.1: the windows whose insurance bets are capped
            caps = [b for b in result["bets"] if "payout_cap" in b]
            capped = {b["window"]: b["payout_cap"]["clause"] for b in caps}
            if capped != want or any(b["payout_cap"]["limit"] != "original_bet" for b in caps):
                out.append(f"expected payout caps {want}, got "
                           f"{[(b['bet'], b.get('window'), b['payout_cap']) for b in caps]}")
        elif key == "pays":
            pays = {b["bet"]: b.get("pays") for b in result["bets"] if b["result"] == "win"}
            for bet, p in want.items():
                if pays.get(bet) != p:
                    out.append(f"expected {bet} to pay {p}, got {pays.get(bet)}")
        elif key == "wins":
            if sorted(want) != actual["wins"]:
                out.append(f"expected wins {sorted(want)}, got {actual['wins']}")
        elif actual[key] != want:
            out.append(f"expected {key} {want!r}, got {actual[key]!r}")
    return out + check_messages(expect, alerts, details, corrections)


MESSAGE_KEYS = {"alerts", "no_alerts", "alert_text", "corrections"}


def settle_alert_windows(report: Report, seen: list[tuple[str, dict[str, Any]]]) -> None:
    """A round's alerts (and corrections) are everything from its start to the next
    round's start (the last round's: to the end of the run): an alert about a round can
    follow its result, e.g. a card drawn after it, or a shoe found altered when it ends.
    A correction no scenario expects is a mismatch: it voids a round."""
    numbers = {rr.result["round_id"]: rr.index + 1 for rr in report.rounds
               if rr.windowed and rr.result}
    scripted = [rr for rr in report.rounds if rr.windowed]
    for n, rr in enumerate(scripted):
        end = scripted[n + 1].mark if n + 1 < len(scripted) else len(seen)
        window = seen[rr.mark:end]
        rr.alerts = [b["code"] for t, b in window if t == "alerts"]
        rr.details = [(b["code"], b.get("detail", "")) for t, b in window if t == "alerts"]
        rr.corrections = [{"round": numbers.get(b["corrects"], b["corrects"]),
                           "void_clause": b["void_reason"]["clause"],
                           "void_code": b["void_reason"]["code"]}
                          for t, b in window if t == CORRECTION]
        rr.mismatches = check(rr.expect, rr.result, rr.alerts, rr.details,
                              rr.corrections) + rr.extra

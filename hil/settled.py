"""The Pit's faults after a round's result is published: voiding a settled round, or
confirming a disputed one. Played the same by the runner and the operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hil.dealer import CORRECTION, SimDealer
from hil.errors import RunError
from hil.report import Report
from hil.scenario import Fault, Round


async def correct_settled(dealer: SimDealer, r: Round, i: int, report: Report) -> None:
    """The faults after round ``i``'s result: the Pit voids a round already published
    (Tai Sai 5.6; a disputed baccarat result, D23), named by its number in the scenario,
    and its correction comes next; or confirms a disputed result as published (D23)."""
    for f in r.faults_at("settled"):
        number = int(f.args.get("round", i + 1))
        voided = next((x.result for x in report.rounds if x.windowed and x.index + 1 ==
                       number), None)
        if voided is None:
            raise RunError(f"round {number} has no published result to void")
        rid = voided["round_id"]
        await dealer.give(Fault(f.fault, args={**f.args, "round_id": rid}))
        if f.fault == "void_settled":
            await dealer._expect(_correction_of(rid))


def _correction_of(round_id: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda t, b: t == CORRECTION and b.get("corrects") == round_id

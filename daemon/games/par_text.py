"""Par sheets as text for people: operators and regulators read these."""

from __future__ import annotations

from fractions import Fraction

from daemon.games.par_sheet import BetPar, ParSheet


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:.4f}%"


def _bet_block(b: BetPar, total: int) -> list[str]:
    head = f"{b.bet} (clause {b.clause})"
    if b.setting is not None:
        which = "in effect" if b.in_effect else "another reading a table may set"
        head += f" - {b.setting[0]} = \"{b.setting[1]}\" ({which})"
    out = []
    if b.window is not None:
        head += f" - {b.window}"
        out.append(head)
        offered = float(Fraction(b.offered, total))
        out.append(f"    offered in {b.offered:,} sequences, p = {offered:.10f}")
    else:
        out.append(head)
    for pl in b.ordered_lines():
        p = Fraction(pl.count, b.offered)
        pays = pl.pays or ""
        if len(pl.line) > 58:  # long printed labels get a line of their own, never truncated
            out.append(f"    {pl.line}")
            out.append(f"    {'':<58} {pays:>9} {pl.count:>26,} {float(p):.10f}")
        else:
            out.append(f"    {pl.line:<58} {pays:>9} {pl.count:>26,} {float(p):.10f}")
    out.append(f"    house edge {_pct(b.house_edge)}  (exact {b.house_edge.numerator}/"
               f"{b.house_edge.denominator})")
    return out


def render_par_sheet(sheet: ParSheet) -> str:
    decks = f", {sheet.decks} decks" if sheet.decks else ""
    lines = [
        f"Par sheet: {sheet.title} ({sheet.game}), layout {sheet.layout}{decks}",
        f"Exact over all {sheet.total:,} {sheet.unit}.",
        "",
        f"    {'result':<58} {'pays':>9} {'count':>26} {'probability':>12}",
    ]
    for b in sheet.bets:
        lines += _bet_block(b, sheet.total)
        lines.append("")
    return "\n".join(lines)

"""docs/games.md, generated from the engine's data so that it cannot drift from it."""

from __future__ import annotations

from typing import Any

from daemon.games import insurance_plus
from daemon.games.model import GameRules
from daemon.games.par_sheet import par_sheet
from daemon.games.registry import GAMES

PAR_DECKS = 8


def _edges(game: GameRules[Any]) -> dict[str, str]:
    """House edge per bet at 8 decks; a bet's edge does not depend on the layout offering it."""
    edges: dict[str, str] = {}
    for layout in game.layouts:
        if all(r.bet in edges for r in game.offered(layout)) and game.kind != "dice":
            continue
        sheet = par_sheet(game, layout, PAR_DECKS if game.kind == "baccarat" else None)
        for b in sheet.bets:
            key = b.bet if b.window is None else f"{b.bet} {b.window}"
            edge = f"{float(b.house_edge) * 100:.4f}%"
            if b.setting is not None:  # each reading of a table setting has its own edge
                edges.setdefault(f"{b.bet} {b.setting[0]}={b.setting[1]}", edge)
            if b.in_effect:
                edges.setdefault(key, edge)
    return edges


def _settings(game: GameRules[Any], edges: dict[str, str]) -> list[str]:
    if not game.settings:
        return []
    out = ["", "### Table settings", "",
           "Where approved text reads two ways and neither is absurd, the house's approved "
           "reading is configuration, `[table] <setting>` in the table's config; every result "
           "says the reading it was settled under (`rules`, docs/mqtt.md).", "",
           "| setting | clause | bet | value | meaning | house edge (8 decks) |",
           "|---|---|---|---|---|---|"]
    for st in game.settings:
        for value, (meaning, _) in st.readings.items():
            default = f" (default, {st.decision})" if value == st.default else ""
            out.append(f"| `{st.key}` | {st.clause} | `{st.bet}` | `\"{value}\"`{default} | "
                       f"{meaning} | {edges.get(f'{st.bet} {st.key}={value}', '')} |")
    return out


def _offer_matrix(game: GameRules[Any]) -> list[str]:
    layouts = list(game.layouts)
    names: list[str] = []
    for layout in layouts:
        names += [n for n in game.offered_names(layout) if n not in names]
    out = ["| bet | " + " | ".join(layouts) + " |", "|---|" + "---|" * len(layouts)]
    for name in names:
        cells = ["x" if name in game.offered_names(lay) else "" for lay in layouts]
        out.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return out


def _pay_tables(game: GameRules[Any], edges: dict[str, str]) -> list[str]:
    out = ["| bet | clause | layouts | pay line | pays | house edge (8 decks) |",
           "|---|---|---|---|---|---|"]
    seen: set[tuple[str, str]] = set()
    for rule in game.bets:
        if (rule.bet, rule.clause) in seen:
            continue
        seen.add((rule.bet, rule.clause))
        layouts = ", ".join(sorted(rule.layouts))
        for i, line in enumerate(rule.pay_lines):
            first = i == 0
            out.append(f"| {'`' + rule.bet + '`' if first else ''} | {rule.clause if first else ''}"
                       f" | {layouts if first else ''} | {line.label} | {line.odds} | "
                       f"{edges.get(rule.bet, '') if first else ''} |")
    return out


def _dice_pay_tables(game: GameRules[Any], edges: dict[str, str]) -> list[str]:
    out = []
    for layout, info in game.layouts.items():
        out += ["", f"#### Appendix {layout}: {info.note}", "",
                "| bet | pay line | pays | house edge |", "|---|---|---|---|"]
        for rule in game.offered(layout):
            for i, line in enumerate(rule.pay_lines):
                out.append(f"| {'`' + rule.bet + '`' if i == 0 else ''} | {line.label} | "
                           f"{line.odds} | {edges.get(rule.bet, '') if i == 0 else ''} |")
    return out


def _insurance(edges: dict[str, str]) -> list[str]:
    out = ["", "### Insurance Plus Pay Table (4.1.8)", "",
           "Points are those of the insured hand, then the other hand, at the window. "
           "Rows marked *tie pays* win on the tie of 4.2.1.", "",
           "| bet | window | insured hand | other hand | pays | tie | house edge when offered |",
           "|---|---|---|---|---|---|---|"]
    for row in insurance_plus.ROWS:
        ins, other = row.label.split(": ")[1].split(" vs ")
        key = f"{row.bet} {row.window} {row.odds} ({ins} vs {other})"
        out.append(f"| `{row.bet}` | {row.window} | {ins} | {other} | {row.odds} | "
                   f"{'tie pays' if row.tie_pays else 'push'} | {edges.get(key, '')} |")
    out += ["", "Stake limits (3.12.2): each offer at most the Original Bet on the insured hand; "
            "a 10 to 1 offer also at most 25% of the table maximum."]
    return out


def _game(game: GameRules[Any]) -> list[str]:
    edges = _edges(game)
    out = [f"## {game.title} (`{game.id}`)", "", f"Document: {game.document}.", ""]
    if game.decks:
        out.append(f"Decks: {game.decks[0]} to {game.decks[1]} (clause {game.decks_clause}).")
    out += [f"Layouts (clause {game.layouts_clause}): "
            + ", ".join(f"{a}" + (f" ({lay.positions} positions)" if lay.positions else
                                  f" ({lay.note})") for a, lay in game.layouts.items()) + ".",
            "", "### Bets offered per layout", ""]
    out += _offer_matrix(game)
    out += ["", "### Pay tables", ""]
    out += _dice_pay_tables(game, edges) if game.kind == "dice" else _pay_tables(game, edges)
    if game.has_insurance:
        out += _insurance(edges)
    out += _settings(game, edges)
    out += ["", "### Irregularities (section 5)", "",
            "| clause | code | consequence | seen by | what |", "|---|---|---|---|---|"]
    out += [f"| {i.clause} | `{i.code}` | {i.consequence} | {i.detected_by} | {i.summary} |"
            for i in game.irregularities]
    out += ["", "### Decisions on ambiguous text", ""]
    out += [f"- **{d.id}** ({d.clause}): {d.question} **Decision:** {d.decision} "
            f"*Why:* {d.reason}" for d in game.decisions]
    return [*out, ""]


def render_games_md() -> str:
    out = [
        "# Games, layouts, bets and pays",
        "",
        "Generated by `tabled rules docs` from the rules engine (`daemon/games/`). Do not edit:",
        "a test fails when this file and the engine disagree.",
        "",
        "Bet names are the public contract of the `results` topic. House edges are exact "
        "(`tabled rules par-sheet`), per unit staked with pushes counted as staked, at 8 decks.",
        "",
    ]
    for game in GAMES.values():
        out += _game(game)
    return "\n".join(out)

"""No code outside daemon/games/ and the table kinds (daemon/round/kinds.py) branches on a
game's id or kind (issue 27): a per-game fact is declared in its game module, a per-kind
one in its TableKind, so adding a game touches daemon/games/ only. Before, results.py,
cli.py, config.py, service.py, hil/ and the display each kept their own copy."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from daemon.games import GAMES

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("daemon", "hil", "bench")
# Where per-game and per-kind facts are declared, and so may be keyed by id or kind.
OWNERS = ("daemon/games/", "daemon/round/kinds.py")


def _of_a_game(node: ast.AST, attr: str) -> bool:
    """``<something game-like>.<attr>``: game.kind, self.game.id, get_game(g).kind, ..."""
    return isinstance(node, ast.Attribute) and node.attr == attr and \
        "game" in ast.unparse(node.value).lower()


def _strings(node: ast.AST) -> list[str]:
    """A string constant, or those of a tuple, list or set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _looked_up_by_id(node: ast.AST) -> bool:
    """``table[game.id]`` or ``table.get(game.id, ...)``: a table keyed by game id."""
    if isinstance(node, ast.Subscript):
        return _of_a_game(node.slice, "id")
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr == "get" and bool(node.args) and _of_a_game(node.args[0], "id")


def game_branches(source: str, game_ids: frozenset[str]) -> list[str]:
    """Each place the source tests or keys on a game's id or kind, as "line: code"."""
    found: list[ast.AST] = []
    for node in ast.walk(ast.parse(source)):
        if _of_a_game(node, "kind"):
            found.append(node)  # any use of the kind: what it decides belongs to the kind
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            ids = [s for o in operands for s in _strings(o) if s in game_ids]
            if ids or (any(_of_a_game(o, "id") for o in operands)
                       and any(_strings(o) for o in operands)):
                found.append(node)
        elif isinstance(node, ast.Dict) and any(
                k is not None and set(_strings(k)) & game_ids for k in node.keys):
            found.append(node)  # a table keyed by game id
        elif _looked_up_by_id(node) or (isinstance(node, ast.MatchValue)
                                        and set(_strings(node.value)) & game_ids):
            found.append(node)
    return [f"{n.lineno}: {ast.unparse(n)}" for n in found]  # type: ignore[attr-defined]


IDS = frozenset(GAMES)


@pytest.mark.parametrize("code", [
    'if game.kind == "dice":\n    pass',
    'if self.game.id == "tiger-baccarat":\n    pass',
    'x = get_game(g).kind',
    'needed = DEVICES_NEEDED[game.kind]',
    'SIM_LAYOUT = {"tiger-buffalo": "P"}',
    'clause = VOID_RETURNS[ctx.game.id]',
    'layout = SIM_LAYOUT.get(game.id, "A")',
    'if game in ("tiger-buffalo", "tai-sai-open-cover"):\n    pass',
    'match game:\n    case "tai-sai-open-cover":\n        pass',
])
def test_the_check_finds_a_branch_on_a_game(code: str) -> None:
    assert game_branches(code, IDS)


@pytest.mark.parametrize("code", [
    'if game_id != game.id:\n    raise CheckpointError(game.id)',  # the same game, any game
    'if r.kind == "card":\n    pass',  # a journal record's kind
    'rig = SimRig(work, "tiger-buffalo", "P", 8)',  # a game chosen to run, not a branch
    'if table_kind(game).dice:\n    pass',
])
def test_the_check_leaves_what_is_not_a_branch_on_a_game(code: str) -> None:
    assert game_branches(code, IDS) == []


def test_no_game_id_or_kind_branch_outside_the_games_and_the_table_kinds() -> None:
    offenders = {}
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel.startswith(OWNERS):
                continue
            found = game_branches(path.read_text(encoding="utf-8"), IDS)
            if found:
                offenders[rel] = found
    assert offenders == {}

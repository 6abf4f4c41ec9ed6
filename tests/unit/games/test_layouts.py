"""Each layout's offered bets, against the "applicable ... on Appendices ..." lists as printed."""

from __future__ import annotations

import pytest

from daemon.games import get_game
from daemon.games.errors import UnknownGameError

# Copied from the documents' section 4 (and MBS 2.2): clause | bets | appendices as printed.
APPLICABILITY = {
    "tiger-buffalo": """
4.1.1 | player banker | A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q and R
4.1.2 | tie | A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q and R
4.1.3 | player_pair banker_pair | A, B, D, E, G, J, K, L, M and N
4.1.4 | big_tiger small_tiger | A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, Q and R
4.1.5 | big_buffalo small_buffalo | A, B, C, D, E, F, G, H, I, J, K, L, O, Q and R
4.1.6 | banker_big_7 banker_small_7 | P
4.1.7 | player_big_7 player_small_7 | P
4.1.8 | tiger_buffalo | C, F, H and I
4.1.9 | tiger_pair | P
4.1.10 | tiger_tie | O, Q and R
4.1.11 | wu_dalang | C, F, H, I and P
4.1.12 | tiger | P
4.1.13 | player_char_siu banker_char_siu | A, B, C, D, E, F, G, H, I, J, K, L, O, Q and R
""",
    "tiger-buffalo-insurance-plus": """
4.1.1 | player banker | A, B, C, D, E, F, G, H, I, J and K
3.11 | player_insurance banker_insurance | A, B, C, D, E, F, G, H, I, J and K
4.1.2 | tie | A, B, C, D, E, F, G, H, I, J and K
4.1.3 | player_pair banker_pair | A, B, D, E, G, J and K
4.1.4 | big_tiger small_tiger big_buffalo small_buffalo | A, B, C, D, E, F, G, H, I, J and K
4.1.5 | tiger_buffalo | C, F, H and I
4.1.6 | wu_dalang | C, F, H and I
4.1.7 | player_char_siu banker_char_siu | A, B, C, D, E, F, G, H, I, J and K
""",
    "tiger-baccarat": """
2.2 | player banker tie tiger big_tiger small_tiger tiger_pair tiger_tie | A, B, C, D, E, F, G and H
""",
}


def _expected(game: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in APPLICABILITY[game].strip().splitlines():
        _, bets, apps = (p.strip() for p in line.split("|"))
        for app in apps.replace(" and ", ", ").split(", "):
            out.setdefault(app, set()).update(bets.split())
    return out


LAYOUT_CLAUSE = {"tiger-buffalo": "rws_tb_2_1_1", "tiger-buffalo-insurance-plus": "rws_ip_2_1_1",
                 "tiger-baccarat": "mbs_2_2"}
CASES = [pytest.param(game, layout, bets, id=f"{LAYOUT_CLAUSE[game]}_appendix_{layout}")
         for game in APPLICABILITY for layout, bets in _expected(game).items()]


@pytest.mark.parametrize(("game", "layout", "bets"), CASES)
def test_offered_bets(game: str, layout: str, bets: set[str]) -> None:
    assert set(get_game(game).offered_names(layout)) == bets


@pytest.mark.parametrize("game", list(APPLICABILITY))
def test_layouts_are_exactly_the_appendices(game: str) -> None:
    assert set(get_game(game).layouts) == set(_expected(game))


@pytest.mark.parametrize(("game", "layout", "clause"), [
    pytest.param("tiger-buffalo", "S", "2.1.1", id="rws_tb_2_1_1_no_appendix_s"),
    pytest.param("tiger-buffalo-insurance-plus", "L", "2.1.1", id="rws_ip_2_1_1_no_appendix_l"),
    pytest.param("tiger-baccarat", "I", "2.2", id="mbs_2_2_no_appendix_i"),
])
def test_unknown_layout_names_the_clause(game: str, layout: str, clause: str) -> None:
    with pytest.raises(UnknownGameError, match=f"clause {clause}"):
        get_game(game).offered(layout)


@pytest.mark.parametrize(("game", "decks", "ok"), [
    pytest.param("tiger-buffalo", 4, True, id="rws_tb_2_2_1_four_decks"),
    pytest.param("tiger-buffalo", 10, True, id="rws_tb_2_2_1_ten_decks"),
    pytest.param("tiger-buffalo", 3, False, id="rws_tb_2_2_1_three_decks"),
    pytest.param("tiger-buffalo-insurance-plus", 11, False, id="rws_ip_2_2_1_eleven_decks"),
    pytest.param("tiger-baccarat", 0, False, id="mbs_2_1_zero_decks"),
    pytest.param("tiger-baccarat", 8, True, id="mbs_2_1_eight_decks"),
])
def test_deck_range(game: str, decks: int, ok: bool) -> None:
    g = get_game(game)
    if ok:
        assert g.check_decks(decks) == decks
    else:
        with pytest.raises(UnknownGameError, match="4 to 10 decks"):
            g.check_decks(decks)


def test_unknown_game_lists_the_approved_ones() -> None:
    with pytest.raises(UnknownGameError, match="tiger-buffalo, tiger-buffalo-insurance-plus"):
        get_game("blackjack")


def test_mbs_2_2_appendix_h_position_count_is_not_invented() -> None:
    """The text gives Appendix H no count; '1 to 8' was ours, not the document's (D20)."""
    layouts = get_game("tiger-baccarat").layouts
    assert layouts["H"].positions == ""
    assert "D20" in layouts["H"].note
    assert layouts["G"].positions == "1 to 8"
    assert layouts["D"].positions == "1 to 9"

"""Each baccarat bet's winning condition, written once and shared by every game that offers it.

A predicate maps a finished Coup to (result, pay-line key). Which pays a key gets, and
where a bet is offered, is data in each game's module.
"""

from __future__ import annotations

from collections.abc import Callable

from daemon.games.baccarat import BANKER, PLAYER, TIE, Coup
from daemon.games.outcome import Result, Verdict

WIN, LOSE, PUSH = Result.WIN, Result.LOSE, Result.PUSH


def _win_if(cond: bool, key: str = "win") -> Verdict:
    return (WIN, key) if cond else (LOSE, None)


def player(c: Coup) -> Verdict:
    """RWS 3.13-3.14, MBS 3.16: Original Bets are returned on a Tie."""
    if c.winner == TIE:
        return PUSH, None
    return _win_if(c.winner == PLAYER)


def banker(c: Coup) -> Verdict:
    """RWS 1.15 / 4.1.1: the line key tells a win on 6 points from other wins."""
    if c.winner == TIE:
        return PUSH, None
    return _win_if(c.winner == BANKER, "win_on_6" if c.banker_total == 6 else "win")


def tie(c: Coup) -> Verdict:
    return _win_if(c.winner == TIE)


def tiger_tie(c: Coup) -> Verdict:
    """RWS 1.34 / MBS 1.1.15: a tie on six."""
    return _win_if(c.winner == TIE and c.banker_total == 6)


def player_pair(c: Coup) -> Verdict:
    return _win_if(c.player_pair)


def banker_pair(c: Coup) -> Verdict:
    return _win_if(c.banker_pair)


def _tiger_pair(c: Coup, twin: bool) -> Verdict:
    if twin:
        return WIN, "twin"
    if c.player_pair and c.banker_pair:
        return WIN, "double"
    return _win_if(c.player_pair or c.banker_pair, "single")


def tiger_pair(c: Coup) -> Verdict:
    """MBS 1.1.14: single, double or twin; a Twin is two pairs of one rank (decision D2)."""
    return _tiger_pair(c, c.twin_pair)


def tiger_pair_by_value(c: Coup) -> Verdict:
    """RWS 1.33: a Twin is two pairs of the same value under RWS 3.2 (decision D2)."""
    return _tiger_pair(c, c.twin_value)


def _hand_wins_with(c: Coup, hand: str, total: int, cards: int | None) -> bool:
    hand_total, hand_cards = ((c.player_total, c.player_cards) if hand == PLAYER
                              else (c.banker_total, c.banker_cards))
    return (c.winner == hand and hand_total == total
            and (cards is None or hand_cards == cards))


def _cards_key(c: Coup, hand: str) -> str:
    n = c.player_cards if hand == PLAYER else c.banker_cards
    return "two_cards" if n == 2 else "three_cards"


def big_tiger(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, BANKER, 6, 3))


def small_tiger(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, BANKER, 6, 2))


def big_buffalo(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, PLAYER, 6, 3))


def small_buffalo(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, PLAYER, 6, 2))


def tiger(c: Coup) -> Verdict:
    """RWS 1.31 / 4.1.12, MBS 1.1.13 / 4.3: Banker wins on six; pays by the Banker's card count."""
    return _win_if(_hand_wins_with(c, BANKER, 6, None), _cards_key(c, BANKER))


def tiger_buffalo(c: Coup) -> Verdict:
    """RWS 1.32: either hand wins with six, on two or three cards."""
    return _win_if(_hand_wins_with(c, BANKER, 6, None) or _hand_wins_with(c, PLAYER, 6, None))


def banker_big_7(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, BANKER, 7, 3))


def banker_small_7(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, BANKER, 7, 2))


def player_big_7(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, PLAYER, 7, 3))


def player_small_7(c: Coup) -> Verdict:
    return _win_if(_hand_wins_with(c, PLAYER, 7, 2))


def wu_dalang(c: Coup) -> Verdict:
    """RWS 1.36: the Player Hand wins with a Point Total of 1 (decision D3 in docs/games.md)."""
    return _win_if(_hand_wins_with(c, PLAYER, 1, None))


def _char_siu(c: Coup, hand: str) -> Verdict:
    """RWS 1.3 / 1.20 / 4.1.13: wins by exactly one point on 7, 8 or 9; pays by total cards."""
    mine, theirs = ((c.player_total, c.banker_total) if hand == PLAYER
                    else (c.banker_total, c.player_total))
    return _win_if(mine in (7, 8, 9) and mine - theirs == 1, f"{c.total_cards}_cards")


def player_char_siu(c: Coup) -> Verdict:
    return _char_siu(c, PLAYER)


def banker_char_siu(c: Coup) -> Verdict:
    return _char_siu(c, BANKER)


PREDICATES: dict[str, Callable[[Coup], Verdict]] = {
    f.__name__: f
    for f in (
        player, banker, tie, tiger_tie, player_pair, banker_pair, tiger_pair, tiger_pair_by_value,
        big_tiger, small_tiger, big_buffalo, small_buffalo, tiger, tiger_buffalo,
        banker_big_7, banker_small_7, player_big_7, player_small_7,
        wu_dalang, player_char_siu, banker_char_siu,
    )
}

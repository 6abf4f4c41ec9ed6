"""The Baccarat Insurance Plus Pay Table (RWS Insurance Plus 3.11-3.17, 4.1.8, 4.2).

Offers are made at two decision points ("windows"): after the four initial cards, and
after the Player's third card. The rows below are the printed table.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from daemon.games.baccarat import BANKER, PLAYER, TIE, Coup, Deal
from daemon.games.odds import Odds, odds
from daemon.games.outcome import BetResult, Result

FOUR_CARDS = "four_cards"
PLAYER_THIRD_CARD = "player_third_card"
CLAUSE = "4.1.8"


@dataclass(frozen=True, slots=True)
class InsuranceRow:
    bet: str  # "player_insurance" | "banker_insurance"
    window: str
    insured_points: frozenset[int]  # points of the insured hand at the window
    other_points: frozenset[int]  # points of the other hand at the window
    odds: Odds
    tie_pays: bool = False  # the starred rows: 4.2.1 a and b

    @property
    def label(self) -> str:
        return (f"{self.bet} {self.window}: {_span(self.insured_points)} vs "
                f"{_span(self.other_points)}")


def _pts(spec: str) -> frozenset[int]:
    lo, _, hi = spec.partition("-")
    return frozenset(range(int(lo), int(hi or lo) + 1))


def _span(points: frozenset[int]) -> str:
    lo, hi = min(points), max(points)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _row(bet: str, window: str, insured: str, other: str, text: str,
         tie_pays: bool = False) -> InsuranceRow:
    return InsuranceRow(bet, window, _pts(insured), _pts(other), odds(text), tie_pays)


PI, BI = "player_insurance", "banker_insurance"
ROWS: tuple[InsuranceRow, ...] = (
    # After Four Cards Exposed: Player Insurance Bets (Player points, Banker points)
    _row(PI, FOUR_CARDS, "5", "4", "3 to 2"),
    _row(PI, FOUR_CARDS, "6", "0-5", "5 to 2"),
    _row(PI, FOUR_CARDS, "7", "0-5", "4 to 1"),
    # After Player's 3rd Card Exposed: Player Insurance Bets
    _row(PI, PLAYER_THIRD_CARD, "5", "0-4", "3 to 2"),
    _row(PI, PLAYER_THIRD_CARD, "6", "0-5", "5 to 2"),
    _row(PI, PLAYER_THIRD_CARD, "7", "0-6", "4 to 1"),
    _row(PI, PLAYER_THIRD_CARD, "8", "0-6", "10 to 1"),
    _row(PI, PLAYER_THIRD_CARD, "9", "0-6", "10 to 1", tie_pays=True),
    # After Four Cards Exposed: Banker Insurance Bets (Banker points, Player points)
    _row(BI, FOUR_CARDS, "4", "0-3", "3 to 2"),
    _row(BI, FOUR_CARDS, "5", "0-4", "3 to 2"),
    _row(BI, FOUR_CARDS, "6", "0-5", "5 to 2"),
    _row(BI, FOUR_CARDS, "7", "0-5", "4 to 1"),
    # After Player's 3rd Card Exposed: Banker Insurance Bets
    _row(BI, PLAYER_THIRD_CARD, "1-6", "0", "10 to 1", tie_pays=True),
    _row(BI, PLAYER_THIRD_CARD, "1", "1", "6 to 1"),
    _row(BI, PLAYER_THIRD_CARD, "2-6", "1", "10 to 1"),
    _row(BI, PLAYER_THIRD_CARD, "3-6", "2", "4 to 1"),
    _row(BI, PLAYER_THIRD_CARD, "4", "3", "5 to 2"),
)

# 3.12.2: per offer, the total insurance bet is at most the Original Bet on the insured
# hand; a 10 to 1 insurance is further capped at 25% of the table's maximum limit.
STAKE_LIMIT_OF_ORIGINAL = Fraction(1)
TEN_TO_ONE_LIMIT_OF_TABLE_MAX = Fraction(1, 4)


@dataclass(frozen=True, slots=True)
class InsuranceOffer:
    row: InsuranceRow

    @property
    def bet(self) -> str:
        return self.row.bet

    @property
    def window(self) -> str:
        return self.row.window

    def max_stake(self, original_bet: Fraction, table_max: Fraction) -> Fraction:
        """3.12.2: the most a player may put on this offer."""
        cap = original_bet * STAKE_LIMIT_OF_ORIGINAL
        if self.row.odds.ratio == 10:
            cap = min(cap, table_max * TEN_TO_ONE_LIMIT_OF_TABLE_MAX)
        return cap

    def as_dict(self) -> dict[str, str]:
        return {"bet": self.bet, "window": self.window, "odds": str(self.row.odds),
                "clause": CLAUSE}


def _matching(window: str, player_pts: int, banker_pts: int) -> list[InsuranceOffer]:
    out = []
    for row in ROWS:
        if row.window != window:
            continue
        insured, other = ((player_pts, banker_pts) if row.bet == PI
                          else (banker_pts, player_pts))
        if insured in row.insured_points and other in row.other_points:
            out.append(InsuranceOffer(row))
    return out


def offers_at(window: str, player_points: int, banker_points: int,
              deal_continues: bool) -> list[InsuranceOffer]:
    """Offers for a window given the points then; none if no card follows (decision D8)."""
    return _matching(window, player_points, banker_points) if deal_continues else []


def offers_for_deal(d: Deal, *, squeeze_waiver: bool = False) -> list[InsuranceOffer]:
    """The offers open now, for a partial deal that has just reached a window."""
    p, b = d.player, d.banker
    if len(p) == 2 and len(b) == 2:
        pt, bt = d.totals()
        return offers_at(FOUR_CARDS, pt, bt, not d.complete)
    if len(p) == 3 and len(b) == 2 and not squeeze_waiver:
        pt, bt = d.totals()
        return offers_at(PLAYER_THIRD_CARD, pt, bt, not d.complete)
    return []


def offers_for_coup(c: Coup, *, squeeze_waiver: bool = False) -> list[InsuranceOffer]:
    """Every offer a finished coup passed through, in order (for settlement and par sheets)."""
    pi, bi = c.player_initial, c.banker_initial
    first = offers_at(FOUR_CARDS, pi, bi, c.total_cards > 4)
    if c.player_cards == 3 and not squeeze_waiver:
        # The window after the Player's third card is open only if the Banker then draws,
        # which a finished coup shows as a three-card Banker Hand.
        return first + offers_at(PLAYER_THIRD_CARD, c.player_total, bi, c.banker_cards == 3)
    return first


LATE_OFFER_CLAUSE = "5.13.1"


def settle_offer(offer: InsuranceOffer, c: Coup, *, late: bool = False) -> BetResult:
    """3.11, 3.17, 4.2.1 (decision D9). ``late``: the Dealer neglected the offer and the
    Pit made it before an outcome (5.13.1), so the total payout on the window's Insurance
    Bets is capped at the Original Bet; the cap goes out with the result."""
    insured = PLAYER if offer.bet == PI else BANKER
    if c.winner == TIE:
        result = Result.WIN if offer.row.tie_pays else Result.PUSH
    else:
        result = Result.LOSE if c.winner == insured else Result.WIN
    won = result is Result.WIN
    return BetResult(offer.bet, result, offer.row.odds if won else None,
                     offer.row.label if won else None, CLAUSE, offer.window,
                     LATE_OFFER_CLAUSE if late else None)

"""Technical interruption: the table rebuilt from a real journal, and the open round
resolved by the game's own clause (RWS 5.4.1/5.4.2, MBS 5.17.1/5.17.2)."""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path
from typing import Any

import pytest

from daemon.games import get_game
from daemon.mqtt.wire import results_payload
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, Effect, Record, RoundResult
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.recovery import restore
from daemon.round.tai_sai import TaiSaiTable
from daemon.store.journal import Journal
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.unit.round.journalling import journal_effects, published_results

DECKS = 8


class Harness:
    """A table whose effects are journalled as the service journals them."""

    def __init__(self, path: Path, game: str, layout: str, top: list[str]) -> None:
        self.path, self.game, self.layout = path, game, layout
        cards = [c for _ in range(DECKS) for c in fp.INVENTORY_ORDER]
        random.Random(3).shuffle(cards)
        for i, c in enumerate(top):
            j = cards.index(c, i)
            cards[i], cards[j] = cards[j], cards[i]
        self.cards, self.draws = cards, 0
        self.journal = Journal(path)
        self.table = self.new_table()
        self.apply(self.table.shuffle_complete(fp.ShuffleComplete(
            5, DECKS, fp.inventory_of(cards), 0, True, fp.commitment(5, bytes(16), cards))))
        self.apply(self.table.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE)))

    def new_table(self) -> BaccaratTable:
        ids = itertools.count(1)
        return BaccaratTable("t1", get_game(self.game), self.layout, DECKS,
                             clock=lambda: 1_764_000_000.0, new_round_id=lambda: f"r{next(ids)}")

    def apply(self, effects: list[Effect]) -> list[Effect]:
        return journal_effects(self.journal, effects)

    def draw(self, n: int) -> None:
        for _ in range(n):
            self.draws += 1
            self.apply(self.table.card_drawn(sp.CardDrawn(
                self.draws, self.cards[self.draws - 1], 99, 0xC0FFEE, False, False)))

    def restart(self) -> tuple[BaccaratTable, list[Effect]]:
        """Power loss: the process dies; a new one opens the journal and restores."""
        self.journal.close()
        self.journal = Journal(self.path)
        self.table = self.new_table()
        return self.table, self.apply(restore(self.table, self.journal.records()))


def results(effects: list[Effect]) -> list[dict[str, Any]]:
    return [results_payload(e.facts) for e in effects if isinstance(e, RoundResult)]


def alerts(effects: list[Effect]) -> list[str]:
    return [e.clause for e in effects if isinstance(e, Alert)]


TOP = ["7S", "2H", "7D", "3C", "KS", "4H"]


def test_rws_tb_5_4_2_restart_during_betting_voids(tmp_path: Path) -> None:
    h = Harness(tmp_path / "j.db", "tiger-buffalo", "A", TOP)
    h.apply(h.table.open_betting())
    table, effects = h.restart()
    [result] = results(effects)
    assert result["status"] == "void" and result["void_reason"]["clause"] == "5.4.2"
    assert table.state == "idle" and table.shoe is not None


def test_rws_tb_5_4_2_restart_after_two_cards_voids(tmp_path: Path) -> None:
    h = Harness(tmp_path / "j.db", "tiger-buffalo", "A", TOP)
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.draw(2)
    _, effects = h.restart()
    assert results(effects)[0]["void_reason"]["clause"] == "5.4.2"


def test_rws_tb_5_4_1_restart_after_the_third_card_continues(tmp_path: Path) -> None:
    h = Harness(tmp_path / "j.db", "tiger-buffalo", "A", TOP)
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.draw(3)  # 7S 2H 7D: Player Pair decided
    table, effects = h.restart()
    assert alerts(effects) == ["5.4.1"] and results(effects) == []
    assert table.state == "dealing"
    assert Record("next_card", {"needed": "banker_card_2"}, "r1") in effects
    h.draw(3)  # the deal goes on where it stopped
    [result] = published_results(h.journal)
    assert result["status"] == "valid" and result["seq"] == 1
    assert [c["card"] for c in result["cards"]][:3] == ["7S", "2H", "7D"]


@pytest.mark.parametrize(("cards", "clause"), [
    pytest.param(0, "5.17.1", id="mbs_5_17_1_restart_during_betting_offers_withdrawal"),
    pytest.param(2, "5.17.1", id="mbs_5_17_1_no_outcome_offers_withdrawal_and_continues"),
    pytest.param(3, "5.17.2", id="mbs_5_17_2_outcome_established_continues"),
])
def test_mbs_restart_concludes_the_round(tmp_path: Path, cards: int, clause: str) -> None:
    h = Harness(tmp_path / "j.db", "tiger-baccarat", "A", TOP)
    h.apply(h.table.open_betting())
    if cards:
        h.apply(h.table.close_betting())
        h.draw(cards)
    table, effects = h.restart()
    assert alerts(effects) == [clause] and results(effects) == []
    assert table.state == ("dealing" if cards else "betting_open")


def test_killed_between_last_card_and_result_settles_at_once(tmp_path: Path) -> None:
    h = Harness(tmp_path / "j.db", "tiger-buffalo", "P", ["9S", "2H", "KH", "3D"])
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.draw(3)
    # the fourth card is journalled, then the process dies before the result is recorded
    msg = sp.CardDrawn(4, "3D", 99, 0xC0FFEE, False, False)
    effects = h.table.card_drawn(msg)
    h.apply([e for e in effects if isinstance(e, Record)])
    _, effects = h.restart()
    [result] = results(effects)
    assert result["status"] == "valid" and result["winner"] == "player"


def test_no_open_round_restores_the_shoe_only(tmp_path: Path) -> None:
    h = Harness(tmp_path / "j.db", "tiger-buffalo", "P", ["9S", "2H", "KH", "3D"])
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.draw(4)
    table, effects = h.restart()
    assert effects == [] and table.state == "idle"
    assert table.shoe is not None and table.shoe.drawn == ["9S", "2H", "KH", "3D"]
    table.open_betting()  # the table can carry on with the same shoe


class TaiSaiHarness:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.journal = Journal(path)
        self.table = self.make()

    @staticmethod
    def make() -> TaiSaiTable:
        return TaiSaiTable("ts-1", get_game("tai-sai-open-cover"), "E",
                           clock=lambda: 1_764_000_000.0, new_round_id=lambda: "r1")

    def apply(self, effects: list[Effect]) -> list[Effect]:
        return journal_effects(self.journal, effects)

    def restart(self) -> tuple[Any, list[Effect]]:
        self.journal.close()
        self.journal = Journal(self.path)
        self.table = self.make()
        return self.table, self.apply(restore(self.table, self.journal.records()))


def test_tai_sai_5_4_2_restart_before_the_dice_rest_voids(tmp_path: Path) -> None:
    from firmware_protocols import tumbler as tp  # noqa: PLC0415

    h = TaiSaiHarness(tmp_path / "j.db")
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.apply(h.table.activated(tp.Activated(1, True)))
    h.apply(h.table.tumble(tp.Tumble(1)))
    _, effects = h.restart()
    assert results(effects)[0]["void_reason"]["clause"] == "5.4.2"


def tumbled(tmp_path: Path) -> TaiSaiHarness:
    """A round whose dice have tumbled three times after "No more Bets", not yet at rest."""
    from firmware_protocols import tumbler as tp  # noqa: PLC0415

    h = TaiSaiHarness(tmp_path / "j.db")
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.apply(h.table.command_answered("tumbler", tp.Arm(0, True)))  # the arm confirmed
    h.apply(h.table.activated(tp.Activated(1, True)))
    for n in (1, 2, 3):
        h.apply(h.table.tumble(tp.Tumble(n)))
    return h


def test_tai_sai_5_4_1_restart_after_the_dice_rest_settles(tmp_path: Path) -> None:
    from firmware_protocols import tumbler as tp  # noqa: PLC0415

    h = tumbled(tmp_path)
    settled = h.table.settled(tp.Settled((2, 5, 6), (0, 0, 0), (1, 1, 1), 97))
    h.apply([e for e in settled if isinstance(e, Record)])  # killed before the result
    table, effects = h.restart()
    [result] = results(effects)
    assert result["status"] == "valid" and result["dice"] == [2, 5, 6]
    assert alerts(effects) == ["5.4.1"] and table.state == "idle"


def test_tai_sai_5_14_unread_dice_still_wait_for_the_pit_after_a_restart(tmp_path: Path
                                                                         ) -> None:
    from firmware_protocols import tumbler as tp  # noqa: PLC0415

    h = tumbled(tmp_path)
    h.apply(h.table.settled(tp.Settled((0, 5, 6), (0, 0, 0), (1, 1, 1), 97)))
    table, effects = h.restart()
    assert results(effects) == [] and alerts(effects) == ["5.14"]  # not 5.4.1: no outcome
    assert table.state == "tumbling"
    assert results(h.apply(table.void_round("camera failed", "sup")))[0][
        "void_reason"]["clause"] == "5.14"


def test_tai_sai_5_5_3_early_activation_survives_a_restart(tmp_path: Path) -> None:
    from firmware_protocols import tumbler as tp  # noqa: PLC0415

    h = TaiSaiHarness(tmp_path / "j.db")
    h.apply(h.table.open_betting())
    h.apply(h.table.activated(tp.Activated(1, False)))  # during betting
    h.apply(h.table.close_betting())
    settled = h.table.settled(tp.Settled((2, 5, 6), (0, 0, 0), (1, 1, 1), 97))
    assert results(settled)[0]["void_reason"]["clause"] == "5.5.3"


def test_rws_ip_5_4_1_restart_with_an_insurance_window_open_offers_it_again(tmp_path: Path
                                                                             ) -> None:
    """IP 5.13: a window open at the interruption is offered again with its offers, not
    dropped; the result then settles insurance that was offered."""
    h = Harness(tmp_path / "j.db", "tiger-buffalo-insurance-plus", "A",
                ["3S", "2H", "3C", "AD", "5S"])
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.draw(4)  # P 3S 3C (6), B 2H AD (3): the four-card window opens
    [offered] = [r for r in h.journal.records() if r.kind == "insurance_offered"]
    table, effects = h.restart()
    again = [e for e in effects if isinstance(e, Record) and e.kind == "insurance_offered"]
    assert [e.body["offers"] for e in again] == [offered.body["offers"]]
    assert table.insurance_window == "four_cards"
    h.apply(table.close_insurance("sup-1"))
    h.draw(1)
    [result] = published_results(h.journal)
    assert result["status"] == "valid"


def test_mbs_6_1_a_held_lost_read_stays_held_after_a_restart(tmp_path: Path) -> None:
    # MBS 5.17.1 continues a round with no outcome yet, so the hold is what is left.
    h = Harness(tmp_path / "j.db", "tiger-baccarat", "A", ["9S", "2H", "AS", "KD", "9C", "7C"])
    h.apply(h.table.open_betting())
    h.apply(h.table.close_betting())
    h.draw(2)
    h.draws += 1  # draw 3's read is lost
    h.draw(1)
    assert [r.kind for r in h.journal.records()].count("result_held") == 1
    table, effects = h.restart()
    assert results(effects) == [] and table.state == "dealing"
    assert any(isinstance(e, Alert) and e.clause == "6.1" for e in effects)
    # announced again, with its reads, for whoever plays the Pit (found by the crash suite:
    # a simulated Pit that had missed the first announcement waited forever)
    [again] = [e for e in effects if isinstance(e, Record) and e.kind == "result_held"]
    assert again.body["reads"] == [[1, "9S"], [2, "2H"], [3, None], [4, "KD"]]
    h.apply(table.reconstruct_deal("pit 3", ["9S", "2H", "AS", "KD"]))
    h.draw(2)
    [result] = published_results(h.journal)
    assert result["winner"] == "tie"


class _WheelTable(RoundLifecycle):
    """A table of a kind recovery.py has never heard of, with its own 5.4 clause."""

    PLAY = "spinning"

    def open_betting(self) -> list[Effect]:
        return [self._begin()]

    def close_betting(self) -> list[Effect]:
        return [self._close()]

    def void_round(self, reason: str, by: str,
                   code: str = "unresolved_irregularity") -> list[Effect]:
        return []

    def technical_interruption(self) -> list[Effect]:
        rnd = self.round
        return [] if rnd is None else [
            Alert("technical_interruption_no_outcome", "5.4.2",
                  f"{rnd.round_id} was {self.state}", rnd.round_id)]


def test_restore_asks_the_table_for_its_clause_never_its_class(tmp_path: Path) -> None:
    """restore() dispatched on isinstance(TaiSaiTable/BaccaratTable): any other table
    failed an assert. It folds the journal, then asks the table itself."""
    game = get_game("tai-sai-open-cover")
    journal = Journal(tmp_path / "j.db")
    table = _WheelTable("w-1", game, "E", lambda: 1_764_000_000.0, lambda: "r7")
    journal_effects(journal, table.open_betting() + table.close_betting())
    fresh = _WheelTable("w-1", game, "E", lambda: 1_764_000_000.0, lambda: "r8")
    assert restore(fresh, journal.records()) == [
        Alert("technical_interruption_no_outcome", "5.4.2", "r7 was spinning", "r7")]
    with pytest.raises(TypeError, match="technical_interruption"):
        type("NoClause", (RoundLifecycle,), {  # a table without its own clause is not one
            "PLAY": "x", "open_betting": _WheelTable.open_betting,
            "close_betting": _WheelTable.close_betting,
            "void_round": _WheelTable.void_round})("t", game, "E", time.time, str)

"""Published results: the round core's result facts, built from the engine's settlement, as
the wire layer publishes them, valid against the shipped schema."""

from __future__ import annotations

import json
from importlib.resources import files
from itertools import product
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon import results
from daemon.games import GAMES, get_game
from daemon.games.baccarat import deal
from daemon.games.cards import RANKS, SUITS, Card
from daemon.games.tai_sai import Throw
from daemon.mqtt.wire import result
from daemon.results import RoundContext
from daemon.security.signing import Keyring
from daemon.store.journal import Journal
from tests.keys import TABLE_SIGNER, sealed

SCHEMA = json.loads((files("daemon.mqtt") / "schemas" / "result.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA,
                                            format_checker=jsonschema.FormatChecker())
BACCARAT = [g for g in GAMES.values() if g.kind == "baccarat"]


def baccarat_result(*args: Any, **kw: Any) -> dict[str, Any]:
    return result.payload(results.baccarat_result(*args, **kw))


def tai_sai_result(*args: Any, **kw: Any) -> dict[str, Any]:
    return result.payload(results.tai_sai_result(*args, **kw))


def void_result(*args: Any, **kw: Any) -> dict[str, Any]:
    return result.payload(results.void_result(*args, **kw))


def ctx(game_id: str, layout: str) -> RoundContext:
    return RoundContext("bac-07", get_game(game_id), layout, "shoe-1", 1001, 1_764_000_000.0,
                        1_764_000_030.0)


def published(payload: dict[str, Any]) -> dict[str, Any]:
    return sealed({**payload, "round_id": "r-1", "seq": 1})


def complete(seq: list[Card]) -> list[Card]:
    n = 4
    while not deal(seq[:n]).complete:
        n += 1
    return seq[:n]


cards = st.builds(Card, st.sampled_from(RANKS), st.sampled_from(SUITS))


@settings(max_examples=150)
@given(st.lists(cards, min_size=6, max_size=6), st.sampled_from(BACCARAT), st.data())
def test_baccarat_results_match_the_schema(seq: list[Card], game: Any,
                                           data: st.DataObject) -> None:
    layout = data.draw(st.sampled_from(list(game.layouts)))
    payload = baccarat_result(ctx(game.id, layout), deal(complete(seq)), 1_764_000_031.0)
    VALIDATOR.validate(published(payload))
    assert {b["bet"] for b in payload["bets"] if "window" not in b} == {
        r.bet for r in game.offered(layout)}


@pytest.mark.parametrize("layout", ["A", "C", "E"])
def test_every_tai_sai_throw_matches_the_schema(layout: str) -> None:
    for dice in product(range(1, 7), repeat=3):
        payload = tai_sai_result(ctx("tai-sai-open-cover", layout), Throw.of(dice), 3,
                                 [True] * 3, 1_764_000_031.0)
        VALIDATOR.validate(published(payload))


@pytest.mark.parametrize(("game_id", "layout", "code", "returns"), [
    ("tiger-buffalo", "P", "card_not_of_set", "5.16"),
    ("tiger-buffalo-insurance-plus", "A", "not_shuffled", "5.16"),
    ("tiger-baccarat", "A", "insufficient_cards", "5.1.1"),
    ("tai-sai-open-cover", "E", "too_few_tumbles", "5.12"),
])
def test_void_results_return_every_bet_with_the_clause(game_id: str, layout: str,
                                                       code: str, returns: str) -> None:
    game = get_game(game_id)
    payload = void_result(ctx(game_id, layout), game.irregularity(code), 1_764_000_031.0,
                          detail="test")
    VALIDATOR.validate(published(payload))
    assert payload["void_reason"]["clause"] == game.irregularity(code).clause
    assert {b["result"] for b in payload["bets"]} == {"push"}
    # The games' own clause (RWS 5.16 / Tai Sai 5.12 in section 5, MBS 5.1.1), as published
    # before the per-game table in results.py was replaced by the games' declarations.
    assert {b["clause"] for b in payload["bets"]} == {returns}
    assert [b["bet"] for b in payload["bets"]] == list(game.offered_names(layout))


def test_insurance_windows_are_in_the_result() -> None:
    from daemon.games.cards import parse_cards  # noqa: PLC0415

    cards = deal(parse_cards(["2S", "KH", "2C", "3D", "5S", "6H"]))
    payload = baccarat_result(ctx("tiger-buffalo-insurance-plus", "A"), cards, 1_764_000_031.0)
    VALIDATOR.validate(published(payload))
    ins = [b for b in payload["bets"] if "window" in b]
    assert ins == [{"bet": "player_insurance", "result": "win", "pays": "10:1",
                    "line": "player_insurance player_third_card: 9 vs 0-6", "clause": "4.1.8",
                    "window": "player_third_card"}]


def test_journal_adds_round_id_seq_and_the_envelope_and_seals_it_once(tmp_path: Path) -> None:
    from daemon.games.cards import parse_cards  # noqa: PLC0415
    from daemon.round.records import Result  # noqa: PLC0415

    j = Journal(tmp_path / "j.db", sealer=TABLE_SIGNER.seal)
    facts = results.baccarat_result(ctx("tiger-baccarat", "A"),
                                    deal(parse_cards(["9S", "2H", "KH", "3D"])), 1_764_000_031.0)
    record = Result.of_facts(facts)
    final = j.record_result("r-42", result.payload(facts), "tables/bac-07/results",
                            record=record.body())
    stored = j.pending()[0].payload
    wire = json.loads(stored)
    VALIDATOR.validate(wire)
    Keyring.of([TABLE_SIGNER.key.public_key()]).verify(wire)
    assert {k: v for k, v in wire.items() if k not in ("sig", "journal_id", "msg_seq")} == final
    assert (wire["journal_id"], wire["msg_seq"], wire["seq"]) == (j.journal_id, 1, 1)
    assert j.messages(1, 1, 10)[0].payload == stored  # built and sealed once, at commit
    # The journal keeps its own record of the result, in its own names, not the payload:
    # the table folds it, and reads it back as it was decided.
    [kept] = j.records()
    assert (kept.kind, kept.round_id, kept.body) == ("result", "r-42", {"valid": True})
    assert Result.read(kept.body) == record


@pytest.mark.parametrize("mutate", [
    lambda p: p.update(status="void"),  # void without a reason
    lambda p: p.update(extra=1),  # an unknown key
    lambda p: p.update(seq=0),
    lambda p: p["cards"].append({"card": "1S", "hand": "player", "position": 1}),
    lambda p: p.pop("winner"),
    lambda p: p.update(settled_at="yesterday"),
    # contract v2: every payload is signed, numbered and says its journal and schema
    lambda p: p.pop("sig"),
    lambda p: p.pop("msg_seq"),
    lambda p: p.pop("journal_id"),
    lambda p: p.update(schema="tabled/result/1"),
    lambda p: p.update(replayed=True),  # v1's flag: a re-sent copy is now byte-identical
])
def test_the_schema_rejects_bad_results(mutate: Any) -> None:
    from daemon.games.cards import parse_cards  # noqa: PLC0415

    payload = published(baccarat_result(ctx("tiger-buffalo", "P"),
                                        deal(parse_cards(["9S", "2H", "KH", "3D"])),
                                        1_764_000_031.0))
    mutate(payload)
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(payload)


def test_rws_ip_5_13_1_payout_cap_is_published_and_matches_the_schema() -> None:
    from daemon.games.cards import parse_cards  # noqa: PLC0415

    d = deal(parse_cards(["2S", "KH", "KC", "4D", "5S", "4H"]))
    payload = baccarat_result(ctx("tiger-buffalo-insurance-plus", "A"), d, 1_764_000_031.0,
                              late_windows=frozenset({"four_cards"}))
    VALIDATOR.validate(published(payload))
    capped = [b for b in payload["bets"] if "payout_cap" in b]
    assert capped and {b["window"] for b in capped} == {"four_cards"}
    bad = published(payload)
    bad["bets"] = [{**capped[0], "payout_cap": {"limit": "table_max", "clause": "5.13.1"}}]
    with pytest.raises(jsonschema.ValidationError):
        VALIDATOR.validate(bad)


@pytest.mark.parametrize("reading", ["value", "rank"])
def test_rws_1_33_every_result_names_the_tables_twin_tiger_pair_reading(reading: str) -> None:
    """Issue 23, item 8 (D2): a consumer can tell which reading settled the Tiger Pair."""
    from daemon.games.cards import parse_cards  # noqa: PLC0415

    game = get_game("tiger-buffalo").configured({"twin_tiger_pair": reading})
    table = RoundContext("bac-07", game, "P", "shoe-1", 1001, 1_764_000_000.0,
                         1_764_000_030.0)
    cards = deal(parse_cards(["JS", "KH", "JC", "KD", "5S", "4H"]))
    valid = baccarat_result(table, cards, 1_764_000_031.0)
    void = void_result(table, game.irregularity("card_not_of_set"), 1_764_000_031.0)
    for payload in (valid, void):
        VALIDATOR.validate(published(payload))
        assert payload["rules"] == {"twin_tiger_pair": reading}
    pays = {b["bet"]: b["pays"] for b in valid["bets"]}
    assert pays["tiger_pair"] == {"value": "100:1", "rank": "20:1"}[reading]
    # A game whose text reads one way says so with an empty object.
    other = baccarat_result(ctx("tiger-baccarat", "A"), cards, 1_764_000_031.0)
    assert other["rules"] == {}
    VALIDATOR.validate(published(other))


def test_the_schema_knows_every_table_setting_and_reading() -> None:
    """The schema lists the readings the engine has, no more and no fewer."""
    props = SCHEMA["properties"]["rules"]["properties"]
    engine = {s.key: sorted(s.readings) for g in GAMES.values() for s in g.settings}
    assert {k: sorted(v["enum"]) for k, v in props.items()} == engine

"""Tai Sai 3.7, 3.8, 5.5, 5.14: what one activation's facts, counted by the controller,
make of a throw. The tumbler's own count is only cross-checked."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from daemon.games.tai_sai_open_cover import ThrowFacts, judge_throw

GOOD = ThrowFacts(activated_before_no_more_bets=False, armed=True, tumbles=3,
                  device_tumbles=3, flat=(True, True, True), dice=(3, 3, 5), confidence=97)
FLOOR = 90


def test_tai_sai_3_7_a_good_throw_is_a_result() -> None:
    v = judge_throw(GOOD, FLOOR)
    assert v.throw is not None and v.throw.dice == (3, 3, 5)
    assert v.void is None and v.pit is None


def test_tai_sai_5_5_1_one_message_claiming_three_tumbles_is_one_tumble() -> None:
    """One tumble seen is not three; but the tumbler numbered two the controller missed,
    so 5.5.1 is not proved either: the Pit's (issue 23)."""
    v = judge_throw(replace(GOOD, tumbles=1, device_tumbles=3), FLOOR)
    assert v.void is None and v.throw is None
    assert v.pit is not None and "counted 3" in v.pit


def test_tai_sai_5_5_1_a_count_seen_whole_below_three_voids() -> None:
    v = judge_throw(replace(GOOD, tumbles=2, device_tumbles=2), FLOOR)
    assert v.void is not None and v.void.clause == "5.5.1"


def test_tai_sai_5_5_1_voids_before_an_unreadable_die_goes_to_the_pit() -> None:
    v = judge_throw(replace(GOOD, tumbles=2, device_tumbles=2, dice=(0, 3, 5)), FLOOR)
    assert v.void is not None and v.void.clause == "5.5.1" and v.pit is None


def test_tai_sai_5_5_2_voids_before_an_unreadable_die_goes_to_the_pit() -> None:
    v = judge_throw(replace(GOOD, flat=(True, False, True), dice=(0, 3, 5)), FLOOR)
    assert v.void is not None and v.void.clause == "5.5.2"


def test_tai_sai_5_14_device_count_mismatch_goes_to_the_pit() -> None:
    v = judge_throw(replace(GOOD, device_tumbles=255), FLOOR)
    assert v.throw is None and v.pit is not None and "255" in v.pit


def test_tai_sai_5_14_confidence_under_the_floor_goes_to_the_pit() -> None:
    v = judge_throw(replace(GOOD, confidence=0), FLOOR)
    assert v.throw is None and v.pit is not None and "0% confidence" in v.pit
    assert judge_throw(replace(GOOD, confidence=FLOOR), FLOOR).throw is not None


def test_tai_sai_5_14_an_unconfirmed_arm_is_never_a_result() -> None:
    v = judge_throw(replace(GOOD, armed=False), FLOOR)
    assert v.throw is None and v.pit is not None and "arm" in v.pit


def test_tai_sai_5_5_3_early_activation_voids_first() -> None:
    v = judge_throw(replace(GOOD, activated_before_no_more_bets=True, tumbles=1,
                            flat=(False, False, False)), FLOOR)
    assert v.void is not None and v.void.clause == "5.5.3"


@given(early=st.booleans(), armed=st.booleans(), tumbles=st.integers(0, 300),
       device=st.integers(0, 255), flat=st.tuples(st.booleans(), st.booleans(), st.booleans()),
       dice=st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6)),
       confidence=st.integers(0, 100), floor=st.integers(1, 100))
def test_tai_sai_5_5_a_result_only_when_every_fact_is_good(
        early: bool, armed: bool, tumbles: int, device: int, flat: tuple[bool, bool, bool],
        dice: tuple[int, int, int], confidence: int, floor: int) -> None:
    f = ThrowFacts(early, armed, tumbles, device, flat, dice, confidence)
    v = judge_throw(f, floor)
    assert sum(x is not None for x in (v.void, v.pit, v.throw)) == 1
    # Fewer than three tumbles voids only if the tumbler numbered none the controller missed.
    voids = early or (tumbles < 3 and device <= tumbles) or not all(flat)
    assert (v.void is not None) == voids
    good = (not voids and armed and device == tumbles and 0 not in dice
            and confidence >= floor)
    assert (v.throw is not None) == good

"""Unauthenticated input and a session being taken over: bounded, and said once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from daemon.mqtt.takeover import SessionWatch
from daemon.security.authority import Untrusted


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_issue_12_4_replies_to_unauthenticated_input_are_rate_limited() -> None:
    clock = Clock()
    u = Untrusted(clock)
    assert sum(u.may_reply() for _ in range(1000)) == 20  # the burst, at one instant
    assert u.replies_dropped == 980
    clock.now += 2
    assert sum(u.may_reply() for _ in range(1000)) == 10  # then 5 a second


@given(st.lists(st.floats(min_value=0, max_value=5), max_size=300))
def test_issue_12_4_replies_never_exceed_burst_plus_rate(gaps: list[float]) -> None:
    clock = Clock()
    u = Untrusted(clock)
    sent = 0
    for gap in gaps:
        clock.now += gap
        sent += u.may_reply()
    assert sent <= u.reply_burst + u.replies_per_second * sum(gaps) + 1e-9


def test_issue_12_4_one_denied_alert_a_minute_which_counts_the_rest() -> None:
    clock = Clock()
    u = Untrusted(clock)
    for _ in range(500):
        u.note("denied")
    first = u.alert()
    assert first is not None and "denied 500" in first
    u.alerted()
    assert [u.alert() for _ in range(99)] == [None] * 99
    clock.now += 61
    u.note("bad_payload")
    later = u.alert()
    assert later is not None and "99 more held back" in later
    assert "bad_payload 1, denied 500" in later


def test_issue_25_3_the_alert_slot_is_taken_only_when_the_alert_is_stored() -> None:
    """A denied command's alert that could not be stored (a full disk, or once a text
    with no UTF-8 form) used the minute's slot: the next forgery raised none."""
    clock = Clock()
    u = Untrusted(clock)
    u.note("denied")
    assert u.alert() is not None  # not stored: no alerted()
    clock.now += 1
    u.note("denied")
    again = u.alert()
    assert again is not None and "denied 2" in again
    u.alerted()
    clock.now += 1
    assert u.alert() is None


def test_issue_12_3_a_session_dropped_again_and_again_is_alerted_once_a_window() -> None:
    clock = Clock()
    w = SessionWatch(clock, "tabled-bac-07")
    assert w.lost("reset") is None
    clock.now += 10
    assert w.lost("reset") is None
    clock.now += 10
    detail = w.lost("Disconnected during message iteration")
    assert detail is not None and "3 times in 60 s" in detail and "'tabled-bac-07'" in detail
    clock.now += 1
    assert w.lost("reset") is None  # once a window
    clock.now += 200
    assert w.lost("reset") is None  # the old drops have aged out


def test_a_session_lost_now_and_then_is_no_takeover() -> None:
    clock = Clock()
    w = SessionWatch(clock, "tabled-bac-07")
    for _ in range(50):
        clock.now += 31  # a broker restarted every half minute: never 3 in 60 s
        assert w.lost("broker restarted") is None

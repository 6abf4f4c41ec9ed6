"""The host's record of device events taken (protocol v3, issue 24): repeats dropped,
gaps named, a new boot starting again at 1."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from daemon.drivers.seen import Mark, Seen, Verdict


def test_first_contact_takes_the_event_as_it_is() -> None:
    assert Seen().judge("shoe", 7, 40, event=True) == Verdict(mark=Mark(7, 40))


def test_an_event_at_or_below_the_mark_of_its_boot_is_a_repeat() -> None:
    seen = Seen({"shoe": Mark(7, 40)})
    assert seen.judge("shoe", 7, 40, event=True).repeat
    assert seen.judge("shoe", 7, 3, event=True).repeat
    assert seen.judge("shoe", 7, 41, event=True) == Verdict(mark=Mark(7, 41))


def test_a_number_past_the_next_is_a_gap_of_the_numbers_between() -> None:
    seen = Seen({"tumbler": Mark(7, 4)})
    assert seen.judge("tumbler", 7, 9, event=True) == Verdict(lost=(5, 8), mark=Mark(7, 9))


def test_a_heartbeat_naming_a_later_event_than_the_mark_is_a_gap() -> None:
    """A heartbeat carries the number of the last event sent before it: the tail lost."""
    seen = Seen({"shoe": Mark(7, 4)})
    assert seen.judge("shoe", 7, 4, event=False) == Verdict()
    assert seen.judge("shoe", 7, 6, event=False) == Verdict(lost=(5, 6), mark=Mark(7, 6))


def test_a_new_boot_starts_at_one() -> None:
    seen = Seen({"shoe": Mark(7, 400)})
    assert seen.judge("shoe", 8, 1, event=True) == Verdict(mark=Mark(8, 1))
    assert seen.judge("shoe", 8, 3, event=True) == Verdict(lost=(1, 2), mark=Mark(8, 3))
    assert seen.judge("shoe", 8, 0, event=False) == Verdict()


@given(st.lists(st.integers(1, 40), max_size=80))
def test_any_arrival_order_takes_each_number_once_and_names_every_other_lost(
        arrivals: list[int]) -> None:
    seen, taken, lost = Seen({"d": Mark(1, 0)}), [], set()
    for n in arrivals:
        v = seen.judge("d", 1, n, event=True)
        if not v.repeat:
            assert v.mark is not None
            seen.take("d", v.mark)
            taken.append(n)
            if v.lost:
                lost |= set(range(v.lost[0], v.lost[1] + 1))
    assert taken == sorted(set(taken))  # each once, in order
    assert lost == set(range(1, max(taken, default=0) + 1)) - set(taken)

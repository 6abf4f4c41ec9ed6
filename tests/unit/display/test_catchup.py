"""The catch-up's bounds (issue 26): nothing asked of a table that is offline, at most
MAX_ASKS unanswered requests in a row, and asking again once the table is back."""

from __future__ import annotations

from daemon.consumers.catchup import MAX_ASKS, RETRY, CatchUp


def _wanting() -> CatchUp:
    c = CatchUp("t1")
    c.joined({"journal_id": "j" * 16, "as_of_msg_seq": 50,
              "shoe": {"loaded_msg_seq": 10, "hand": 4}}, results_in_shoe=0)
    return c


def _asked(c: CatchUp, start: float, seconds: float) -> int:
    n, now = 0, start
    while now < start + seconds:
        n += c.next_request(now) is not None
        now += 0.5
    return n


def test_an_offline_table_is_not_asked_and_is_asked_again_when_back() -> None:
    c = _wanting()
    c.status("offline", 3)
    assert _asked(c, 0, 60) == 0 and c.stalled() == "the table is offline"
    c.status("online", 4)
    assert c.stalled() is None and c.next_request(60) is not None


def test_unanswered_requests_stop_at_max_asks_until_a_new_session() -> None:
    c = _wanting()
    c.status("online", 3)
    assert _asked(c, 0, 100 * RETRY) == MAX_ASKS
    assert c.stalled() == f"the table answered none of {MAX_ASKS} replay requests"
    c.status("online", 3)  # the same session publishing its status again: still stopped
    assert c.next_request(1000) is None
    c.status("online", 4)  # restarted: asked again
    assert c.next_request(1000) is not None


def test_an_answer_resets_the_count() -> None:
    c = _wanting()
    for i in range(3 * MAX_ASKS):
        req = c.next_request(i * RETRY)
        assert req is not None, i
        c.answered({"type": "replay", "id": req["id"], "next_msg_seq": 11 + i, "error": None})
    assert c.stalled() is None

"""Replay requests come from anyone the broker lets publish: every field is checked,
and the rate is bounded for all requesters together."""

from __future__ import annotations

import json

import pytest

from daemon.mqtt import replay


def req(**kw: object) -> bytes:
    body = {"id": "q1", "reply_to": "display-7", "from_msg_seq": 10, **kw}
    return json.dumps({k: v for k, v in body.items() if v is not None}).encode()


def test_a_good_request() -> None:
    r = replay.parse(req(to_msg_seq=20, topics=["results"], journal_id="ab"))
    assert (r.first, r.last, r.topics, r.journal_id) == (10, 20, ("results",), "ab")
    assert replay.parse(req()).topics == replay.TOPICS


@pytest.mark.parametrize("payload", [
    b"not json", b"[1]", req(id=None), req(id="x" * 65), req(reply_to="a/b"),
    req(reply_to="#"), req(reply_to=""), req(from_msg_seq=None), req(from_msg_seq=0),
    req(from_msg_seq=True), req(from_msg_seq="5"), req(to_msg_seq=9),
    req(topics=[]), req(topics=["cmd"]), req(topics="results"), req(extra=1),
    req(journal_id=5), json.dumps({"id": "q", "reply_to": "r", "from_msg_seq": 1,
                                   "pad": "x" * 2000}).encode(),
])
def test_bad_requests_are_refused_as_bad_request(payload: bytes) -> None:
    with pytest.raises(replay.ReplayError) as e:
        replay.parse(payload)
    assert e.value.code == "bad_request"


def test_only_a_valid_reply_to_gets_an_answer() -> None:
    assert replay.head_of(req(from_msg_seq=0)) == replay.Head("display-7", None, None)
    assert replay.head_of(req(reply_to="../x")) is None
    assert replay.head_of(b"\xff") is None


def test_the_most_an_answer_can_send_is_its_range_up_to_the_bound() -> None:
    head = replay.head_of(req(from_msg_seq=690, to_msg_seq=695))
    assert head is not None and head.most(700) == 6
    assert replay.Head("a", 690, None).most(700) == 11
    assert replay.Head("a", 1, None).most(700) == replay.MAX_MESSAGES
    assert replay.Head("a", 800, None).most(700) == 0  # nothing yet: the marker only
    assert replay.Head("a", None, None).most(700) == 0  # refused as bad_request


def test_the_bucket_bounds_the_rate() -> None:
    now = [0.0]
    b = replay.Bucket(2.0, 5.0, clock=lambda: now[0])
    assert [b.take() for _ in range(7)] == [True] * 5 + [False] * 2
    now[0] += 1.0
    assert [b.take() for _ in range(3)] == [True, True, False]


def test_each_requester_has_its_share_and_all_together_the_tables() -> None:
    now = [0.0]
    fair = replay.Fair(clock=lambda: now[0])

    def served(name: str) -> bool:
        return fair.take(name) is not None

    assert sum(served("flood") for _ in range(100)) == replay.PER_BURST
    assert served("good")  # the flood took its own share, not everyone's
    now[0] += 10.0
    # Many names at once still get no more than the table's budget.
    assert sum(served(f"n{i}") for i in range(100)) == replay.BURST
    now[0] += 1.0
    assert served("good")  # a refused name's own share was not spent


def test_an_answers_messages_are_paid_by_its_requester_and_the_table() -> None:
    """Counting requests alone let one requester have 500 messages a second sent for it
    (issue 25): the most an answer can send is set aside at admission, and what it did
    not send is given back."""
    now = [0.0]
    fair = replay.Fair(clock=lambda: now[0])
    full = replay.MAX_MESSAGES

    def take(name: str, most: int = full) -> int | None:
        return fair.take(name, lambda: most)

    assert [take("flood") for _ in range(4)] == [full, full, None, None]  # its burst
    now[0] += 1.0  # a request's worth refilled, not a full answer's
    assert take("flood") is None
    assert take("flood", 10) == 10  # a small answer fits
    now[0] += full / replay.PER_MESSAGE_RATE
    assert take("flood") == full
    assert take("good") == full  # the flood's spending is its own
    fair.give_back("good", full - 10)  # it sent 10
    for _ in range(100):  # a 90-message answer a second: within its share
        now[0] += 1.0
        assert take("good") == full
        fair.give_back("good", full - 90)
    now[0] += 100.0
    n = 0
    while take(f"n{n}") is not None:  # many names, each with its own burst
        n += 1
    assert n == replay.MESSAGE_BURST // full  # the table's share ends it
    fair.give_back("n0", full)
    assert take("another") == full


def test_the_journal_is_read_at_most_at_the_request_rate() -> None:
    """``most`` reads the journal: a flooder whose messages are spent asked it on every
    request (4% of the daemon's time under a flood) while its request tokens were given
    back; a request refused for its messages now spends them."""
    now = [0.0]
    fair = replay.Fair(clock=lambda: now[0])
    reads = 0

    def most() -> int:
        nonlocal reads
        reads += 1
        return replay.MAX_MESSAGES

    for _ in range(1000):  # 10 s of 100 requests a second
        now[0] += 0.01
        fair.take("flood", most)
    assert reads <= replay.PER_BURST + 10 * replay.PER_RATE

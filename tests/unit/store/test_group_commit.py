"""Group commit (Journal.group): inputs that arrived together share one transaction and
one fsync, and each of them is still all or nothing. On a real SQLite file, read back
by a second connection (what a restart would find) and after a real SIGKILL."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.store.journal import DuplicateResultError, Journal, Publish
from tests.child import killed
from tests.journal_file import committed_kinds


def _commits(j: Journal) -> list[str]:
    seen: list[str] = []
    j._db.set_trace_callback(seen.append)
    return seen


def test_a_group_is_one_commit_and_nothing_of_it_is_visible_before(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    seen = _commits(j)
    with j.group():
        for n in range(3):
            with j.batch():
                j.append("card", {"n": n}, publish=(Publish("t/events", {"n": n}),))
        assert "card" not in committed_kinds(tmp_path / "j.db")  # not committed yet
    assert [s for s in seen if s in ("BEGIN IMMEDIATE", "COMMIT")] == [
        "BEGIN IMMEDIATE", "COMMIT"]
    assert committed_kinds(tmp_path / "j.db").count("card") == 3
    assert [json.loads(e.payload)["msg_seq"] for e in j.pending()] == [1, 2, 3]


def test_a_read_that_writes_nothing_begins_no_transaction(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    seen = _commits(j)
    with j.group():
        j.get_meta("session")
    assert not [s for s in seen if s.startswith(("BEGIN", "COMMIT", "SAVEPOINT"))]


def test_a_failed_unit_is_undone_alone_and_numbers_are_given_back(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.record_result("r1", {}, "t/results", record={})
    with j.group():
        j.append("card", {"n": 1}, publish=(Publish("t/events", {"n": 1}),))
        with pytest.raises(DuplicateResultError), j.batch():
            j.append("card", {"n": 2}, publish=(Publish("t/events", {"n": 2}),))
            j.record_result("r1", {}, "t/results", record={})  # the unit fails whole
        j.append("card", {"n": 3}, publish=(Publish("t/events", {"n": 3}),))
    assert [r.body.get("n") for r in j.records() if r.kind == "card"] == [1, 3]
    got = [json.loads(e.payload) for e in j.pending()]
    assert [(p.get("n"), p["msg_seq"]) for p in got] == [(None, 1), (1, 2), (3, 3)]


def test_an_error_outside_the_journal_keeps_the_inputs_already_complete(
        tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    with pytest.raises(ConnectionError), j.group():
        j.append("card", {"n": 1})
        with j.batch():
            j.append("card", {"n": 2})
            raise ConnectionError("the link failed midway through an input")
    assert [r.body["n"] for r in Journal(tmp_path / "j.db").records()] == [1]


def test_a_journal_error_in_a_group_drops_all_of_it_and_the_journal_goes_on(tmp_path: Path) -> None:
    j = Journal(tmp_path / "j.db")
    j.append("before", {})
    db = j._db
    with pytest.raises(Exception, match="journal"), j.group():
        j.append("card", {"n": 1}, publish=(Publish("t/events", {"n": 1}),))
        db.execute("PRAGMA query_only=1")  # the disk refuses: nothing of the group lands
        db.execute("INSERT INTO meta VALUES ('x', 'y')")
    db.execute("PRAGMA query_only=0")
    assert [r.kind for r in j.records()] == ["before"] and j.pending() == []
    j.append("after", {}, publish=(Publish("t/events", {"n": 2}),))
    assert [json.loads(e.payload)["msg_seq"] for e in j.pending()] == [1]  # given back


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=12))
def test_grouped_or_one_by_one_the_journal_is_the_same(
        tmp_path_factory: pytest.TempPathFactory, inputs: list[tuple[int, bool]]) -> None:
    """Each input: n messages, and whether it fails at its end. Applied in one group or
    one transaction each, what is stored is the same, message numbers included."""
    def run(path: Path, grouped: bool) -> list[tuple[str, str]]:
        j = Journal(path, clock=lambda: 1.0)
        j.journal_id = "same"  # the comparison is of what is stored, not of the ids

        def one(i: int, n: int, fail: bool) -> None:
            with pytest.raises(ValueError) if fail else contextlib.nullcontext(), j.batch():
                j.append("input", {"i": i}, publish=tuple(
                    Publish("t/events", {"i": i, "k": k}) for k in range(n)))
                if fail:
                    raise ValueError("refused")

        if grouped:
            with j.group():
                for i, (n, fail) in enumerate(inputs):
                    one(i, n, fail)
        else:
            for i, (n, fail) in enumerate(inputs):
                one(i, n, fail)
        out = [(r.kind, json.dumps(r.body)) for r in j.records()]
        out += [(e.topic, e.payload) for e in j.pending(limit=1000)]
        j.close()
        return out

    d = tmp_path_factory.mktemp("g")
    assert run(d / "grouped.db", True) == run(d / "single.db", False)


def test_a_kill_inside_a_group_leaves_none_of_it_and_after_it_all(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    Journal(path).append("before", {})
    child = (f"import os, signal; from daemon.store.journal import Journal, Publish\n"
             f"j = Journal({str(path)!r})\n"
             f"with j.group():\n"
             f"    for n in range(3):\n"
             f"        j.append('card', {{'n': n}}, publish=(Publish('t', {{'n': n}}),))\n"
             f"with j.group():\n"
             f"    j.append('card', {{'n': 3}})\n"
             f"    os.kill(os.getpid(), signal.SIGKILL)\n")
    killed(child)
    j = Journal(path)
    assert [r.body.get("n") for r in j.records()] == [None, 0, 1, 2]
    assert len(j.pending()) == 3

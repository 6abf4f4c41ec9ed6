"""The consumer-side check printed in docs/mqtt.md works: run exactly that code. It
takes only the canonical bytes, only on the topic of the table they name, and refuses
the poison corpus as data (ValueError), never by stopping (issues 25 and 26)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from daemon.security.signing import Signer
from tests.keys import STRANGER_KEY, TABLE_KEY
from tests.poison import corpus, genuine_foreign

DOC = Path(__file__).resolve().parents[2] / "docs" / "mqtt.md"
TOPIC = "tables/t1/results"


def documented_verify() -> Any:
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert code is not None, "docs/mqtt.md has no python block"
    scope: dict[str, Any] = {}
    exec(compile(code.group(1), str(DOC), "exec"), scope)
    return scope


def trusted(scope: dict[str, Any]) -> dict[str, Any]:
    raw = TABLE_KEY.public_key().public_bytes(serialization.Encoding.Raw,
                                              serialization.PublicFormat.Raw)
    return {scope["kid_of"](raw): TABLE_KEY.public_key()}


def test_the_documented_consumer_check_accepts_real_and_rejects_forged_payloads() -> None:
    scope = documented_verify()
    verify = scope["verify_tabled_payload"]
    body = {"type": "result", "table": "t1", "seq": 3, "winner": "tie", "note": "é",
            "replayed": True}
    wire = Signer(TABLE_KEY).seal(body).encode()
    assert verify(TOPIC, wire, trusted(scope)) == body
    assert verify("site/a/tables/t1/replay/to/me", wire, trusted(scope),
                  "site/a/tables") == body
    altered = json.loads(wire)
    altered["winner"] = "banker"
    for bad in (json.dumps(altered, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode(),
                Signer(STRANGER_KEY).seal(body).encode(),
                json.dumps(body, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False).encode()):
        with pytest.raises(ValueError, match=r"forged or altered|unknown key|unsigned"):
            verify(TOPIC, bad, trusted(scope))


def test_issue_26_the_documented_check_refuses_a_foreign_table_and_non_canonical_bytes(
        ) -> None:
    scope = documented_verify()
    verify = scope["verify_tabled_payload"]
    with pytest.raises(ValueError, match="signed for table 't2', published on "
                                         "'tables/t1/results'"):
        verify(TOPIC, genuine_foreign(TABLE_KEY, "t2"), trusted(scope))
    assert verify("tables/t2/results", genuine_foreign(TABLE_KEY, "t2"), trusted(scope))
    by_name = dict(corpus(TABLE_KEY, "t1", big=16))
    for name in ("duplicate key", "keys re-ordered", "whitespace added", "ASCII escapes"):
        with pytest.raises(ValueError, match="not the canonical bytes"):
            verify(TOPIC, by_name[name], trusted(scope))


@pytest.mark.parametrize(("name", "raw"), corpus(TABLE_KEY, "t1"),
                         ids=[n for n, _ in corpus(TABLE_KEY, "t1", big=1)])
def test_issue_25_3_the_documented_check_refuses_each_poison_as_data(name: str,
                                                                     raw: bytes) -> None:
    scope = documented_verify()
    with pytest.raises(ValueError):
        scope["verify_tabled_payload"](TOPIC, raw, trusted(scope))

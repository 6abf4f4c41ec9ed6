"""The consumer-side check printed in docs/mqtt.md works: run exactly that code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization

from daemon.signing import Signer
from tests.keys import STRANGER_KEY, TABLE_KEY

DOC = Path(__file__).resolve().parents[2] / "docs" / "mqtt.md"


def documented_verify() -> Any:
    code = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert code is not None, "docs/mqtt.md has no python block"
    scope: dict[str, Any] = {}
    exec(compile(code.group(1), str(DOC), "exec"), scope)
    return scope


def test_the_documented_consumer_check_accepts_real_and_rejects_forged_payloads() -> None:
    scope = documented_verify()
    raw = TABLE_KEY.public_key().public_bytes(serialization.Encoding.Raw,
                                              serialization.PublicFormat.Raw)
    trusted = {scope["kid_of"](raw): TABLE_KEY.public_key()}
    verify = scope["verify_tabled_payload"]
    body = {"type": "result", "seq": 3, "winner": "tie", "note": "é", "replayed": True}
    wire = Signer(TABLE_KEY).seal(body).encode()
    assert verify(wire, trusted) == body
    altered = json.loads(wire)
    altered["winner"] = "banker"
    for bad in (json.dumps(altered).encode(), Signer(STRANGER_KEY).seal(body).encode(),
                json.dumps(body).encode()):
        with pytest.raises(ValueError, match=r"forged or altered|unknown key|unsigned"):
            verify(bad, trusted)

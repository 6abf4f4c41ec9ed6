"""Issue 26: every payload schema describes its signature alike. correction.schema.json
(and command.schema.json) lacked the base64 pattern on ``sig.value`` that the others
have: a consumer validating with them took a signature of any text."""

from __future__ import annotations

import base64
import json
from importlib.resources import files
from typing import Any

import jsonschema

SCHEMAS = sorted((p.name, json.loads(p.read_text(encoding="utf-8")))
                 for p in files("daemon.mqtt").joinpath("schemas").iterdir()
                 if p.name.endswith(".schema.json"))


def _sig(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema["properties"]["sig"].items() if k != "$comment"}


def test_all_ten_schemas_describe_the_signature_alike() -> None:
    assert len(SCHEMAS) == 10, [n for n, _ in SCHEMAS]
    first = _sig(SCHEMAS[0][1])
    assert {n: _sig(s) for n, s in SCHEMAS} == dict.fromkeys((n for n, _ in SCHEMAS), first)


def test_sig_value_is_the_base64_of_64_bytes_in_every_schema() -> None:
    good = base64.b64encode(bytes(range(64))).decode()
    for name, schema in SCHEMAS:
        sig = schema["properties"]["sig"]
        jsonschema.validate({"alg": "Ed25519", "kid": "0" * 16, "value": good}, sig)
        for bad in ("not base64!", good[:-4], good + "AAAA"):
            try:
                jsonschema.validate({"alg": "Ed25519", "kid": "0" * 16, "value": bad}, sig)
            except jsonschema.ValidationError:
                continue
            raise AssertionError(f"{name} takes sig.value {bad!r}")

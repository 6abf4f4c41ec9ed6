"""The reference consumer of docs/mqtt.md applies a correction: fed every payload a real
table published in the Tai Sai 5.6 scenario (the daemon as its own process, a real
Mosquitto, the Pit's void_settled_round twice), it counts the corrections' numbers as no
gap in seq, and the rounds they correct read as void with the correction's reason."""

from __future__ import annotations

from pathlib import Path

from hil.runner import run_scenario
from hil.scenario import load_scenario
from tests.reliability.mqtt_doc import documented

SCENARIO = Path(__file__).resolve().parents[2] / "hil" / "scenarios" / \
    "tai-sai-damaged-dice-correction.json"


async def test_the_reference_consumer_applies_a_correction(tmp_path: Path) -> None:
    report = await run_scenario(load_scenario(SCENARIO), workdir=tmp_path, speed=50)
    assert report.ok, report.render()
    table = report.payloads[0][1]["table"]
    consumer = documented()["Consumer"](table, {})  # fed payloads already verified
    for _, payload in report.payloads:
        consumer.take(payload)
    fixes = [p for _, p in report.payloads if p.get("type") == "correction"]
    assert len(fixes) == 2
    jid = fixes[0]["journal_id"]
    # One sequence: results and corrections together never skip.
    numbered = sorted(seq for (j, seq) in consumer.results if j == jid)
    assert numbered == list(range(1, len(numbered) + 1))
    settled = consumer.settled(jid)
    assert [r["type"] for r in settled] == ["result"] * len(settled)
    voided = {f["corrects"]: f for f in fixes}
    for r in settled:
        if r["round_id"] in voided:
            assert r["status"] == "void"
            assert r["void_reason"] == voided[r["round_id"]]["void_reason"]
            assert r["void_reason"]["clause"] == "5.6"
    assert {r["round_id"] for r in settled if r["status"] == "void"} >= set(voided)
    originals = [p for _, p in report.payloads if p.get("type") == "result"
                 and p["round_id"] in voided]
    assert originals and all(p["status"] == "valid" for p in originals)  # never changed

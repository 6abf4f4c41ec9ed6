"""The Markdown specs beside the codecs are generated from them and must match."""

from __future__ import annotations

from pathlib import Path

import pytest

from firmware_protocols import spec
from firmware_protocols.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("device", list(spec.DEVICES))
def test_spec_is_up_to_date(device: str) -> None:
    path = ROOT / "firmware_protocols" / f"{device}.md"
    assert path.read_text(encoding="utf-8") == spec.render(device), (
        f"{path} is out of date: run 'tabled protocols docs'")


def test_every_message_has_an_example() -> None:
    for _, _, messages, _ in spec.DEVICES.values():
        for cls in messages:
            assert cls in EXAMPLES

"""The consumer that docs/mqtt.md documents, run from its own python blocks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

DOC = Path(__file__).resolve().parents[2] / "docs" / "mqtt.md"


def documented() -> dict[str, Any]:
    """Every python block of docs/mqtt.md, run in one namespace."""
    scope: dict[str, Any] = {}
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S):
        exec(compile(block, str(DOC), "exec"), scope)
    return scope

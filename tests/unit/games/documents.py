"""The rule documents' text, as the tests quote it."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RULES = ROOT / "docs" / "rules"
DOCUMENT = {
    "tiger-buffalo": "tiger-buffalo-rws-v4.txt",
    "tiger-buffalo-insurance-plus": "tiger-buffalo-insurance-plus-rws.txt",
    "tiger-baccarat": "tiger-baccarat-mbs-v3.txt",
    "tai-sai-open-cover": "tai-sai-open-cover-rws-v5.txt",
}


def text(game: str) -> str:
    return (RULES / DOCUMENT[game]).read_text(encoding="utf-8")

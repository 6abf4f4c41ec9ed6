"""The engine against the rule documents themselves: every clause and every odds it cites exist.

The documents are kept in docs/rules (copied from shared/rules, the approved source).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest

from daemon.games import GAMES, insurance_plus
from daemon.games.docs import render_games_md
from tests.unit.games.documents import DOCUMENT, ROOT, RULES, text

SHARED = ROOT.parent / "shared" / "rules"
SUMS = ROOT / "docs" / "rules.sha256"


def _sums_of(directory: Path) -> dict[str, str]:
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest()
            for f in sorted(directory.iterdir()) if f.is_file()}


def rules_copy_problems(rules: Path, shared: Path, sums: Path) -> list[str]:
    """What differs between docs/rules and the approved documents. Beside shared/rules (the
    approved source) both docs/rules and the record of digests (``sha256sum`` format) are
    compared with it; on a clone alone, docs/rules is checked against the record."""
    recorded = {}
    for line in sums.read_text(encoding="ascii").splitlines():
        digest, _, name = line.partition("  ")
        recorded[name] = digest
    problems = []
    if shared.is_dir():
        problems += [f"{f.name} differs from {shared}: re-copy it" for f in shared.iterdir()
                     if not (rules / f.name).is_file()
                     or (rules / f.name).read_bytes() != f.read_bytes()]
        if recorded != _sums_of(shared):
            problems.append(f"{sums} does not match {shared}: "
                            f"(cd {shared} && sha256sum *) > {sums}")
    actual = _sums_of(rules)
    problems += [f"{name}: not the approved document recorded in {sums.name}"
                 for name in sorted(set(actual) | set(recorded))
                 if actual.get(name) != recorded.get(name)]
    return problems


def test_docs_rules_is_an_exact_copy_of_shared_rules() -> None:
    assert rules_copy_problems(RULES, SHARED, SUMS) == []


@pytest.mark.parametrize("beside_shared", [True, False])
def test_a_changed_missing_or_extra_rule_document_is_found(tmp_path: Path,
                                                           beside_shared: bool) -> None:
    """The check can fail, with shared/rules beside the repository and without it."""
    rules, shared = tmp_path / "rules", tmp_path / "shared"
    shutil.copytree(RULES, rules)
    if beside_shared:
        shutil.copytree(RULES, shared)
    assert rules_copy_problems(rules, shared, SUMS) == []
    doc = rules / DOCUMENT["tiger-buffalo"]
    doc.write_bytes(doc.read_bytes().replace(b"12 to 1", b"13 to 1", 1))
    (rules / "tai-sai-open-cover-rws-v5.txt").unlink()
    (rules / "extra.txt").write_text("not approved", encoding="utf-8")
    problems = rules_copy_problems(rules, shared, SUMS)
    assert [p for p in problems if p.startswith("tiger-buffalo-rws-v4.txt:")]
    assert [p for p in problems if p.startswith("tai-sai-open-cover-rws-v5.txt:")]
    assert [p for p in problems if p.startswith("extra.txt:")]
    if beside_shared:
        assert "tiger-buffalo-rws-v4.txt differs from" in " ".join(problems)
        (shared / "README.md").write_text("a newer approval", encoding="utf-8")
        assert f"{SUMS} does not match" in " ".join(rules_copy_problems(RULES, shared, SUMS))


def _clause_in(clause: str, doc: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(clause)}(?![\d])", doc) is not None


@pytest.mark.parametrize("game", list(GAMES))
def test_every_cited_clause_exists(game: str) -> None:
    g, doc = GAMES[game], text(game)
    cited = {r.clause for r in g.bets} | {i.clause for i in g.irregularities}
    cited |= {c for c in (g.decks_clause, g.layouts_clause) if c}
    missing = sorted(c for c in cited if not _clause_in(c, doc))
    assert not missing, f"{game} cites clauses its document does not have: {missing}"


@pytest.mark.parametrize("game", list(GAMES))
def test_every_pays_appears_in_its_clause(game: str) -> None:
    """Each pay line's odds is printed in the document (as 'X to Y')."""
    g, doc = GAMES[game], text(game)
    for rule in g.bets:
        for line in rule.pay_lines:
            assert f"{line.odds.win} to {line.odds.stake}" in doc, (rule.bet, line.label)


def test_rws_ip_4_1_8_odds_appear_in_the_document() -> None:
    doc = text("tiger-buffalo-insurance-plus")
    for row in insurance_plus.ROWS:
        assert f"{row.odds.win} to {row.odds.stake}" in doc


@pytest.mark.parametrize("game", list(GAMES))
def test_every_section_5_clause_is_encoded(game: str) -> None:
    """Each top-level clause of section 5 (5.1, 5.2, ...) has at least one irregularity."""
    doc = text(game)
    section5 = doc[doc.rindex("5. Irregularities"):]  # the first is the table of contents
    section5 = section5[:section5.index("Appendix")] if "Appendix" in section5 else section5
    top = set(re.findall(r"(?m)^\s*-?\s*(5\.\d+)\s", section5))
    encoded = {".".join(i.clause.split(".")[:2]) for i in GAMES[game].irregularities}
    assert top and top <= encoded, sorted(top - encoded)


def test_games_md_is_generated_from_the_engine() -> None:
    assert (ROOT / "docs" / "games.md").read_text(encoding="utf-8") == render_games_md(), (
        "docs/games.md is out of date: run 'tabled rules docs'")

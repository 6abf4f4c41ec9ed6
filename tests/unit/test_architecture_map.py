"""docs/architecture.md's module map and its walk of one card, held to the source tree.

The map must name every module of daemon/, firmware_protocols/ and hil/ (but packages'
__init__ and __main__) in a row of its own with what the module does, and name no file
that does not exist; the walk must name five files to read, and every function it names
must exist where it says. Anywhere in the document, a path to a Python file of the
project must exist.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("daemon", "firmware_protocols", "hil")
# `daemon/x/y.py` as the first cell of a table row, then what it does.
ROW = re.compile(r"^\| `((?:daemon|firmware_protocols|hil)/[\w/]+\.py)` \| ([^|]*\S[^|]*) \|",
                 re.M)
PATH = re.compile(r"`((?:daemon|firmware_protocols|hil|tests|bench|scripts)/[\w/.]+\.py)")
# `path/to/module.py:Class.function` in the walk.
FUNCTION = re.compile(r"`([\w/]+\.py):([\w.]+)`")
STEP = re.compile(r"^\d+\. \*\*`([\w/]+\.py)`\*\*", re.M)


def _section(text: str, heading: str) -> str:
    """From the level-2 heading ``heading`` to the next level-2 heading."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _modules() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for pkg in PACKAGES
            for p in (ROOT / pkg).rglob("*.py")
            if p.name not in ("__init__.py", "__main__.py")}


def map_rows(text: str) -> list[str]:
    return [m.group(1) for m in ROW.finditer(_section(text, "Module map"))]


def test_the_map_names_every_module_once_and_nothing_else() -> None:
    rows = map_rows(DOC.read_text())
    named = set(rows)
    modules = _modules()
    assert sorted(modules - named) == [], "modules the map does not name"
    assert sorted(named - modules) == [], "the map names files that do not exist"
    assert sorted(p for p in named if rows.count(p) > 1) == [], "named in two rows"


def test_the_map_check_fails_on_a_module_it_does_not_name() -> None:
    """The check above can fail: a row taken out leaves its module unnamed."""
    text = DOC.read_text()
    dropped = re.sub(r"^\| `daemon/timestamps\.py` \|.*\n", "", text, flags=re.M)
    assert dropped != text
    assert "daemon/timestamps.py" in _modules() - set(map_rows(dropped))


def test_every_project_path_in_the_document_exists() -> None:
    missing = sorted({p for p in PATH.findall(DOC.read_text()) if not (ROOT / p).exists()})
    assert missing == []


def _resolve(path: str, qualname: str) -> object:
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    obj: object = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def test_the_walk_of_one_card_names_five_files_and_real_functions() -> None:
    walk = _section(DOC.read_text(), "Follow one card from the shoe to MQTT")
    steps = STEP.findall(walk)
    assert len(steps) == 5 and len(set(steps)) == 5, steps
    functions = FUNCTION.findall(walk)
    for path in steps:
        assert any(p == path for p, _ in functions), f"the walk names no function of {path}"
    for path, qualname in functions:
        assert callable(_resolve(path, qualname)), f"{path}:{qualname}"


def test_the_walk_check_fails_on_a_function_that_does_not_exist() -> None:
    with pytest.raises(AttributeError):
        _resolve("daemon/service/effects.py", "Effects.apply_all")


def test_every_stage_names_its_tests_and_how_to_add_to_it() -> None:
    stages = _section(DOC.read_text(), "Module map").split("\n### ")[1:]
    assert len(stages) >= 10
    for stage in stages:
        title = stage.splitlines()[0]
        assert "\nTests: `tests/" in stage, f"{title}: no tests named"
        # "**To add a device message**: ...", "**To rename a field on the wire**: ..."
        assert re.search(r"\*\*To \w[^*]*\*\*: ", stage), f"{title}: no 'to add X, change Y'"
        for path in re.findall(r"`(tests/[\w/]+\.py)`", stage):
            assert (ROOT / path).exists(), f"{title}: {path}"
